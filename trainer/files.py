"""Atomic small-file writes for the job directory (job files, metadata, reports), and file hashes."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from planner.fmt import one_line

CHECKPOINT_DIR = "ckpt"  # the job directory's checkpoints (trainer/checkpoint.py writes them)
_STEP_DIR = re.compile(r"^step-(\d{6,})$")


def step_dir_name(step: int) -> str:
    return f"step-{step:06d}"


def list_checkpoints(ckpt_dir: Path) -> list[tuple[int, Path]]:
    """Completed checkpoints, oldest first (``.tmp`` directories are not checkpoints). Here, not in
    trainer/checkpoint.py, so that ``emit`` can look without importing torch."""
    if not ckpt_dir.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in ckpt_dir.iterdir() if (m := _STEP_DIR.match(p.name)) and p.is_dir()]
    return sorted(found)


MANIFEST = "manifest.json"  # a checkpoint's files with their sizes and sha256, written last
# `trainplan run`'s, the launcher's and the worker's flag (trainer/checkpoint.py ``load_latest``)
RESTART_FROM_SCRATCH_HELP = (
    "when no checkpoint verifies, set them aside as step-N.corrupt and train from step 0"
    " (without it the run refuses, exit 2); no effect while one loads"
)


@dataclass(frozen=True)
class ModelIdentity:
    """Which model a checkpoint holds: the model spec, fingerprinted; ``earlier``: the fingerprints
    older trainplans recorded for the same spec, which a checkpoint of theirs may carry."""

    sha256: str
    description: str
    earlier: tuple[str, ...] = ()

    def holds(self, saved: ModelIdentity) -> bool:
        """Whether a checkpoint's recorded identity is this model's, by this or an earlier rule."""
        return saved.sha256 == self.sha256 or saved.sha256 in self.earlier


# Until session 49 the fingerprint hashed the whole spec, so a field added to it with its default
# (rope_attention_factor, session 49) changed every model's fingerprint and no checkpoint resumed
# after an upgrade (ckpt49). Now the spec less its defaults is hashed, which a new defaulted field
# leaves alone; the old rule's hash (the whole spec without the fields added since) is accepted too.
# Session 52 (the DeepSeek router read from a config) added expert_groups, topk_expert_groups and
# routed_scale: the same break, caught by tests/trainer/test_model_identity.py; session 53 Granite's
# multipliers likewise.
FIELDS_ADDED_AFTER_WHOLE_SPEC_HASH = frozenset(
    {"rope_attention_factor", "expert_groups", "topk_expert_groups", "routed_scale", "multipliers"}
)


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def model_identity(plan) -> ModelIdentity:
    """A replan may change the layout and the batch (DCP reshards), never the model: so the
    fingerprint is the model spec's, with the plan's name and hardware for the message."""
    spec = plan.model
    whole = spec.model_dump_json(exclude={"name", *FIELDS_ADDED_AFTER_WHOLE_SPEC_HASH})
    return ModelIdentity(
        sha256=_sha256(spec.model_dump_json(exclude={"name"}, exclude_defaults=True)),
        description=f"model {spec.name} ({spec.num_layers} layers, hidden {spec.hidden_size}, vocab {spec.vocab_size})",
        earlier=(_sha256(whole),),
    )


def saved_identity(checkpoint: Path) -> ModelIdentity | None:
    """The model a checkpoint's manifest records (None: a manifest from before the fingerprint, or
    none readable). Here, beside ``list_checkpoints``, so that ``emit`` can look without torch."""
    try:
        manifest = json.loads((checkpoint / MANIFEST).read_text())
    except (OSError, ValueError, RecursionError):  # ValueError: bad JSON or UTF-8
        return None
    return recorded_identity(manifest)


def recorded_identity(manifest: object) -> ModelIdentity | None:
    """The model a parsed manifest records (``saved_identity``; a resume reads it from the manifest
    it verified, not from a second read)."""
    if not isinstance(manifest, dict) or not isinstance(saved := manifest.get("model_sha256"), str):
        return None
    return ModelIdentity(saved, str(manifest.get("model", "another model"))[:200])


# A run's records of its steps and its outcome (trainer/metrics.py, trainer/probe.py).
METRICS_FILE = "metrics.jsonl"
REPORT_FILE = "report.json"
# `trainplan run` prepares (or hashes) the data shards before torchrun starts and hands its workers
# their ``shards_stamp`` (trainer/data_meta.py) in this variable: rank 0 reuses them unread while the
# stamp holds (trial s45 L9: "data: reusing prepared shards" and a full read of every shard, twice a launch).
CHECKED_SHARDS_ENV = "TRAINPLAN_CHECKED_SHARDS"
# the validation probe found the plan does not fit (trainer/probe.py; trainer/replan.py reads it)
REPLAN_FILE = "replan_needed.json"
EXIT_STATUS_FILE = "exit_status.json"  # the workers' exit code, which ``trainplan run`` returns


def keep_earlier_run(
    job_dir: Path, names: tuple[str, ...] = (METRICS_FILE, REPORT_FILE), before: str = "restart"
) -> list[str]:
    """Rename the job's metrics and report (``names``) to ``metrics.before-restart-N.jsonl`` and
    ``report.before-restart-N.json`` (``before``: what comes after them; N the first free) before a
    run that starts again from step 0; returns the names given."""
    n = 1
    while any((job_dir / _kept_name(name, before, n)).exists() for name in names):
        n += 1
    kept = []
    for name in names:
        if (job_dir / name).is_file():
            os.replace(job_dir / name, job_dir / _kept_name(name, before, n))
            kept.append(_kept_name(name, before, n))
    return kept


def _kept_name(name: str, before: str, n: int) -> str:
    stem, dot, suffix = name.partition(".")
    return f"{stem}.before-{before}-{n}{dot}{suffix}"


def rank_state_file(checkpoint: Path, rank: int) -> Path:
    """A checkpoint's file of one rank's own state (step counters, loader position, RNG: trainer/checkpoint.py)."""
    return checkpoint / f"rank-{rank:05d}.pt"


def write_atomic(path: Path, text: str, *, executable: bool = False) -> Path:
    """Write ``text`` to a hidden temporary file beside ``path``, flush it to disk, then rename
    it over ``path``: a crash leaves the old file or the new one, never half of one."""
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        with tmp.open("w") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        if executable:
            tmp.chmod(tmp.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        os.replace(tmp, path)
    except OSError as exc:
        # no temporary file left behind, and the error names the file (a full disk's write error
        # has no filename: trial s37, "No space left on device", and the leftover .tmp then made
        # emit's retry refuse the directory as "not empty and holds no job")
        with contextlib.suppress(OSError):
            tmp.unlink()
        if exc.filename:  # an open or rename names its file already
            raise
        raise OSError(exc.errno, exc.strerror, str(path)) from exc
    return path


def write_json_atomic(path: Path, payload: dict) -> Path:
    return write_atomic(path, json.dumps(payload, indent=2) + "\n")


def read_capped(path: Path, limit: int) -> bytes:
    """The bytes of ``path``, a regular file of at most ``limit`` bytes (planner/limits.py
    ``read_input``: never ``/dev/zero`` or a FIFO); OSError as ``open`` raises it, ValueError
    when the file is too big or not a regular file."""
    from planner.limits import read_input

    return read_input(path, "trainplan file", limit, os_errors=True)


def file_sha256(path: Path) -> str:
    """Hex sha256 of a file, read in chunks (a shard or a checkpoint file can be GBs)."""
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def check_writable_dir(directory: Path, what: str) -> None:
    """``directory`` exists or can be made, and takes a file: ValueError in one line otherwise (trial
    s27: a read-only ckpt dir was found at the first save, one checkpoint interval into the run).
    A path that is a file is left to its reader, which names it."""
    if directory.exists() and not directory.is_dir():
        return
    probe = directory / f".write-probe-{os.getpid()}"
    try:
        directory.mkdir(parents=True, exist_ok=True)
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise ValueError(
            f"{directory}: {what} cannot be written there ({exc.strerror or one_line(exc)}); make it writable"
            " and run again"
        ) from exc
