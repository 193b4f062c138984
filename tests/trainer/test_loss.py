"""The chunked LM head + cross-entropy (trainer/loss.py) against the full-logits reference."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from support.jobs import Run, finished, launch_runs, losses_by_step, tiny_spec

from planner.layout import Layout
from planner.model.settings import DEFAULT_SETTINGS
from trainer.job_spec import RunSettings
from trainer.loss import (
    IGNORE_INDEX,
    LossHead,
    build_loss_head,
    chunk_tokens_for,
    cross_entropy,
    linear_cross_entropy,
)
from trainer.model import ModelArgs, Transformer, native_init_rule
from trainer.parallel import init_parameters


def _inputs(dtype, tokens=(3, 7), dim=16, vocab=50, seed=0):
    g = torch.Generator().manual_seed(seed)
    hidden = torch.randn(*tokens, dim, generator=g, dtype=dtype).requires_grad_()
    weight = (torch.randn(vocab, dim, generator=g, dtype=dtype) * 0.3).requires_grad_()
    labels = torch.randint(0, vocab, tokens, generator=g)
    labels[0, :3] = IGNORE_INDEX
    return hidden, weight, labels


def _loss_and_grads(hidden, weight, labels, chunk, grad_out=2.0):
    hidden.grad = weight.grad = None
    loss = linear_cross_entropy(hidden, weight, labels, chunk)
    loss.backward(torch.tensor(grad_out, dtype=loss.dtype))
    return loss.detach(), hidden.grad.clone(), weight.grad.clone()


@pytest.mark.parametrize("chunk", [1, 4, 5, 21, 1024])  # one token, divisor, ragged, exact, one chunk
def test_chunked_loss_and_gradients_equal_the_full_logits_reference(chunk):
    hidden, weight, labels = _inputs(torch.float64)
    ref = _loss_and_grads(hidden, weight, labels, 0)
    got = _loss_and_grads(hidden, weight, labels, chunk)
    for a, b in zip(got, ref, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-7)  # the fp32 log-softmax of both


def test_chunked_loss_in_bf16_follows_the_reference():
    hidden, weight, labels = _inputs(torch.bfloat16, tokens=(2, 64), dim=32, vocab=300)
    ref = _loss_and_grads(hidden, weight, labels, 0)
    got = _loss_and_grads(hidden, weight, labels, 16)
    torch.testing.assert_close(got[0], ref[0], rtol=1e-3, atol=1e-3)
    for a, b in zip(got[1:], ref[1:], strict=True):
        torch.testing.assert_close(a.float(), b.float(), rtol=2e-2, atol=2e-3)


def test_all_labels_ignored_gives_nan_like_torch():
    hidden, weight, labels = _inputs(torch.float32)
    labels.fill_(IGNORE_INDEX)
    assert linear_cross_entropy(hidden, weight, labels, 4).isnan()
    assert linear_cross_entropy(hidden, weight, labels, 0).isnan()


def test_no_grad_evaluation_matches():
    hidden, weight, labels = _inputs(torch.float32)
    with torch.no_grad():
        chunked = linear_cross_entropy(hidden, weight, labels, 4)
    assert chunked.item() == pytest.approx(linear_cross_entropy(hidden, weight, labels, 0).item(), rel=1e-6)


def _native(tied: bool) -> Transformer:
    model = Transformer(ModelArgs.from_spec(tiny_spec(num_layers=2, tied_embeddings=tied), seq_len=16))
    init_parameters(model, 1234, native_init_rule(model.args))
    return model.double()


@pytest.mark.parametrize("tied", [False, True])
def test_native_model_with_detached_head_trains_like_the_full_logits_model(tied):
    """Same loss and the same gradient for every parameter (the head's included, tied or not)."""
    tokens = torch.randint(0, 512, (2, 16), generator=torch.Generator().manual_seed(1))
    labels = tokens.roll(-1, dims=1)
    reference, chunked = _native(tied), _native(tied)
    ref_loss = cross_entropy(reference(tokens), labels)
    ref_loss.backward()
    head = build_loss_head([chunked], chunk_tokens=5)
    assert head.chunked and chunked.skip_head
    output = chunked(tokens)
    assert output.shape == (2, 16, chunked.args.hidden_size)  # no logits
    loss = head(output, labels)
    loss.backward()
    assert loss.item() == pytest.approx(ref_loss.item(), rel=1e-6)  # both fp32 log-softmax
    ref_grads = dict(reference.named_parameters())
    for name, param in chunked.named_parameters():
        torch.testing.assert_close(param.grad, ref_grads[name].grad, rtol=1e-5, atol=1e-7, msg=name)


def test_hf_model_head_is_detached_and_matches():
    transformers = pytest.importorskip("transformers")
    config = transformers.LlamaConfig(
        vocab_size=128,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=4,
        num_key_value_heads=2,
        use_cache=False,
    )
    torch.manual_seed(0)
    reference = transformers.LlamaForCausalLM(config).double()
    chunked = transformers.LlamaForCausalLM(config).double()
    chunked.load_state_dict(reference.state_dict())
    tokens = torch.randint(0, 128, (2, 12))
    labels = tokens.roll(-1, dims=1)
    ref_loss = cross_entropy(reference(input_ids=tokens).logits, labels)
    ref_loss.backward()
    head = build_loss_head([chunked], chunk_tokens=7)
    assert head.chunked
    output = chunked(input_ids=tokens).logits
    assert output.shape[-1] == 32  # hidden states, not logits
    assert output._base is None  # not a view, which FSDP2 warned about (trial s47)
    loss = head(output, labels)
    loss.backward()
    assert loss.item() == pytest.approx(ref_loss.item(), rel=1e-6)  # both fp32 log-softmax
    torch.testing.assert_close(chunked.lm_head.weight.grad, reference.lm_head.weight.grad, rtol=1e-5, atol=1e-7)
    torch.testing.assert_close(
        chunked.model.embed_tokens.weight.grad, reference.model.embed_tokens.weight.grad, rtol=1e-5, atol=1e-7
    )


def test_off_and_tensor_parallel_keep_the_full_logits_loss():
    model = _native(False)
    assert not build_loss_head([model], chunk_tokens=0).chunked and not model.skip_head
    assert chunk_tokens_for(1024, tp=2) == 0 and chunk_tokens_for(1024, tp=1) == 1024
    assert not LossHead(None, 1024).chunked  # a stage without the head never computes a loss


def test_planner_models_the_trainers_default_chunk():
    assert DEFAULT_SETTINGS.loss_chunk_tokens == RunSettings().loss_chunk_tokens


COMMON = dict(seq_len=32, micro_batch=1, lr=3e-3, warmup_steps=2, min_lr_ratio=1.0, probe_steps=0, steps=6)


# FSDP over 2 gloo ranks and a 2-stage pipeline (the loss on the last stage), each with chunks
# of 8 tokens (4 per micro-batch) and with the full-logits loss (0).
LAYOUTS = {"fsdp2": (Layout(dp_shard=2), 2), "pp2-1f1b": (Layout(dp_shard=1, pp=2, pp_schedule="1f1b"), 4)}
RUNS = {
    f"{name}-chunk{chunk}": Run(layout, 2, grad_accum, dict(loss_chunk_tokens=chunk, **COMMON))
    for name, (layout, grad_accum) in LAYOUTS.items()
    for chunk in (0, 8)
}


@pytest.fixture(scope="module")
def launched(tmp_path_factory) -> dict[str, Path]:
    """The four runs in one torchrun launch (support/job_batch.py)."""
    return launch_runs(tmp_path_factory.mktemp("loss"), RUNS)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(LAYOUTS))
def test_chunked_loss_on_two_ranks_follows_the_full_logits_run(name, launched):
    """The chunked loss on 2 gloo ranks follows the same job with the full-logits loss."""
    full, chunked = (losses_by_step(finished(launched, f"{name}-chunk{chunk}")) for chunk in (0, 8))
    assert sorted(chunked) == list(range(1, 7))
    worst = max(abs(chunked[s] - full[s]) for s in full)
    assert worst <= 1e-4, f"chunked run differs from the full-logits run by {worst:.2e}"
