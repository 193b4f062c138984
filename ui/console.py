"""The ``trainplan`` console script (pyproject's ``[project.scripts]``).

It is light on purpose: importing the CLI takes a second or more (pandas, the planner), and
Ctrl-C there was a KeyboardInterrupt traceback; here it is answered as in any command, one line
and exit 130.
"""

from __future__ import annotations

import os
import signal
import sys

from planner.errors import ExitCode

ABORTED_LINE = "trainplan: aborted"


def _abort_now(signum: int, frame: object) -> None:
    """SIGINT while the CLI imports: nothing has started, so exit at once. Raising
    KeyboardInterrupt there is not enough: inside a C extension's import it surfaces as that
    module's ImportError ("pd_parser.c could not import module pandas", a CI run of s25)."""
    os.write(2, f"{ABORTED_LINE}\n".encode())
    os._exit(ExitCode.ABORTED)


def main() -> int:
    previous = signal.signal(signal.SIGINT, _abort_now)
    try:
        from ui.cli import main as cli_main
    finally:
        signal.signal(signal.SIGINT, previous)
    try:
        return cli_main()
    except KeyboardInterrupt:  # in a command, click has already made it typer.Abort: ui/cli.py
        print(ABORTED_LINE, file=sys.stderr)
        return ExitCode.ABORTED


if __name__ == "__main__":
    sys.exit(main())
