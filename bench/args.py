"""Argument types the benches share, so bad input is refused in one line by argparse."""

from __future__ import annotations

import argparse
import subprocess
from pathlib import Path


def clone(value: str) -> Path:
    """A folder git reads as a repository: a clone or a bare mirror."""
    path = Path(value).expanduser()
    found = subprocess.run(
        ["git", "-C", str(path), "rev-parse", "--git-dir"], capture_output=True, text=True
    )
    if found.returncode != 0:
        raise argparse.ArgumentTypeError(
            f"{path} is not a git clone or mirror: pass the folder of one "
            "(git clone --mirror URL PATH makes one)"
        )
    return path
