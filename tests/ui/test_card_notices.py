"""The card says the planner's typed warnings that the CLI says (parity trial s50): a job shorter than
its start-up, a plan that fits only by another shape's memory factor; each in both languages, and
none where the CLI says none."""

from __future__ import annotations

import pytest

from planner.api import build_plan
from planner.api.notices import estimate_warnings
from planner.catalog.calibration import CalibrationFile, calibrate, write_calibration
from planner.catalog.hardware import load_catalog
from planner.catalog.measured_job import MeasuredJob
from planner.catalog.models import get_preset
from planner.layout import Layout, TrainingConfig
from ui.card_notices import plan_notice_texts
from ui.i18n import Labels, plain

LANGUAGES = ("en", "zh")


def _plan(model: str, seq_len: int, tokens: float = 1e10, micro_batch: int = 1, calibration=None):
    training = TrainingConfig(micro_batch=micro_batch, grad_accum=1, seq_len=seq_len)
    layout = Layout(sharding="fsdp")
    return build_plan(
        get_preset(model), "h100-sxm", layout, training, num_gpus=8, training_tokens=tokens, calibration=calibration
    )


@pytest.mark.parametrize(("model", "learned"), [("gpt3-125m", True), ("llama3-8b", False)])
def test_a_sequence_past_the_pretrained_context_is_one_rule_for_the_cli_and_the_sidebar(model, learned):
    """The sidebar's warning (ui/sidebar.py) and the CLI's read one record (its second copy of the rule
    had the learned-positions test inline)."""
    from planner.model.structure import context_extension, context_extension_warning

    past = context_extension(get_preset(model), 16384)
    assert (
        past is not None
        and past.learned is learned
        and past.words() == context_extension_warning(get_preset(model), 16384)
    )
    assert ("positions are learned" in past.words()) is learned
    assert context_extension(get_preset(model), 1024) is None


def test_the_card_says_a_job_shorter_than_its_start_up():
    p = _plan("llama3-8b", 4096, tokens=1000)
    (cli,) = [w for w in estimate_warnings(p, None) if w.startswith("the job trains for")]
    english, chinese = (plan_notice_texts(Labels(lang), p) for lang in LANGUAGES)
    assert len(english) == 1 and english[0].startswith("The job trains for") and "(1 step of 32,768" in english[0]
    assert "goodput" in cli and "1 步，每步" in chinese[0]
    assert plan_notice_texts(Labels("en"), _plan("llama3-8b", 4096, tokens=1e11)) == ()


def test_the_card_says_a_plan_that_fits_only_by_another_shapes_memory_factor(tmp_path):
    def applied(memory_factor: float):
        job = MeasuredJob(
            compute_time_factor=1.0, memory_factor=memory_factor, name="probe", date="2026-12-07",
            shape="llama-124m, 1 x h100-sxm", step_s=1.0, predicted_step_s=1.0, peak_gib=6.0 * memory_factor,
            predicted_peak_gib=6.0,
        )  # fmt: skip
        path = write_calibration(tmp_path / f"{memory_factor}.toml", CalibrationFile(None, {}, {"h100-sxm": job}))
        return calibrate(load_catalog(), path)

    assert not _plan("llama3-8b", 4096, micro_batch=4).estimate.feasible  # the model alone: past the fit
    p = _plan("llama3-8b", 4096, micro_batch=4, calibration=applied(0.6))
    for lang in LANGUAGES:
        (said,) = plan_notice_texts(Labels(lang), p)
        assert "x0.6" in said and "probe" in said and plain("llama-124m, 1 x h100-sxm") in said
    assert plan_notice_texts(Labels("en"), _plan("llama3-8b", 4096, micro_batch=2, calibration=applied(1.0))) == ()
