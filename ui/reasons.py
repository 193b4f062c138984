"""The planner's one-line ValueError sentences, in the page's language.

A custom model's dimensions (``ModelSpec``'s checks, planner/model/spec.py) and a fixed layout in
the explorer (``Layout``, ``Layout.resolve``, the structural rules of planner/model/structure.py)
are refused with English sentences. Each one the app can meet is matched here by its wording and
rendered from its figures as a label of ``ui.i18n_messages`` (``reason_*``); a sentence not listed
gets the generic ``reason_other``, never English, on the 中文 page. The English page shows the
planner's own sentence. tests/ui/test_app_details.py breaks each rule and checks it is matched, so
a reworded planner message fails there rather than falling back silently.
"""

from __future__ import annotations

import re

from ui.i18n import Labels

_N = r"(?P<{}>\d+)"


def _p(template: str) -> re.Pattern[str]:
    """A pattern from a sentence with ``<name>`` for its integer figures."""
    return re.compile(re.sub(r"<(\w+)>", lambda m: _N.format(m.group(1)), template))


# ModelSpec's checks that the custom-dimension fields can break (the others need fields not on screen).
MODEL_REASONS: tuple[tuple[re.Pattern[str], str], ...] = (
    (_p(r"num_heads <heads> is not a multiple of num_kv_heads <kv_heads>"), "reason_heads_kv"),
    (_p(r"hidden_size <hidden> is not divisible by num_heads <heads>"), "reason_hidden_heads"),
    (_p(r"experts_per_token exceeds num_experts"), "reason_experts_per_token"),
    (_p(r"head_dim <head_dim> is odd"), "reason_head_dim_odd"),
)
# What a fixed layout of the explorer can break (dp_shard is "the rest", expert tp on).
LAYOUT_REASONS: tuple[tuple[re.Pattern[str], str], ...] = (
    (_p(r"world size <gpus> is not divisible by dp_replicate\*tp\*pp\*cp = <fixed>"), "reason_world_size"),
    (_p(r"num_heads <value> is not divisible by tp=<tp>"), "reason_tp_heads"),
    (_p(r"num_kv_heads <value> is not divisible by tp=<tp>"), "reason_tp_kv_heads"),
    (_p(r"ffn_hidden_size <value> is not divisible by tp=<tp>"), "reason_tp_ffn"),
    (
        _p(r"vocab_size <vocab> \(padded to <padded>, vocabulary-parallel loss\) is not divisible by tp=<tp>"),
        "reason_tp_vocab",
    ),
    (_p(r"seq_len \(sequence parallelism\) <seq_len> is not divisible by tp\*cp=<degree>"), "reason_seq_tp_cp"),
    (_p(r"tp=<tp> must fit inside one scale-up domain of <domain> GPUs"), "reason_tp_domain"),
    (_p(r"pp\*vpp=<stages> pipeline stages exceed <max_stages> "), "reason_pp_layers"),
    (_p(r"<stages> pipeline stages need 1\.\.<max_stages> "), "reason_pp_layers"),
    (_p(r"the 1f1b schedule needs grad_accum >= pp \(<grad_accum> < <pp>\)"), "reason_1f1b_accum"),
    (_p(r"seq_len \(load-balanced context parallel\) <seq_len> is not divisible by 2\*cp=<degree>"), "reason_seq_cp"),
    (re.compile(r"(?P<gpu>\S+) does not support (?P<precision>\S+)$"), "reason_precision"),
    (re.compile(r"pipeline parallelism \(pp > 1\) needs impl 'native'"), "reason_pp_native"),
    (re.compile(r"context parallelism \(cp > 1\) needs impl 'native'"), "reason_cp_native"),
    (re.compile(r"vpp > 1 \(interleaved schedule\) needs pp > 1 and the 1f1b schedule"), "reason_vpp_pp"),
    (
        _p(
            r"the interleaved schedule needs grad_accum \(<grad_accum>\) divisible by grad_accum // pp \(use a multiple of pp=<pp>\)"
        ),
        "reason_vpp_accum",
    ),
    (_p(r"ep=<ep> must be a multiple of cp=<cp> and divide dp_shard\*cp=<group> "), "reason_ep_fits"),
    (re.compile(r"expert parallelism \(ep > 1\) shards experts over dp_shard x cp"), "reason_ep_ddp"),
    (_p(r"ep=<ep> needs a mixture-of-experts model"), "reason_ep_dense"),
    (_p(r"num_experts <experts> is not divisible by ep=<ep>"), "reason_ep_experts"),
    (re.compile(r"expert parallelism \(ep > 1\) needs impl 'native'"), "reason_ep_native"),
    (re.compile(r"tensor parallelism of native MoE blocks"), "reason_moe_tp"),
    (re.compile(r"MoE expert weights .* do not shard evenly"), "reason_moe_shard"),
)

# A calibration file the app cannot use (planner/catalog/calibration.py, the catalog's rate checks
# in planner/catalog/hardware.py ``with_rates``); the last pattern catches any other refusal.
CALIBRATION_REASONS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"invalid TOML"), "reason_cal_toml"),
    (re.compile(r"unknown table\(s\) (?P<tables>.+) \(expected"), "reason_cal_unknown_table"),
    (re.compile(r"table \[(?P<table>[^\]]+)\]: missing or not a table"), "reason_cal_missing_table"),
    (re.compile(r"field 'machine\.(?P<field>\w+)': expected a non-empty string"), "reason_cal_machine"),
    (re.compile(r"unknown GPU '(?P<gpu>[^']+)'"), "reason_cal_gpu"),
    (re.compile(r"field '(?P<field>\w+)': not an achievable rate"), "reason_cal_field"),
    (re.compile(r"field '(?P<field>\w+)': expected at most (?P<ceiling>\w+) (?P<limit>[\d.]+), got (?P<value>\S+)"),
     "reason_cal_over"),
    (re.compile(r""), "reason_cal_other"),
)  # fmt: skip


def reason_key(message: str, patterns: tuple[tuple[re.Pattern[str], str], ...]) -> tuple[str, dict[str, str]]:
    """The label key of the first pattern the sentence matches and its figures; ``reason_other`` if none."""
    for pattern, key in patterns:
        found = pattern.search(message)
        if found:
            return key, found.groupdict()
    return "reason_other", {}


def reason_text(tr: Labels, message: str, patterns: tuple[tuple[re.Pattern[str], str], ...], **names: str) -> str:
    """The sentence in the page's language (English: the planner's own words); ``names`` fill the
    labels' other placeholders (the on-screen names of the fields a custom-model sentence cites)."""
    if tr.lang == "en":
        return message
    key, figures = reason_key(message, patterns)
    return tr(key, **names, **figures)
