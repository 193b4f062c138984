"""The error surface in one place: the typed exceptions with their structured fields, and the
process exit codes of ``trainplan`` (ui/cli.py) and the trainer (trainer/launch.py, trainer/train.py).

Only the standard library (and planner/rule_codes.py, which imports only the standard library)
is imported here, so every layer (planner, trainer, ui) can import this module without pulling
anything else in.
"""

from __future__ import annotations

from enum import IntEnum, StrEnum

from planner.rule_codes import Figures, RuleCode, render

__all__ = [
    "CatalogError",
    "CatalogViolation",
    "CheckpointDiskFullError",
    "Constraint",
    "DiskFullError",
    "ExitCode",
    "InfeasiblePlan",
    "JobDirLockedError",
    "JobDirWriteError",
    "NoGPUDriver",
    "ReplanNeeded",
    "RuleCode",
    "RuleViolation",
    "rule_violation",
]


class ExitCode(IntEnum):
    """Exit codes of ``trainplan`` and of each trainer worker (docs/trainer.md)."""

    OK = 0  # done or early-stopped; an infeasible request is an answer too
    FAILED = 1  # torchrun's code for any failed worker when the worker left no code of its own
    INVALID = 2  # a user error: bad flag, file, job or plan (one line on stderr)
    REPLAN = 3  # the probe found that the plan does not fit (replan_needed.json written)
    DISK_FULL = 4  # the disk filled up while checkpointing (previous checkpoints kept)
    DIVERGED = 5  # too many non-finite steps (the last good checkpoint is kept)
    ABORTED = 130  # interrupted (128 + SIGINT: Ctrl-C); the trainer saved a checkpoint first
    # SIGTERM (a scheduler's preemption): saved, stopped, resume by running again. 128 + SIGTERM, as a
    # process killed by it, so Kubernetes' restartPolicy ExitCode and Slurm's requeue retry it.
    PREEMPTED = 143


# --------------------------------------------------------------------------- planner


class Constraint(StrEnum):
    """The constraints of the single-job model, in the order the diagnosis re-imposes them."""

    MEMORY = "memory"
    DIVISIBILITY = "divisibility"
    BATCH = "batch"
    INVENTORY = "inventory"
    DEADLINE = "deadline"
    BUDGET = "budget"


class InfeasiblePlan(Exception):
    """No candidate satisfies every constraint: which one binds, by how much, and a fix."""

    def __init__(
        self,
        constraint: Constraint,
        detail: str,
        fix: str,
        *,
        required: float | None = None,
        available: float | None = None,
        more_gpus_help: bool | None = None,
    ) -> None:
        super().__init__(f"{constraint.value}: {detail}; {fix}")
        self.constraint = constraint
        self.detail = detail
        self.fix = fix
        self.required = required  # e.g. GiB needed, GPUs needed, seconds, USD
        self.available = available  # the matching limit
        # Whether more GPUs than allowed would meet a deadline: True (a scored or probed count
        # does), False (none up to the counts scored or probed does), None (not looked at).
        self.more_gpus_help = more_gpus_help

    def but(self, fix: str | None = None, detail: str | None = None, **changes: object) -> InfeasiblePlan:
        """This answer with another fix or detail (and typed fields), the rest kept."""
        fields: dict[str, object] = dict(
            required=self.required, available=self.available, more_gpus_help=self.more_gpus_help
        )
        fields.update(changes)
        return InfeasiblePlan(self.constraint, detail or self.detail, fix or self.fix, **fields)  # type: ignore[arg-type]

    def __reduce__(self):  # keep the fields across pickling (process pools, caches)
        return (
            type(self),
            (self.constraint, self.detail, self.fix),
            {"required": self.required, "available": self.available, "more_gpus_help": self.more_gpus_help},
        )


class CatalogError(ValueError):
    """A catalog file is malformed; the message is one line naming the file and the field."""


class RuleViolation(ValueError):
    """A model, layout or file breaks one of the planner's rules: which (``code``) and the numbers
    it cites (``figures``). ``str()`` is the English sentence (planner/rule_codes.py); the app
    renders the code and figures in the page's language instead of parsing the sentence."""

    def __init__(self, code: RuleCode, figures: Figures) -> None:
        # numpy scalars (a rule evaluated on one row) become plain numbers: picklable, JSON-able.
        self.figures: dict[str, int | float | str] = {
            name: value.item() if hasattr(value, "item") else value for name, value in figures.items()
        }
        self.code = code
        super().__init__(render(code, self.figures))

    def __reduce__(self):  # keep code and figures across pickling (st.cache_data, process pools)
        return (type(self), (self.code, self.figures))


class CatalogViolation(RuleViolation, CatalogError):
    """A catalog or calibration file breaks a rule with a code (its sentence names the file)."""


def rule_violation(exc: BaseException) -> RuleViolation | None:
    """The violation ``exc`` is, or the one a pydantic validator raised inside it (a
    ValidationError keeps it as its first error's ``ctx["error"]``); None for any other error."""
    if isinstance(exc, RuleViolation):
        return exc
    errors = getattr(exc, "errors", None)  # duck-typed: no pydantic import in this module
    if not callable(errors):
        return None
    found = errors()
    error = found[0].get("ctx", {}).get("error") if found else None
    return error if isinstance(error, RuleViolation) else None


class NoGPUDriver(RuntimeError):
    """NVML (the NVIDIA driver library) or its Python binding is unavailable."""


# --------------------------------------------------------------------------- trainer


class JobDirLockedError(ValueError):
    """Another ``trainplan run`` holds the job directory."""


class JobDirWriteError(ValueError):
    """A file in the job directory cannot be written (read-only, permissions); exit code INVALID:
    the operator fixes the directory and runs again, which resumes from the last checkpoint."""


class DiskFullError(RuntimeError):
    """The job directory's disk filled up (metrics, reports); exit code DISK_FULL."""


class CheckpointDiskFullError(DiskFullError):
    """Saving a checkpoint ran out of disk space (previous checkpoints are kept)."""


class ReplanNeeded(Exception):
    """The plan does not fit the device as measured; ``replan_needed.json`` says by how much."""
