"""Atomic, verified, distributed checkpoints (torch.distributed.checkpoint).

Layout of ``JOB_DIR/ckpt``::

    step-000040/            a complete checkpoint (only ever appears by rename)
        .metadata, __0_0.distcp, ...   DCP shards of model + optimizer (sharded, reshardable)
        rank-00000.pt ...              per-rank state: step, loader position, RNG, scheduler, ...
        manifest.json                  every other file with size + sha256, written last
    step-000060.tmp/        being written; removed or ignored if the run dies
    step-000030.corrupt/    failed its manifest check at a resume: set aside (once an earlier one
                            loaded, or on --restart-from-scratch), never loaded or pruned

Trust: a checkpoint is data, never code. The manifest catches damage (truncation, bit flips);
it cannot catch a deliberate edit, since whoever can write the files can re-hash them. So loading
never unpickles arbitrary objects (trainer/safe_dcp.py: an allow-list for ``.metadata``,
``weights_only`` for everything else), and a checkpoint that fails is skipped, never half-trusted.

All ranks write into ``step-N.tmp``, fsync, agree at a barrier, hash their share of the
files, and rank 0 writes the manifest and renames the directory. A crash at any point
leaves the previous checkpoints untouched. The directory must be shared by all ranks
(one node, or a shared filesystem across nodes).
"""

from __future__ import annotations

import errno
import json
import logging
import os
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint import CheckpointException
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict

from planner.errors import CheckpointDiskFullError, JobDirWriteError
from planner.fmt import one_line
from trainer.files import (
    MANIFEST,
    ModelIdentity,
    file_sha256,
    list_checkpoints,
    rank_state_file,
    recorded_identity,
    step_dir_name,
)
from trainer.log import ON_STDOUT, clipped
from trainer.safe_dcp import safe_load, saved_dtypes

log = logging.getLogger(__name__)

QUARANTINE_SUFFIX = ".corrupt"  # step-N.corrupt: a checkpoint that failed to verify or load, set aside


@dataclass
class Checkpointable:
    """What one checkpoint holds: the sharded model/optimizer and this rank's small state."""

    model: torch.nn.Module  # this rank's model (its pipeline stage under pp)
    optimizer: torch.optim.Optimizer
    rank_state: Callable[[], dict[str, Any]]  # step, loader, scheduler, RNG, counters
    load_rank_state: Callable[[dict[str, Any]], None]


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _chain(exc: BaseException | None) -> Iterator[BaseException]:
    """``exc``, its causes and contexts, and the per-rank failures DCP wraps, each once."""
    seen: set[int] = set()
    pending: list[BaseException | None] = [exc]
    while pending:
        current = pending.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        if isinstance(current, CheckpointException):
            pending.extend(failure[0] for failure in current.failures.values())
        pending.extend([current.__cause__, current.__context__])


def _is_disk_full(exc: BaseException) -> bool:
    if any(isinstance(current, OSError) and current.errno == errno.ENOSPC for current in _chain(exc)):
        return True
    # torch's zip writer (torch.save, and DCP's shard files through it) turns ENOSPC into
    # "unexpected pos N vs M" / "file write failed" without an errno.
    return any(text in str(exc) for text in _DISK_FULL_TEXTS)


def _os_error(exc: BaseException | None) -> str | None:
    """The strerror of an OSError in ``exc``'s chain (DCP wraps it), else None."""
    return next((c.strerror or one_line(c) for c in _chain(exc) if isinstance(c, OSError)), None)


# A manifest that cannot be read (OSError: gone, EIO, ESTALE) is read again this often before the
# run falls back to an earlier checkpoint, or refuses without one: on a shared file system a
# checkpoint can be briefly invisible (attribute caching, a remount), and taking that for damage
# set it aside and started over (trial49 M5).
MANIFEST_TRIES = 3
MANIFEST_RETRY_S = 5.0


@dataclass(frozen=True)
class Verdict:
    """A checkpoint's check against its manifest, agreed by every rank."""

    problem: str | None  # what is wrong; None: the files are what was written
    unreadable: bool = False  # the manifest could not be read now: not evidence of damage
    # The model the verified manifest records (``_check_identity``), from the read that verified it:
    # this rank's own, never gathered; None: not verified, or a manifest from before the fingerprint.
    saved: ModelIdentity | None = None


_DISK_FULL_TEXTS = ("No space left on device", "unexpected pos", "file write failed", "Disk quota exceeded")

