"""Command-line arguments the CLI checks before calling the API: ranges, input files, pairs.

Each check raises ValueError with a one-line message; ``ui.cli.main`` turns it into exit 2.
"""

from __future__ import annotations

import errno
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from planner.fmt import COUNT_SCALES
from planner.layout import ActivationCheckpointing

# A bound of pydantic's error context and its sign: every range error reads ">= 1", not its words.
BOUND_SIGNS = (("gt", ">"), ("ge", ">="), ("lt", "<"), ("le", "<="))
# What a value that did not parse had to be, by pydantic's error type.
PARSE_REQUIREMENTS = {"int_parsing": "a whole number", "int_from_float": "a whole number", "float_parsing": "a number"}


class Requirement(ValueError):
    """A value refused by a flag's own parser, stating what it must be (``sized_number``): worded as
    every range error (``must_be``), not as pydantic's "Value error, ..."."""


# What a count or an amount may end with, as buyers write them (buyer trial s50 L2: "15T" tokens
# and "5M" USD were refused): the units the planner writes them in, and G for B; decimal: 1B = 1e9.
SIZE_SUFFIXES = {suffix.lower(): scale for scale, suffix in COUNT_SCALES} | {"g": 1e9}


def sized_number(text: str) -> float:
    """``15T`` -> 1.5e13, ``2.5M`` -> 2.5e6, ``4,194,304`` and ``2e11`` as written (the range is
    the flag's own check)."""
    plain = str(text).strip().replace(",", "").replace("_", "")
    scale = SIZE_SUFFIXES.get(plain[-1:].lower(), 1.0) if plain[-1:].isalpha() else 1.0
    digits = plain[:-1] if scale != 1.0 else plain
    try:
        return float(digits) * scale
    except ValueError:
        raise Requirement("a number such as 2e11, 4194304 or 5M, with k, M, B (or G) or T for 1e3 to 1e12") from None


def must_be(what: str, requirement: str, got: object) -> str:
    """The one wording of a refused value, flag or field: ``--steps must be >= 1 (got 0)``."""
    return f"{what} must be {requirement} (got {got})"


def pydantic_requirement(error: Mapping[str, Any]) -> str | None:
    """What one pydantic error asks of the value (``>= 1 and <= 65,535``, ``a whole number``), or None
    when it says something else (an enum, a pattern), which keeps pydantic's own sentence."""
    ctx = error.get("ctx") or {}
    bounds = [f"{sign} {_shown(ctx[key])}" for key, sign in BOUND_SIGNS if key in ctx]
    if bounds:
        return " and ".join(bounds)
    return PARSE_REQUIREMENTS.get(str(error.get("type")))


def parse_pairs(
    text: str | list[str] | None,
    what: str,
    low: float,
    high: float,
    *,
    whole: bool = False,
    low_open: bool = False,
    example: str | None = None,
) -> dict:
    """``a=1,b=2`` -> {"a": 1, "b": 2}; a bare id maps to None (no limit), unless ``example`` is
    given: then every id needs its number (``--price h100-sxm=2.5``). A list is the flag given
    more than once, read as one comma list. Each number within ``low``..``high``
    (``check_range``, ``low`` excluded with ``low_open``; ``whole``: an integer); an id given
    twice, in one list or over repeats, is refused."""
    out: dict = {}
    joined = ",".join(text) if isinstance(text, list) else text
    if joined is not None and not joined.strip(", "):  # trial s35: --gpus "" searched every GPU type
        raise ValueError(f"{what} is empty: name at least one, or leave the flag out")
    for item in filter(None, (part.strip() for part in (joined or "").split(","))):
        key, sep, value = (part.strip() for part in item.partition("="))
        if key.lower() in (k.lower() for k in out):
            raise ValueError(f"{what}: '{key}' is given twice")
        if not sep and example is not None:
            raise ValueError(f"{what} '{item}': give GPU=USD per GPU-hour, e.g. {what} {example}")
        if not sep:
            out[key] = None
            continue
        try:
            number = float(value)
        except ValueError:
            raise ValueError(f"{what}: '{item}' is not ID=NUMBER") from None
        check_range(f"{what} {key}", number, low, high, low_open=low_open)
        if whole and not number.is_integer():
            raise ValueError(must_be(f"{what} {key}", "a whole number", value))
        out[key] = int(number) if whole else number
    return out


def _shown(bound: float) -> str:
    """A bound as people write it: 1,048,576 rather than 1.04858e+06."""
    return f"{int(bound):,}" if float(bound).is_integer() and abs(bound) < 1e15 else f"{bound:g}"


