"""A stack profile timed on a GPU its code never ran on says so, on the CLI and the card (buyer trial
s45 M1: --stack megatron-lm, the 2021-22 code, on H100)."""

from __future__ import annotations

import json

from ui.cli import main


def test_megatron_lm_on_a_gpu_after_its_era_points_to_megatron_core(capsys) -> None:
    from support.app import request_for

    from planner.api import build_plan
    from planner.catalog.models import get_preset
    from planner.layout import Implementation, Layout, Sharding, TrainingConfig
    from planner.model.stacks import Stack
    from ui.card_notices import request_texts
    from ui.i18n import Labels
    from ui.infeasible_words import app_words

    args = ["estimate", "--model", "llama2-7b", "--num-gpus", "8", "--tp", "8", "--json"]
    said = {}
    for gpu in ("h100-sxm", "b200", "a100-80gb-sxm"):
        for stack in ("megatron-lm", "megatron-core"):
            assert main([*args, "--gpu", gpu, "--stack", stack]) == 0
            warnings = json.loads(capsys.readouterr().out)["warnings"]
            said[gpu, stack] = [
                w for w in warnings if w.startswith("--stack megatron-lm is the Megatron-LM of 2021-22")
            ]
    assert said["h100-sxm", "megatron-lm"] and "timed on h100-sxm" in said["h100-sxm", "megatron-lm"][0]
    assert said["b200", "megatron-lm"] and "--stack megatron-core" in said["b200", "megatron-lm"][0]
    assert not said["a100-80gb-sxm", "megatron-lm"]  # the GPU it ran on
    assert not any(said[g, "megatron-core"] for g in ("h100-sxm", "b200", "a100-80gb-sxm"))
    model, training = get_preset("llama2-7b"), TrainingConfig(seq_len=4096, impl=Implementation.NATIVE)
    layout = Layout(tp=8, sharding=Sharding.ZERO1)
    chosen = build_plan(model, "h100-sxm", layout, training, num_gpus=8, stack=Stack.MEGATRON_LM)
    request = request_for(model, stack="megatron-lm")
    for lang in ("en", "zh"):
        texts = [t for t in request_texts(Labels(lang), request, chosen) if "megatron-core" in t]
        # the card names the sidebar's field, not the flag (app trial s45 L1)
        assert texts == [app_words(Labels(lang), Labels(lang)("megatron_lm_era", gpu="h100-sxm"))]
        assert "--stack" not in texts[0] and f'"{Labels(lang)("stack")}" = megatron-core' in texts[0]


def test_the_card_says_no_row_ran_on_another_vendors_gpu() -> None:
    """App trial s45 M1: the CLI said 'another vendor' of an AMD plan's nearest rows, the card did not."""
    from planner.api import build_plan
    from planner.catalog.models import get_preset
    from planner.layout import Layout, Sharding, TrainingConfig
    from ui.i18n import Labels
    from ui.messages import envelope_text

    training = TrainingConfig(seq_len=4096)
    for gpu, said in (("mi325x", True), ("h100-sxm", False)):
        e = build_plan(get_preset("llama3-8b"), gpu, Layout(sharding=Sharding.FSDP), training, num_gpus=16).estimate
        assert e.uncertainty is not None
        for lang in ("en", "zh"):
            sentence = Labels(lang)("envelope_other_vendor", vendor="AMD")
            assert (sentence in envelope_text(Labels(lang), e.uncertainty)) == said, (gpu, lang)


def test_the_app_names_its_own_field_for_the_batch() -> None:
    """App trial s45 L1: '--global-batch-tokens' reached the page's English detail line; the words name
    the field and the flag as count_probe's do, which the app rewrites to its field's label."""
    from planner.request import LARGER_BATCH_WORDS
    from ui.i18n import Labels
    from ui.infeasible_words import app_words

    en = Labels("en")
    said = app_words(en, "allow 3 days" + LARGER_BATCH_WORDS + "; at 4x that batch, --global-batch-tokens 16777216: x")
    assert "--" not in said and f'"{en("global_batch")}" = 16,777,216' in said
