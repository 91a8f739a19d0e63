"""The console every command prints through: the terminal's width in a terminal; piped,
wide enough that no table cell or title is cut."""

from __future__ import annotations

import os

from rich.console import Console

# A pipe has no width; rich would assume 80 columns and cut table cells (titles, paths) to
# fit. Piped output is read by programs and pagers, so it gets every character instead.
PIPED_WIDTH = 10_000


def console() -> Console:
    """Made when a command prints: the terminal's width (or COLUMNS) in a terminal; piped,
    wide enough that no table cell is cut."""
    out = Console()
    if out.is_terminal or os.environ.get("COLUMNS"):
        return out
    return Console(width=PIPED_WIDTH)
