"""Runs: open a job directory (or the local run just started) and compare it with its plan.

Reads ``job.json`` (the plan and its prediction), ``metrics.jsonl`` (per-step loss, tokens/s, MFU,
peak memory) and, when the probe wrote it, ``validation.json``; plots each measured series
against the plan's predicted value and refreshes every ``REFRESH_S`` while the run is live (its
metrics changed within ``LIVE_S``, no ``report.json`` yet).
"""

from __future__ import annotations

import math
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go
import streamlit as st
from plotly.subplots import make_subplots

from planner.plan import Plan
from planner.reports import RunReport, ValidationReport
from ui import app_core, app_jobs
from ui.cached import cached_detect, cached_plan
from ui.i18n import Labels, plain
from ui.infeasible_words import infeasible_text
from ui.messages import estimate_only_text, seconds
from ui.number_box import number_box
from ui.run_report import add_band_bars, newest_checkpoint_step, read_report, report_caption, report_frame
from ui.sidebar import Inputs

REFRESH_S = 2.0
LIVE_S = 120.0
SERIES = (  # metrics.jsonl column, label key, unit
    ("loss", "loss", ""),
    ("tokens_per_s", "tokens_per_s", "tokens/s"),
    ("mfu", "run_mfu", ""),
    ("peak_mem_gib", "run_memory", "GiB"),
)


@dataclass(frozen=True)
class JobView:
    """What a job directory holds: its plan (None when job.json is unreadable), metrics, validation."""

    plan: Plan | None
    metrics: pd.DataFrame
    validation: ValidationReport | None
    live: bool
    error: str | None = None  # JobSpec.load's refusal (English)
    job_dir: Path | None = None  # where job.json was looked for, when it was refused
    report: RunReport | None = None  # report.json, once the run has ended


def read_job(job_dir: Path) -> JobView:
    from trainer.job_spec import JobSpec

    job_dir = Path(job_dir).expanduser()
    try:
        plan = JobSpec.load(job_dir).plan
    except ValueError as exc:
        return JobView(None, pd.DataFrame(), None, False, error=str(exc), job_dir=job_dir)
    metrics = app_jobs.read_metrics(job_dir / "metrics.jsonl")
    validation = None
    if (job_dir / "validation.json").exists():
        try:
            validation = ValidationReport.load(job_dir / "validation.json")
        except (OSError, ValueError):
            validation = None
    path = job_dir / "metrics.jsonl"
    recent = path.exists() and time.time() - path.stat().st_mtime < LIVE_S
    report = read_report(job_dir)
    live = recent and not (job_dir / "report.json").exists()
    return JobView(plan, metrics, validation, live=live, report=report)


def predictions(plan: Plan, validation: ValidationReport | None) -> dict[str, float | None]:
    """The plan's predicted value of each series (memory: the probe's prediction when there is one)."""
    e = plan.estimate
    memory = e.memory.peak_gib
    if validation is not None and validation.predicted.peak_gib is not None:
        memory = validation.predicted.peak_gib
    return {"loss": None, "tokens_per_s": e.throughput.tokens_per_s, "mfu": e.throughput.mfu, "peak_mem_gib": memory}


HOVER_FORMAT = {"mfu": ".1%"}  # MFU with one decimal, as the card writes it
PERCENT_AXES = ("mfu",)  # and its axis in percent, ``percent_axis_format``


def percent_axis_format(top: float) -> str:
    """The tick format of a share axis up to ``top``: whole percents from 10 % on, and one more decimal
    each tenth below (app53 L9: a CPU run's 0.1 % MFU read "0% 0% 0% 0% 0% 0%")."""
    if not top > 0:
        return ".0%"
    return f".{max(0, 1 - math.floor(math.log10(top * 100)))}~%"


def axis_top(metrics: pd.DataFrame, column: str, plan: Plan | None, predicted: float | None) -> float:
    """The largest value a panel shows: measured, predicted, or its band's top."""
    values = [*pd.to_numeric(metrics.get(column, pd.Series(dtype=float)), errors="coerce").dropna(), predicted or 0.0]
    u = None if plan is None else plan.estimate.uncertainty
    band = None if u is None else getattr(u, column, None)
    return max([*values, *(band or ())], default=0.0)


CUDA_ONLY = ("mfu", "peak_mem_gib")  # the trainer measures these with CUDA only (trainer/metrics.py)


def measured(metrics: pd.DataFrame, column: str) -> bool:
    return column in metrics and pd.to_numeric(metrics[column], errors="coerce").notna().any()


def without_cuda(view: JobView) -> bool:
    """Steps were logged, but none with a peak memory: the run had no CUDA device (a CPU run)."""
    return len(view.metrics) > 0 and not measured(view.metrics, "peak_mem_gib")


