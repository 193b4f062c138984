"""``sigma``, a new source's offset, is read within regimes (session 46): a source whose rows all
sit where the model errs carries its regime's error, which the band's centre already holds, so it
is not compared with sources of other regimes (bands.py ``source_sigma``)."""

from __future__ import annotations

import numpy as np

from planner.accuracy.bands import source_sigma
from planner.accuracy.residuals import HeldOutRow


def _row(source: str, error: float, num_gpus: int = 64, pp: int = 1) -> HeldOutRow:
    return HeldOutRow(
        dataset="t", source=source, release="", name=f"{source} {error}", stack="megatron-core", gpu="h100-sxm",
        generation="Hopper", num_gpus=num_gpus, tp=8, pp=pp, cp=1, ep=1, seq_len=4096, precision="bf16",
        moe=False, measured_mfu=0.4, error=error, fitted_error=error,
    )  # fmt: skip


def _sigma(rows: list[HeldOutRow]) -> float:
    return source_sigma(rows, np.log1p([r.error for r in rows]))


def test_sources_are_compared_within_one_regime_only():
    a = [_row("A", 0.0), _row("A", 0.02)]
    b = [_row("B", 0.10), _row("B", 0.12)]
    means = np.log1p([0.0, 0.02]).mean(), np.log1p([0.10, 0.12]).mean()
    assert _sigma(a + b) == np.std(means, ddof=1)  # one regime: their means' spread
    far = [_row("C", 0.25, num_gpus=4096, pp=12), _row("C", 0.27, num_gpus=4096, pp=12)]
    assert _sigma(a + far) == 0.0  # another regime (pp, > 1,000 GPUs): not an offset of C's own
    assert _sigma(a + b + far) == _sigma(a + b)
    assert _sigma([_row("A", 0.0), _row("B", 0.3)]) == 0.0  # a source of one row gives no mean
