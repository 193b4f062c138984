"""A finished run's ``report.json`` on the run view: each figure's prediction with its 80 % band, the
measured figure, the error and whether it lies in the band, as ``trainplan run``'s end-of-run table
says them (trainer/probe.py ``format_report``: its formatters are reused, not copied), and the plan's
bands as error bars on the run view's chart."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import plotly.graph_objects as go

from planner.plan import Plan
from planner.reports import RunReport
from ui.app_core import BLANK
from ui.i18n import Labels

REPORT_FILE = "report.json"  # trainer/files.py REPORT_FILE (the trainer is imported only when a report is shown)
# The run view's series whose 80 % band the plan gives (``Uncertainty``); metrics.jsonl's memory is
# the allocated peak, and the plan's memory band is the reserved peak's: no band is drawn on it.
CHART_BANDS = ("tokens_per_s", "mfu")


def read_report(job_dir: Path) -> RunReport | None:
    """The job's report.json; None where there is none yet or it is not a report (an older or a
    half-written file: the view shows the run without it)."""
    path = job_dir / REPORT_FILE
    if not path.is_file():
        return None
    try:
        return RunReport.load(path)
    except (OSError, ValueError):
        return None


def page_cell(text: str) -> str:
    """The CLI's empty cell ("-") as the page's (``BLANK``)."""
    return BLANK if text == "-" else text


def report_frame(tr: Labels, report: RunReport) -> pd.DataFrame:
    """The end-of-run table's rows in the page's language: figure, predicted (band), measured, error,
    in band. The cells are the CLI's (``with_band``, ``shown``, ``band_verdict``); only the words
    (the figure's name, yes / no) are translated."""
    from trainer.probe import REPORT_FORMATS, band_verdict, shown, with_band

    verdicts = {"yes": tr("band_inside"), "no": tr("band_outside"), "-": BLANK, "": ""}
    coverage = report.band.coverage
    predicted_col = tr("report_predicted_band", coverage=coverage) if coverage is not None else tr("predicted")
    rows = []
    for (key, predicted), (_, measured), (_, err) in zip(
        report.predicted, report.measured, report.error_pct, strict=True
    ):
        fmt, check = REPORT_FORMATS[key], getattr(report.band, key, None)
        rows.append(
            {
                tr("report_figure"): tr(f"report_{key}"),
                predicted_col: page_cell(with_band(predicted, check, fmt)),
                tr("report_measured"): page_cell(shown(measured, fmt)),
                tr("report_error"): page_cell(shown(err, "+.1f") + ("%" if err is not None else "")),
                tr("report_in_band"): verdicts[band_verdict(check)],
            }
        )
    return pd.DataFrame(rows)


# The ends after which a rerun goes on from a checkpoint, not from the run's own end.
RESUMED_OUTCOMES = ("preempted", "interrupted", "failed", "peer_lost")


def newest_checkpoint_step(job_dir: Path) -> int | None:
    """The step of the job's newest checkpoint, where a rerun resumes; None: none kept."""
    from trainer.files import CHECKPOINT_DIR, list_checkpoints

    saved = list_checkpoints(job_dir / CHECKPOINT_DIR)
    return saved[-1][0] if saved else None


def report_caption(tr: Labels, report: RunReport, newest_checkpoint: int | None = None) -> str:
    """The run's end, where a rerun resumes after a stop or a failure (``newest_checkpoint``; review
    s50 M2: "preempted (saved) at step 3" where a stop at once saved nothing and the rerun resumed
    from step 2) and, where its figures are not checked against the plan, why."""
    # an outcome this app does not know (a newer trainer's) is shown as written
    outcome = tr.get(f"outcome_{report.outcome}", report.outcome)
    line = tr("report_ended", outcome=outcome, steps=report.steps_done)
    if report.outcome in RESUMED_OUTCOMES:
        resumes = tr("report_restarts") if newest_checkpoint is None else tr("report_resumes", step=newest_checkpoint)
        line = tr.sentences(line, resumes)
    if report.comparable:
        return line
    on = report.device if report.device != "cuda" else report.measured_gpu or tr("report_unknown_gpu")
    # sentences, not a space: "第 20 步。 在 cpu" in 中文 (app53 L9)
    return tr.sentences(line, tr("report_not_comparable", device=on, gpu=report.gpu))


def add_band_bars(fig: go.Figure, plan: Plan, column: str, predicted: float, x: float, tr: Labels, **cell) -> None:
    """The plan's 80 % band of ``column`` as an error bar on its predicted value at step ``x`` (the
    last one logged), where the plan has a band for it."""
    u = plan.estimate.uncertainty
    if u is None or column not in CHART_BANDS or (band := getattr(u, column)) is None:
        return
    low, high = band
    fig.add_scatter(
        x=[x], y=[predicted], mode="markers", marker=dict(color="crimson", symbol="line-ew-open", size=12),
        error_y=dict(type="data", symmetric=False, array=[high - predicted], arrayminus=[predicted - low],
                     color="crimson", thickness=1.5, width=8),
        name=tr("report_predicted_band", coverage=u.coverage), hoverinfo="skip", **cell,
    )  # fmt: skip
