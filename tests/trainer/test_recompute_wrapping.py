"""Partial recompute in the trainer: ``blocks`` checkpoints the first N blocks of a pp rank,
``attention`` each block's attention sub-layer; neither changes the loss or the gradients, and a
job that asks for either trains as the plain one does."""

from __future__ import annotations

import pytest
import torch
from support.jobs import losses_by_step, tiny_spec, write_job

from planner.errors import ExitCode
from planner.layout import ActivationCheckpointing, Layout
from trainer.model import ModelArgs, Transformer, build_native_model, native_init_rule
from trainer.parallel import apply_activation_checkpointing, block_container, init_parameters, stage_ac_blocks
from trainer.train import main

WRAPPER = "CheckpointWrapper"


def wrapped_blocks(model: torch.nn.Module) -> list[bool]:
    return [type(b).__name__ == WRAPPER for b in block_container(model).children()]


def test_blocks_wraps_the_first_n_blocks_of_the_stage():
    model = build_native_model(tiny_spec(), 16)  # 4 blocks
    apply_activation_checkpointing(model, ActivationCheckpointing.BLOCKS, 3)
    assert wrapped_blocks(model) == [True, True, True, False]


def test_attention_wraps_each_blocks_attention_only():
    model = build_native_model(tiny_spec(), 16)
    apply_activation_checkpointing(model, ActivationCheckpointing.ATTENTION)
    assert wrapped_blocks(model) == [False] * 4
    blocks = list(block_container(model).children())
    assert all(type(b.attention).__name__ == WRAPPER for b in blocks)
    assert all(type(b.feed_forward).__name__ != WRAPPER for b in blocks)


def test_hf_blocks_attention_is_its_self_attn():
    pytest.importorskip("transformers")
    from trainer.hf_model import build_hf_model

    model = build_hf_model(tiny_spec(), None, seq_len=16)
    apply_activation_checkpointing(model, ActivationCheckpointing.ATTENTION)
    assert all(type(b.self_attn).__name__ == WRAPPER for b in block_container(model).children())


def test_a_ranks_blocks_are_its_first_stages_first():
    stages = [build_native_model(tiny_spec(num_layers=n), 16) for n in (3, 2, 3)]
    assert stage_ac_blocks(4, stages) == [3, 1, 0]
    assert stage_ac_blocks(0, stages) == [0, 0, 0]
    assert stage_ac_blocks(9, stages) == [3, 2, 3]


def loss_and_grads(mode: ActivationCheckpointing, blocks: int = 0) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    args = ModelArgs.from_spec(tiny_spec(), seq_len=16)
    model = Transformer(args)
    model.init_buffers(torch.device("cpu"))
    init_parameters(model, seed=3, rule=native_init_rule(args))
    apply_activation_checkpointing(model, mode, blocks)
    tokens = torch.randint(0, args.vocab_size, (2, 16), generator=torch.Generator().manual_seed(0))
    logits = model(tokens)
    loss = torch.nn.functional.cross_entropy(logits[:, :-1].flatten(0, 1).float(), tokens[:, 1:].flatten())
    loss.backward()
    # The wrapper's prefix is not part of a parameter's name (checkpoint_wrapper's state-dict hooks).
    grads = {n.replace("._checkpoint_wrapped_module", ""): p.grad for n, p in model.named_parameters()}
    return loss.detach(), grads


@pytest.mark.parametrize(
    ("mode", "blocks"), [(ActivationCheckpointing.BLOCKS, 2), (ActivationCheckpointing.ATTENTION, 0)]
)
def test_partial_recompute_keeps_loss_and_gradients(mode, blocks):
    reference_loss, reference = loss_and_grads(ActivationCheckpointing.NONE)
    loss, grads = loss_and_grads(mode, blocks)
    torch.testing.assert_close(loss, reference_loss, rtol=0, atol=0)
    assert grads.keys() == reference.keys()
    for name, grad in grads.items():
        torch.testing.assert_close(grad, reference[name], rtol=1e-6, atol=1e-7, msg=name)


def test_jobs_with_partial_recompute_train_like_the_plain_one(tmp_path, in_process):
    runs = {
        "plain": {},
        "blocks": dict(activation_checkpointing="blocks", ac_blocks=2),
        "attention": dict(activation_checkpointing="attention"),
    }
    losses = {}
    for name, training in runs.items():
        job = write_job(tmp_path / name, Layout(dp_shard=1), 1, steps=3, probe_steps=0, **training)
        assert main([str(job), "--device", "cpu"]) == ExitCode.OK
        losses[name] = losses_by_step(job)
    assert losses["blocks"] == pytest.approx(losses["plain"], abs=1e-6)
    assert losses["attention"] == pytest.approx(losses["plain"], abs=1e-6)


def test_hf_attention_recompute_keeps_loss_and_gradients():
    transformers = pytest.importorskip("transformers")
    from trainer.hf_model import config_from_spec

    def run(mode: ActivationCheckpointing) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        torch.manual_seed(0)
        model = transformers.AutoModelForCausalLM.from_config(
            config_from_spec(tiny_spec(), 16), attn_implementation="sdpa"
        )
        apply_activation_checkpointing(model, mode)
        tokens = torch.randint(0, 512, (2, 16), generator=torch.Generator().manual_seed(0))
        loss = model(input_ids=tokens, labels=tokens).loss
        loss.backward()
        return loss.detach(), {
            n.replace("._checkpoint_wrapped_module", ""): p.grad for n, p in model.named_parameters()
        }

    reference_loss, reference = run(ActivationCheckpointing.NONE)
    loss, grads = run(ActivationCheckpointing.ATTENTION)
    torch.testing.assert_close(loss, reference_loss, rtol=0, atol=0)
    for name, grad in grads.items():
        torch.testing.assert_close(grad, reference[name], rtol=1e-6, atol=1e-7, msg=name)
