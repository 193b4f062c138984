"""The jobs file read by ``trainplan portfolio`` and ``trainplan fleet`` (TOML or JSON). risk,
horizon_days, num_slots, price_kind and three [ownership] keys also come as flags for one run
(ui/jobs_overrides.py).

horizon_days = 90            # optional: jobs may be sequenced inside it
num_slots = 6
risk = "p90"                 # optional: the quantile of each job's time the jobs are judged and
                             # scheduled at (p50, p80, p90; default p80, as plan's --risk)
rented = ["b200"]            # portfolio: inventory types rented, not owned: each busy GPU at its rent,
                             # none idle (default: every type is owned)
price_kind = "reserved-1y"   # optional: rent at the median of this kind's offers (reserved: whole terms)
term_filled = 0.5            # optional, reserved kinds: the share of a term past the horizon other work
                             # pays (plan's --term-filled; default 0: the whole term is billed)
[inventory]                  # GPUs on hand, shared by all jobs (fleet: already owned, their price sunk;
                             # it sizes what to buy in addition)
h100-sxm = 256
b200 = 64
[purchase_usd]               # fleet: types that may be bought; portfolio: what the owned ones cost (USD per GPU)
h100-sxm = 35000             # (TOML has no null: list a type in ``buy`` to use the catalog price)
[rent_usd_per_gpu_hour]      # optional: your rent quote per type (default: the catalog's price)
h100-sxm = 2.4               # (under a reserved price_kind, fleet's rate for each hour of the term)
[ownership]                  # optional: what owning costs (planner.search.ownership.TcoAssumptions); the
                             # portfolio prices its inventory at it (ownership.owned_rate), not at rent
lifetime_years = 5
electricity_usd_per_kwh = 0.08
staff_usd_per_gpu_month = 40
cost_of_capital_rate = 0.08  # a year on the GPUs' average book value (default 0: not charged)
utilisation = 0.7            # report the owned price per busy GPU-hour at this busy fraction
wall_power_w = { h100-sxm = 1100 }   # per GPU at the wall while training (default: the catalog's)
[[jobs]]
name = "chat-8b"
model = "llama3-8b"
tokens = 1e12
deadline_days = 60
start_after_days = 120       # optional: the job starts no earlier (its deadline still counts from day 0)
after = ["pretrain-8b"]      # optional: the jobs of this file it starts after (each must end first)
# optional per job: budget_usd, seq_len, global_batch_tokens (4e6 or 4194304), batch_tolerance
# (default 0.05) and vary_batch (true: any batch within it), as plan's flags
data_stall_pct = 5           # optional, per job or file-wide (a job's own replaces the file's): your run
                             # losses, as plan's flags: failure_rate_x, checkpoint_write_gb_per_s,
                             # restart_minutes, data_stall_pct, eval_pct, startup_minutes
"""

from __future__ import annotations

import difflib
import json
import re
import tomllib
from pathlib import Path
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from planner.accuracy import DEFAULT_RISK, Risk
from planner.api import PlanRequest
from planner.catalog.prices import PriceKind
from planner.catalog.terms import RESERVED_TERM_YEARS
from planner.fmt import one_line, printable
from planner.layout import Precision
from planner.limits import (
    MAX_BATCH_TOKENS,
    MAX_BUDGET_USD,
    MAX_DAYS,
    MAX_ELECTRICITY_USD_PER_KWH,
    MAX_GPUS,
    MAX_HOSTING_USD_PER_GPU_MONTH,
    MAX_JOBS,
    MAX_LIFETIME_YEARS,
    MAX_PRICE_USD,
    MAX_PUE,
    MAX_PURCHASE_USD,
    MAX_SEQ_LEN,
    MAX_SLOTS,
    MAX_TRAINING_TOKENS,
    read_input_text,
    unique_keys,
)
from planner.model.run_loss_inputs import RUN_LOSS_MAX, RunLossInputs
from planner.model.stacks import Stack
from planner.search.ownership import TcoAssumptions
from planner.search.precedence import cycle_of
from planner.search.space import DEFAULT_BATCH_TOLERANCE
from trainer.job_spec import JOB_NAME_PATTERN
from ui.inputs import whole_tokens
from ui.jobs_gpu_ids import with_catalog_ids

