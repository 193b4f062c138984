"""Every regime feature a band can name has words in every language of the app."""

from planner.accuracy.regime import Feature
from ui.i18n import LANGUAGES, all_labels


def test_every_regime_feature_has_words_in_every_language():
    for lang in LANGUAGES:
        labels = all_labels(lang)
        missing = [f.name for f in Feature if not labels.get(f"feature_{str(f.name).lower()}")]
        assert not missing, (lang, missing)


def test_a_part_apart_for_its_link_is_named_in_the_pages_language():
    """planner/accuracy/links.py: "Hopper (h800's link)" is English; the Chinese card had read it raw."""
    from ui.i18n import Labels
    from ui.messages import generation_text

    assert generation_text(Labels("en"), "Hopper (h800's link)") == "Hopper (h800's link)"
    assert generation_text(Labels("zh"), "Hopper (h800's link)") == "Hopper（h800 的互连）"
    assert generation_text(Labels("zh"), "Hopper (h20)") == "Hopper (h20)"  # a GPU id only: no words


def test_the_card_names_the_users_measured_job_in_every_language():
    """Trial s38: the envelope said nothing of the user's own job behind a calibration's corrections."""
    from planner.api import build_plan
    from planner.catalog.models import get_preset
    from planner.layout import Layout, TrainingConfig
    from planner.plan_accuracy import MeasuredJobUse
    from ui.i18n import Labels
    from ui.messages import envelope_text

    plan = build_plan(
        get_preset("llama3.2-1b"), "h100-sxm", Layout(dp_shard=8), TrainingConfig(seq_len=4096), num_gpus=8
    )
    job = MeasuredJobUse(
        name="j124", shape="llama-124m, 1 x h100-sxm", date="2026-12-05", exact=False,
        compute_time_factor=1.27, memory_factor=1.13,
    )  # fmt: skip
    other = plan.estimate.uncertainty.model_copy(update={"measured_job": job})
    exact = other.model_copy(update={"measured_job": job.model_copy(update={"exact": True})})
    assert "your job j124 (llama-124m, 1 x h100-sxm, 2026-12-05) are extrapolated" in envelope_text(Labels("en"), other)
    assert "x1.27" in envelope_text(Labels("en"), other)
    assert "Calibrated on your job j124" in envelope_text(Labels("en"), exact)
    assert "你的作业 j124" in envelope_text(Labels("zh"), other)
    assert "你自己的作业 j124" in envelope_text(Labels("zh"), exact)


def test_the_card_gives_the_memory_band_and_its_fit_in_every_language():
    """Trial s38: a plan at 99 % of what a GPU allows showed no band of its memory."""
    from planner.accuracy.memory_band import memory_band
    from planner.api import build_plan
    from planner.catalog.models import get_preset
    from planner.layout import Layout, TrainingConfig
    from ui.i18n import Labels
    from ui.messages import memory_band_text

    plan = build_plan(
        get_preset("llama3.2-1b"), "h100-sxm", Layout(dp_shard=8), TrainingConfig(seq_len=4096), num_gpus=8
    )
    tight = plan.estimate.uncertainty.model_copy(
        update={"memory": memory_band(74.3, 75.4, 78.7, "megatron-core", False, True)}
    )
    en, zh = (memory_band_text(Labels(lang), tight) for lang in ("en", "zh"))
    low, high = tight.memory.reserved_gib
    # app53 L3: the en dash of every band on the page, not the CLI's hyphen
    assert (
        f"{low:.1f}–{high:.1f} GiB" in en and f"{low:.1f}–{high:.1f} GiB" in zh and "-" not in f"{low:.1f}–{high:.1f}"
    )
    assert "only 2 configuration(s) of megatron-core, more than one GPU were measured" in en
    assert "it may not fit" in en and "too few for a band of their own" in en
    assert "megatron-core（多 GPU）只实测了 2 种配置" in zh and "可能放不下" in zh
    deepspeed = memory_band(74.3, 75.4, 78.7, "megatron-deepspeed", False, True)
    none = memory_band_text(Labels("en"), tight.model_copy(update={"memory": deepspeed}))
    assert "no peak of megatron-deepspeed, more than one GPU was measured" in none
    assert memory_band_text(Labels("en"), plan.estimate.uncertainty.model_copy(update={"memory": None})) is None


def test_outside_the_envelope_the_card_names_the_regime_its_band_is_read_from():
    """Trial s42 L5: the CLI said a B200 trainplan plan's band was read from Megatron-Core's rows
    on Blackwell ("nearest megatron-core on Blackwell ..."); the app's card did not."""
    from planner.api import PlanRequest, plan
    from planner.catalog.models import get_preset
    from ui.i18n import Labels
    from ui.messages import envelope_text, regime_words_text

    request = PlanRequest(model=get_preset("llama3-70b"), training_tokens=2e12, deadline_days=90, gpus={"b200": None})
    u = plan(request.model_copy(update={"top_k": 0})).plan.estimate.uncertainty
    assert not u.validated and u.nearest is not None and u.nearest.stack == "megatron-core"
    for lang in ("en", "zh"):
        tr = Labels(lang)
        assert tr("envelope_nearest", regime=regime_words_text(tr, u.nearest)) in envelope_text(tr, u)