def check_range(
    flag: str, value: float | None, low: float, high: float, *, low_open: bool = False, high_open: bool = False
) -> None:
    """``value`` a finite number within ``low``..``high`` (either end excluded when ``low_open`` /
    ``high_open``); None passes. The message names the flag and both bounds."""
    if value is None:
        return
    above = value > low if low_open else value >= low
    below = value < high if high_open else value <= high
    if not (math.isfinite(value) and above and below):
        bounds = f"{'>' if low_open else '>='} {_shown(low)} and {'<' if high_open else '<='} {_shown(high)}"
        raise ValueError(must_be(flag, f"a finite number {bounds}", f"{value:g}"))  # 0, not 0.0 (trial s47 L5)


def whole_tokens(flag: str, value: float | None, high: float) -> int | None:
    """A token count given as ``4194304`` or ``4e6`` (as ``--tokens`` is): within 1..``high``
    (``check_range``) and whole."""
    check_range(flag, value, 1, high)
    if value is None:
        return None
    if value != int(value):
        raise ValueError(must_be(flag, "a whole number of tokens", f"{value:g}"))
    return int(value)


def check_priced_gpus(prices: dict[str, float], gpus: dict[str, int | None] | None) -> None:
    """Every ``--price`` names a GPU the plan may use: one of ``--gpus`` when given (ids compare
    case-blind, as the catalog's); a price the search never reads is a typo, not a choice."""
    allowed = {g.lower() for g in gpus or {}}
    for gpu, price in prices.items():
        if gpus and gpu.lower() not in allowed:
            raise ValueError(
                f"--price {gpu}={price:g}: {gpu} is not among --gpus ({', '.join(gpus)}); add it there or drop its price"
            )


def save_plan(plan, out: Path) -> None:
    """Write the plan file ``--out`` names; a path that cannot be written is a one-line error
    naming the flag (``--out /nonexistent/dir/p.json: No such file or directory``)."""
    try:
        plan.save(out)
    except OSError as exc:
        if exc.errno == errno.ENOSPC:  # a full disk: exit 4, naming the file (ui/cli.py; review s37)
            raise
        raise ValueError(f"--out {out}: {exc.strerror or exc}") from None


def load_model_arg(model: str):
    from planner.catalog.models import load_model

    spec = load_model(model)
    path = Path(model)
    hf_path = str(path.resolve()) if path.exists() else None
    return spec, hf_path


def given_layout(stack, sharding, num_gpus: int, *, dp_replicate: int | None, dp_shard: int, **degrees):
    """``estimate``'s layout from its flags: the stack's default sharding where none is named (none
    where that would shard over one rank, the search's rule: review s26, the Megatron stacks'
    zero1 default read "zero1 tp=8" on 8 GPUs). Under DDP, Layout.resolve makes the rest of the
    world replicas; a replica count the user names is kept (dp_shard 1), so one that does not fill
    --num-gpus is refused, not multiplied."""
    from planner.layout import Layout, Sharding
    from planner.model.candidates import code, zero_over_one_rank

    chosen = stack.default_sharding(degrees.get("tp", 1)) if sharding is None else sharding
    named_replicas = dp_replicate is not None and chosen == Sharding.NONE and dp_shard == -1
    layout = Layout(
        dp_replicate=1 if dp_replicate is None else dp_replicate,
        dp_shard=1 if named_replicas else dp_shard,
        sharding=chosen,
        **degrees,
    )
    resolved = layout.resolve(num_gpus)
    if sharding is None and zero_over_one_rank(code(chosen), resolved.dp, resolved.cp):
        layout = layout.model_copy(update={"sharding": Sharding.NONE})
    return layout


def ac_modes(
    modes: list[ActivationCheckpointing] | None, blocks: int | None, num_layers: int
) -> tuple[ActivationCheckpointing, ...]:
    """The recompute modes ``--ac`` names (none given: ``()``, the default), ``blocks`` when only
    ``--ac-blocks`` is; a count is checked against the model and needs the ``blocks`` mode."""
    check_range("--ac-blocks", blocks, 1, num_layers)
    chosen = tuple(dict.fromkeys(modes or ()))
    if blocks is None:
        return chosen
    if not chosen:
        return (ActivationCheckpointing.BLOCKS,)
    if ActivationCheckpointing.BLOCKS not in chosen:
        raise ValueError("--ac-blocks needs --ac blocks (it counts the blocks that mode checkpoints)")
    return chosen
