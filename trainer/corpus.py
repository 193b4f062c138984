"""Documents to token ids: find the input files, read, clean and tokenise their documents.

``trainer.data`` splits, packs and loads what comes out of here (and re-exports the public
names of this module). Documents are handed on one at a time, as generators.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from planner.fmt import one_line

SUPPORTED_SUFFIXES = (".txt", ".jsonl", ".parquet")
# A .txt file is one document unless it contains this line, which separates documents.
TXT_DOCUMENT_SEPARATOR = "<|endoftext|>"
# A document is "garbled" when any of these is exceeded (fractions of its characters).
MAX_REPLACEMENT_FRACTION = 0.01  # U+FFFD: bytes that were not valid UTF-8
MAX_CONTROL_FRACTION = 0.01  # C0/C1 control characters other than tab and newlines
MIN_LETTER_FRACTION = 0.25  # letters among non-whitespace characters (binary, symbol soup)
# Byte-level fallback tokenizer: ids 0-255 are the bytes, 256 ends a document.
BYTE_VOCAB_SIZE = 257
EOS_TOKEN_NAMES = ("<|endoftext|>", "</s>", "<|end_of_text|>", "<eos>")

_CONTROL_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_LETTER_RE = re.compile(r"[^\W\d_]")
_SPACE_RE = re.compile(r"\s+")


@dataclass
class CleaningStats:
    """Document counts of the cleaning pass (filled in while streaming)."""

    num_read: int = 0
    num_empty: int = 0
    num_garbled: int = 0
    num_duplicates: int = 0
    num_kept: int = 0


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
            raise ValueError(f"{path}: cannot load tokenizer ({one_line(exc)})") from None
        self.vocab_size = self._hf.get_vocab_size(with_added_tokens=True)
        eos = [self._hf.token_to_id(name) for name in EOS_TOKEN_NAMES]
        if all(token_id is None for token_id in eos):
            raise ValueError(f"{path}: tokenizer has no end-of-document token (one of {', '.join(EOS_TOKEN_NAMES)})")
        self.eos_id = next(token_id for token_id in eos if token_id is not None)
        self.digest = file_digest(Path(path))

    def check_fits(self, model_vocab_size: int) -> None:
        if self.vocab_size > model_vocab_size:
            raise ValueError(
                f"{self.path or 'byte-level tokenizer'}: {self.vocab_size} tokens do not fit the "
                f"model's vocab_size {model_vocab_size}"
            )

    def encode_documents(self, texts: list[str], dtype: np.dtype) -> list[np.ndarray]:
        """Token ids of each document followed by the end-of-document id."""
        if self._hf is None:
            encoded = [np.frombuffer(text.encode("utf-8"), dtype=np.uint8) for text in texts]
        else:
            encoded = [
                np.asarray(enc.ids, dtype=np.int64) for enc in self._hf.encode_batch(texts, add_special_tokens=False)
            ]
        return [np.append(ids.astype(dtype), np.array([self.eos_id], dtype=dtype)) for ids in encoded]

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(np.uint16 if self.vocab_size <= 2**16 else np.uint32)


def file_digest(path: Path) -> str:
    """Content hash of one file (BLAKE2b, 32 hex digits)."""
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "blake2b").hexdigest()[:32]


# --------------------------------------------------------------------------- reading and cleaning


def list_input_files(source: Path) -> list[Path]:
    """The files ``run.data`` names: itself, or every supported file under it, sorted."""
    if source.is_file():
        if source.suffix not in SUPPORTED_SUFFIXES:
            raise ValueError(f"{source}: unsupported data file (use {', '.join(SUPPORTED_SUFFIXES)})")
        return [source]
    if not source.is_dir():
        raise ValueError(f"{source}: data path does not exist (give a file, a directory or 'synthetic')")
    files = sorted(
        p
        for p in source.rglob("*")
        if p.is_file()
        and p.suffix in SUPPORTED_SUFFIXES
        and not any(part.startswith(".") for part in p.relative_to(source).parts)
    )
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
                raise ValueError(f'{path}:{line_no}: expected an object with a string "text" field')
            yield record.get("text") or ""


def _read_parquet(path: Path) -> Iterator[str]:
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(path)
    except Exception as exc:
        raise ValueError(f"{path}: cannot read parquet file ({one_line(exc)})") from None
    if "text" not in parquet.schema_arrow.names:
        raise ValueError(f'{path}: parquet file has no "text" column (columns: {parquet.schema_arrow.names})')
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
