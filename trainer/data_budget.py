"""What a job trains on against its token budget: the one rule emit and run say it by (runner53
H1: a 2T-token, 64-GPU job was written on synthetic data, or on a 4 MB corpus it would repeat
640,000 times, without a word)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from planner.fmt import counted
from trainer.job_spec import JobSpec

SYNTHETIC = "synthetic"


@dataclass(frozen=True)
class DataBudget:
    """A job's tokens (its steps x its global batch) against the training split of its data."""

    job_tokens: int
    steps: int
    planned: bool  # the plan has a token budget (``plan``), not only a step time (``estimate``)
    synthetic: bool
    train_tokens: int | None = None  # the corpus's training split; None: synthetic, or not counted yet

    @property
    def passes(self) -> float | None:
        """How many times the job reads its corpus's training split (None: not known)."""
        if self.synthetic or self.train_tokens is None:
            return None
        return self.job_tokens / max(1, self.train_tokens)

    @property
    def warns(self) -> bool:
        """Synthetic data for a plan's token budget, or a corpus the job reads more than once."""
        passes = self.passes
        return (self.synthetic and self.planned) or (passes is not None and passes > 1)

    def words(self, source: str) -> str | None:
        """One line for emit and run (None: nothing to say: synthetic data for a job without a
        token budget, a benchmark or a trial)."""
        tokens = f"the job's {self.job_tokens:,} tokens ({counted(self.steps, 'step')})"
        if self.synthetic:
            if not self.planned:
                return None
            return (
                f"warning: data: synthetic (random token sequences, the default): {tokens} train on no text;"
                " emit the job with --data DIR (text, jsonl or parquet files) to train on a corpus"
            )
        passes = self.passes
        if passes is None:
            return f"data: {source}: its training tokens are counted when run prepares it, against {tokens}"
        said = f"{passes:,.2f}" if passes < 10 else f"{passes:,.0f}"
        line = f"data: {tokens} are {said} passes over the corpus's {self.train_tokens:,} training tokens"
        if not self.warns:
            return line
        return f"warning: {line}: each token is trained on about {said} times; a larger corpus, or fewer --steps"


def data_budget(spec: JobSpec, train_tokens: int | None) -> DataBudget:
    """``spec``'s budget against ``train_tokens`` (the prepared training split; None: not counted)."""
    plan, run = spec.plan, spec.run
    return DataBudget(
        job_tokens=run.steps * plan.estimate.global_batch_tokens,
        steps=run.steps,
        planned=plan.training_tokens is not None,
        synthetic=run.data == SYNTHETIC,
        train_tokens=train_tokens,
    )


def prepared_train_tokens(job_dir: Path, spec: JobSpec) -> int | None:
    """The training tokens of shards already prepared in ``job_dir`` from the job's data and
    tokenizer (a cheap read of data/meta.json, for emit); None where there are none."""
    from trainer.corpus import Tokenizer
    from trainer.data_meta import read_meta

    run = spec.run
    if run.data == SYNTHETIC:
        return None
    try:
        meta = read_meta(job_dir / "data")
        if meta is None or meta.get("source") != run.data:
            return None
        if meta.get("tokenizer_digest") != Tokenizer(run.tokenizer).digest:
            return None
        return int(meta["splits"]["train"]["num_tokens"])
    except (OSError, ValueError, KeyError, TypeError):
        return None  # unreadable shards: run prepares them again and says so there
