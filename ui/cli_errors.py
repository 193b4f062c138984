"""How ``trainplan`` ends: every user error as one line on stderr and exit code 2 (a full disk 4, an
abort 130: planner/errors.py ``ExitCode``), real bugs raised; stdout flushed before the exit code is
chosen. Split from ui/cli.py, which keeps the commands."""

from __future__ import annotations

import difflib
import errno
import json
import os
import sys

import typer

try:  # typer >= 0.20 vendors click as typer._click
    from typer import _click as click
except ImportError:  # pragma: no cover - older typer uses click itself
    import click  # type: ignore[no-redef]

from planner.errors import ExitCode
from planner.fmt import one_line, printable
from ui.cli_options import flag_error, value_error
from ui.console import ABORTED_LINE

# Enough to find the option without reading a list.
MAX_OPTION_SUGGESTIONS = 3
# The model size the --tokens example is worked for (app53 L12: ``--tokens: `` said nothing).
EXAMPLE_PARAMS = 8e9


def required_example(name: str) -> str:
    """What to type for a required option left out; the tokens follow the app's default rule."""
    if name != "--tokens":
        return ""
    from ui.app_core import CHINCHILLA_TOKENS_PER_PARAM as per_param

    return f" (e.g. --tokens {EXAMPLE_PARAMS * per_param / 1e9:g}e9 for an 8B model, {per_param} × its parameters)"


def _flush_stdout() -> bool:
    """Flush stdout now (e.g. to /dev/full) so a failure is one line, not an error at exit."""
    try:
        sys.stdout.flush()
    except OSError as exc:
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - the interpreter flushes it at exit
        print(f"trainplan: error: cannot write the output ({exc.strerror})", file=sys.stderr)
        return False
    return True


def _error(message: str) -> None:
    """The one line of a user error, without the terminal escapes a file or flag may carry."""
    print(f"trainplan: error: {printable(message)}", file=sys.stderr)


def option_suggestions(typed: str, names: list[str]) -> list[str]:
    """The long options a mistyped ``typed`` most likely meant: those it starts or names a word of
    (``--days`` -> ``--deadline-days``, ``--gpu`` -> ``--gpus``, ``--per-gpu``), else the closest
    spellings. click's own list compares the names with their dashes, so ``--days`` got ``--ac``."""
    word = typed.split("=", 1)[0].lstrip("-").lower()
    if not word:
        return []
    bare = {name.lstrip("-"): name for name in names if name.startswith("--")}
    by_word = [
        name
        for stem, name in bare.items()
        if stem.startswith(word) or any(part.startswith(word) for part in stem.split("-"))
    ]
    if by_word:
        return sorted(by_word)[:MAX_OPTION_SUGGESTIONS]
    close = difflib.get_close_matches(word, list(bare), n=MAX_OPTION_SUGGESTIONS, cutoff=0.6)
    return [bare[stem] for stem in close]


def no_such_option_line(exc: click.exceptions.NoSuchOption) -> str:
    """``No such option: --days (did you mean --deadline-days?)``, from the command's own options."""
    names = [opt for param in exc.ctx.command.params for opt in param.opts + param.secondary_opts] if exc.ctx else []
    guesses = option_suggestions(exc.option_name, names) if names else sorted(exc.possibilities or [])
    listed = ", ".join(guesses[:-1]) + " or " + guesses[-1] if len(guesses) > 1 else "".join(guesses)
    hint = f" (did you mean {listed}?)" if guesses else " (see --help)"
    return f"{exc.message}{hint}"


def bad_parameter_line(exc: click.exceptions.BadParameter) -> str:
    """A flag's value typer refused, worded as every range error: ``--keep-checkpoints must be >= 1
    (got 0)``, not pydantic's "Invalid value for '--keep-checkpoints': Input should be greater than
    or equal to 1" (review s49: the range errors read three ways)."""
    from pydantic import ValidationError

    if isinstance(exc, click.exceptions.MissingParameter):
        return missing_parameter_line(exc)
    cause = exc.__cause__
    names = exc.param.opts if exc.param is not None else []
    if isinstance(cause, ValidationError) and cause.errors() and names:
        return value_error(max(names, key=len), cause, cause.errors()[0])
    if names:  # a callback's own refusal: ``--price-kind: 'bogus' is not one of ...``, as an enum's
        return f"{max(names, key=len)}: {exc.message}"
    # typer >= 0.2x converts an enum flag with pydantic and keeps its "Value error, " prefix
    return exc.format_message().replace(": Value error, ", ": ")


def missing_parameter_line(exc: click.exceptions.MissingParameter) -> str:
    """``--tokens is required (e.g. ...)``: click's ``MissingParameter`` is a ``BadParameter`` whose
    message is empty, so the generic line ended in a bare colon (app53 L12)."""
    param = exc.param
    if param is None:
        return exc.format_message()
    opts = [opt for opt in param.opts if opt.startswith("--")]
    name = max(opts, key=len) if opts else (param.name or "argument").upper()
    return f"{name} is required{required_example(name)}"


def run(app: typer.Typer, argv: list[str] | None = None) -> int:
    """Run ``app``: map user errors to one line + exit 2; let real bugs raise."""
    code = _run(app, argv)
    return code if _flush_stdout() else ExitCode.INVALID


def _run(app: typer.Typer, argv: list[str] | None) -> int:
    from pydantic import ValidationError

    try:
        code = app(args=argv, standalone_mode=False, prog_name="trainplan")
    except typer.Exit as exc:
        return exc.exit_code
    except typer.Abort:
        print(ABORTED_LINE, file=sys.stderr)
        return ExitCode.ABORTED
    except BrokenPipeError:
        return ExitCode.OK
    except click.exceptions.NoArgsIsHelpError:
        return ExitCode.OK
    except click.exceptions.NoSuchOption as exc:
        _error(no_such_option_line(exc))
        return ExitCode.INVALID
    except click.exceptions.BadParameter as exc:
        _error(bad_parameter_line(exc))
        return ExitCode.INVALID
    except click.ClickException as exc:
        # typer >= 0.2x converts an enum flag with pydantic and keeps its "Value error, " prefix
        _error(exc.format_message().replace(": Value error, ", ": "))
        return ExitCode.INVALID
    except (ValueError, ValidationError, FileNotFoundError, json.JSONDecodeError) as exc:
        _error(flag_error(exc, sys.argv[1:] if argv is None else argv) or one_line(exc))
        return ExitCode.INVALID
    except OSError as exc:  # --out on a read-only or full disk, a directory, a name too long
        where = f"{exc.filename}: " if exc.filename else ""
        if exc.errno == errno.ENOSPC and exc.filename:  # a file it writes (not stdout): docs/trainer.md,
            # ENOSPC is exit 4 (trial s37: emit on a full disk said only "No space left on device", exit 2)
            _error(f"{where}disk full ({exc.strerror}); free space there and run the command again"[:480])
            return ExitCode.DISK_FULL
        _error(f"{where}{exc.strerror or one_line(exc)}"[:480])
        return ExitCode.INVALID
    except OverflowError:
        _error("a number is too large")
        return ExitCode.INVALID
    except RecursionError:
        _error("an input file is nested too deeply")
        return ExitCode.INVALID
    return code if isinstance(code, int) else ExitCode.OK
