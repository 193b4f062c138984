"""The FLOP cross-check of the NeMo-style held-out rows (validation/nemo_blackwell.py,
validation/mlperf.py): a row's own model FLOPs per token against the built model's, so a mis-read
model shows up as a ratio far from both Megatron conventions."""

from __future__ import annotations

from dataclasses import dataclass

from validation.flop_conventions import FlopConvention, model_flops_causal_per_token, model_flops_noncausal_per_token
from validation.nemo_blackwell import BlackwellRun


@dataclass(frozen=True)
class FlopCheck:
    """A row's published model TFLOP/s over its tokens/s (FLOPs per token, as its source
    counted them) against published_rows' two Megatron conventions for the built model."""

    run: BlackwellRun
    published_flops_per_token: float
    noncausal_flops_per_token: float
    causal_flops_per_token: float

    @property
    def ratio_noncausal(self) -> float:
        return self.published_flops_per_token / self.noncausal_flops_per_token

    @property
    def ratio_causal(self) -> float:
        return self.published_flops_per_token / self.causal_flops_per_token

    @property
    def nearest(self) -> FlopConvention:
        noncausal = abs(self.ratio_noncausal - 1) <= abs(self.ratio_causal - 1)
        return FlopConvention.MODEL_NONCAUSAL if noncausal else FlopConvention.MODEL_CAUSAL

    @property
    def deviation(self) -> float:
        """The nearer convention's ratio - 1: a few % at most unless the model is mis-read."""
        near = self.ratio_noncausal if self.nearest == FlopConvention.MODEL_NONCAUSAL else self.ratio_causal
        return near - 1


def flop_check(run: BlackwellRun) -> FlopCheck | None:
    """None where the row gives no TFLOP/s."""
    if run.measured_tflops_per_gpu is None:
        return None
    seq_len = run.training.seq_len
    return FlopCheck(
        run=run,
        published_flops_per_token=run.measured_tflops_per_gpu * 1e12 / run.measured_tokens_per_s_per_gpu,
        noncausal_flops_per_token=model_flops_noncausal_per_token(run.model, seq_len),
        causal_flops_per_token=model_flops_causal_per_token(run.model, seq_len),
    )