def run_figure(view: JobView, tr: Labels) -> go.Figure:
    """Loss, tokens/s, MFU and peak memory against the step, each with the plan's prediction dashed."""
    fig = make_subplots(rows=2, cols=2, subplot_titles=[tr(key) for _, key, _ in SERIES])
    predicted = predictions(view.plan, view.validation) if view.plan else {}
    metrics = view.metrics
    for i, (column, key, unit) in enumerate(SERIES):
        row, col = divmod(i, 2)
        if measured(metrics, column):
            fig.add_scatter(
                x=metrics["step"], y=pd.to_numeric(metrics[column], errors="coerce"), mode="lines+markers",
                name=tr(key), row=row + 1, col=col + 1,
                hovertemplate=f"{tr('axis_step')} %{{x}}: %{{y:{HOVER_FORMAT.get(column, ',.4g')}}} {unit}<extra></extra>",
            )  # fmt: skip
        if (value := predicted.get(column)) is not None:
            fig.add_hline(
                value, line=dict(dash="dash", color="crimson"), row=row + 1, col=col + 1,
                annotation_text=tr("predicted"), exclude_empty_subplots=False,  # drawn with no measurement too
            )  # fmt: skip
            last_step = float(metrics["step"].iloc[-1]) if len(metrics) else 0.0
            if view.plan is not None:  # it is: ``predicted`` is empty without one
                add_band_bars(fig, view.plan, column, value, last_step, tr, row=row + 1, col=col + 1)
        if column in CUDA_ONLY and without_cuda(view):  # said in the panel, not left empty (issue 30)
            fig.add_annotation(
                text=tr("run_not_measured"), xref="x domain", yref="y domain", x=0.5, y=0.15, showarrow=False,
                row=row + 1, col=col + 1, exclude_empty_subplots=False,
            )  # fmt: skip
        fig.update_xaxes(title_text=tr("axis_step"), row=row + 1, col=col + 1)
        if column in PERCENT_AXES:
            top = axis_top(metrics, column, view.plan, predicted.get(column))
            fig.update_yaxes(tickformat=percent_axis_format(top), row=row + 1, col=col + 1)
        if column != "loss":  # rates and memory: never below zero (trial s35: an MFU axis from -50 %)
            fig.update_yaxes(rangemode="tozero", row=row + 1, col=col + 1)
    fig.update_layout(showlegend=False, height=560, margin=dict(t=40, b=10))
    return fig


def probe_text(tr: Labels, v: ValidationReport) -> str:
    """validation.json in one line: the probe's measured step time and peak memory against the plan's."""
    # the page's blank and its seconds (trial s35, round 2: "-" and "16.29 s" on the 中文 page)
    blank = app_core.BLANK
    pct = lambda value: blank if value is None else f"{value:+.1f}%"  # noqa: E731  the page's percent style (s46 L7)
    step = lambda value: blank if value is None else seconds(tr, value)  # noqa: E731
    gib = lambda value: blank if value is None else f"{value:,.4g} GiB"  # noqa: E731
    if v.comparable:
        errors = tr("probe_errors", step_pct=pct(v.error_pct.step_s), peak_pct=pct(v.error_pct.peak_gib))
    else:
        errors = tr("probe_not_comparable")
    return tr(
        "probe_line",
        steps=v.probe_steps,
        device=v.device,
        step_measured=step(v.measured.step_s),
        step_predicted=step(v.predicted.step_s),
        peak_measured=gib(v.measured.peak_gib),
        peak_predicted=gib(v.predicted.peak_gib),
        errors=errors,
    )


def cpu_notes(tr: Labels, view: JobView) -> list[str]:
    """On a run without CUDA: why two panels hold no measurement, and whose hardware the
    predicted tokens/s is for (the plan's GPUs, hundreds of times this CPU)."""
    if not without_cuda(view):
        return []
    notes = [tr("run_no_cuda")]
    if view.plan is not None and measured(view.metrics, "tokens_per_s"):
        tokens = pd.to_numeric(view.metrics["tokens_per_s"], errors="coerce").dropna()
        p = view.plan
        notes.append(
            tr(
                "run_prediction_elsewhere",
                predicted=p.estimate.throughput.tokens_per_s,
                num_gpus=p.num_gpus,
                gpu=p.gpu,
                measured=tokens.iloc[-1],
            )
        )
    return notes


def show_refused_job(tr: Labels, view: JobView) -> None:
    """Why a directory's job.json cannot be read: missing or not a job, in the page's language;
    the reader's own detail (English) under it on the English page."""
    assert view.error is not None and view.job_dir is not None  # read_job sets both on a refusal
    missing = not (view.job_dir / "job.json").is_file()
    st.error(tr("run_no_job" if missing else "run_bad_job", path=plain(str(view.job_dir))))
    if tr.lang == "en" and not missing:
        st.caption(plain(view.error))


