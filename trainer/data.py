"""Training data: split and pack documents into token shards (the loaders are trainer/loader.py).

``prepare_data`` (global rank 0, before the others read) turns ``run.data`` into three packed
token streams ``job_dir/data/{train,val,test}.bin`` plus ``meta.json``. ``run.data ==
"synthetic"`` needs no files: the loaders generate tokens from the seed and the sequence's global
index; the rule they follow (``SYNTHETIC_FOLLOW_PROB``, its loss floor, its fingerprint) is here.

Finding, reading, cleaning and tokenising the documents is :mod:`trainer.corpus`; its public
names are re-exported here.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from trainer.corpus import (
    BYTE_VOCAB_SIZE,
    EOS_TOKEN_NAMES,
    MAX_CONTROL_FRACTION,
    MAX_REPLACEMENT_FRACTION,
    MIN_LETTER_FRACTION,
    SUPPORTED_SUFFIXES,
    TXT_DOCUMENT_SEPARATOR,
    CleaningStats,
    Tokenizer,
    clean_documents,
    file_digest,
    is_garbled,
    list_input_files,
    normalise,
    read_documents,
)
from trainer.files import write_json_atomic
from trainer.job_spec import RunSettings

log = logging.getLogger(__name__)

__all__ = [  # noqa: RUF022 - grouped: this module's names, then the re-exports
    # this module: split, pack
    "DATA_FORMAT_VERSION",
    "ENCODE_BATCH_DOCS",
    "NUM_SPLIT_BUCKETS",
    "NUM_TRAIN_BUCKETS",
    "SPLITS",
    "SYNTHETIC_FOLLOW_PROB",
    "DataInfo",
    "SplitInfo",
    "check_split",
    "prepare_data",
    "read_meta",
    "split_of",
    "synthetic_fingerprint",
    "synthetic_loss_floor",
    # re-exported from trainer.corpus (read, clean, tokenise), where they used to live
    "BYTE_VOCAB_SIZE",
    "EOS_TOKEN_NAMES",
    "MAX_CONTROL_FRACTION",
    "MAX_REPLACEMENT_FRACTION",
    "MIN_LETTER_FRACTION",
    "SUPPORTED_SUFFIXES",
    "TXT_DOCUMENT_SEPARATOR",
    "CleaningStats",
    "Tokenizer",
    "clean_documents",
    "is_garbled",
    "list_input_files",
    "normalise",
    "read_documents",
]

DATA_FORMAT_VERSION = 1
SPLITS = ("train", "val", "test")
# 8:1:1 by document: a document's hash picks one of ten buckets, 0-7 train, 8 val, 9 test.
NUM_SPLIT_BUCKETS = 10
NUM_TRAIN_BUCKETS = 8
ENCODE_BATCH_DOCS = 256
# Synthetic data: a token is followed by (token + stride) % vocab with this probability, else by
# a uniform random token, so a model can learn something and the loss has a known floor.
SYNTHETIC_FOLLOW_PROB = 0.75

SPLIT_IDS = {name: index for index, name in enumerate(SPLITS)}  # RNG stream ids of the loaders
SYNTHETIC_STRIDE_STREAM = len(SPLITS)  # an RNG stream id no split uses


@dataclass(frozen=True)
class SplitInfo:
    num_documents: int
    num_tokens: int


@dataclass(frozen=True)
class DataInfo:
    """What ``prepare_data`` produced (or found). Split infos are None for synthetic data."""

    source: str
    synthetic: bool
    fingerprint: str
    tokenizer_vocab_size: int
    eos_id: int
    dtype: str | None
    train: SplitInfo | None = None
    val: SplitInfo | None = None
    test: SplitInfo | None = None
    cleaning: CleaningStats | None = None
    reused: bool = False
    loss_floor: float | None = None  # synthetic only: the best achievable mean loss (nats)

    def num_sequences(self, split: str, seq_len: int) -> int | None:
        """Packed sequences of ``seq_len`` (+1 label token) in a split; None means unlimited."""
        info = getattr(self, check_split(split))
        return None if info is None else max(0, (info.num_tokens - 1) // seq_len)


# --------------------------------------------------------------------------- splits and shards


def split_of(digest: bytes) -> str:
    """Train/val/test for a document, from its content hash (seed-independent, stable)."""
    bucket = int.from_bytes(digest[:8], "big") % NUM_SPLIT_BUCKETS
    if bucket < NUM_TRAIN_BUCKETS:
        return "train"
    return "val" if bucket == NUM_TRAIN_BUCKETS else "test"


def _fingerprint(source: Path, files: list[Path], tokenizer: Tokenizer) -> str:
    """Hash of everything the shards depend on: input contents and names, tokenizer, rules."""
    rules = [
        DATA_FORMAT_VERSION,
        NUM_SPLIT_BUCKETS,
        NUM_TRAIN_BUCKETS,
        TXT_DOCUMENT_SEPARATOR,
        MAX_REPLACEMENT_FRACTION,
        MAX_CONTROL_FRACTION,
        MIN_LETTER_FRACTION,
        tokenizer.digest,
        str(tokenizer.dtype),
    ]
    root = source if source.is_dir() else source.parent
    inputs = [[str(p.relative_to(root)), file_digest(p)] for p in files]
    return hashlib.blake2b(json.dumps([rules, inputs]).encode(), digest_size=16).hexdigest()


class _ShardWriter:
    """Appends token arrays to hidden temporary shards; ``commit`` renames them into place."""

    def __init__(self, data_dir: Path, dtype: np.dtype):
        self.data_dir, self.dtype = data_dir, dtype
        self.tokens = {split: 0 for split in SPLITS}
        self.documents = {split: 0 for split in SPLITS}
        self._files = {split: (data_dir / f".{split}.bin.tmp").open("wb") for split in SPLITS}

    def append(self, split: str, arrays: list[np.ndarray]) -> None:
        for ids in arrays:
            ids.tofile(self._files[split])
            self.tokens[split] += len(ids)
        self.documents[split] += len(arrays)

    def commit(self) -> None:
        for split, handle in self._files.items():
            handle.flush()
            os.fsync(handle.fileno())
            handle.close()
            os.replace(self.data_dir / f".{split}.bin.tmp", self.data_dir / f"{split}.bin")

    def abort(self) -> None:
        for split, handle in self._files.items():
            handle.close()
            (self.data_dir / f".{split}.bin.tmp").unlink(missing_ok=True)


def _tokenise_into(writer: _ShardWriter, documents: Iterable[tuple[str, bytes]], tokenizer: Tokenizer) -> None:
    pending: dict[str, list[str]] = {split: [] for split in SPLITS}
    for text, digest in documents:
        split = split_of(digest)
        pending[split].append(text)
        if len(pending[split]) >= ENCODE_BATCH_DOCS:
            writer.append(split, tokenizer.encode_documents(pending[split], writer.dtype))
            pending[split] = []
    for split, texts in pending.items():
        if texts:
            writer.append(split, tokenizer.encode_documents(texts, writer.dtype))


def _build_shards(source: str, files: list[Path], data_dir: Path, tokenizer: Tokenizer, fingerprint: str) -> dict:
    data_dir.mkdir(parents=True, exist_ok=True)
    # Invalidate first: from here until the new meta.json lands, the directory is "not prepared".
    (data_dir / "meta.json").unlink(missing_ok=True)
    stats = CleaningStats()
    texts = (text for path in files for text in read_documents(path))
    writer = _ShardWriter(data_dir, tokenizer.dtype)
    try:
        _tokenise_into(writer, clean_documents(texts, stats), tokenizer)
        writer.commit()
    except BaseException:
        writer.abort()
        raise
    meta = {
        "format_version": DATA_FORMAT_VERSION,
        "fingerprint": fingerprint,
        "source": source,
        "tokenizer": tokenizer.path,
        "tokenizer_digest": tokenizer.digest,
        "tokenizer_vocab_size": tokenizer.vocab_size,
        "eos_id": tokenizer.eos_id,
        "dtype": str(tokenizer.dtype),
        "splits": {s: {"num_documents": writer.documents[s], "num_tokens": writer.tokens[s]} for s in SPLITS},
        "cleaning": asdict(stats),
    }
    write_json_atomic(data_dir / "meta.json", meta)
    return meta


def read_meta(data_dir: Path) -> dict | None:
    """``meta.json`` if it and the shards it describes are complete, else None."""
    try:
        meta = json.loads((data_dir / "meta.json").read_text())
        itemsize = np.dtype(meta["dtype"]).itemsize
        for split in SPLITS:
            if (data_dir / f"{split}.bin").stat().st_size != meta["splits"][split]["num_tokens"] * itemsize:
                return None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return meta if meta.get("format_version") == DATA_FORMAT_VERSION else None


def _info_from_meta(meta: dict, reused: bool) -> DataInfo:
    splits = {s: SplitInfo(**meta["splits"][s]) for s in SPLITS}
    return DataInfo(
        source=meta["source"],
        synthetic=False,
        fingerprint=meta["fingerprint"],
        tokenizer_vocab_size=meta["tokenizer_vocab_size"],
        eos_id=meta["eos_id"],
        dtype=meta["dtype"],
        cleaning=CleaningStats(**meta["cleaning"]),
        reused=reused,
        train=splits["train"],
        val=splits["val"],
        test=splits["test"],
    )


# --------------------------------------------------------------------------- prepare_data


def synthetic_loss_floor(vocab_size: int) -> float:
    """Entropy (nats) of the next synthetic token given the previous one."""
    p_successor = SYNTHETIC_FOLLOW_PROB + (1 - SYNTHETIC_FOLLOW_PROB) / vocab_size
    p_other = (1 - SYNTHETIC_FOLLOW_PROB) / vocab_size
    return -(p_successor * math.log(p_successor) + (vocab_size - 1) * p_other * math.log(p_other))


def prepare_data(run: RunSettings, job_dir: Path, vocab_size: int, seq_len: int) -> DataInfo:
    """Build (or reuse) the packed shards for ``run.data``; call on global rank 0 only.

    Idempotent: shards whose fingerprint matches the inputs are reused. When the inputs are not
    reachable (a compute node that sees only the job directory), shards prepared from the same
    source and tokenizer are reused with a notice.
    """
    tokenizer = Tokenizer(run.tokenizer)
    tokenizer.check_fits(vocab_size)
    if run.data == "synthetic":
        return DataInfo(
            source="synthetic",
            synthetic=True,
            fingerprint=synthetic_fingerprint(run.seed, vocab_size),
            tokenizer_vocab_size=vocab_size,
            eos_id=tokenizer.eos_id,
            dtype=None,
            loss_floor=synthetic_loss_floor(vocab_size),
        )
    data_dir = Path(job_dir) / "data"
    source = Path(run.data)
    meta = read_meta(data_dir)
    if (
        not source.exists()
        and meta is not None
        and meta["source"] == run.data
        and meta["tokenizer_digest"] == tokenizer.digest
    ):
        log.info(
            f"data: {source} is not reachable here; using the shards prepared from it "
            f"(fingerprint {meta['fingerprint'][:12]})"
        )
        info = _info_from_meta(meta, reused=True)
    else:
        files = list_input_files(source)
        fingerprint = _fingerprint(source, files, tokenizer)
        if meta is not None and meta["fingerprint"] == fingerprint:
            log.info(f"data: reusing prepared shards in {data_dir} (fingerprint {fingerprint[:12]})")
            info = _info_from_meta(meta, reused=True)
        else:
            info = _info_from_meta(_build_shards(run.data, files, data_dir, tokenizer, fingerprint), reused=False)
            _print_summary(info, data_dir)
    assert info.train is not None  # _info_from_meta sets every split (only synthetic data has none)
    if info.train.num_tokens < seq_len + 1:
        raise ValueError(
            f"{run.data}: the train split has {info.train.num_tokens} tokens after cleaning, "
            f"fewer than one sequence of {seq_len} (+1) tokens"
        )
    return info


def _print_summary(info: DataInfo, data_dir: Path) -> None:
    c = info.cleaning
    # prepared (not synthetic) data: _info_from_meta sets the cleaning stats and every split
    assert c is not None and info.train is not None and info.val is not None and info.test is not None
    log.info(
        f"data: read {c.num_read} documents: {c.num_empty} empty, {c.num_garbled} garbled, "
        f"{c.num_duplicates} duplicates removed, {c.num_kept} kept"
    )
    log.info(
        f"data: train/val/test {info.train.num_documents}/{info.val.num_documents}/{info.test.num_documents} "
        f"documents, {info.train.num_tokens}/{info.val.num_tokens}/{info.test.num_tokens} tokens "
        f"({info.dtype}) in {data_dir}"
    )


def synthetic_fingerprint(seed: int, vocab_size: int) -> str:
    """What identifies synthetic data (a loader's state is exact only for the same)."""
    return f"synthetic-v{DATA_FORMAT_VERSION}-seed{seed}-vocab{vocab_size}"


def check_split(split: str) -> str:
    """``split`` when it is one of SPLITS, else ValueError."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r} (use {', '.join(SPLITS)})")
    return split