# The CLI's bounds (planner/limits.py) for the same fields of a jobs file: finite numbers, not booleans.
Days = Annotated[StrictFloat, Field(gt=0, le=MAX_DAYS, allow_inf_nan=False)]
Usd = Annotated[StrictFloat, Field(gt=0, le=MAX_BUDGET_USD, allow_inf_nan=False)]
UsdPerHour = Annotated[StrictFloat, Field(gt=0, le=MAX_PRICE_USD, allow_inf_nan=False)]
Fraction = Annotated[StrictFloat, Field(ge=0, le=1, allow_inf_nan=False)]
UsdPerMonth = Annotated[StrictFloat, Field(ge=0, le=MAX_HOSTING_USD_PER_GPU_MONTH, allow_inf_nan=False)]


def run_loss_bound(value: float, info: ValidationInfo) -> float:
    """A run-loss key (plan's flags' names) within ``RunLossInputs``' bounds, in pydantic's words as
    the file's other keys are; the bounds stay the model's own."""
    try:
        RunLossInputs.model_validate({info.field_name: value})
    except ValidationError as exc:
        raise ValueError(one_line(exc, where=False)) from None
    return value


# A run-loss key of a job or the file: a number (not a boolean) within its bound.
RunLossFigure = Annotated[StrictFloat, AfterValidator(run_loss_bound)]


class RunLossKeys(BaseModel):
    """Your run losses, as plan's flags (planner/model/run_loss_inputs.py): the file's for every job,
    a job's in its place, key by key (None: the file's, else the default)."""

    model_config = ConfigDict(extra="forbid")
    failure_rate_x: RunLossFigure | None = None
    checkpoint_write_gb_per_s: RunLossFigure | None = None
    restart_minutes: RunLossFigure | None = None
    data_stall_pct: RunLossFigure | None = None
    eval_pct: RunLossFigure | None = None
    startup_minutes: RunLossFigure | None = None

    def given_run_losses(self) -> RunLossInputs:
        """The run-loss keys this entry (a job, or the file's defaults) sets."""
        given = {name: getattr(self, name) for name in RUN_LOSS_MAX}
        return RunLossInputs(**{name: value for name, value in given.items() if value is not None})


class Ownership(BaseModel):
    """A fleet file's ownership inputs: any of ``TcoAssumptions``' fields (the rest keep their
    defaults), the busy fraction to report the owned price at, and wall power per GPU type."""

    model_config = ConfigDict(extra="forbid")
    lifetime_years: Annotated[StrictFloat, Field(gt=0, le=MAX_LIFETIME_YEARS, allow_inf_nan=False)] | None = None
    residual_fraction: Fraction | None = None
    pue: Annotated[StrictFloat, Field(ge=1, le=MAX_PUE, allow_inf_nan=False)] | None = None
    electricity_usd_per_kwh: (
        Annotated[StrictFloat, Field(ge=0, le=MAX_ELECTRICITY_USD_PER_KWH, allow_inf_nan=False)] | None
    ) = None
    hosting_usd_per_gpu_month: UsdPerMonth | None = None
    staff_usd_per_gpu_month: UsdPerMonth | None = None
    idle_power_fraction: Fraction | None = None
    cost_of_capital_rate: Fraction | None = None  # a year, on the GPUs' average book value
    utilisation: Annotated[StrictFloat, Field(gt=0, le=1, allow_inf_nan=False)] | None = None
    wall_power_w: dict[str, Annotated[StrictFloat, Field(gt=0, le=1e6, allow_inf_nan=False)]] = {}

    def tco(self) -> TcoAssumptions:
        given = self.model_dump(exclude={"utilisation", "wall_power_w"}, exclude_none=True)
        return TcoAssumptions(**given)


