"""Documents to token ids: find the input files, read, clean and tokenise their documents.

``trainer.data`` splits, packs and loads what comes out of here (and re-exports the public
names of this module). Documents are handed on one at a time, as generators; a ``.txt``
document longer than LONG_DOCUMENT_CHARS comes as a :class:`LongDocument` of pieces, so one huge
document is never one string (nor its several copies while cleaning and tokenising).
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from planner.fmt import counted, one_line
from planner.limits import MAX_TOKENIZER_BYTES, check_input
from trainer.log import ON_STDOUT

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
# A .txt document longer than this (characters) is read, cleaned and tokenised in pieces of about
# this size: preparation memory is bounded by it, not by the largest document.
LONG_DOCUMENT_CHARS = 1 << 22

log = logging.getLogger(__name__)

_CONTROL_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_NOT_LETTERS_RE = re.compile(r"[\W\d_]+")  # runs of them: one match per gap between words, not per letter
_SPACE_RE = re.compile(r"\s+")
_SURROGATE_RE = re.compile(r"[\ud800-\udfff]")  # a JSON "\\ud800" escape: not text, cannot be encoded
# A .jsonl line that is not a JSON object with a string "text" is skipped and counted while such
# lines are at most this fraction of their file's: a truncated last line or a stray record does not
# stop a real corpus (trial s45 L9), a file of another format or field name does.
MAX_INVALID_LINE_FRACTION = 0.01
_SEPARATOR_RE = re.compile(re.escape(TXT_DOCUMENT_SEPARATOR) + r"[ \t]*\n?")


@dataclass
class CleaningStats:
    """Document counts of the cleaning pass (filled in while streaming)."""

    num_read: int = 0
    num_empty: int = 0
    num_garbled: int = 0
    num_duplicates: int = 0
    num_kept: int = 0
    num_invalid_lines: int = 0  # .jsonl lines skipped as invalid (not documents: none was read)


# --------------------------------------------------------------------------- tokenizers


class Tokenizer:
    """A local ``tokenizer.json`` (Hugging Face ``tokenizers``) or the byte-level fallback."""

    def __init__(self, path: str | None):
        self.path = path
        self._hf = None
        if path is None:
            self.vocab_size, self.eos_id, self.digest = BYTE_VOCAB_SIZE, BYTE_VOCAB_SIZE - 1, "byte-level"
            return
        check_input(path, "tokenizer", MAX_TOKENIZER_BYTES)  # a regular file, capped: never /dev/zero
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

    def encode_piece(self, text: str, dtype: np.dtype) -> np.ndarray:
        """Token ids of a piece of a long document (no end-of-document id)."""
        if self._hf is None:
            return np.frombuffer(text.encode("utf-8"), dtype=np.uint8).astype(dtype)
        return np.asarray(self._hf.encode(text, add_special_tokens=False).ids, dtype=np.int64).astype(dtype)

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(np.uint16 if self.vocab_size <= 2**16 else np.uint32)


def file_digest(path: Path, read: Callable[[int], None] | None = None) -> str:
    """Content hash of one file (BLAKE2b, 32 hex digits); ``read(n)`` after each chunk of n bytes
    (data preparation's progress line: trainer/progress.py)."""
    digest, buffer = hashlib.blake2b(), bytearray(DIGEST_CHUNK_BYTES)
    view = memoryview(buffer)
    with path.open("rb", buffering=0) as handle:
        while size := handle.readinto(buffer):
            digest.update(view[:size])
            if read is not None:
                read(size)
    return digest.hexdigest()[:32]


# One reused buffer, as hashlib.file_digest's own (2**18): a chunk per read, in bounded memory
# (tests/trainer/test_data_safety.py holds a 1 MB document's preparation under a third of it).
DIGEST_CHUNK_BYTES = 2**18


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


class LongDocument:
    """A ``.txt`` document longer than LONG_DOCUMENT_CHARS: its text as pieces of about that many
    characters, read from the file as they are asked for. The reader moves past whatever the
    consumer leaves unread, so it can be dropped part-way."""

    def __init__(self, pieces: Iterator[str]):
        self._pieces = pieces

    def pieces(self) -> Iterator[str]:
        return self._pieces

    def drain(self) -> None:
        for _ in self._pieces:
            pass


def read_documents(path: Path, stats: CleaningStats | None = None) -> Iterator[str | LongDocument]:
    """Raw document texts of one file; undecodable bytes become U+FFFD (then count as garbled).
    ``stats`` counts the invalid .jsonl lines skipped."""
    if path.suffix == ".txt":
        yield from _read_txt(path)
    elif path.suffix == ".jsonl":
        yield from _read_jsonl(path, CleaningStats() if stats is None else stats)
    else:
        yield from _read_parquet(path)


def _txt_lines(handle) -> Iterator[str | None]:
    """The lines of a text file (a line longer than LONG_DOCUMENT_CHARS in pieces), None for a
    separator line."""
    at_line_start = True
    while line := handle.readline(LONG_DOCUMENT_CHARS):
        yield None if at_line_start and _SEPARATOR_RE.fullmatch(line) else line
        at_line_start = line.endswith("\n")


def _read_txt(path: Path) -> Iterator[str | LongDocument]:
    """The documents of a ``.txt`` file, read line by line (universal newlines, as ``read_text``)."""
    with path.open(encoding="utf-8", errors="replace") as handle:
        lines = _txt_lines(handle)
        more = True
        while more:
            head: list[str] = []
            size, more = 0, False
            for line in lines:
                if line is None:
                    more = True
                    break
                head.append(line)
                size += len(line)
                if size > LONG_DOCUMENT_CHARS:
                    break
            if size <= LONG_DOCUMENT_CHARS:
                yield "".join(head)
                continue
            ended: list[bool] = []
            document = LongDocument(_long_pieces(head, lines, ended))
            yield document
            document.drain()
            more = bool(ended)


def _long_pieces(head: list[str], lines: Iterator[str | None], ended: list[bool]) -> Iterator[str]:
    """The pieces of a long document: ``head`` (read already), then the lines up to the next
    separator, joined into pieces of about LONG_DOCUMENT_CHARS; ``ended`` gets True at a separator."""
    buffered, size = head, sum(len(line) for line in head)
    for line in lines:
        if line is None:
            ended.append(True)
            break
        buffered.append(line)
        size += len(line)
        if size >= LONG_DOCUMENT_CHARS:
            yield "".join(buffered)
            buffered, size = [], 0
    if buffered:
        yield "".join(buffered)


def _read_jsonl(path: Path, stats: CleaningStats) -> Iterator[str]:
    """The ``text`` of each record; invalid lines are skipped and counted while they are at most
    MAX_INVALID_LINE_FRACTION of the file's, else the file stops the preparation at its end."""
    records, invalid, first = 0, 0, ""
    with path.open(encoding="utf-8", errors="replace") as lines:
        for line_no, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            records += 1
            try:
                text = _jsonl_text(line)
            except ValueError as exc:
                invalid += 1
                first = first or f"{path}:{line_no}: {exc}"
                continue
            yield text
    if invalid > MAX_INVALID_LINE_FRACTION * records:
        raise ValueError(
            first
            if records == 1
            else f"{first}; {invalid:,} of its {records:,} lines are invalid, over the {MAX_INVALID_LINE_FRACTION:.0%}"
            " that would be skipped"
        )
    if invalid:
        stats.num_invalid_lines += invalid
        log.warning(
            f"warning: data: skipped {counted(invalid, 'invalid line')} of {records:,}; the first: {first}",
            extra=ON_STDOUT,
        )


def _jsonl_text(line: str) -> str:
    """The record's text; ValueError saying what is wrong with the line."""
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ValueError(f"invalid JSON ({exc.msg})") from None
    except RecursionError:  # json's C decoder recurses per nesting level
        raise ValueError("JSON nested too deeply for a document record") from None
    if not isinstance(record, dict) or not isinstance(record.get("text", 0), (str, type(None))):
        raise ValueError('expected an object with a string "text" field')
    return record.get("text") or ""


def _read_parquet(path: Path) -> Iterator[str]:
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(path)
    except Exception as exc:
        raise ValueError(f"{path}: cannot read parquet file ({one_line(exc)})") from None
    if "text" not in parquet.schema_arrow.names:
        raise ValueError(f'{path}: parquet file has no "text" column (columns: {parquet.schema_arrow.names})')
    batches = parquet.iter_batches(columns=["text"], batch_size=1024)
    while True:
        try:  # a damaged row group shows only when it is read
            batch = next(batches, None)
        except Exception as exc:
            raise ValueError(f"{path}: cannot read parquet file ({one_line(exc)})") from None
        if batch is None:
            return
        for text in batch.column(0).to_pylist():
            yield text if isinstance(text, str) else ""


def normalise(text: str) -> str:
    """The form duplicates are compared in: NFC, whitespace runs collapsed, ends stripped."""
    return _SPACE_RE.sub(" ", unicodedata.normalize("NFC", text)).strip()


@dataclass
class _TextCounts:
    """What ``is_garbled`` looks at, summed over the pieces of a document."""

    chars: int = 0
    replacement: int = 0
    control: int = 0
    surrogates: int = 0
    visible: int = 0
    letters: int = 0

    def add(self, text: str) -> None:
        self.chars += len(text)
        self.replacement += text.count("\ufffd")
        self.control += _CONTROL_RE.subn("", text)[1]
        self.surrogates += _SURROGATE_RE.subn("", text)[1]
        self.visible += len(text) - text.count(" ") - sum(text.count(c) for c in "\n\t\r")
        self.letters += len(_NOT_LETTERS_RE.sub("", text))

    def garbled(self) -> bool:
        return (
            self.surrogates > 0  # a lone surrogate cannot be encoded, so it cannot be tokenised
            or self.replacement > MAX_REPLACEMENT_FRACTION * self.chars
            or self.control > MAX_CONTROL_FRACTION * self.chars
            or self.letters < MIN_LETTER_FRACTION * max(1, self.visible)
        )


def is_garbled(text: str) -> bool:
    """True for mis-decoded, binary or symbol-soup text (see the thresholds above), and for text
    with lone surrogates."""
    counts = _TextCounts()
    counts.add(text)
    return counts.garbled()


class Cleaner:
    """Which documents are kept: empty, garbled and repeated ones are dropped, counted in ``stats``."""

    def __init__(self, stats: CleaningStats):
        self.stats = stats
        self._seen: set[bytes] = set()

    def check(self, text: str) -> bytes | None:
        """The document's digest (sha1 of its normal form) when it is kept, else None."""
        self.stats.num_read += 1
        normal = normalise(text)
        if not normal:
            self.stats.num_empty += 1
            return None
        if is_garbled(normal):
            self.stats.num_garbled += 1
            return None
        return self._unseen(hashlib.sha1(normal.encode("utf-8")).digest())

    def check_long(self, document: LongDocument, sink: Callable[[str], None]) -> bytes | None:
        """``check`` for a long document, streamed: each piece goes to ``sink`` (which tokenises it
        into a spill file) while it is counted and hashed. Pieces are normalised one at a time, so
        the digest is of the same text as ``check``'s up to whitespace at the piece boundaries."""
        self.stats.num_read += 1
        counts, digest, held = _TextCounts(), hashlib.sha1(), None  # held: trailing whitespace so far
        for piece in document.pieces():
            normal = " ".join(unicodedata.normalize("NFC", piece).split())  # \s+ to " ", faster than the regex
            counts.add(normal)
            if counts.surrogates:  # garbled, and not encodable: stop feeding the sink
                continue
            digest.update(normal.encode("utf-8"))
            # The document as check() keeps it (stripped): whitespace goes on only once text follows.
            body = piece.rstrip()
            if body.strip():
                sink(body.lstrip() if held is None else held + body)
                held = piece[len(body) :]
            elif held is not None:
                held = held + piece if len(held) < LONG_DOCUMENT_CHARS else piece
        if counts.visible == 0:
            self.stats.num_empty += 1
            return None
        if counts.garbled():
            self.stats.num_garbled += 1
            return None
        return self._unseen(digest.digest())

    def _unseen(self, digest: bytes) -> bytes | None:
        if digest in self._seen:
            self.stats.num_duplicates += 1
            return None
        self._seen.add(digest)
        self.stats.num_kept += 1
        return digest


def clean_documents(texts: Iterable[str], stats: CleaningStats) -> Iterator[tuple[str, bytes]]:
    """Drop empty, garbled and repeated documents; yield (stripped text, sha1 of normal form).

    ``stats`` is updated in place, so the caller can report it after streaming.
    """
    cleaner = Cleaner(stats)
    for text in texts:
        digest = cleaner.check(text)
        if digest is not None:
            yield text.strip(), digest
