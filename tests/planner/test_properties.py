"""Property-based tests: for any input, the planner answers or names the bad field.

Never an uncaught exception, NaN, negative memory or negative time (issue #5).
"""

import json
import math

import pytest

pytest.importorskip("hypothesis", reason="the [test] extra's hypothesis runs the property tests")
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from planner.api import PlanRequest, plan
from planner.catalog.hardware import load_catalog
from planner.catalog.models import model_from_hf_config
from planner.errors import InfeasiblePlan
from planner.layout import ActivationCheckpointing, Layout, Precision, Sharding, TrainingConfig
from planner.model.estimate import estimate
from planner.model.spec import ModelSpec

CATALOG = load_catalog()
GPU_IDS = sorted(CATALOG.gpus)
small_int = st.integers(min_value=-4, max_value=4096)


def finite_nonnegative(*values: float) -> bool:
    return all(math.isfinite(v) and v >= 0 for v in values)


@st.composite
def model_specs(draw):
    heads = draw(st.sampled_from([1, 2, 4, 8, 16, 32, 64]))
    return dict(
        name="m",
        num_layers=draw(st.integers(-1, 200)),
        hidden_size=heads * draw(st.integers(0, 256)),
        ffn_hidden_size=draw(st.integers(-1, 60000)),
        num_heads=heads,
        num_kv_heads=draw(st.sampled_from([1, 2, 4, heads, 3])),
        vocab_size=draw(st.integers(-1, 300000)),
        mlp=draw(st.sampled_from(["swiglu", "gelu"])),
        norm=draw(st.sampled_from(["rmsnorm", "layernorm"])),
        num_experts=draw(st.sampled_from([1, 8])),
        experts_per_token=draw(st.sampled_from([1, 2])),
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    spec=model_specs(),
    gpu=st.sampled_from(GPU_IDS),
    num_gpus=small_int,
    tp=small_int,
    pp=small_int,
    cp=st.integers(-1, 8),
    sharding=st.sampled_from(list(Sharding)),
    micro_batch=st.integers(-1, 64),
    seq_len=st.integers(-1, 131072),
    grad_accum=st.integers(-1, 64),
    ac=st.sampled_from(list(ActivationCheckpointing)),
    precision=st.sampled_from(list(Precision)),
    offload=st.booleans(),
)
def test_estimate_answers_or_raises_value_error(
    spec, gpu, num_gpus, tp, pp, cp, sharding, micro_batch, seq_len, grad_accum, ac, precision, offload
):
    try:
        model = ModelSpec(**spec)
        layout = Layout(tp=tp, pp=pp, cp=cp, sharding=sharding)
        training = TrainingConfig(
            seq_len=seq_len,
            micro_batch=micro_batch,
            grad_accum=grad_accum,
            activation_checkpointing=ac,
            precision=precision,
            offload=offload,
        )
        e = estimate(model, gpu, layout, training, num_gpus=num_gpus, catalog=CATALOG, training_tokens=1e9)
    except ValueError as exc:  # includes pydantic's ValidationError
        assert str(exc).strip()
        return
    assert finite_nonnegative(
        e.memory.peak_gib,
        e.memory.reserved_gib,
        e.time.step_s,
        e.throughput.tokens_per_s,
        *dict(e.memory.breakdown_gib).values(),
        *dict(e.time.breakdown_s).values(),
    )
    assert e.time.step_s > 0 and e.memory.peak_gib > 0
    assert 0 <= e.throughput.mfu <= 1.0 and e.throughput.hfu >= e.throughput.mfu - 1e-12
    assert e.feasible == (e.reason is None)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    model=st.sampled_from(["tiny", "llama3.2-1b", "gpt3-1.3b", "mixtral-8x7b", "llama3-70b"]),
    tokens=st.one_of(st.floats(min_value=-1e12, max_value=1e13), st.just(float("nan")), st.just(float("inf"))),
    deadline=st.one_of(st.none(), st.floats(min_value=-5, max_value=400)),
    budget=st.one_of(st.none(), st.floats(min_value=-1, max_value=1e7)),
    gpus=st.one_of(
        st.none(),
        st.dictionaries(st.sampled_from([*GPU_IDS, "bogus"]), st.one_of(st.none(), st.integers(-2, 512)), max_size=3),
    ),
    seq_len=st.sampled_from([0, 128, 2048, 8192, 32768]),
)
def test_plan_answers_or_raises_value_error(model, tokens, deadline, budget, gpus, seq_len):
    from planner.catalog.models import get_preset

    try:
        request = PlanRequest(
            model=get_preset(model),
            training_tokens=tokens,
            deadline_days=deadline,
            budget_usd=budget,
            gpus=gpus,
            seq_len=seq_len,
            top_k=2,
        )
        result = plan(request)
    except InfeasiblePlan as exc:
        assert exc.constraint and exc.fix and str(exc).count("\n") == 0
        return
    except ValueError as exc:
        assert str(exc).strip()
        return
    e = result.plan.estimate
    assert e.feasible
    assert finite_nonnegative(e.cost_usd, e.time_to_train_h, e.memory.reserved_gib)
    if deadline is not None:
        assert e.time_to_train_h <= deadline * 24 * (1 + 1e-9)
    if budget is not None:
        assert e.cost_usd <= budget * (1 + 1e-9)


json_values = st.recursive(
    st.one_of(
        st.none(), st.booleans(), st.integers(-(10**12), 10**12), st.floats(allow_nan=False), st.text(max_size=8)
    ),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=10,
)
KEYS = [
    "model_type",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "intermediate_size",
    "vocab_size",
    "n_embd",
    "n_layer",
    "n_head",
    "d_model",
    "n_heads",
    "n_layers",
    "tie_word_embeddings",
    "num_local_experts",
    "num_experts_per_tok",
    "head_dim",
    "max_position_embeddings",
]


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(
    config=st.dictionaries(
        st.sampled_from(KEYS),
        st.one_of(
            st.sampled_from(["llama", "mistral", "qwen2", "gpt2", "gpt_neox", "mpt", "bloom", "mixtral", "t5"]),
            st.integers(-3, 70000),
            json_values,
        ),
        max_size=12,
    )
)
def test_config_reader_answers_or_names_the_problem(tmp_path_factory, config):
    path = tmp_path_factory.mktemp("cfg") / "config.json"
    path.write_text(json.dumps(config))
    try:
        spec = model_from_hf_config(path)
    except ValueError as exc:
        message = str(exc)
        assert str(path) in message and "\n" not in message.strip()
        return
    assert spec.num_params() > 0
    assert spec.num_layers >= 1 and spec.hidden_size >= 1 and spec.vocab_size >= 1


def test_validation_errors_are_value_errors():
    assert issubclass(ValidationError, ValueError)