class JobEntry(RunLossKeys):
    model_config = ConfigDict(extra="forbid")
    name: str
    model: str
    tokens: StrictFloat = Field(gt=0, le=MAX_TRAINING_TOKENS, allow_inf_nan=False)
    deadline_days: Days | None = None
    # the day it may start at the earliest, counted from day 0 as its deadline is (trial s51 H4)
    start_after_days: Annotated[StrictFloat, Field(ge=0, le=MAX_DAYS, allow_inf_nan=False)] | None = None
    # the jobs of the file it starts after, each ended first (P, docs/ilp.md "Precedence")
    after: list[StrictStr] = []
    budget_usd: Usd | None = None
    seq_len: StrictInt | None = Field(None, ge=16, le=MAX_SEQ_LEN)  # None: the planner's default for the model
    # 4194304 or 4e6 (a TOML float), as the CLI's --global-batch-tokens reads it
    global_batch_tokens: StrictInt | StrictFloat | None = None
    # the largest relative distance of the batch from global_batch_tokens (the CLI's --batch-tolerance)
    batch_tolerance: Annotated[StrictFloat, Field(ge=0, lt=1, allow_inf_nan=False)] = DEFAULT_BATCH_TOLERANCE
    vary_batch: StrictBool = False  # the plan may use any batch within the tolerance (--vary-batch)
    # the software and precision the job runs (None: the file's; trial s42: a fleet sized for
    # trainplan's FSDP2 when the team runs Megatron-Core or DeepSpeed)
    stack: Stack | None = None
    precision: Precision | None = None

    @field_validator("name")
    @classmethod
    def _dir_name(cls, value: str) -> str:
        # It names the job's directory (portfolio --emit DIR/<name>/); trial s27d: pydantic's
        # message quoted the regular expression.
        if not re.fullmatch(JOB_NAME_PATTERN, value):  # review s28: re.match let "chat\n" through
            raise ValueError(
                f"{value!r} is not a job name: 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit"
            )
        return value

    @model_validator(mode="after")
    def _starts_before_its_deadline(self) -> JobEntry:
        start, deadline = self.start_after_days, self.deadline_days
        if start is not None and deadline is not None and start >= deadline:
            raise ValueError(
                f"start_after_days {start:g} is not before deadline_days {deadline:g}: both count from day 0"
                " (the deadline is not measured from the release)"
            )
        return self

    @field_validator("global_batch_tokens")
    @classmethod
    def _whole_batch(cls, value: float | None) -> int | None:
        return whole_tokens("global_batch_tokens", value, MAX_BATCH_TOKENS)


class JobsFile(RunLossKeys):
    model_config = ConfigDict(extra="forbid")
    horizon_days: Days | None = None
    # None: the model's own (portfolio: 1, refining only the slotted model; fleet: plan_fleet's)
    num_slots: StrictInt | None = Field(None, ge=1, le=MAX_SLOTS)
    # checked here so that its error names the file (trial s36: "objective: expected one of ..." alone)
    objective: Literal["cost", "time", "mix"] = "cost"
    # the quantile of each job's time its plans are judged and scheduled at, as plan's --risk
    # (trial s36: fleet and portfolio were fixed at p80)
    risk: Risk = DEFAULT_RISK
    inventory: dict[str, Annotated[StrictInt, Field(ge=1, le=MAX_GPUS)]] = {}
    buy: list[str] = []  # fleet: GPU types to price at the catalog's purchase price
    # portfolio: inventory types rented at their rent while busy, never idle (trial s27: every type
    # was costed as owned, a rent quote feeding the budgets only)
    rented: list[str] = []
    # None: the catalog's purchase price
    purchase_usd: dict[str, Annotated[StrictFloat, Field(gt=0, le=MAX_PURCHASE_USD, allow_inf_nan=False)] | None] = {}
    # USD per GPU-hour to rent each type (the jobs' rent and the break-even's); default: the catalog's
    rent_usd_per_gpu_hour: dict[str, UsdPerHour] = {}
    # rent at the median of the catalog's offers of this kind; fleet under a reserved kind reserves
    # GPUs for whole terms in place of renting (planner/api/reserved.py ``reserved_prices``)
    price_kind: PriceKind | None = None
    # under a reserved kind, the share of a term's hours past the span other work pays, as plan's
    # --term-filled (review s44: a fleet could not say it, and a 3-year term was charged whole)
    term_filled: float = Field(0.0, ge=0, le=1, allow_inf_nan=False)
    network: str | None = None  # a catalog network every node is on (None: each GPU's default)
    # every job's software and precision unless the job names its own (plan's --stack, --precision)
    stack: Stack = Stack.TRAINPLAN
    precision: Precision = Precision.BF16
    ownership: Ownership = Ownership()
    jobs: list[JobEntry] = Field(min_length=1, max_length=MAX_JOBS)

    @model_validator(mode="after")
    def _released_within_the_horizon(self) -> JobsFile:
        late = [
            j for j in self.jobs if self.horizon_days is not None and (j.start_after_days or 0) >= self.horizon_days
        ]
        if late:
            job = late[0]
            raise ValueError(
                f"job '{job.name}': start_after_days {job.start_after_days:g} is not before horizon_days"
                f" {self.horizon_days:g}: both count from day 0"
            )
        return self

    @model_validator(mode="after")
    def _after_names_other_jobs(self) -> JobsFile:
        names = [j.name for j in self.jobs]
        for job in self.jobs:
            for name in job.after:
                if name == job.name:
                    raise ValueError(f"job '{job.name}': after names the job itself")
                if name not in names:
                    raise ValueError(
                        f"job '{job.name}': after names '{name}', which is no job of the file"
                        f" (its jobs: {', '.join(names)})"
                    )
        cycle = cycle_of({j.name: j.after for j in self.jobs})
        if cycle is not None:
            raise ValueError(
                f"after: the jobs wait on each other in a cycle, {' -> '.join(cycle)} (each starts after the one"
                " before it ends)"
            )
        return self

    @model_validator(mode="after")
    def _term_needs_a_reserved_kind(self) -> JobsFile:
        # in the file's words, not plan's flags (review s44: "--term-filled ... give --price-kind")
        if self.term_filled and self.price_kind not in RESERVED_TERM_YEARS:
            kinds = " or ".join(f'"{k}"' for k in RESERVED_TERM_YEARS)
            raise ValueError(f"term_filled applies to a reserved term: set price_kind = {kinds}")
        return self

    def requests(self, gpus: dict[str, int | None] | None) -> dict[str, PlanRequest]:
        from planner.catalog.hardware import load_catalog

        if self.network is not None:
            try:
                load_catalog().network(self.network)
            except ValueError as exc:
                raise ValueError(f"network: {exc}") from None
        out = {}
        for job in self.jobs:
            if job.name in out:
                raise ValueError(f"jobs: duplicate job name '{job.name}'")
            try:
                out[job.name] = self.request(job, gpus)
            except ValueError as exc:  # an unknown model, a bad config.json: say which job asked for it
                raise ValueError(f"job '{job.name}': {one_line(exc)}") from None
        return out

    def request(self, job: JobEntry, gpus: dict[str, int | None] | None) -> PlanRequest:
        """One job's request on ``gpus``, with the file's prices and network."""
        from ui.inputs import load_model_arg

        model, hf_config_path = load_model_arg(job.model)  # as trainplan plan records it
        return PlanRequest(
            model=model,
            hf_config_path=hf_config_path,
            training_tokens=job.tokens,
            deadline_days=job.deadline_days,
            budget_usd=job.budget_usd,
            seq_len=job.seq_len,
            global_batch_tokens=job.global_batch_tokens,
            batch_tolerance=job.batch_tolerance,
            vary_batch=job.vary_batch,
            gpus=gpus,
            price_overrides=self.rent_usd_per_gpu_hour,
            price_kind=self.price_kind,
            term_filled=self.term_filled,
            network=self.network,
            risk=self.risk,
            stack=job.stack or self.stack,
            precision=job.precision or self.precision,
            run_losses=self.given_run_losses().but(job.given_run_losses()),
        )


