"""Calling ``trainplan`` in-process (``ui.cli.main``) and checking its one-line errors."""

from __future__ import annotations

import contextlib
import io

import ui.cli as cli


def call(*argv: str) -> tuple[int, str, str]:
    """``trainplan ARGV`` in this process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(list(argv))
    return code, out.getvalue(), err.getvalue()


def assert_one_line(code: int, err: str, needle: str) -> None:
    """Exit 2 and one ``trainplan: error:`` line on stderr that contains ``needle``."""
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2, (code, err[-2000:])
    assert len(lines) == 1 and lines[0].startswith("trainplan: error:"), err[-2000:]
    assert needle in lines[0], lines[0]
