"""What the benches' tests share: a bench refusing its input the way the CLI does, and a
clone with one commit at a given time to mine."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest


def dated_clone(path: Path, subject: str, when: str) -> Path:
    """A repository at ``path`` whose branch ``main`` holds one commit, ``subject``, made
    (authored and committed) at ``when`` (ISO time)."""
    env = {
        "GIT_AUTHOR_DATE": when,
        "GIT_COMMITTER_DATE": when,
        "GIT_AUTHOR_NAME": "a",
        "GIT_AUTHOR_EMAIL": "a@example.com",
        "GIT_COMMITTER_NAME": "a",
        "GIT_COMMITTER_EMAIL": "a@example.com",
        "PATH": "/usr/bin:/bin",
    }
    subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True, env=env)
    (path / "a.py").write_text("x = 1\n")
    subprocess.run(["git", "-C", str(path), "add", "a.py"], check=True, env=env)
    subprocess.run(["git", "-C", str(path), "commit", "-qm", subject], check=True, env=env)
    return path


def refusal(
    main: Callable[[list[str]], int], argv: list[str], capsys: pytest.CaptureFixture
) -> str:
    """The one line a bench prints when it refuses ``argv``, after checking it exits 2 and
    prints no traceback (argparse's own refusals exit through ``SystemExit``)."""
    try:
        code = main(argv)
    except SystemExit as exit_:
        code = exit_.code  # type: ignore[assignment]
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err and not any("Traceback" in line for line in err)
    return err[-1]
