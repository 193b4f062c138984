"""The LM head + cross-entropy, without the fp32 full-vocabulary logits.

``F.cross_entropy(logits.float(), labels)`` on the whole micro-batch holds, at the loss
backward, the saved fp32 log-softmax, its incoming gradient and the result: 12 bytes per
logit, ``micro_batch x seq x vocab`` of them (13.8 GiB for MPT-7B at 48 x 512 tokens).
:class:`ChunkedLinearCrossEntropy` computes the head and the loss over ``chunk_tokens`` tokens
at a time instead:

* forward: per chunk, the logits in the compute dtype (``hidden @ W^T``), their fp32
  log-sum-exp and the target logit; it keeps only the fp32 log-sum-exp per token (and the
  head's input, which the unchunked head keeps too);
* backward: per chunk, the logits again (one more head forward GEMM, the only recompute),
  ``softmax - onehot`` in fp32 scaled by the incoming gradient, cast to the compute dtype, then
  ``dhidden = dlogits W`` and ``dW += dlogits^T hidden`` (accumulated in the weight's dtype,
  as Liger-Kernel's fused linear cross-entropy does).

So at most one chunk's logits exist at a time (``chunk_tokens x vocab``, bf16 + fp32). The
trainer uses it whenever the LM head is not tensor-parallel (tp = 1); with tp > 1 the native
head is column-parallel with torch's vocabulary-parallel ``loss_parallel`` (logits split by
tp, never gathered), which this does not chunk. ``RunSettings.loss_chunk_tokens = 0`` turns it
off (the planner's ``ModelingSettings.loss_chunk_tokens`` models the same choice).
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

IGNORE_INDEX = -100


def cross_entropy(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Mean next-token loss in fp32 (``labels`` are already shifted by the data loader)."""
    return F.cross_entropy(logits.flatten(0, 1).float(), labels.flatten(0, 1), ignore_index=IGNORE_INDEX)


