"""The jobs file's keys ``trainplan portfolio`` and ``trainplan fleet`` take from the command line
for one run (fleet51 M7: every sensitivity run needed its own copy of the file, 20 of them).

Each flag replaces its key's value in the file, and is checked by the file's own model (JobsFile),
so a bad value gets the file's refusal, naming the flag. The answer says which values came from
the command line (``Overrides``: a line, and --json's ``overrides``), so a saved answer says what it
was run with.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer
from pydantic import ValidationError
from rich.markup import escape

from planner.accuracy import Risk
from planner.catalog.prices import PRICE_KINDS
from planner.fmt import one_line
from ui.cli_options import flag_group
from ui.portfolio_file import JobsFile

OVERRIDES_PANEL = "Jobs file keys for this run (each replaces the file's value)"
# The table the [ownership] keys are in: a flag's key is "ownership.<key>" there.
OWNERSHIP = "ownership"


@dataclass(frozen=True)
class OverrideFlag:
    """One flag that replaces a jobs file key: the key's path in the file, and the option."""

    key: str  # a JobsFile field, or "ownership.<field>" for an [ownership] key
    option: Any  # a typer.Option whose first name is the flag

    @property
    def flag(self) -> str:
        return str(self.option.param_decls[0])


def _option(flag: str, help_text: str) -> Any:
    return typer.Option(None, flag, help=escape(help_text), rich_help_panel=OVERRIDES_PANEL)


# The command's parameter name -> its flag: the one definition of the overrides both commands take
# (fleet alone takes utilisation: portfolio costs owned GPUs per busy and idle hour and ignores it).
OVERRIDE_FLAGS = {
    "risk": OverrideFlag(
        "risk",
        _option("--risk", f"the file's risk, {', '.join(Risk)}: every job's days and cost at this quantile"),
    ),
    "horizon_days": OverrideFlag("horizon_days", _option("--horizon-days", "the file's horizon_days")),
    "num_slots": OverrideFlag("num_slots", _option("--num-slots", "the file's num_slots (start-time slots)")),
    "price_kind": OverrideFlag(
        "price_kind", _option("--price-kind", f"the file's price_kind: {', '.join(PRICE_KINDS)}")
    ),
    "cost_of_capital_rate": OverrideFlag(
        f"{OWNERSHIP}.cost_of_capital_rate",
        _option("--cost-of-capital-rate", "[ownership].cost_of_capital_rate: a year, on the GPUs' book value"),
    ),
    "hosting_usd_per_gpu_month": OverrideFlag(
        f"{OWNERSHIP}.hosting_usd_per_gpu_month",
        _option("--hosting-usd-per-gpu-month", "[ownership].hosting_usd_per_gpu_month"),
    ),
    "utilisation": OverrideFlag(
        f"{OWNERSHIP}.utilisation",
        _option("--utilisation", "[ownership].utilisation: the busy share the owned price is reported at"),
    ),
}
PORTFOLIO_OVERRIDES = tuple(name for name in OVERRIDE_FLAGS if name != "utilisation")
FLEET_OVERRIDES = tuple(OVERRIDE_FLAGS)
# Each flag's type on the command line; the file's model checks the value (``apply_overrides``).
_TYPES = {"risk": "str | None", "price_kind": "str | None", "num_slots": "int | None"}


@dataclass(frozen=True)
class Overridden:
    """A key set from the command line: its value and the file's (None: the file leaves it unset),
    as the jobs file's JSON writes them."""

    key: str
    value: Any
    file_value: Any

    def words(self) -> str:
        return f"{self.key} {_word(self.value)} (file: {_word(self.file_value)})"


def _word(value: Any) -> str:
    if value is None:
        return "not set"
    return f"{value:g}" if isinstance(value, float) else str(value)


@dataclass(frozen=True)
class Overrides:
    """The keys a run took from the command line, in the order of OVERRIDE_FLAGS."""

    given: tuple[Overridden, ...] = ()

    def line(self) -> str | None:
        """'overrides: risk p90 (file: p80), horizon_days 180 (file: 365)'; None without any."""
        return f"overrides: {', '.join(o.words() for o in self.given)}" if self.given else None

    def json(self) -> dict[str, dict[str, Any]]:
        """--json's ``overrides``: key -> {"value", "file"} (empty without any)."""
        return {o.key: {"value": o.value, "file": o.file_value} for o in self.given}


def with_override_flags(names: tuple[str, ...]) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """The command with the flags of ``names`` (OVERRIDE_FLAGS' keys) among its options, handed to
    it as one ``overrides`` keyword: parameter name -> value, of those given."""
    options = {name: OVERRIDE_FLAGS[name].option for name in names}
    hints = {name: _type(name) for name in names}

    def given(values: dict[str, Any]) -> dict[str, Any]:
        return {name: value for name, value in values.items() if value is not None}

    return lambda command: flag_group(command, options, hints, "overrides", given)


def _type(name: str) -> str:
    return _TYPES.get(name, "float | None")


def apply_overrides(spec: JobsFile, given: dict[str, Any], path: Path) -> tuple[JobsFile, Overrides]:
    """``spec`` with each given flag's key replaced (``given``: parameter name -> value), checked by
    JobsFile as the file's own value is, so a bad value (or one that clashes with another key of the
    file: horizon_days before a job's start_after_days) gets the file's refusal, naming the flag."""
    if not given:
        return spec, Overrides()
    for name, value in given.items():  # one at a time: the refusal names the flag of the bad value
        _validated(spec, {name: value}, _given(name, value))
    flags = " ".join(_given(name, value) for name, value in given.items())
    changed = _validated(spec, given, f"{path} with {flags}")
    before, after = spec.model_dump(mode="json"), changed.model_dump(mode="json")
    return changed, Overrides(
        tuple(Overridden(OVERRIDE_FLAGS[n].key, _at(after, n), _at(before, n)) for n in OVERRIDE_FLAGS if n in given)
    )


def _given(name: str, value: Any) -> str:
    """'--horizon-days 0' as typed, not the 0.0 the option parsed."""
    return f"{OVERRIDE_FLAGS[name].flag} {_word(value)}"


def _at(data: dict[str, Any], name: str) -> Any:
    """The value of flag ``name``'s key in a JobsFile's dump."""
    *table, key = OVERRIDE_FLAGS[name].key.split(".")
    return (data[table[0]] if table else data)[key]


def _validated(spec: JobsFile, given: dict[str, Any], where: str) -> JobsFile:
    """``spec`` with ``given`` set, validated; a refusal is ``where``: the reason."""
    data = spec.model_dump()
    for name, value in given.items():
        *table, key = OVERRIDE_FLAGS[name].key.split(".")
        (data[table[0]] if table else data)[key] = value
    try:
        return JobsFile.model_validate(data)
    except ValidationError as exc:
        field = ".".join(str(part) for part in exc.errors()[0]["loc"])
        keys = {OVERRIDE_FLAGS[name].key for name in given}
        # the field's own bound in pydantic's words; a clash between keys (no field) in the model's
        message = one_line(exc, where=field not in keys, default_where="")
        raise ValueError(f"{where}: {message}") from None