def file_requests(spec: JobsFile, gpus: dict[str, int | None] | None, path: Path) -> dict[str, PlanRequest]:
    """``spec.requests`` whose errors name the file, as reading it does (trial s34: "jobs: duplicate
    job name 'a'" named neither)."""
    try:
        return spec.requests(gpus)
    except ValueError as exc:
        raise ValueError(f"{path}: {one_line(exc)}") from None


def job_after(spec: JobsFile) -> dict[str, list[str]]:
    """Each job's after (the jobs it starts after), where the file sets one."""
    return {job.name: list(job.after) for job in spec.jobs if job.after}


def release_days(spec: JobsFile) -> dict[str, float]:
    """Each job's start_after_days, where the file sets one (trial s51 H4)."""
    return {job.name: job.start_after_days for job in spec.jobs if job.start_after_days is not None}


def past_horizon(spec: JobsFile) -> list[str]:
    """The jobs whose deadline is past the horizon, which binds them instead (trial s27d: capped
    without a word)."""
    if spec.horizon_days is None:
        return []
    late = [j for j in spec.jobs if j.deadline_days is not None and j.deadline_days > spec.horizon_days]
    return [
        f"job '{j.name}': deadline_days {j.deadline_days:g} is past horizon_days {spec.horizon_days:g};"
        " it must end within the horizon"
        for j in late
    ]


def check_k8s_job_names(names: list[str], path: Path) -> None:
    """Each job's Kubernetes name (trainer/job.py ``k8s_name``) is its own (trial s28c: 'Chat_8B' and
    'chat-8b' both became the PyTorchJob chat-8b, so applying the second changed the first)."""
    from trainer.job_k8s import k8s_name

    seen: dict[str, str] = {}
    for name in names:
        if (other := seen.setdefault(k8s_name(name), name)) != name:
            raise ValueError(
                f"{path}: jobs '{other}' and '{name}' share the Kubernetes name {k8s_name(name)}; rename one"
            )


