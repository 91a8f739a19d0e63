"""Run uv with the shared cache: every resolution and install goes through here.

One cache folder for all environments and ``UV_LINK_MODE=hardlink`` are what
make a package common to several environments take its space once. Failures
become :class:`UvError` carrying the tail of uv's own message.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from runners.env.errors import EnvError

ERROR_TAIL_CHARS = 4000


class UvError(EnvError):
    """uv exited non-zero; the message ends with what uv printed."""

    def __init__(self, args: Sequence[str], stderr: str) -> None:
        self.stderr = stderr
        tail = stderr.strip()[-ERROR_TAIL_CHARS:]
        super().__init__(f"uv {' '.join(args[:3])} failed: {tail}")


def find_uv() -> Path:
    """uv from the running interpreter's environment (the ``uv`` package), else from PATH."""
    beside = Path(sys.executable).with_name("uv")
    if beside.exists():
        return beside
    found = shutil.which("uv")
    if found is None:
        raise UvError(["(not found)"], "uv is not installed: pip install uv")
    return Path(found)


@dataclass(frozen=True)
class Uv:
    """uv bound to one cache folder."""

    cache: Path
    binary: Path | None = None
    timeout_s: float = 3600.0
    link_mode: str = "hardlink"  # "copy" gives every environment its own files (benchmarks)

    def env(self) -> dict[str, str]:
        keep = {k: v for k, v in os.environ.items() if not k.startswith("UV_")}
        # Hard links need the cache and the environments on one file system (the home).
        return {
            **keep,
            "UV_CACHE_DIR": str(self.cache),
            "UV_LINK_MODE": self.link_mode,
            "UV_NO_PROGRESS": "1",
            "UV_PYTHON_DOWNLOADS": "never",
        }

    def run(self, args: Sequence[str], cwd: Path | None = None) -> str:
        binary = self.binary or find_uv()
        done = subprocess.run(
            [str(binary), *args],
            capture_output=True,
            text=True,
            env=self.env(),
            cwd=cwd,
            timeout=self.timeout_s,
            check=False,
        )
        if done.returncode != 0:
            raise UvError(list(args), done.stderr)
        return done.stdout
