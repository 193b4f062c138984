"""The structural rules a configuration must satisfy to exist and to run on trainplan's trainer.

One list, used three ways: vectorised over every candidate of the search (``planner/search.py``,
``planner/estimate.py``), and for one configuration with the message of the first rule it breaks
(``estimate``'s ValueError and the trainer's static check in ``trainer/probe.py``). Keeping them
in one place is what guarantees that the planner never proposes a plan the trainer refuses.
Device-specific checks (fp8 hardware, memory) stay in the trainer.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from planner.layout import Implementation
from planner.model_spec import ModelSpec

Rule = tuple[np.ndarray, Callable[[], str]]

# What trainplan's native decoder builds (trainer/model.py): field, the value it supports.
NATIVE_ARCHITECTURE = (("mlp", "swiglu"), ("norm", "rmsnorm"), ("position", "rope"), ("out_bias", False),
                       ("mlp_bias", False), ("norm_bias", False), ("embedding_norm", False), ("num_experts", 1))


def native_unsupported(model: ModelSpec) -> list[str]:
    """The model's features the native decoder lacks (``field=value``); empty for Llama-family
    models. The same blocks are what tensor parallelism of an HF model needs (q/k/v/o and
    gate/up/down projections)."""
    return [f"{field}={getattr(model, field)!r}" for field, supported in NATIVE_ARCHITECTURE
            if getattr(model, field) != supported]


def default_implementation(model: ModelSpec) -> Implementation:
    """The native trainer where it can build the model, Hugging Face transformers otherwise."""
    return Implementation.HF if native_unsupported(model) else Implementation.NATIVE


def structural_rules(model: ModelSpec, *, tp, pp, cp, seq_len, grad_accum, scaleup_domain_size,
                     hf, fp8, one_f_one_b, vpp=1) -> list[Rule]:
    """(ok, message) pairs in the order they are reported; arguments are scalars or equal-length
    arrays (``hf``, ``fp8``, ``one_f_one_b`` booleans). Messages are formatted only on demand."""
    hf, fp8, one_f_one_b = (np.asarray(v, dtype=bool) for v in (hf, fp8, one_f_one_b))

    def split(value: int, degree, what: str, axis: str) -> Rule:
        return value % degree == 0, lambda: f"{what} {value} is not divisible by {axis}={degree}"

    unsupported = native_unsupported(model)
    llama_family = not unsupported
    return [
        (hf | llama_family,
         lambda: f"the native trainer builds Llama-family models only ({', '.join(unsupported)}); use impl 'hf'"),
        (seq_len <= model.max_seq_len,
         lambda: f"seq_len {seq_len} exceeds the model's max_seq_len {model.max_seq_len} ({model.name})"),
        split(model.num_heads, tp, "num_heads", "tp"),
        split(model.num_kv_heads, tp, "num_kv_heads", "tp"),
        ((tp == 1) | ~hf | llama_family,
         lambda: f"tensor parallelism of a Hugging Face model needs Llama-style blocks ({', '.join(unsupported)})"),
        split(model.ffn_hidden_size, tp, "ffn_hidden_size", "tp"),
        split(model.vocab_size, tp, "vocab_size (vocabulary-parallel loss)", "tp"),
        ((tp == 1) | hf | (seq_len % tp == 0),
         lambda: f"seq_len (sequence parallelism) {seq_len} is not divisible by tp={tp}"),
        ((tp <= scaleup_domain_size) & (scaleup_domain_size % tp == 0),
         lambda: f"tp={tp} must fit inside one scale-up domain of {scaleup_domain_size} GPUs"),
        split(model.num_layers, pp, "num_layers", "pp"),
        ((pp == 1) | ~hf, lambda: "pipeline parallelism (pp > 1) needs impl 'native'"),
        ((pp == 1) | ~np.asarray(model.tied_embeddings),
         lambda: "pipeline parallelism with tied embeddings is not supported by the trainer "
                 "(embedding and LM head would live on different stages)"),
        ((pp == 1) | ~one_f_one_b | (grad_accum >= pp),
         lambda: f"the 1f1b schedule needs grad_accum >= pp ({grad_accum} < {pp}): raise grad_accum or use gpipe"),
        ((vpp == 1) | (model.num_layers % (pp * vpp) == 0),
         lambda: f"num_layers {model.num_layers} is not divisible by pp*vpp={pp * vpp} (interleaved stages)"),
        # torch's interleaved 1F1B runs grad_accum // pp rounds of equal size.
        ((vpp == 1) | (grad_accum % np.maximum(1, grad_accum // pp) == 0),
         lambda: f"the interleaved schedule needs grad_accum ({grad_accum}) divisible by grad_accum // pp "
                 f"(use a multiple of pp={pp})"),
        ((cp == 1) | ~hf, lambda: "context parallelism (cp > 1) needs impl 'native'"),
        ((cp == 1) | (seq_len % (2 * cp) == 0),
         lambda: f"seq_len (load-balanced context parallel) {seq_len} is not divisible by 2*cp={2 * cp}"),
        (~fp8 | (tp == 1), lambda: "fp8 with tensor parallelism is not supported by the trainer; use tp=1 or bf16"),
    ]


def structurally_valid(model: ModelSpec, **values) -> np.ndarray:
    """True where every rule holds (vectorised)."""
    ok = np.asarray(True)
    for rule_ok, _ in structural_rules(model, **values):
        ok = ok & rule_ok
    return ok


def first_structural_problem(model: ModelSpec, **values) -> str | None:
    """The message of the first rule one configuration breaks, or None."""
    values = {name: np.asarray(value).item() for name, value in values.items()}  # one row -> scalars
    for ok, message in structural_rules(model, **values):
        if not bool(np.all(ok)):
            return message()
    return None
