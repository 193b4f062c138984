"""Training data: read, clean, split, tokenise and pack documents; resumable per-rank loaders.

``prepare_data`` (global rank 0, before the others read) turns ``run.data`` into three packed
token streams ``job_dir/data/{train,val,test}.bin`` plus ``meta.json``. ``build_loader`` gives
each data-parallel rank its own disjoint, seeded, resumable stream of ``(input_ids, labels)``
batches from one split. ``run.data == "synthetic"`` needs no files: tokens are generated from the
seed and the sequence's global index, so every rank and every resume sees the same data.

Loading runs in the calling process: a batch is one fancy-index into a memory map, far cheaper
than a training step, so worker processes would add nothing but resume bookkeeping.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import re
import sys
import unicodedata
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterable, Iterator

import numpy as np
import torch

from trainer.job_spec import RunSettings

DATA_FORMAT_VERSION = 1
SPLITS = ("train", "val", "test")
SUPPORTED_SUFFIXES = (".txt", ".jsonl", ".parquet")
# 8:1:1 by document: a document's hash picks one of ten buckets, 0-7 train, 8 val, 9 test.
NUM_SPLIT_BUCKETS = 10
NUM_TRAIN_BUCKETS = 8
# A .txt file is one document unless it contains this line, which separates documents.
TXT_DOCUMENT_SEPARATOR = "<|endoftext|>"
# A document is "garbled" when any of these is exceeded (fractions of its characters).
MAX_REPLACEMENT_FRACTION = 0.01  # U+FFFD: bytes that were not valid UTF-8
MAX_CONTROL_FRACTION = 0.01      # C0/C1 control characters other than tab and newlines
MIN_LETTER_FRACTION = 0.25       # letters among non-whitespace characters (binary, symbol soup)
# Byte-level fallback tokenizer: ids 0-255 are the bytes, 256 ends a document.
BYTE_VOCAB_SIZE = 257
EOS_TOKEN_NAMES = ("<|endoftext|>", "</s>", "<|end_of_text|>", "<eos>")
ENCODE_BATCH_DOCS = 256
# Synthetic data: a token is followed by (token + stride) % vocab with this probability, else by
# a uniform random token, so a model can learn something and the loss has a known floor.
SYNTHETIC_FOLLOW_PROB = 0.75

_CONTROL_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_LETTER_RE = re.compile(r"[^\W\d_]")
_SPACE_RE = re.compile(r"\s+")
_SPLIT_IDS = {name: index for index, name in enumerate(SPLITS)}
_SYNTHETIC_STRIDE_STREAM = len(SPLITS)  # an RNG stream id no split uses


@dataclass
class CleaningStats:
    """Document counts of the cleaning pass (filled in while streaming)."""

    num_read: int = 0
    num_empty: int = 0
    num_garbled: int = 0
    num_duplicates: int = 0
    num_kept: int = 0


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
        info = getattr(self, _check_split(split))
        return None if info is None else max(0, (info.num_tokens - 1) // seq_len)


# --------------------------------------------------------------------------- tokenizers


class Tokenizer:
    """A local ``tokenizer.json`` (Hugging Face ``tokenizers``) or the byte-level fallback."""

    def __init__(self, path: str | None):
        self.path = path
        self._hf = None
        if path is None:
            self.vocab_size, self.eos_id, self.digest = BYTE_VOCAB_SIZE, BYTE_VOCAB_SIZE - 1, "byte-level"
            return
        from tokenizers import Tokenizer as HFTokenizer
        try:
            self._hf = HFTokenizer.from_file(path)
        except Exception as exc:
            raise ValueError(f"{path}: cannot load tokenizer ({str(exc).splitlines()[0]})") from None
        self.vocab_size = self._hf.get_vocab_size(with_added_tokens=True)
        eos = [self._hf.token_to_id(name) for name in EOS_TOKEN_NAMES]
        if all(token_id is None for token_id in eos):
            raise ValueError(f"{path}: tokenizer has no end-of-document token (one of {', '.join(EOS_TOKEN_NAMES)})")
        self.eos_id = next(token_id for token_id in eos if token_id is not None)
        self.digest = _file_digest(Path(path))

    def check_fits(self, model_vocab_size: int) -> None:
        if self.vocab_size > model_vocab_size:
            raise ValueError(f"{self.path or 'byte-level tokenizer'}: {self.vocab_size} tokens do not fit the "
                             f"model's vocab_size {model_vocab_size}")

    def encode_documents(self, texts: list[str], dtype: np.dtype) -> list[np.ndarray]:
        """Token ids of each document followed by the end-of-document id."""
        if self._hf is None:
            encoded = [np.frombuffer(text.encode("utf-8"), dtype=np.uint8) for text in texts]
        else:
            encoded = [np.asarray(enc.ids, dtype=np.int64)
                       for enc in self._hf.encode_batch(texts, add_special_tokens=False)]
        return [np.append(ids.astype(dtype), np.array([self.eos_id], dtype=dtype)) for ids in encoded]

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(np.uint16 if self.vocab_size <= 2**16 else np.uint32)


# --------------------------------------------------------------------------- reading and cleaning


def list_input_files(source: Path) -> list[Path]:
    """The files ``run.data`` names: itself, or every supported file under it, sorted."""
    if source.is_file():
        if source.suffix not in SUPPORTED_SUFFIXES:
            raise ValueError(f"{source}: unsupported data file (use {', '.join(SUPPORTED_SUFFIXES)})")
        return [source]
    if not source.is_dir():
        raise ValueError(f"{source}: data path does not exist (give a file, a directory or 'synthetic')")
    files = sorted(p for p in source.rglob("*") if p.is_file() and p.suffix in SUPPORTED_SUFFIXES
                   and not any(part.startswith(".") for part in p.relative_to(source).parts))
    if not files:
        raise ValueError(f"{source}: no {', '.join(SUPPORTED_SUFFIXES)} files found")
    return files


def read_documents(path: Path) -> Iterator[str]:
    """Raw document texts of one file; undecodable bytes become U+FFFD (then count as garbled)."""
    if path.suffix == ".txt":
        text = path.read_text(encoding="utf-8", errors="replace")
        yield from re.split(r"^" + re.escape(TXT_DOCUMENT_SEPARATOR) + r"[ \t]*$", text, flags=re.M)
    elif path.suffix == ".jsonl":
        yield from _read_jsonl(path)
    else:
        yield from _read_parquet(path)


def _read_jsonl(path: Path) -> Iterator[str]:
    with path.open(encoding="utf-8", errors="replace") as lines:
        for line_no, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{line_no}: invalid JSON ({exc.msg})") from None
            if not isinstance(record, dict) or not isinstance(record.get("text", 0), (str, type(None))):
                raise ValueError(f"{path}:{line_no}: expected an object with a string \"text\" field")
            yield record.get("text") or ""


def _read_parquet(path: Path) -> Iterator[str]:
    import pyarrow.parquet as pq
    try:
        parquet = pq.ParquetFile(path)
    except Exception as exc:
        raise ValueError(f"{path}: cannot read parquet file ({str(exc).splitlines()[0]})") from None
    if "text" not in parquet.schema_arrow.names:
        raise ValueError(f"{path}: parquet file has no \"text\" column (columns: {parquet.schema_arrow.names})")
    for batch in parquet.iter_batches(columns=["text"], batch_size=1024):
        for text in batch.column(0).to_pylist():
            yield text if isinstance(text, str) else ""


def normalise(text: str) -> str:
    """The form duplicates are compared in: NFC, whitespace runs collapsed, ends stripped."""
    return _SPACE_RE.sub(" ", unicodedata.normalize("NFC", text)).strip()


def is_garbled(text: str) -> bool:
    """True for mis-decoded, binary or symbol-soup text (see the thresholds above)."""
    num_chars = len(text)
    if text.count("\ufffd") > MAX_REPLACEMENT_FRACTION * num_chars:
        return True
    if len(_CONTROL_RE.findall(text)) > MAX_CONTROL_FRACTION * num_chars:
        return True
    num_visible = num_chars - text.count(" ") - sum(text.count(c) for c in "\n\t\r")
    num_letters = num_chars - len(_LETTER_RE.sub("", text))
    return num_letters < MIN_LETTER_FRACTION * max(1, num_visible)


def clean_documents(texts: Iterable[str], stats: CleaningStats) -> Iterator[tuple[str, bytes]]:
    """Drop empty, garbled and repeated documents; yield (stripped text, sha1 of normal form).

    ``stats`` is updated in place, so the caller can report it after streaming.
    """
    seen: set[bytes] = set()
    for text in texts:
        stats.num_read += 1
        normal = normalise(text)
        if not normal:
            stats.num_empty += 1
            continue
        if is_garbled(normal):
            stats.num_garbled += 1
            continue
        digest = hashlib.sha1(normal.encode("utf-8")).digest()
        if digest in seen:
            stats.num_duplicates += 1
            continue
        seen.add(digest)
        stats.num_kept += 1
        yield text.strip(), digest


def split_of(digest: bytes) -> str:
    """Train/val/test for a document, from its content hash (seed-independent, stable)."""
    bucket = int.from_bytes(digest[:8], "big") % NUM_SPLIT_BUCKETS
    if bucket < NUM_TRAIN_BUCKETS:
        return "train"
    return "val" if bucket == NUM_TRAIN_BUCKETS else "test"


# --------------------------------------------------------------------------- shards


def _file_digest(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "blake2b").hexdigest()[:32]


def _fingerprint(source: Path, files: list[Path], tokenizer: Tokenizer) -> str:
    """Hash of everything the shards depend on: input contents and names, tokenizer, rules."""
    rules = [DATA_FORMAT_VERSION, NUM_SPLIT_BUCKETS, NUM_TRAIN_BUCKETS, TXT_DOCUMENT_SEPARATOR,
             MAX_REPLACEMENT_FRACTION, MAX_CONTROL_FRACTION, MIN_LETTER_FRACTION, tokenizer.digest,
             str(tokenizer.dtype)]
    root = source if source.is_dir() else source.parent
    inputs = [[str(p.relative_to(root)), _file_digest(p)] for p in files]
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


def _write_json_atomic(path: Path, payload: dict) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    with tmp.open("w") as handle:
        handle.write(json.dumps(payload, indent=2) + "\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


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
    meta = {"format_version": DATA_FORMAT_VERSION, "fingerprint": fingerprint, "source": source,
            "tokenizer": tokenizer.path, "tokenizer_digest": tokenizer.digest,
            "tokenizer_vocab_size": tokenizer.vocab_size, "eos_id": tokenizer.eos_id,
            "dtype": str(tokenizer.dtype),
            "splits": {s: {"num_documents": writer.documents[s], "num_tokens": writer.tokens[s]} for s in SPLITS},
            "cleaning": asdict(stats)}
    _write_json_atomic(data_dir / "meta.json", meta)
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
    return DataInfo(source=meta["source"], synthetic=False, fingerprint=meta["fingerprint"],
                    tokenizer_vocab_size=meta["tokenizer_vocab_size"], eos_id=meta["eos_id"],
                    dtype=meta["dtype"], cleaning=CleaningStats(**meta["cleaning"]), reused=reused, **splits)


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
        return DataInfo(source="synthetic", synthetic=True, fingerprint=_synthetic_fingerprint(run.seed, vocab_size),
                        tokenizer_vocab_size=vocab_size, eos_id=tokenizer.eos_id, dtype=None,
                        loss_floor=synthetic_loss_floor(vocab_size))
    data_dir = Path(job_dir) / "data"
    source = Path(run.data)
    meta = read_meta(data_dir)
    if not source.exists() and meta is not None and meta["source"] == run.data \
            and meta["tokenizer_digest"] == tokenizer.digest:
        print(f"data: {source} is not reachable here; using the shards prepared from it "
              f"(fingerprint {meta['fingerprint'][:12]})", flush=True)
        info = _info_from_meta(meta, reused=True)
    else:
        files = list_input_files(source)
        fingerprint = _fingerprint(source, files, tokenizer)
        if meta is not None and meta["fingerprint"] == fingerprint:
            print(f"data: reusing prepared shards in {data_dir} (fingerprint {fingerprint[:12]})", flush=True)
            info = _info_from_meta(meta, reused=True)
        else:
            info = _info_from_meta(_build_shards(run.data, files, data_dir, tokenizer, fingerprint), reused=False)
            _print_summary(info, data_dir)
    if info.train.num_tokens < seq_len + 1:
        raise ValueError(f"{run.data}: the train split has {info.train.num_tokens} tokens after cleaning, "
                         f"fewer than one sequence of {seq_len} (+1) tokens")
    return info


def _print_summary(info: DataInfo, data_dir: Path) -> None:
    c = info.cleaning
    print(f"data: read {c.num_read} documents: {c.num_empty} empty, {c.num_garbled} garbled, "
          f"{c.num_duplicates} duplicates removed, {c.num_kept} kept", flush=True)
    print(f"data: train/val/test {info.train.num_documents}/{info.val.num_documents}/{info.test.num_documents} "
          f"documents, {info.train.num_tokens}/{info.val.num_tokens}/{info.test.num_tokens} tokens "
          f"({info.dtype}) in {data_dir}", flush=True)


# --------------------------------------------------------------------------- loaders


class _PackedSequences:
    """Non-overlapping windows of ``seq_len + 1`` tokens over one split's token stream."""

    def __init__(self, path: Path, dtype: str, num_tokens: int, seq_len: int):
        self.seq_len = seq_len
        self.tokens = (np.memmap(path, dtype=np.dtype(dtype), mode="r", shape=(num_tokens,))
                       if num_tokens else np.zeros(0, dtype=np.dtype(dtype)))
        self.num_sequences = max(0, (num_tokens - 1) // seq_len)

    def get(self, indices: np.ndarray) -> np.ndarray:
        window = indices[:, None] * self.seq_len + np.arange(self.seq_len + 1)
        return np.asarray(self.tokens[window], dtype=np.int64)


class _SyntheticSequences:
    """Infinite: sequence ``g`` is a pure function of (seed, split, g)."""

    num_sequences = None

    def __init__(self, seed: int, split: str, vocab_size: int, seq_len: int):
        self.seed, self.split_id, self.vocab_size, self.seq_len = seed, _SPLIT_IDS[split], vocab_size, seq_len
        # One stride per seed and vocabulary, shared by all sequences, so it can be learned.
        stride_rng = np.random.default_rng([seed, _SYNTHETIC_STRIDE_STREAM])
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

    def __init__(self, source, *, split: str, seed: int, micro_batch: int, dp_rank: int, dp_size: int,
                 fingerprint: str, pin_memory: bool = False):
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
            rng = np.random.default_rng([self.seed, _SPLIT_IDS[self.split], self.epoch])
            usable = self.batches_per_epoch * self.micro_batch * self.dp_size
            self._order = rng.permutation(self.source.num_sequences)[self.dp_rank:usable:self.dp_size]
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
            indices = self._rank_order()[begin:begin + self.micro_batch]
        self.position += 1
        return indices

    def __iter__(self) -> "ResumableLoader":
        return self

    def __next__(self) -> tuple[torch.Tensor, torch.Tensor]:
        window = torch.from_numpy(self.source.get(self.next_indices()))
        inputs, labels = window[:, :-1].contiguous(), window[:, 1:].contiguous()
        if self.pin_memory and torch.cuda.is_available():
            inputs, labels = inputs.pin_memory(), labels.pin_memory()
        return inputs, labels

    def state_dict(self) -> dict:
        return {"version": 1, "split": self.split, "seed": self.seed, "epoch": self.epoch,
                "position": self.position, "micro_batch": self.micro_batch, "dp_size": self.dp_size,
                "seq_len": self.source.seq_len, "fingerprint": self.fingerprint}

    def load_state_dict(self, state: dict) -> None:
        """Continue from ``state``. Exact when data, seq_len, batch and dp size are unchanged."""
        if state.get("split") != self.split:
            raise ValueError(f"loader state is for split {state.get('split')!r}, not {self.split!r}")
        self.epoch = int(state["epoch"])
        if state.get("fingerprint") != self.fingerprint or state.get("seq_len") != self.source.seq_len \
                or state.get("seed") != self.seed:
            print(f"data: the {self.split} data, seq_len or seed changed since this state was saved; "
                  f"restarting epoch {self.epoch} from its beginning", file=sys.stderr, flush=True)
            self.position = 0
            return
        position = int(state["position"])
        if (state.get("micro_batch"), state.get("dp_size")) != (self.micro_batch, self.dp_size):
            # Same global order; convert "sequences consumed in this epoch" to our batch shape.
            consumed = position * int(state["micro_batch"]) * int(state["dp_size"])
            position = consumed // (self.micro_batch * self.dp_size)
            print(f"data: batch shape changed ({state['dp_size']}x{state['micro_batch']} -> "
                  f"{self.dp_size}x{self.micro_batch}); resuming at sequence ~{consumed} of epoch {self.epoch}",
                  file=sys.stderr, flush=True)
        self.position = position


def build_loader(run: RunSettings, job_dir: Path, split: str, seq_len: int, micro_batch: int,
                 dp_rank: int, dp_size: int, vocab_size: int, *, pin_memory: bool = False) -> ResumableLoader:
    """This rank's resumable iterator of ``(input_ids, labels)``, int64 ``[micro_batch, seq_len]``."""
    _check_split(split)
    if not 0 <= dp_rank < dp_size or micro_batch < 1 or seq_len < 1:
        raise ValueError(f"bad loader shape: dp_rank={dp_rank}, dp_size={dp_size}, micro_batch={micro_batch}, "
                         f"seq_len={seq_len}")
    seed = run.seed % 2**63  # numpy seeds must be non-negative
    if run.data == "synthetic":
        source = _SyntheticSequences(seed, split, vocab_size, seq_len)
        fingerprint = _synthetic_fingerprint(run.seed, vocab_size)
    else:
        data_dir = Path(job_dir) / "data"
        meta = read_meta(data_dir)
        if meta is None:
            raise ValueError(f"{data_dir}: no prepared data (prepare_data runs on rank 0 before loaders are built)")
        if meta["tokenizer_vocab_size"] > vocab_size:
            raise ValueError(f"{data_dir}: shards use {meta['tokenizer_vocab_size']} token ids, more than the "
                             f"model's vocab_size {vocab_size}")
        source = _PackedSequences(data_dir / f"{split}.bin", meta["dtype"], meta["splits"][split]["num_tokens"],
                                  seq_len)
        fingerprint = meta["fingerprint"]
    loader = ResumableLoader(source, split=split, seed=seed, micro_batch=micro_batch, dp_rank=dp_rank,
                             dp_size=dp_size, fingerprint=fingerprint, pin_memory=pin_memory)
    if loader.batches_per_epoch == 0:
        raise ValueError(f"{run.data}: the {split} split has {source.num_sequences} sequences of {seq_len} tokens, "
                         f"too few for {dp_size} data-parallel ranks x micro-batch {micro_batch}")
    return loader


def _synthetic_fingerprint(seed: int, vocab_size: int) -> str:
    return f"synthetic-v{DATA_FORMAT_VERSION}-seed{seed}-vocab{vocab_size}"


def _check_split(split: str) -> str:
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r} (use {', '.join(SPLITS)})")
    return split