def read_jobs_file(path: Path) -> JobsFile:
    """Parse and validate (``read_input``: a regular file, capped); errors name the file."""
    text = read_input_text(path, "jobs file")
    is_json = str(path).endswith(".json")
    try:
        raw = json.loads(text, object_pairs_hook=unique_keys) if is_json else tomllib.loads(text)
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ValueError(f"{path}: not valid {'JSON' if is_json else 'TOML'} ({exc})") from None
    except RecursionError:
        raise ValueError(f"{path}: nested too deeply, not a jobs file") from None
    except ValueError as exc:  # a duplicate key
        raise ValueError(f"{path}: {exc}") from None
    if isinstance(raw, dict) and isinstance(raw.get("jobs"), list) and len(raw["jobs"]) > MAX_JOBS:
        raise ValueError(f"{path}: {len(raw['jobs'])} jobs, more than the {MAX_JOBS} one file may plan; split it")
    try:
        spec = JobsFile.model_validate(raw)
    except Exception as exc:
        line = one_line(exc, default_where="file")
        hint = allowed_keys_hint(exc) + misspelt_key_hint(exc)
        raise ValueError(f"{path}: {named_job(line, raw)}{hint}") from None
    try:
        return with_catalog_ids(spec)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None


def named_job(line: str, raw: object) -> str:
    """``jobs.2.tokens: ...`` as ``job 'code-7b' (the 3rd [[jobs]]): tokens: ...`` (trial s33: a
    0-based index where the file has names)."""
    match = re.match(r"jobs\.(\d+)((?:\.[^:\s]+)*): (.*)", line)
    jobs = raw.get("jobs") if isinstance(raw, dict) else None
    if match is None or not isinstance(jobs, list) or int(match.group(1)) >= len(jobs):
        return line
    index, field, message = int(match.group(1)), match.group(2).lstrip("."), match.group(3)
    entry = jobs[index]
    name = entry.get("name") if isinstance(entry, dict) else None
    where = f"the {ordinal(index + 1)} [[jobs]]"
    label = f"job '{printable(name)}' ({where})" if isinstance(name, str) and name else where
    return f"{label}: {field}: {message}" if field else f"{label}: {message}"


def ordinal(n: int) -> str:
    """'1st', '2nd', '3rd', '11th'."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def job_keys_help() -> str:
    """The keys a ``[[jobs]]`` entry takes, for the commands' help (trial s35: they were listed
    only in the error an unknown key gets)."""
    keys = ", ".join(table_keys(JobEntry))
    run_losses = f"{next(iter(RUN_LOSS_MAX))} to {next(reversed(RUN_LOSS_MAX))}"
    return f"each [[jobs]] entry takes {keys} ({run_losses}, plan's run-loss flags, also at the top for every job)"


def allowed_keys_hint(exc: Exception) -> str:
    """'; allowed: name, model, ...' when the first error is an unknown key (pydantic's
    "Extra inputs are not permitted" names the key, not what the table takes)."""
    errors = getattr(exc, "errors", None)
    if not callable(errors) or errors()[0].get("type") != "extra_forbidden":
        return ""
    loc = errors()[0]["loc"]
    tables: dict[str, type[BaseModel]] = {"jobs": JobEntry, "ownership": Ownership}
    table = tables.get(loc[0], JobsFile) if len(loc) > 1 else JobsFile
    return f"; allowed: {', '.join(table_keys(table))}"


def misspelt_key_hint(exc: Exception) -> str:
    """ "; it has 'token', a key it does not take: 'token' misspelt?" when the first error is a missing
    key and the same table has unknown ones (buyer trial s50 L3: ``token = 2e12`` got only "tokens:
    Field required", pydantic listing the missing key before the unknown one)."""
    errors = getattr(exc, "errors", None)
    found = errors() if callable(errors) else []
    if not found or found[0].get("type") != "missing":
        return ""
    where, wanted = tuple(found[0]["loc"][:-1]), str(found[0]["loc"][-1])
    unknown = [str(e["loc"][-1]) for e in found if e.get("type") == "extra_forbidden" and tuple(e["loc"][:-1]) == where]
    if not unknown:
        return ""
    listed = ", ".join(repr(key) for key in unknown)
    close = difflib.get_close_matches(wanted, unknown, n=1, cutoff=0.6)
    guess = f": {close[0]!r} misspelt?" if close else ""
    return f"; it has {listed}, {'a key' if len(unknown) == 1 else 'keys'} it does not take{guess}"


def table_keys(table: type[BaseModel]) -> list[str]:
    """A table's keys, its own first, then the run-loss keys every entry shares (``RunLossKeys``)."""
    return sorted(table.model_fields, key=lambda name: name in RunLossKeys.model_fields)
