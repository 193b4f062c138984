"""Per-rank resumable loaders over the prepared splits (trainer/data.py makes them).

``build_loader`` gives each data-parallel rank its own disjoint, seeded, resumable stream of
``(input_ids, labels)`` batches from one split: non-overlapping windows of the packed shards, or,
for ``run.data == "synthetic"``, tokens generated from the seed and the sequence's global index,
so every rank and every resume sees the same data.

Loading runs in the calling process: a batch is one fancy-index into a memory map, far cheaper
than a training step, so worker processes would add nothing but resume bookkeeping.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import torch

from trainer.data import (
    SPLIT_IDS,
    SYNTHETIC_FOLLOW_PROB,
    SYNTHETIC_STRIDE_STREAM,
    check_split,
    synthetic_fingerprint,
)
from trainer.data_meta import read_meta
from trainer.job_spec import RunSettings

log = logging.getLogger(__name__)


class _PackedSequences:
    """Non-overlapping windows of ``seq_len + 1`` tokens over one split's token stream."""

    def __init__(self, path: Path, dtype: str, num_tokens: int, seq_len: int, vocab_size: int):
        self.path, self.seq_len, self.vocab_size = path, seq_len, vocab_size
        self.tokens = (
            np.memmap(path, dtype=np.dtype(dtype), mode="r", shape=(num_tokens,))
            if num_tokens
            else np.zeros(0, dtype=np.dtype(dtype))
        )
        self.num_sequences = max(0, (num_tokens - 1) // seq_len)

    def get(self, indices: np.ndarray) -> np.ndarray:
        window = indices[:, None] * self.seq_len + np.arange(self.seq_len + 1)
        tokens = np.asarray(self.tokens[window], dtype=np.int64)
        # Shards are hashed when prepared; this catches what changes them later (an embedding
        # lookup out of range is an IndexError deep in the model, or a device-side assert).
        if tokens.size and int(tokens.max()) >= self.vocab_size:
            raise ValueError(
                f"{self.path}: token id {int(tokens.max())} is outside the vocabulary of {self.vocab_size}; the"
                f" prepared data is damaged: delete {self.path.parent} and run again to prepare it"
            )
        return tokens


class _SyntheticSequences:
    """Infinite: sequence ``g`` is a pure function of (seed, split, g)."""

    num_sequences = None

    def __init__(self, seed: int, split: str, vocab_size: int, seq_len: int):
        self.seed, self.split_id, self.vocab_size, self.seq_len = seed, SPLIT_IDS[split], vocab_size, seq_len
        # One stride per seed and vocabulary, shared by all sequences, so it can be learned.
        stride_rng = np.random.default_rng([seed, SYNTHETIC_STRIDE_STREAM])
        self.stride = 1 + int(stride_rng.integers(vocab_size - 1)) if vocab_size > 1 else 0

    def get(self, indices: np.ndarray) -> np.ndarray:
        length = self.seq_len + 1
        positions = np.arange(length)
        rows = []
        for index in indices:
            rng = np.random.default_rng([self.seed, self.split_id, int(index)])
            random_tokens = rng.integers(0, self.vocab_size, length)
            starts = rng.random(length) >= SYNTHETIC_FOLLOW_PROB
            starts[0] = True
            run_start = np.maximum.accumulate(np.where(starts, positions, 0))
            rows.append((random_tokens[run_start] + self.stride * (positions - run_start)) % self.vocab_size)
        return np.stack(rows).astype(np.int64)


class ResumableLoader:
    """Batches of one rank; ``state_dict`` = (epoch, position) so a resume continues exactly.

    Epoch ``e`` visits the split's sequences in a permutation seeded by (seed, split, e); rank
    ``r`` of ``n`` takes every n-th entry starting at r, truncated so every rank has the same
    number of batches (collectives stay in step). Iteration never ends: after the last full
    batch the next epoch starts.
    """

    def __init__(
        self,
        source,
        *,
        split: str,
        seed: int,
        micro_batch: int,
        dp_rank: int,
        dp_size: int,
        fingerprint: str,
        pin_memory: bool = False,
    ):
        self.source, self.split, self.seed = source, split, seed
        self.micro_batch, self.dp_rank, self.dp_size = micro_batch, dp_rank, dp_size
        self.fingerprint, self.pin_memory = fingerprint, pin_memory
        self.epoch, self.position = 0, 0
        self._order_epoch, self._order = -1, np.zeros(0, dtype=np.int64)

    @property
    def batches_per_epoch(self) -> int | None:
        if self.source.num_sequences is None:
            return None
        return self.source.num_sequences // self.dp_size // self.micro_batch

    def _rank_order(self) -> np.ndarray:
        if self._order_epoch != self.epoch:
            rng = np.random.default_rng([self.seed, SPLIT_IDS[self.split], self.epoch])
            batches_per_epoch = self.batches_per_epoch
            assert batches_per_epoch is not None  # next_indices orders finite sources only
            usable = batches_per_epoch * self.micro_batch * self.dp_size
            self._order = rng.permutation(self.source.num_sequences)[self.dp_rank : usable : self.dp_size]
            self._order_epoch = self.epoch
        return self._order

    def next_indices(self) -> np.ndarray:
        """Sequence indices of the next batch; advances the state."""
        if self.batches_per_epoch is None:
            first = (self.position * self.dp_size + self.dp_rank) * self.micro_batch
            indices = np.arange(first, first + self.micro_batch)
        else:
            if self.position >= self.batches_per_epoch:
                self.epoch, self.position = self.epoch + 1, 0
            begin = self.position * self.micro_batch
            indices = self._rank_order()[begin : begin + self.micro_batch]
        self.position += 1
        return indices

    def __iter__(self) -> ResumableLoader:
        return self

    def __next__(self) -> tuple[torch.Tensor, torch.Tensor]:
        window = torch.from_numpy(self.source.get(self.next_indices()))
        inputs, labels = window[:, :-1].contiguous(), window[:, 1:].contiguous()
        if self.pin_memory and torch.cuda.is_available():
            inputs, labels = inputs.pin_memory(), labels.pin_memory()
        return inputs, labels

    def state_dict(self) -> dict:
        return {
            "version": 1,
            "split": self.split,
            "seed": self.seed,
            "epoch": self.epoch,
            "position": self.position,
            "micro_batch": self.micro_batch,
            "dp_size": self.dp_size,
            "seq_len": self.source.seq_len,
            "fingerprint": self.fingerprint,
        }

    def load_state_dict(self, state: dict) -> None:
        """Continue from ``state``. Exact when data, seq_len, batch and dp size are unchanged."""
        if state.get("split") != self.split:
            raise ValueError(f"loader state is for split {state.get('split')!r}, not {self.split!r}")
        self.epoch = int(state["epoch"])
        if (
            state.get("fingerprint") != self.fingerprint
            or state.get("seq_len") != self.source.seq_len
            or state.get("seed") != self.seed
        ):
            log.warning(
                f"data: the {self.split} data, seq_len or seed changed since this state was saved; "
                f"restarting epoch {self.epoch} from its beginning",
            )  # rank 0's line: every rank's loader restores the same change (trial s37: one line per rank)
            self.position = 0
            return
        position = int(state["position"])
        if (state.get("micro_batch"), state.get("dp_size")) != (self.micro_batch, self.dp_size):
            # Same global order; convert "sequences consumed in this epoch" to our batch shape.
            consumed = position * int(state["micro_batch"]) * int(state["dp_size"])
            position = consumed // (self.micro_batch * self.dp_size)
            log.warning(
                f"data: batch shape changed ({state['dp_size']}x{state['micro_batch']} -> "
                f"{self.dp_size}x{self.micro_batch}); resuming at sequence ~{consumed} of epoch {self.epoch}",
            )
        self.position = position


def build_loader(
    run: RunSettings,
    job_dir: Path,
    split: str,
    seq_len: int,
    micro_batch: int,
    dp_rank: int,
    dp_size: int,
    vocab_size: int,
    *,
    pin_memory: bool = False,
) -> ResumableLoader:
    """This rank's resumable iterator of ``(input_ids, labels)``, int64 ``[micro_batch, seq_len]``."""
    check_split(split)
    if not 0 <= dp_rank < dp_size or micro_batch < 1 or seq_len < 1:
        raise ValueError(
            f"bad loader shape: dp_rank={dp_rank}, dp_size={dp_size}, micro_batch={micro_batch}, seq_len={seq_len}"
        )
    seed = run.seed % 2**63  # numpy seeds must be non-negative
    source: _SyntheticSequences | _PackedSequences
    if run.data == "synthetic":
        source = _SyntheticSequences(seed, split, vocab_size, seq_len)
        fingerprint = synthetic_fingerprint(run.seed, vocab_size)
    else:
        data_dir = Path(job_dir) / "data"
        meta = read_meta(data_dir)
        if meta is None:
            raise ValueError(f"{data_dir}: no prepared data (prepare_data runs on rank 0 before loaders are built)")
        if meta["tokenizer_vocab_size"] > vocab_size:
            raise ValueError(
                f"{data_dir}: shards use {meta['tokenizer_vocab_size']} token ids, more than the "
                f"model's vocab_size {vocab_size}"
            )
        source = _PackedSequences(
            data_dir / f"{split}.bin",
            meta["dtype"],
            meta["splits"][split]["num_tokens"],
            seq_len,
            meta["tokenizer_vocab_size"],  # read_meta checked that it fits the dtype; checked against the model above
        )
        fingerprint = meta["fingerprint"]
    loader = ResumableLoader(
        source,
        split=split,
        seed=seed,
        micro_batch=micro_batch,
        dp_rank=dp_rank,
        dp_size=dp_size,
        fingerprint=fingerprint,
        pin_memory=pin_memory,
    )
    if loader.batches_per_epoch == 0:
        raise ValueError(
            f"{run.data}: the {split} split has {source.num_sequences} sequences of {seq_len} tokens, "
            f"too few for {dp_size} data-parallel ranks x micro-batch {micro_batch}"
        )
    return loader
