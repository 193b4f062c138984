"""Sliding-window attention for trainplan's native decoder: banded SDPA, one block of ``window``
queries at a time over the keys of its block and the one before, under one shared mask, so
nothing grows as seq^2 (planner/model/block.py ``band_window_keys`` times it; trial s37)."""

from __future__ import annotations

import functools

import torch
import torch.nn.functional as F


@functools.lru_cache(maxsize=8)
def band_bias(window: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """``[window, 2 window]`` additive mask: query i' of a block attends to keys j' of its block
    and the one before (keys at j' - window of the block's start) with i' < j' <= i' + window, i.e.
    the causal window of the last ``window`` keys (as transformers' ``sliding_window_overlay``).
    Additive in the compute dtype and cached, so every layer's SDPA saves the same storage for
    backward (a boolean mask is converted, and saved, on every call): 2 window^2 elements in all
    (64 MiB in bf16 at a 4,096-token window)."""
    i = torch.arange(window, device=device)[:, None]
    j = torch.arange(2 * window, device=device)[None, :]
    allowed = (j > i) & (j <= i + window)
    return torch.zeros(allowed.shape, dtype=dtype, device=device).masked_fill(~allowed, float("-inf"))


def _key_bands(t: torch.Tensor, window: int, blocks: int) -> torch.Tensor:
    """``[batch, heads, blocks x window, dim]`` -> the keys of blocks c - 1 and c for c = 1 ..
    blocks - 1, ``[batch x (blocks - 1), heads, 2 window, dim]`` (a copy: the bands overlap)."""
    b, h, _, d = t.shape
    bands = t.unfold(2, 2 * window, window)  # [b, h, blocks - 1, d, 2w]
    return bands.permute(0, 2, 1, 4, 3).reshape(b * (blocks - 1), h, 2 * window, d)


def sliding_window_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, window: int, gqa: bool) -> torch.Tensor:
    """Causal attention within the last ``window`` keys on ``[batch, heads, seq, head_dim]``, one
    block of ``window`` queries at a time: the first block attends causally to itself, every later
    block to the keys of its block and the one before under one shared ``band_bias``, batched. Each
    later block computes all 2 window keys (the mask drops half: planner/model/block.py
    ``band_window_keys``); nothing grows as seq^2 (trial s37: the dense [seq, seq] mask this
    replaced was 16 GiB at 128K tokens, built on every call, and SDPA computed every tile of it)."""
    b, h, s, d = q.shape
    blocks = -(-s // window)
    pad = blocks * window - s  # padded keys come after every real query: the mask drops them
    first = F.scaled_dot_product_attention(
        q[:, :, :window], k[:, :, :window], v[:, :, :window], is_causal=True, enable_gqa=gqa
    )
    # (F.pad copies even by nothing: a whole number of windows keeps the inputs)
    qp, kp, vp = (F.pad(t, (0, 0, 0, pad)) if pad else t for t in (q, k, v))
    later = qp[:, :, window:].reshape(b, h, blocks - 1, window, d).transpose(1, 2).reshape(-1, h, window, d)
    out = F.scaled_dot_product_attention(
        later,
        _key_bands(kp, window, blocks),
        _key_bands(vp, window, blocks),
        attn_mask=band_bias(window, q.dtype, q.device),
        enable_gqa=gqa,
    )
    out = out.reshape(b, blocks - 1, h, window, d).transpose(1, 2).reshape(b, h, (blocks - 1) * window, d)
    return torch.cat([first, out[:, :, : s - window]], dim=2)
