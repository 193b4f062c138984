"""``data/meta.json``: the record of the prepared shards (trainer/data.py ``prepare_data`` writes it
last), what it holds, how it is read and checked against the shards, and the stamp of both.

A key this version does not know (a data folder prepared by a newer trainplan) is ignored:
``unknown_meta_keys`` names them for the one warning ``prepare_data`` prints; the known keys are
checked as ever.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, fields
from pathlib import Path

import numpy as np

from trainer.corpus import CleaningStats, Tokenizer
from trainer.files import file_sha256, read_capped

DATA_FORMAT_VERSION = 1
SPLITS = ("train", "val", "test")
SHARD_DTYPES = ("uint16", "uint32")  # what Tokenizer.dtype gives: token ids, never floats
MAX_META_BYTES = 1_000_000
# The keys new_meta writes, and split_entry in each of "splits"; "cleaning" holds CleaningStats'.
META_KEYS = (
    "format_version",
    "fingerprint",
    "source",
    "tokenizer",
    "tokenizer_digest",
    "tokenizer_vocab_size",
    "eos_id",
    "dtype",
    "splits",
    "cleaning",
)
SPLIT_KEYS = ("num_documents", "num_tokens", "sha256")


def split_entry(num_documents: int, num_tokens: int, sha256: str) -> dict:
    return dict(zip(SPLIT_KEYS, (num_documents, num_tokens, sha256), strict=True))


def new_meta(
    fingerprint: str, source: str, tokenizer: Tokenizer, splits: dict[str, dict], stats: CleaningStats
) -> dict:
    """The ``meta.json`` of freshly written shards (``splits``: each split's ``split_entry``)."""
    values = (
        DATA_FORMAT_VERSION,
        fingerprint,
        source,
        tokenizer.path,
        tokenizer.digest,
        tokenizer.vocab_size,
        tokenizer.eos_id,
        str(tokenizer.dtype),
        splits,
        asdict(stats),
    )
    return dict(zip(META_KEYS, values, strict=True))


def unknown_meta_keys(meta: dict) -> list[str]:
    """The keys of a sound ``meta.json`` this version does not know, dotted below the top level
    (``cleaning.num_x``, ``splits.dev``, ``splits.train.x``): a newer trainplan's, ignored."""
    known_cleaning = {f.name for f in fields(CleaningStats)}
    unknown = [key for key in meta if key not in META_KEYS]
    if isinstance(meta.get("cleaning"), dict):
        unknown += [f"cleaning.{key}" for key in meta["cleaning"] if key not in known_cleaning]
    for split, entry in meta["splits"].items():  # sound: a dict with an entry for every split
        if split not in SPLITS:
            unknown.append(f"splits.{split}")
        elif isinstance(entry, dict):
            unknown += [f"splits.{split}.{key}" for key in entry if key not in SPLIT_KEYS]
    return unknown


def cleaning_stats(meta: dict) -> CleaningStats:
    """The cleaning counts of ``meta.json``, those this version knows (a newer one's left out)."""
    return CleaningStats(
        **{f.name: meta["cleaning"][f.name] for f in fields(CleaningStats) if f.name in meta["cleaning"]}
    )


def read_meta(data_dir: Path, *, verify: bool = False) -> dict | None:
    """``meta.json`` if it and the shards it describes are complete (and, with ``verify``, match
    their sha256), else None."""
    return meta_and_problem(data_dir, verify=verify)[0]


def meta_and_problem(data_dir: Path, *, verify: bool) -> tuple[dict | None, str | None]:
    """(``meta.json``, None) when it and its shards are sound; (None, what is wrong) otherwise
    ((None, None) where nothing was prepared yet)."""
    path = data_dir / "meta.json"
    try:
        meta = json.loads(read_capped(path, MAX_META_BYTES))
    except FileNotFoundError:
        return None, None
    except (OSError, ValueError, RecursionError) as exc:
        return None, f"{path} is unreadable ({exc.__class__.__name__})"
    try:
        problem = _shards_problem(data_dir, meta, verify)
    except (OSError, KeyError, TypeError, ValueError, AttributeError) as exc:
        problem = f"{path} does not describe the shards ({exc.__class__.__name__}: {exc})"
    return (None, problem) if problem else (meta, None)


def _shards_problem(data_dir: Path, meta: dict, verify: bool) -> str | None:
    if meta.get("format_version") != DATA_FORMAT_VERSION:
        return f"{data_dir / 'meta.json'} is of format version {meta.get('format_version')!r}"
    if meta["dtype"] not in SHARD_DTYPES:
        return f"{data_dir / 'meta.json'} says dtype {meta['dtype']!r}; token ids are {' or '.join(SHARD_DTYPES)}"
    dtype, vocab = np.dtype(meta["dtype"]), meta["tokenizer_vocab_size"]
    if type(vocab) is not int or not 0 < vocab <= np.iinfo(dtype).max + 1:
        return f"{data_dir / 'meta.json'} says tokenizer_vocab_size {vocab!r}, not a {dtype} vocabulary size"
    for split in SPLITS:
        shard, entry = data_dir / f"{split}.bin", meta["splits"][split]
        if shard.stat().st_size != entry["num_tokens"] * dtype.itemsize:
            return f"{shard} has {shard.stat().st_size} bytes, meta.json says {entry['num_tokens']} {dtype} tokens"
        if verify and not isinstance(entry.get("sha256"), str):
            return f"{shard} has no sha256 in meta.json (prepared by an earlier version)"
        if verify and file_sha256(shard) != entry["sha256"]:
            return f"{shard} does not match its sha256 in meta.json"
    return None


def shards_stamp(job_dir: Path) -> str | None:
    """A digest of the job's ``data/meta.json`` (the shards' sha256 among it) and of each shard's
    size, mtime and inode: it changes when anything rewrites them after they were hashed. None: not prepared."""
    data_dir = Path(job_dir) / "data"
    try:
        stamp = hashlib.sha256(read_capped(data_dir / "meta.json", MAX_META_BYTES))
        for shard in (data_dir / f"{split}.bin" for split in SPLITS):
            stat = shard.stat()
            stamp.update(f"{shard.name} {stat.st_size} {stat.st_mtime_ns} {stat.st_ino};".encode())
    except (OSError, ValueError):
        return None
    return stamp.hexdigest()
