"""The ``trainplan`` console script (pyproject's ``[project.scripts]``).

It is light on purpose: importing the CLI takes a second or more (pandas, the planner), and
Ctrl-C there was a KeyboardInterrupt traceback; here it is answered as in any command, one line
and exit 130.
"""

from __future__ import annotations

import sys

from planner.errors import ExitCode

ABORTED_LINE = "trainplan: aborted"


def main() -> int:
    try:
        from ui.cli import main as cli_main

        return cli_main()
    except KeyboardInterrupt:  # in a command, click has already made it typer.Abort: ui/cli.py
        print(ABORTED_LINE, file=sys.stderr)
        return ExitCode.ABORTED


if __name__ == "__main__":
    sys.exit(main())
