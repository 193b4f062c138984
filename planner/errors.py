"""The error surface in one place: the typed exceptions with their structured fields, and the
process exit codes of ``trainplan`` (ui/cli.py) and the trainer (trainer/launch.py, trainer/train.py).

Only the standard library (and planner/rule_codes.py, which imports only the standard library)
is imported here, so every layer (planner, trainer, ui) can import this module without pulling
anything else in.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum, StrEnum

from planner.rule_codes import Figures, RuleCode, render

__all__ = [
    "ROW_CONSTRAINTS",
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
    "PortfolioSearchStopped",
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
    # Interrupted (128 + SIGINT: Ctrl-C); the trainer saved a checkpoint first, unless nothing since the
    # last one needed it or the step would outlast the stop grace (trainer/preemption.py: then at once)
    ABORTED = 130
    # SIGTERM (a scheduler's preemption): saved as above, stopped, resume by running again (under
    # --no-checkpoints a rerun starts from step 0). 128 + SIGTERM, as a process killed by it, so
    # Kubernetes' restartPolicy ExitCode and Slurm's requeue retry it.
    PREEMPTED = 143
    # A peer rank or node went away mid-collective (a preempted pod, a killed worker): nothing saved
    # since the last checkpoint; retryable (>= 128), so a multi-node PyTorchJob's surviving pods are
    # restarted with the lost one and the job resumes (trial s27: they exited 1, a permanent
    # failure under restartPolicy ExitCode, and the job failed).
    PEER_LOST = 144


# --------------------------------------------------------------------------- planner


class Constraint(StrEnum):
    """What binds when no plan is feasible: the single-job model's constraints (ROW_CONSTRAINTS, in
    the order the diagnosis re-imposes them), then the answers about several jobs."""

    MEMORY = "memory"
    DIVISIBILITY = "divisibility"
    BATCH = "batch"
    INVENTORY = "inventory"
    DEADLINE = "deadline"
    BUDGET = "budget"
    # Several jobs on one inventory (portfolio): together they need more GPU-time than it offers
    # by a deadline (required / available in GPU-seconds), or do not pack (available None).
    SHARED_INVENTORY = "shared_inventory"
    # Several jobs cannot run on their own for different reasons: each one's answer is in ``jobs``.
    JOBS = "jobs"

    @property
    def unit(self) -> str | None:
        """The unit of an answer's ``required`` / ``available`` (None: the constraint has no
        figures), said in the JSON beside them (trial s33: seconds beside ``*_days`` keys)."""
        return _CONSTRAINT_UNITS.get(self)


_CONSTRAINT_UNITS = {
    Constraint.MEMORY: "GiB",
    Constraint.INVENTORY: "GPUs",
    Constraint.DEADLINE: "s",
    Constraint.BUDGET: "USD",
    Constraint.SHARED_INVENTORY: "GPU-s",
}


# The constraints a single job's rows are checked against, in the order the diagnosis re-imposes
# them (planner/search/diagnosis.py); the last two members above answer several jobs at once.
ROW_CONSTRAINTS = tuple(c for c in Constraint if c not in (Constraint.SHARED_INVENTORY, Constraint.JOBS))


@dataclass(frozen=True)
class NamedPlan:
    """The plan an answer's figures are of (a budget answer's cheapest), typed for each interface
    to word (trial s28d: the app's card could not name it)."""

    gpu: str
    num_gpus: int
    # its time to train as the answer's limits judged it: at the quantile ``risk``, never under the
    # model's own figure (planner/search/table.py limit_figure)
    seconds: float
    # its layout in short, 'zero1 dp_shard=12 tp=2 | mb 2 x 21 | ac none' (a portfolio
    # assignment's ``layout``; None: the table that named it had none); buyer trial s50 L6
    layout: str | None = None
    # its cost as ``seconds`` is judged (None: not given; a count past the inventory gives it only
    # where it is over the request's budget)
    cost_usd: float | None = None
    risk: str | None = None  # the quantile of ``seconds`` and ``cost_usd``: 'p80' (planner.accuracy.Risk)


@dataclass(frozen=True)
class CountPastInventory(NamedPlan):
    """A deadline fix's count past the inventory (count_probe.deadline_fix): its global batch where
    it is not the request's, and its cost at the risk (app48: the app's answer said neither, the
    CLI's both: "at a global batch of 4,325,376 tokens (+3.1%)", "over the request's budget"). A
    portfolio job's request is not the page's, so the figures the words need are all here; its own
    type, so a budget answer's ``named_plan`` carries none of them (review s48 M3)."""

    batch_tokens: int | None = None
    batch_change: float | None = None  # against the request's batch: 0.031 is +3.1 %
    budget_usd: float | None = None  # the request's budget, where ``cost_usd`` (given only then) is over it


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
        jobs: tuple[tuple[str, InfeasiblePlan], ...] = (),
        batch_tokens: int | None = None,
        batch_seconds: float | None = None,
        named: NamedPlan | None = None,
        job: str | None = None,
        within_budget_seconds: float | None = None,
        deadline_seconds: float | None = None,
        more_gpus: CountPastInventory | None = None,
        tokens_within_budget: float | None = None,
        chain: tuple[str, ...] = (),
        larger_batch: CountPastInventory | None = None,
        raised_cap: NamedPlan | None = None,
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
        self.jobs = jobs  # (job name, its own answer) of each job of a portfolio that cannot run alone
        # A deadline answer's fix names a global batch (tokens) at which the inventory meets it, and
        # the time to train at that batch (seconds, at the answer's risk).
        self.batch_tokens = batch_tokens
        self.batch_seconds = batch_seconds
        self.named = named  # the plan the figures are of, where the answer names one
        # The one job of several whose answer this is (trial s33 app: its name was only in the prose)
        self.job = job
        # A budget answer under a deadline: the time to train of the fastest plan within the budget
        # (seconds, at the answer's risk), the deadline its fix offers (trial s35 app: only the CLI said it)
        self.within_budget_seconds = within_budget_seconds
        # A budget answer: the deadline its cheapest plan meets (seconds; None: none), the job's own
        # in a portfolio (review s35: the app named the sidebar's)
        self.deadline_seconds = deadline_seconds
        # A deadline answer on an inventory: the smallest count past it that meets the deadline, and
        # its time (planner/count_probe.py deadline_fix; trial s48 M7: only plan's prose named it)
        self.more_gpus = more_gpus
        # A budget answer: the tokens the budget trains at the cheapest plan's cost per token
        # (planner/api/budget_fix.py; buyer trial s50 M7), which the app words from this figure
        self.tokens_within_budget = tokens_within_budget
        # A job whose chain (a jobs file's after) ends it late: the jobs whose ends set its earliest
        # start, first to last, then it (planner/search/precedence.py; review after52 M2: several
        # such answers were headed "cannot run on their own")
        self.chain = chain
        # A deadline no count meets at the asked batch: the plan past the cap at a larger batch (its
        # ``batch_tokens``; planner/api/batch_offers.py; app53 M1: the 中文 page dropped it)
        self.larger_batch = larger_batch
        self.raised_cap = raised_cap  # under max_gpus: the plan past the cap its fix names, typed

    def but(
        self,
        *,
        fix: str | None = None,
        detail: str | None = None,
        more_gpus_help: bool | None = None,
        batch_tokens: int | None = None,
        batch_seconds: float | None = None,
        job: str | None = None,
        more_gpus: CountPastInventory | None = None,
        tokens_within_budget: float | None = None,
        named: NamedPlan | None = None,
        larger_batch: CountPastInventory | None = None,
    ) -> InfeasiblePlan:
        """This answer with another fix or detail (or whether more GPUs help and how many, the batch
        its fix names, the job it is of, the plan its figures are of), the rest kept."""
        return InfeasiblePlan(
            self.constraint,
            detail or self.detail,
            fix or self.fix,
            required=self.required,
            available=self.available,
            more_gpus_help=self.more_gpus_help if more_gpus_help is None else more_gpus_help,
            jobs=self.jobs,
            batch_tokens=self.batch_tokens if batch_tokens is None else batch_tokens,
            batch_seconds=self.batch_seconds if batch_seconds is None else batch_seconds,
            named=named or self.named,
            job=job or self.job,
            within_budget_seconds=self.within_budget_seconds,
            deadline_seconds=self.deadline_seconds,
            more_gpus=more_gpus or self.more_gpus,
            tokens_within_budget=tokens_within_budget or self.tokens_within_budget,
            chain=self.chain,
            larger_batch=larger_batch or self.larger_batch,
            raised_cap=self.raised_cap,
        )

    def __reduce__(self):  # keep the fields across pickling (process pools, caches)
        return (
            type(self),
            (self.constraint, self.detail, self.fix),
            {
                "required": self.required,
                "available": self.available,
                "more_gpus_help": self.more_gpus_help,
                "jobs": self.jobs,
                "batch_tokens": self.batch_tokens,
                "batch_seconds": self.batch_seconds,
                "named": self.named,
                "job": self.job,
                "within_budget_seconds": self.within_budget_seconds,
                "deadline_seconds": self.deadline_seconds,
                "more_gpus": self.more_gpus,
                "tokens_within_budget": self.tokens_within_budget,
                "larger_batch": self.larger_batch,
                "raised_cap": self.raised_cap,
            },
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


class PortfolioSearchStopped(ValueError):
    """The portfolio's slotted model found no schedule within its time limits and proved none
    impossible (planner/search/slots.py ``SLOTTED_SEARCH_LIMIT_S``): one line, exit INVALID."""


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
