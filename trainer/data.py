"""Training data: split and pack documents into token shards (the loaders are trainer/loader.py).

``prepare_data`` (global rank 0, before the others read) turns ``run.data`` into three packed
token streams ``job_dir/data/{train,val,test}.bin`` plus ``meta.json``, which records each
shard's sha256: shards are reused only when they hash to it (a shard edited or zero-filled in
place is prepared again), and the loaders check token ids against the vocabulary. ``run.data ==
"synthetic"`` needs no files: the loaders generate tokens from the seed and the sequence's global
index; the rule they follow (``SYNTHETIC_FOLLOW_PROB``, its loss floor, its fingerprint) is here.

Finding, reading, cleaning and tokenising the documents is :mod:`trainer.corpus`; its public
names are re-exported here.
"""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import math
import os
from collections.abc import Iterable, Iterator
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from planner.errors import DiskFullError, JobDirWriteError
from planner.fmt import counted
from planner.units import BYTES_PER_MB as MB
from trainer.corpus import (
    BYTE_VOCAB_SIZE,
    EOS_TOKEN_NAMES,
    MAX_CONTROL_FRACTION,
    MAX_REPLACEMENT_FRACTION,
    MIN_LETTER_FRACTION,
    SUPPORTED_SUFFIXES,
    TXT_DOCUMENT_SEPARATOR,
    Cleaner,
    CleaningStats,
    LongDocument,
    Tokenizer,
    clean_documents,
    file_digest,
    is_garbled,
    list_input_files,
    normalise,
    read_documents,
)
from trainer.data_meta import (
    DATA_FORMAT_VERSION,
    SPLITS,
    cleaning_stats,
    meta_and_problem,
    new_meta,
    shards_stamp,
    split_entry,
    unknown_meta_keys,
)
from trainer.files import CHECKED_SHARDS_ENV, write_json_atomic
from trainer.job_spec import RunSettings
from trainer.log import ON_STDOUT
from trainer.progress import ByteProgress

log = logging.getLogger(__name__)