class ChunkedLinearCrossEntropy(torch.autograd.Function):
    """``cross_entropy(hidden @ weight^T, labels)`` (mean over labels != IGNORE_INDEX) by chunks
    of tokens; ``hidden`` ``[tokens, d]``, ``weight`` ``[vocab, d]``, ``labels`` ``[tokens]``."""

    @staticmethod
    def forward(ctx: Any, hidden: torch.Tensor, weight: torch.Tensor, labels: torch.Tensor, chunk: int) -> torch.Tensor:
        valid = labels != IGNORE_INDEX
        targets = labels.masked_fill(~valid, 0)
        lse = torch.empty(labels.shape, dtype=torch.float32, device=hidden.device)
        total = torch.zeros((), dtype=torch.float32, device=hidden.device)
        for start in range(0, hidden.shape[0], chunk):
            end = start + chunk
            logits = F.linear(hidden[start:end], weight).float()
            lse[start:end] = torch.logsumexp(logits, dim=-1)
            picked = logits.gather(1, targets[start:end, None]).squeeze(1)
            total += ((lse[start:end] - picked) * valid[start:end]).sum()
            del logits
        count = valid.sum().float()  # 0 valid labels: nan, as F.cross_entropy gives
        ctx.save_for_backward(hidden, weight, targets, valid, lse, count)
        ctx.chunk = chunk
        return total / count

    @staticmethod
    def backward(ctx: Any, *grad_outputs: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        (grad_output,) = grad_outputs
        hidden, weight, targets, valid, lse, count = ctx.saved_tensors
        scale = grad_output.float() / count
        want_hidden, want_weight = ctx.needs_input_grad[0], ctx.needs_input_grad[1]
        grad_hidden = torch.empty_like(hidden) if want_hidden else None
        grad_weight = torch.zeros_like(weight) if want_weight else None
        for start in range(0, hidden.shape[0], ctx.chunk):
            end = start + ctx.chunk
            h = hidden[start:end]
            # softmax - onehot, in place on the recomputed fp32 logits
            probs = F.linear(h, weight).float().sub_(lse[start:end, None]).exp_()
            probs.scatter_add_(1, targets[start:end, None], torch.full_like(probs[:, :1], -1.0))
            probs.mul_((valid[start:end] * scale)[:, None])
            dlogits = probs.to(hidden.dtype)
            del probs
            if grad_hidden is not None:
                torch.mm(dlogits, weight.to(hidden.dtype), out=grad_hidden[start:end])
            if grad_weight is not None:
                grad_weight.addmm_(dlogits.t().to(weight.dtype), h.to(weight.dtype))
        return grad_hidden, grad_weight, None, None


def linear_cross_entropy(
    hidden: torch.Tensor, weight: torch.Tensor, labels: torch.Tensor, chunk_tokens: int
) -> torch.Tensor:
    """The LM head and mean loss of ``hidden`` ``[batch, seq, d]``: chunked when
    ``chunk_tokens > 0``, else through the full fp32 logits (the reference)."""
    if chunk_tokens <= 0:
        return cross_entropy(F.linear(hidden, weight), labels)
    return ChunkedLinearCrossEntropy.apply(hidden.flatten(0, 1), weight, labels.flatten(0, 1), chunk_tokens)


def _identity(x: torch.Tensor) -> torch.Tensor:
    """The detached HF head's forward: its input, as a tensor of its own. transformers feeds the head
    ``hidden_states[:, slice(0, None), :]``, a view covering the whole tensor, and FSDP2 warns at every
    start that the root module "returned a view tensor" (trial s47: two lines per run with --impl hf).
    Such a view is its base, element for element, so the base goes on (no copy; gradients the same)."""
    base = x._base
    if type(x) is torch.Tensor and base is not None and _same_layout(x, base):
        return base
    return x


def _same_layout(x: torch.Tensor, base: torch.Tensor) -> bool:
    return (x.shape, x.stride(), x.storage_offset(), x.dtype) == (
        base.shape,
        base.stride(),
        base.storage_offset(),
        base.dtype,
    )


def head_module(module: nn.Module) -> nn.Module | None:
    """The LM head of a native model or stage (``output``; None off the last stage) or of an HF
    causal LM (``get_output_embeddings()``)."""
    head: object
    if hasattr(module, "args") and hasattr(module, "output"):
        head = module.output
    else:
        get = getattr(module, "get_output_embeddings", None)
        head = get() if get is not None else None
    return head if isinstance(head, nn.Module) else None


def detach_head(module: nn.Module) -> bool:
    """Make ``module`` end at the LM head's input (the final-norm output): the native model
    skips ``output``; an HF model's head forward becomes the identity, so its ``logits`` field
    carries the hidden states. The head's weight stays where it is (same parameter name, same
    FSDP group). False when the module holds no head (or a biased one, which is left as it is)."""
    head = head_module(module)
    if head is None or getattr(head, "bias", None) is not None:
        return False
    if hasattr(module, "args"):
        setattr(module, "skip_head", True)  # noqa: B010 (trainer.model.Transformer's flag)
    else:
        head.forward = _identity
    return True


class LossHead:
    """The loss of a model output: the full-logits cross-entropy, or, when the head is detached
    (``chunk_tokens > 0``), the chunked head + cross-entropy on the hidden states. The head's
    weight is read at every call: FSDP swaps sharded and gathered parameters in place."""

    def __init__(self, module: nn.Module | None, chunk_tokens: int):
        self.module, self.chunk_tokens = module, chunk_tokens if module is not None else 0

    @property
    def chunked(self) -> bool:
        return self.chunk_tokens > 0

    def __call__(self, output: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        head = head_module(self.module) if self.module is not None and self.chunked else None
        if head is None:
            return cross_entropy(output, labels)
        assert isinstance(head.weight, torch.Tensor)
        return linear_cross_entropy(output, head.weight, labels, self.chunk_tokens)


def chunk_tokens_for(requested: int, tp: int) -> int:
    """The chunk the trainer uses: the run's ``loss_chunk_tokens``, or 0 (full logits, vocabulary-
    parallel) when the head is tensor-parallel. planner/model/memory.py applies the same rule."""
    return requested if tp == 1 else 0


def build_loss_head(stage_modules: list[nn.Module], chunk_tokens: int) -> LossHead:
    """The loss of this rank's last stage (the module holding the LM head, if any), its head
    detached when chunking."""
    module = next((m for m in stage_modules if head_module(m) is not None), None)
    if module is None or chunk_tokens <= 0 or not detach_head(module):
        return LossHead(module, 0)
    return LossHead(module, chunk_tokens)
