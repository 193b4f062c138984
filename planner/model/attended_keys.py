"""Key positions a query attends, per block kind: full, sliding-window, banded window (trainplan's
kernel) and chunked attention; what attention's FLOPs and bytes are counted over
(planner/model/flops.py)."""

from __future__ import annotations

import numpy as np

from planner.model.shape import ModelShape


def attended_keys(model: ModelShape, seq_len, causal: bool):
    """Key positions per query summed over the blocks (a number or an array over ``seq_len``).

    Full attention: ``seq_len`` per block (half when counted causally, the planner's
    convention). A block with a sliding window of w attends min(seq, w) keys; counted causally
    a query i sees min(i + 1, w), on average w - w^2 / (2 seq) once seq > w. A chunked block
    (Llama 4) attends within its chunk (``chunked_keys``). A kernel that skips the blocks outside
    the window or chunk is assumed (FlashAttention-2 ``window_size``, FlexAttention).
    """
    full = model.num_layers - model.sliding_layers - model.chunked_layers
    if not model.sliding_layers and not model.chunked_layers:
        return full * (0.5 * seq_len if causal else seq_len)
    seq = np.asarray(seq_len, dtype=float)
    keys = full * (0.5 * seq if causal else seq)
    if model.sliding_layers:
        keys = keys + model.sliding_layers * window_keys(float(model.sliding_window or 0), seq, causal)
    if model.chunked_layers:
        keys = keys + model.chunked_layers * chunked_keys(float(model.attention_chunk or 0), seq, causal)
    return keys


def window_keys(window: float, seq, causal: bool):
    """Keys per query of a sliding-window block (``attended_keys``): min(seq, w); counted
    causally, a query i sees min(i + 1, w), on average w - w^2 / (2 seq) once seq > w."""
    seq = np.asarray(seq, dtype=float)
    if not causal:
        return np.minimum(seq, window)
    return np.where(seq <= window, 0.5 * seq, window - window * window / (2.0 * np.maximum(seq, 1.0)))


def band_window_keys(window: float, seq, causal: bool):
    """Keys per query trainplan's banded window attention computes (trainer/sliding_window.py
    ``sliding_window_attention``): the first w queries attend causally within their block, every
    later one all 2w keys of its block and the one before (its mask drops half of them, the
    kernel computes them), padded to whole blocks (review s37: the padded last block's rows were
    left out, 1.8x too few for Phi-3-mini at 4,096 tokens): (w k_0 + (ceil(s / w) - 1) w 2w) / s,
    k_0 = w / 2 counted causally; a sequence within the window is plain causal attention."""
    seq = np.asarray(seq, dtype=float)
    first = 0.5 * window if causal else window
    later = np.maximum(np.ceil(seq / max(window, 1.0)) - 1.0, 0.0) * window
    band = (window * first + later * 2.0 * window) / np.maximum(seq, 1.0)
    return np.where(seq <= window, 0.5 * seq if causal else seq, band)


def chunked_keys(chunk: float, seq, causal: bool):
    """Keys per query of a chunked-attention block (Llama 4's ``attention_chunk_size``): a query
    sees only the keys of its own ``chunk``-token chunk. Counted causally (half of each chunk's
    square, the planner's convention), a sequence of n whole chunks and r leftover tokens averages
    (n c^2 + r^2) / (2 s); otherwise min(s, c), the chunk the kernel computes."""
    if not causal:
        return np.minimum(seq, chunk)
    whole = np.floor(seq / chunk)
    rest = seq - whole * chunk
    return (whole * chunk * chunk + rest * rest) / (2.0 * np.maximum(seq, 1.0))