__all__ = [  # noqa: RUF022 - grouped: this module's names, then the re-exports
    # this module: split, pack
    "ENCODE_BATCH_DOCS",
    "NUM_SPLIT_BUCKETS",
    "NUM_TRAIN_BUCKETS",
    "SYNTHETIC_FOLLOW_PROB",
    "DataInfo",
    "SplitInfo",
    "CHECKED_SHARDS_ENV",
    "check_split",
    "prepare_data",
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

# 8:1:1 by document: a document's hash picks one of ten buckets, 0-7 train, 8 val, 9 test.
NUM_SPLIT_BUCKETS = 10
NUM_TRAIN_BUCKETS = 8
ENCODE_BATCH_DOCS = 256
_COPY_CHUNK = 1 << 20  # the spill is copied into its shard in pieces of this size
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
    progress = ByteProgress("hashing the inputs", sum(p.stat().st_size for p in files))
    hashed = 0

    def read(nbytes: int) -> None:
        nonlocal hashed
        hashed += nbytes
        progress.done(hashed)

    inputs = [[str(p.relative_to(root)), file_digest(p, read)] for p in files]
    return hashlib.blake2b(json.dumps([rules, inputs]).encode(), digest_size=16).hexdigest()


class _ShardWriter:
    """Appends token arrays to hidden temporary shards, hashing them; ``commit`` renames them into
    place. A long document goes to a spill file first: its split is known only at its end."""

    def __init__(self, data_dir: Path, dtype: np.dtype):
        self.data_dir, self.dtype = data_dir, dtype
        self.tokens = {split: 0 for split in SPLITS}
        self.documents = {split: 0 for split in SPLITS}
        self.sha256 = {split: hashlib.sha256() for split in SPLITS}
        self._files = {}
        for split in SPLITS:
            self._files[split] = (data_dir / f".{split}.bin.tmp").open("wb")
        self._spill = (data_dir / ".spill.bin.tmp").open("w+b")
        self._spill_tokens = 0

    def _write(self, split: str, data: bytes) -> None:
        self._files[split].write(data)
        self.sha256[split].update(data)

    def append(self, split: str, arrays: list[np.ndarray]) -> None:
        for ids in arrays:
            self._write(split, ids.tobytes())
            self.tokens[split] += len(ids)
        self.documents[split] += len(arrays)

    def spill(self, ids: np.ndarray) -> None:
        self._spill.write(ids.tobytes())
        self._spill_tokens += len(ids)

    def keep_spill(self, split: str) -> None:
        """Append the spilled document to ``split`` in bounded chunks, then empty the spill."""
        self._spill.seek(0)
        while chunk := self._spill.read(_COPY_CHUNK):
            self._write(split, chunk)
        self.tokens[split] += self._spill_tokens
        self.documents[split] += 1
        self.drop_spill()

    def drop_spill(self) -> None:
        self._spill.seek(0)
        self._spill.truncate()
        self._spill_tokens = 0

    def commit(self) -> None:
        for split, handle in self._files.items():
            handle.flush()
            os.fsync(handle.fileno())
            handle.close()
            os.replace(self.data_dir / f".{split}.bin.tmp", self.data_dir / f"{split}.bin")
        self._close_spill()

    def abort(self) -> None:
        for split, handle in self._files.items():
            with suppress(OSError):  # its buffer cannot be flushed on a full disk: the error is raised already
                handle.close()
            (self.data_dir / f".{split}.bin.tmp").unlink(missing_ok=True)
        self._close_spill()

    def _close_spill(self) -> None:
        with suppress(OSError):
            self._spill.close()
        (self.data_dir / ".spill.bin.tmp").unlink(missing_ok=True)


def _tokenise_into(
    writer: _ShardWriter, documents: Iterable[str | LongDocument], tokenizer: Tokenizer, stats: CleaningStats
) -> None:
    cleaner = Cleaner(stats)
    pending: dict[str, list[str]] = {split: [] for split in SPLITS}
    for document in documents:
        if isinstance(document, LongDocument):
            _tokenise_long(writer, document, tokenizer, cleaner, pending)
            continue
        digest = cleaner.check(document)
        if digest is None:
            continue
        split = split_of(digest)
        pending[split].append(document.strip())
        if len(pending[split]) >= ENCODE_BATCH_DOCS:
            writer.append(split, tokenizer.encode_documents(pending[split], writer.dtype))
            pending[split] = []
    for split, texts in pending.items():
        if texts:
            writer.append(split, tokenizer.encode_documents(texts, writer.dtype))


def _tokenise_long(
    writer: _ShardWriter, document: LongDocument, tokenizer: Tokenizer, cleaner: Cleaner, pending: dict[str, list[str]]
) -> None:
    """One long document, piece by piece into the spill; kept (after the documents before it in
    its split, so the order is the file's) or dropped at its end."""
    digest = cleaner.check_long(document, lambda text: writer.spill(tokenizer.encode_piece(text, writer.dtype)))
    if digest is None:
        writer.drop_spill()
        return
    split = split_of(digest)
    if pending[split]:
        writer.append(split, tokenizer.encode_documents(pending[split], writer.dtype))
        pending[split] = []
    writer.spill(np.array([tokenizer.eos_id], dtype=writer.dtype))
    writer.keep_spill(split)


def _documents_of(files: list[Path], stats: CleaningStats) -> Iterator[str | LongDocument]:
    """The documents of every file; a file that cannot be read is named in a one-line error. Says
    how far it is (``ByteProgress``): the finished files' bytes, plus the characters read of the
    file at hand (bytes for ASCII text; a long document's pieces count at its file's end)."""
    sizes = [path.stat().st_size for path in files]
    progress, finished = ByteProgress("tokenising", sum(sizes)), 0
    for path, size in zip(files, sizes, strict=True):
        read = 0
        try:
            for document in read_documents(path, stats):
                yield document
                read += len(document) if isinstance(document, str) else 0
                progress.done(finished + min(read, size))
        except OSError as exc:
            raise ValueError(f"{path}: cannot read ({exc.strerror or exc.__class__.__name__})") from None
        finished += size


def _build_shards(source: str, files: list[Path], data_dir: Path, tokenizer: Tokenizer, fingerprint: str) -> dict:
    try:
        return _write_shards(source, files, data_dir, tokenizer, fingerprint)
    except OSError as exc:  # reading errors are ValueErrors naming the input (_documents_of): this is writing
        where = f" ({exc.filename})" if exc.filename else ""
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise DiskFullError(
                f"disk full while preparing the data in {data_dir}{where}: free space and run again"
            ) from None
        raise JobDirWriteError(
            f"cannot write the prepared data in {data_dir}{where} ({exc.strerror or exc.__class__.__name__}):"
            " make it writable and run again"
        ) from None


def _write_shards(source: str, files: list[Path], data_dir: Path, tokenizer: Tokenizer, fingerprint: str) -> dict:
    data_dir.mkdir(parents=True, exist_ok=True)
    # Invalidate first: from here until the new meta.json lands, the directory is "not prepared".
    (data_dir / "meta.json").unlink(missing_ok=True)
    stats = CleaningStats()
    writer = _ShardWriter(data_dir, tokenizer.dtype)
    try:  # BaseException: a signal that stops preparation (trainer/preemption.py) removes the .tmp files too
        _tokenise_into(writer, _documents_of(files, stats), tokenizer, stats)
        writer.commit()
    except BaseException:
        writer.abort()
        raise
    splits = {s: split_entry(writer.documents[s], writer.tokens[s], writer.sha256[s].hexdigest()) for s in SPLITS}
    meta = new_meta(fingerprint, source, tokenizer, splits, stats)
    write_json_atomic(data_dir / "meta.json", meta)
    return meta


def _info_from_meta(meta: dict, reused: bool) -> DataInfo:
    splits = {s: SplitInfo(meta["splits"][s]["num_documents"], meta["splits"][s]["num_tokens"]) for s in SPLITS}
    return DataInfo(
        source=meta["source"],
        synthetic=False,
        fingerprint=meta["fingerprint"],
        tokenizer_vocab_size=meta["tokenizer_vocab_size"],
        eos_id=meta["eos_id"],
        dtype=meta["dtype"],
        cleaning=cleaning_stats(meta),
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


def prepare_data(
    run: RunSettings, job_dir: Path, vocab_size: int, seq_len: int, checked_stamp: str | None = None
) -> DataInfo:
    """Build (or reuse) the packed shards for ``run.data``; call on global rank 0 only.

    Idempotent: shards whose fingerprint matches the inputs are reused. When the inputs are not
    reachable (a compute node that sees only the job directory), shards prepared from the same
    source and tokenizer are reused with a notice. ``checked_stamp``: the launcher's
    ``shards_stamp`` of the shards it has just prepared or hashed; while it holds they are reused
    without a word or a read.
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
    meta, problem = meta_and_problem(data_dir, verify=False)
    if meta is not None and checked_stamp is not None and checked_stamp == shards_stamp(job_dir):
        return _checked(_info_from_meta(meta, reused=True), run.data, seq_len)
    if meta is not None:  # after the launcher's check, which stays silent: one warning a launch
        _warn_unknown_keys(data_dir, meta)
    unreachable = not source.exists()
    if unreachable and meta is not None and (meta["source"], meta["tokenizer_digest"]) == (run.data, tokenizer.digest):
        problem = _reuse_problem(data_dir, meta, tokenizer)
        if problem is not None:
            raise ValueError(f"{problem}, and {source} is not reachable here to prepare the data again")
        log.info(
            f"data: {source} is not reachable here; using the shards prepared from it "
            f"(fingerprint {meta['fingerprint'][:12]})"
        )
        return _checked(_info_from_meta(meta, reused=True), run.data, seq_len)
    if unreachable and problem is not None:
        raise ValueError(f"{problem}, and {source} is not reachable here to prepare the data again")
    files = list_input_files(source)
    fingerprint = _fingerprint(source, files, tokenizer)
    if meta is not None and meta["fingerprint"] == fingerprint:
        problem = _reuse_problem(data_dir, meta, tokenizer)
        if problem is None:
            log.info(f"data: reusing prepared shards in {data_dir} (fingerprint {fingerprint[:12]})")
            return _checked(_info_from_meta(meta, reused=True), run.data, seq_len)
    if problem is not None:
        log.warning(f"warning: data: {problem}; preparing the data again", extra=ON_STDOUT)
    # trial s27: a 58 MB corpus took 5 s in silence (about 15 minutes for 10 GB)
    size = sum(f.stat().st_size for f in files)
    log.info(f"data: preparing {len(files):,} file(s), {size / MB:,.1f} MB, into {data_dir} (tokenise, clean, shard)")
    info = _info_from_meta(_build_shards(run.data, files, data_dir, tokenizer, fingerprint), reused=False)
    _print_summary(info, data_dir)
    return _checked(info, run.data, seq_len)


def _warn_unknown_keys(data_dir: Path, meta: dict) -> None:
    if unknown := unknown_meta_keys(meta):
        log.warning(
            f"warning: data: {data_dir / 'meta.json'} has keys this version does not know, ignored (a newer"
            f" trainplan's?): {', '.join(unknown)}",
            extra=ON_STDOUT,
        )


def _reuse_problem(data_dir: Path, meta: dict, tokenizer: Tokenizer) -> str | None:
    """Why shards whose fingerprint matches cannot be reused: a dtype that is not the tokenizer's,
    or a shard that is not what was written (each shard is hashed: a full read of the data)."""
    if meta["dtype"] != str(tokenizer.dtype):
        return f"{data_dir / 'meta.json'} says dtype {meta['dtype']!r}; the tokenizer's ids are {tokenizer.dtype}"
    return meta_and_problem(data_dir, verify=True)[1]


def _checked(info: DataInfo, data: str, seq_len: int) -> DataInfo:
    assert info.train is not None  # _info_from_meta sets every split (only synthetic data has none)
    if info.train.num_tokens < seq_len + 1:
        raise ValueError(
            f"{data}: the train split has {info.train.num_tokens} tokens after cleaning, "
            f"fewer than one sequence of {seq_len} (+1) tokens"
        )
    return info


def _print_summary(info: DataInfo, data_dir: Path) -> None:
    c = info.cleaning
    # prepared (not synthetic) data: _info_from_meta sets the cleaning stats and every split
    assert c is not None and info.train is not None and info.val is not None and info.test is not None
    log.info(
        f"data: read {c.num_read:,} documents: {c.num_empty:,} empty, {c.num_garbled:,} garbled, "
        f"{c.num_duplicates:,} duplicates removed, {c.num_kept:,} kept"
        + (f" ({counted(c.num_invalid_lines, 'invalid .jsonl line')} skipped)" if c.num_invalid_lines else "")
    )
    log.info(
        f"data: train/val/test {info.train.num_documents:,}/{info.val.num_documents:,}/{info.test.num_documents:,} "
        f"documents, {info.train.num_tokens:,}/{info.val.num_tokens:,}/{info.test.num_tokens:,} tokens "
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
