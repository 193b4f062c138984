"""The CLI's two rich consoles: ``out`` for answers (stdout), ``err`` for warnings (stderr). Shared by
the renderers (ui/render*.py); split from ui/render.py so each renderer module can print."""

from __future__ import annotations

from rich.console import Console

out = Console(highlight=False, soft_wrap=True)
if not out.is_terminal:  # piped or captured: do not squeeze tables into 80 columns
    out = Console(highlight=False, soft_wrap=True, width=150)
err = Console(stderr=True, highlight=False)