# How a save failed on a rank, worst last: the ranks agree on the maximum (``_abandon``).
_OTHER, _UNWRITABLE, _DISK_FULL = 0, 1, 2


def _failure_kind(error: BaseException | None) -> int:
    if error is None:
        return _OTHER
    if _is_disk_full(error):
        return _DISK_FULL
    return _UNWRITABLE if _os_error(error) is not None else _OTHER


def _manifest_files(manifest: object) -> dict[str, dict]:
    """The manifest's ``files``, checked for shape: ``{name: {"size": int, "sha256": str}}``."""
    files = manifest.get("files") if isinstance(manifest, dict) else None
    if not isinstance(files, dict):
        raise ValueError("'files' is not an object")
    for name, entry in files.items():
        if (
            not isinstance(entry, dict)
            or type(entry.get("size")) is not int
            or not isinstance(entry.get("sha256"), str)
            or "/" + name != str(Path("/" + name).resolve())  # no "..", no absolute names
        ):
            raise ValueError(f"bad entry for {name!r}")
    return files


def _detail(exc: BaseException) -> str:
    text = clipped(one_line(exc))
    return f": {text}" if text and text != exc.__class__.__name__ else ""


def _remove(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink()
    else:
        shutil.rmtree(path, ignore_errors=True)


def _files_of(directory: Path) -> list[str]:
    return sorted(str(p.relative_to(directory)) for p in directory.rglob("*") if p.is_file() and p.name != MANIFEST)


def _hash_share(directory: Path, files: list[str], rank: int, world: int) -> dict[str, dict]:
    """This rank's share (every world-th file) of the manifest entries."""
    return {
        name: {"size": (directory / name).stat().st_size, "sha256": file_sha256(directory / name)}
        for name in files[rank::world]
    }


def _all_true(flag: bool, device: torch.device) -> bool:
    value = torch.tensor([1 if flag else 0], device=device)
    dist.all_reduce(value, op=dist.ReduceOp.MIN)
    return bool(value.item())


# A checkpoint's format, by its weights' dtype (``_check_format``): pure bf16's weights are the master
# (trainer/parallel.py ``cast_to_pure_bf16``); mixed precision's, and fp32 training's, are fp32 masters.
# DCP loads either into the other, cast, without a word (bf16pure55, review55 L5).
WEIGHT_FORMATS = {
    True: "pure bf16 weights and AdamW moments (no fp32 master)",
    False: "fp32 weights and AdamW moments (the master of mixed precision, or fp32 training)",
}


class CheckpointManager:
    def __init__(
        self, ckpt_dir: Path, keep: int, collective_device: torch.device, identity: ModelIdentity | None = None,
        wait: Callable[[float], None] = time.sleep,
    ):  # fmt: skip
        """``wait``: between reads of a manifest that cannot be read (``MANIFEST_RETRY_S``)."""
        self.ckpt_dir = Path(ckpt_dir)
        if self.ckpt_dir.exists() and not self.ckpt_dir.is_dir():
            raise ValueError(f"{self.ckpt_dir} is not a directory: move it aside (checkpoints are written there)")
        self.keep = keep
        self.device = collective_device  # tensors for all_reduce (CPU for gloo, CUDA for NCCL)
        self.identity = identity  # written into each manifest; a checkpoint of another model is refused
        self.wait = wait
        self.rank, self.world = dist.get_rank(), dist.get_world_size()
        # the checkpoints this launch set aside as corrupt, by name (a start-over says them once)
        self.set_aside: list[str] = []

    # ------------------------------------------------------------------ save

    def save(self, step: int, state: Checkpointable) -> Path:
        final = self.ckpt_dir / step_dir_name(step)
        tmp = self.ckpt_dir / (step_dir_name(step) + ".tmp")
        error: BaseException | None = None
        try:  # inside the protocol: a read-only ckpt dir is every rank's one-line error, not a hang
            if self.rank == 0:
                self.ckpt_dir.mkdir(parents=True, exist_ok=True)
                _remove(tmp)  # left over by a crash during an earlier save (a directory, or a stray file)
                tmp.mkdir()
        except OSError as exc:
            error = exc
        if not _all_true(error is None, self.device):  # also the barrier before anyone writes
            self._abandon(tmp, step, error)
        try:
            self._write_shards(tmp, state)
        except (OSError, CheckpointException, RuntimeError) as exc:
            error = exc
        if not _all_true(error is None, self.device):
            self._abandon(tmp, step, error)
        try:
            self._write_manifest_and_publish(tmp, final)
        except OSError as exc:  # rank 0 only: the others learn of it below
            error = exc
        else:  # before the last agreement, so every rank returns from the save at once (session_stop.py)
            self._prune(step)
        if not _all_true(error is None, self.device):
            self._abandon(tmp, step, error)
        return final

    def _write_shards(self, tmp: Path, state: Checkpointable) -> None:
        model_sd, optim_sd = self._state_dicts(state)
        dcp.save({"model": model_sd, "optim": optim_sd}, storage_writer=dcp.FileSystemWriter(tmp, sync_files=True))
        rank_file = rank_state_file(tmp, self.rank)
        with rank_file.open("wb") as handle:
            torch.save(state.rank_state(), handle)
            handle.flush()
            os.fsync(handle.fileno())

    @staticmethod
    def _state_dicts(state: Checkpointable) -> tuple[dict, dict]:
        """Sharded (DTensor) state dicts with layout-independent parameter names."""
        return get_state_dict(state.model, state.optimizer)

    def _abandon(self, tmp: Path, step: int, error: BaseException | None) -> None:
        """Every rank raises the same kind of error, the worst any rank met (trial s27: rank 0 of a
        read-only ckpt dir said so in one line while rank 1, whose write never started, printed a
        traceback): disk full, then an OSError (read-only, permissions), then anything else."""
        kind = torch.tensor([_failure_kind(error)], device=self.device)
        dist.all_reduce(kind, op=dist.ReduceOp.MAX)
        if self.rank == 0:
            shutil.rmtree(tmp, ignore_errors=True)
        dist.barrier()
        kept = ", ".join(p.name for _, p in list_checkpoints(self.ckpt_dir)) or "none"
        if kind.item() == _DISK_FULL:
            raise CheckpointDiskFullError(
                f"disk full while writing checkpoint {tmp} (step {step}): free space on "
                f"{self.ckpt_dir} and resume; the partial checkpoint was removed, previous ones kept ({kept})"
            )
        here = _os_error(error) or "failed on another rank"
        if kind.item() == _UNWRITABLE:  # read-only, permissions: the operator's to fix
            raise JobDirWriteError(
                f"cannot write checkpoint {tmp} (step {step}): {here}; make {self.ckpt_dir} writable"
                f" and resume; previous checkpoints kept ({kept})"
            )
        detail = one_line(error) if error is not None else "failed on another rank"
        raise RuntimeError(f"writing checkpoint {tmp} failed ({detail}); previous checkpoints kept ({kept})")

    def _write_manifest_and_publish(self, tmp: Path, final: Path) -> None:
        """Hash in parallel; rank 0 writes the manifest last, then renames (the commit point)."""
        files = _files_of(tmp)
        share = _hash_share(tmp, files, self.rank, self.world)
        shares: list[dict] = [{} for _ in range(self.world)]
        dist.all_gather_object(shares, share)
        if self.rank == 0:
            entries = {name: entry for part in shares for name, entry in part.items()}
            manifest: dict[str, Any] = {"files": dict(sorted(entries.items())), "world_size": self.world}
            if self.identity is not None:
                manifest["model_sha256"] = self.identity.sha256
                manifest["model"] = self.identity.description
            with (tmp / MANIFEST).open("w") as handle:
                handle.write(json.dumps(manifest, indent=1) + "\n")
                handle.flush()
                os.fsync(handle.fileno())
            _fsync_dir(tmp)
            if final.exists():  # a checkpoint of this step from an earlier attempt
                shutil.rmtree(final)
            os.rename(tmp, final)
            _fsync_dir(self.ckpt_dir)

    def _prune(self, saved_step: int) -> None:
        """Keep the ``keep`` newest checkpoints up to the one just saved. Newer ones (left by a run
        that got further, and not loaded: corrupt ones that could not be set aside) are not counted,
        so the checkpoint just written is never the one pruned."""
        if self.rank != 0:
            return
        older = [(step, path) for step, path in list_checkpoints(self.ckpt_dir) if step <= saved_step]
        for _, path in older[: -self.keep]:
            shutil.rmtree(path, ignore_errors=True)

    def _quarantine(self, paths: list[Path]) -> None:
        """Rename checkpoints that failed to verify to ``step-N.corrupt`` (rank 0), so they are
        neither loaded nor counted by pruning again, and are kept for a look."""
        for path in paths:
            self.set_aside.append(path.name + QUARANTINE_SUFFIX)
            if self.rank == 0:
                target = path.with_name(path.name + QUARANTINE_SUFFIX)
                try:
                    _remove(target)  # an earlier corrupt copy of the same step
                    os.rename(path, target)
                    log.warning(f"checkpoint {path} set aside as {target.name}", extra=ON_STDOUT)
                except OSError as exc:  # a read-only ckpt dir: pruning never counts it anyway
                    log.warning(f"checkpoint {path} could not be set aside ({exc.strerror})", extra=ON_STDOUT)
        if paths:
            dist.barrier()

    # ------------------------------------------------------------------ load

    def verify(self, path: Path) -> str | None:
        """None when the manifest matches the files; otherwise what is wrong (same on all ranks)."""
        return self._verdict(path).problem

    def _verdict(self, path: Path) -> Verdict:
        problem, unreadable = None, False
        manifest: dict[str, dict] = {}
        saved: ModelIdentity | None = None
        try:
            recorded = json.loads((path / MANIFEST).read_text())
            manifest, saved = _manifest_files(recorded), recorded_identity(recorded)
        except OSError as exc:  # gone or unreadable for now (a shared file system's blip): no evidence of damage
            problem, unreadable = f"{MANIFEST} cannot be read ({exc.strerror or exc.__class__.__name__})", True
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
            problem = f"unreadable manifest ({exc.__class__.__name__})"
        except ValueError as exc:  # valid JSON of the wrong shape, e.g. {"files": null}
            problem = f"malformed manifest ({exc})"
        names = sorted(manifest)
        if problem is None:
            problem = self._check_share(path, manifest, names)
            if problem is None and set(_files_of(path)) != set(names):
                problem = "files differ from the manifest"
        verdicts: list[Verdict | None] = [None] * self.world
        dist.all_gather_object(verdicts, Verdict(problem, unreadable))
        found = [v for v in verdicts if v is not None and v.problem is not None]
        # one rank that cannot read the manifest now: not known to be damaged, on any rank
        return next((v for v in found if v.unreadable), found[0] if found else Verdict(None, saved=saved))

    def _verified(self, path: Path) -> Verdict:
        """``verify``, asked again while the manifest cannot be read; then still ``unreadable``."""
        for attempt in range(1, MANIFEST_TRIES + 1):
            verdict = self._verdict(path)
            if not verdict.unreadable:
                return verdict
            if attempt < MANIFEST_TRIES:
                log.warning(f"checkpoint {path}: {verdict.problem}; trying again in {MANIFEST_RETRY_S:g} s",
                            extra=ON_STDOUT)  # fmt: skip
                self.wait(MANIFEST_RETRY_S)
        return replace(verdict, problem=f"{verdict.problem}, {MANIFEST_TRIES} tries {MANIFEST_RETRY_S:g} s apart")

    def _check_share(self, path: Path, manifest: dict, names: list[str]) -> str | None:
        for name in names[self.rank :: self.world]:
            file = path / name
            if not file.is_file():
                return f"{name} is missing"
            if file.stat().st_size != manifest[name]["size"]:
                return f"{name} has {file.stat().st_size} bytes, manifest says {manifest[name]['size']}"
            if file_sha256(file) != manifest[name]["sha256"]:
                return f"{name} does not match its sha256"
        return None

    def load_latest(self, state: Checkpointable, restart_from_scratch: bool = False) -> int | None:
        """Load the newest checkpoint that verifies and loads; returns its step, or None to start
        fresh: with none at all, or, with ``restart_from_scratch``, none that verifies (they are set
        aside). Newer ones that failed to verify are set aside once an earlier one has loaded."""
        touched = None  # a checkpoint whose load failed part-way: the model may hold some of it
        corrupt: list[Path] = []  # failed to verify, newest first: set aside only once the outcome is known
        unreadable: list[tuple[Path, str]] = []  # manifest unreadable after the retries: left where they are
        newest_first = list(reversed(list_checkpoints(self.ckpt_dir)))
        for i, (step, path) in enumerate(newest_first):
            earlier = i + 1 < len(newest_first)
            verdict = self._verified(path)
            if verdict.unreadable:  # not known to be damaged (review49 L2: it refused, an earlier one verifying)
                self._report_corrupt(path, f"{verdict.problem}; left in place", earlier, "cannot be verified")
                unreadable.append((path, str(verdict.problem)))
                continue
            if verdict.problem is not None:  # its files are not what was written
                self._report_corrupt(path, verdict.problem, earlier)
                corrupt.append(path)
                continue
            self._check_identity(path, verdict.saved)
            self._check_format(path, state)
            problem = self._try_load(path, state)
            if problem is not None:  # kept where it is: a load can fail for reasons of this run
                touched = touched or path
                self._report_corrupt(path, problem, earlier)
                continue
            self._quarantine(corrupt)
            return step
        if touched is not None:
            raise ValueError(
                f"no checkpoint in {self.ckpt_dir} could be loaded, and {touched.name} failed part-way, so the"
                f" model is not freshly initialised: move {self.ckpt_dir} aside to start over"
            )
        if unreadable:  # with or without the flag: a file system away for longer than the retries
            path, problem = unreadable[0]
            raise ValueError(
                f"checkpoint {path}: {problem}; nothing was set aside: if its file system was away, run"
                f" again; if the manifest is lost, move {path.name} out of the way"
            )
        if corrupt and not restart_from_scratch:  # trial49 M5: days of training started over unasked
            raise ValueError(
                f"no checkpoint in {self.ckpt_dir} verifies ({', '.join(p.name for p in corrupt)}), and starting"
                " over trains every step again: nothing was set aside; restore them, or run again with"
                " --restart-from-scratch to set them aside and train from step 0"
            )
        self._quarantine(corrupt)
        return None

    @staticmethod
    def _report_corrupt(path: Path, problem: str, earlier: bool, what: str = "is corrupt") -> None:
        then = "falling back to the previous one" if earlier else "no earlier checkpoint"
        log.warning(f"checkpoint {path} {what} ({problem}); {then}", extra=ON_STDOUT)

    def _check_identity(self, path: Path, saved: ModelIdentity | None) -> None:
        """A verified checkpoint of another model (the job dir was re-emitted): say whose it is
        (``saved``: the model its manifest records)."""
        if self.identity is not None and saved is not None and not self.identity.holds(saved):
            raise ValueError(
                f"checkpoint {path} holds {saved.description}, but job.json is for"
                f" {self.identity.description}: the job dir was emitted again for another plan; move"
                f" {self.ckpt_dir} aside or emit into a new directory"
            )

    def _check_format(self, path: Path, state: Checkpointable) -> None:
        """A verified checkpoint in the other format (``WEIGHT_FORMATS``) than the model this job built:
        refused, both named (an unreadable ``.metadata`` is left to the load, which says so)."""
        try:
            saved = torch.bfloat16 in saved_dtypes(path, "model.")
        except Exception:  # an unreadable .metadata: _try_load reports it as the load's failure
            return
        built = any(p.dtype == torch.bfloat16 for p in state.model.parameters())
        if saved != built:
            raise ValueError(
                f"checkpoint {path} holds {WEIGHT_FORMATS[saved]}, but job.json trains {WEIGHT_FORMATS[built]}:"
                f" resuming would cast them; emit the plan {'with' if saved else 'without'} --pure-bf16 to resume"
                f" it, or move {self.ckpt_dir} aside to start over"
            )

    def _try_load(self, path: Path, state: Checkpointable) -> str | None:
        """Load on every rank; None when every rank loaded, else one rank's reason (same on all)."""
        problem = None
        try:
            self._load(path, state)
        except (Exception, CheckpointException) as exc:  # an unloadable .metadata, shard or rank file: fall back
            # DCP wraps each rank's error in a CheckpointException: name the error itself
            cause = next((c for c in _chain(exc) if not isinstance(c, CheckpointException)), exc)
            problem = f"does not load: {cause.__class__.__name__}{_detail(cause)}"
        problems: list[str | None] = [None] * self.world
        dist.all_gather_object(problems, problem)
        return next((p for p in problems if p is not None), None)

    def _load(self, path: Path, state: Checkpointable) -> None:
        model_sd, optim_sd = self._state_dicts(state)
        own_params = [group["params"] for group in optim_sd["param_groups"]]
        safe_load({"model": model_sd, "optim": optim_sd}, path)  # no unpickling of arbitrary objects
        # The saved param_groups are one rank's and name that rank's parameters; on another layout
        # (a pipeline stage, or a tied head that is a tensor of its own there) they name parameters
        # this rank does not hold, and set_state_dict then wants their state. Keep this rank's names.
        for group, params in zip(optim_sd["param_groups"], own_params, strict=True):
            group["params"] = params
        set_state_dict(state.model, state.optimizer, model_state_dict=model_sd, optim_state_dict=optim_sd)
        rank_file = rank_state_file(path, self.rank)
        if not rank_file.exists():  # resumed on more ranks than saved: continue from rank 0's position
            rank_file = rank_state_file(path, 0)
        state.load_rank_state(torch.load(rank_file, weights_only=True))