def show_job(tr: Labels, job_dir: Path, key: str) -> None:
    view = read_job(job_dir)
    if view.error:
        show_refused_job(tr, view)
        return
    st.caption(tr("run_steps_read", steps=len(view.metrics), live=tr("run_live") if view.live else ""))
    if view.validation is not None:
        st.caption(probe_text(tr, view.validation))
    if view.report is not None:  # the end-of-run table, as `trainplan run` prints it (report50)
        st.markdown(f"**{tr('report_title')}**")
        st.caption(report_caption(tr, view.report, newest_checkpoint_step(job_dir)))
        st.dataframe(report_frame(tr, view.report), hide_index=True, key=f"run_report_{key}")
    for note in cpu_notes(tr, view):
        st.caption(note)
    if not len(view.metrics):  # four empty charts said nothing (trial s35, round 2)
        st.info(tr("run_no_metrics"))
        return
    if "loss" in view.metrics:
        last = view.metrics.iloc[-1]
        left, right = st.columns(2)
        left.metric(tr("loss"), f"{last['loss']:.4f}")
        # the last step's, beside the report's whole-job figure (app53 L9: two tokens/s, unnamed)
        right.metric(tr("run_tokens_last_step"), f"{last['tokens_per_s']:,.0f}")
    st.plotly_chart(run_figure(view, tr), key=f"chart_run_{key}")


def show_run_view(tr: Labels, inputs: Inputs) -> None:
    """A job directory's metrics against its plan; refreshes while the run is live."""
    path = st.text_input(tr("run_dir"), key="run_dir", help=tr("run_dir_help")).strip()
    if not path:
        st.caption(tr("run_dir_needed"))
        return
    job_dir = Path(path).expanduser()
    if read_job(job_dir).live:
        st.fragment(run_every=REFRESH_S)(show_job)(tr, job_dir, "dir")
    else:
        show_job(tr, job_dir, "dir")


def show_local(tr: Labels, inputs: Inputs) -> None:
    found = cached_detect()
    if isinstance(found, str):
        # NVML's reason is English text from the driver layer: shown on the English page only
        st.caption(f"{tr('no_local_gpus')} ({found})." if tr.lang == "en" else f"{tr('no_local_gpus')}。")
        return
    st.dataframe(
        app_core.local_gpus_frame(found).rename(columns=lambda c: tr(f"col_{c}")),
        hide_index=True,
        placeholder=app_core.BLANK,
        key="local_gpus",
    )
    matched = [g.spec.id for g in found if g.spec is not None]
    if not matched:
        st.caption(tr("local_unmatched"))
        return
    gpu = max(set(matched), key=matched.count)
    count = matched.count(gpu)
    steps = number_box(st, tr, "run_steps", min_value=1, step=10, key="run_steps")
    run = st.session_state.get("local_run")
    running = run is not None and run.process.poll() is None
    if st.button(tr("run_local", count=count, gpu=gpu), key="run_local", disabled=running):
        start_local_run(tr, inputs, gpu, count, int(steps))
    run = st.session_state.get("local_run")
    if run is not None:
        live = st.fragment(run_every=2.0)(show_run) if run.process.poll() is None else show_run
        live(tr)


def start_local_run(tr: Labels, inputs: Inputs, gpu: str, count: int, steps: int) -> None:
    """Plan for the local GPUs (no deadline or budget) and start training it."""
    local = inputs.request.model_copy(
        update={"gpus": {gpu: count}, "deadline_days": None, "budget_usd": None, "max_gpus": count, "top_k": 0}
    )
    outcome = cached_plan(local.model_dump_json(), inputs.headroom, inputs.calibration)
    if outcome.result is None:
        if outcome.error:
            st.warning(plain(outcome.error))
        else:
            infeasible = outcome.infeasible
            assert infeasible is not None  # a PlanOutcome with neither result nor error is infeasible
            st.warning(infeasible_text(tr, infeasible, local))
        return
    if not outcome.result.plan.emittable:  # emit's rule: another stack's plan is an estimate, not a job
        st.warning(estimate_only_text(tr, outcome.result.plan))
        return
    st.session_state["local_run"] = app_jobs.start_training(outcome.result.plan, steps)


def show_run(tr: Labels) -> None:
    run: app_jobs.LocalRun = st.session_state["local_run"]
    code = run.process.poll()
    status = tr("run_running", pid=run.process.pid) if code is None else tr("run_finished", code=code)
    st.markdown(f"**{status}** `{run.job_dir}`")
    show_job(tr, run.job_dir, "local")
    st.code(app_jobs.log_tail(run.job_dir / "run.log") or " ")
    if code is None and st.button(tr("stop_run"), key="stop_run"):
        os.killpg(run.process.pid, signal.SIGTERM)  # our own child's process group (start_new_session)
