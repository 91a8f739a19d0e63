"""Formatting-only PRs: layout changes keep the program; any real change does not."""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

import pytest

from pr_miner.config import MiningConfig
from pr_miner.selection.judge import judge
from pr_miner.selection.layout import same_program
from pr_miner.selection.reverts import RevertIndex
from pr_miner.sources.base import ScanRequest
from pr_miner.sources.git_source import GitSource
from pr_miner.sources.gitlog import read_blobs
from pr_miner.types import FilterName

BEFORE = '''"""Schedules.

A long module docstring that a formatter wraps at a different column.
"""
import os
from typing import List, Optional
import sys


def warmup(step, total, base=0.1):
    """Linear warm-up, then constant.   The docstring is re-wrapped below."""
    assert total > 0, 'total must be positive'
    if step < total: return base * step / total  # ramp
    return base


class Plan:
    steps: List[int] = []

    def add(self, step: Optional[int] = None):
        self.steps.append(step if step is not None else len(self.steps))
        return {'n': len(self.steps), "path": os.path.join('a', "b"), 'argv': sys.argv[:1],}
'''

FORMATTED = '''"""Schedules.

A long module docstring that a formatter wraps
at a different column.
"""

import os
import sys
from typing import List
from typing import Optional


def warmup(step, total, base=0.1):
    """Linear warm-up, then constant.

    The docstring is re-wrapped below.
    """
    assert total > 0, "total must be positive"
    if step < total:
        return base * step / total  # ramp
    return base


class Plan:
    steps: List[int] = []

    def add(self, step: Optional[int] = None):
        self.steps.append(
            step if step is not None else len(self.steps)
        )
        return {
            "n": len(self.steps),
            "path": os.path.join("a", "b"),
            "argv": sys.argv[:1],
        }
'''


def test_a_formatter_pass_keeps_the_program() -> None:
    assert same_program(BEFORE, FORMATTED)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("base * step / total", "base * step // total"),  # an operator
        ("assert total > 0,", "assert total >= 0,"),  # only an assert (dropped at -OO)
        ("'total must be positive'", "'total must be  positive'"),  # a string, not a docstring
        ("steps: List[int] = []", "steps: List[int] = [0]"),  # a class attribute
        ("import sys\n", "import sys\nimport json\n"),  # an import more
        ("return base\n", "return base + 0\n"),  # module-level function, last line
    ],
)
def test_any_real_change_is_a_change(old: str, new: str) -> None:
    assert old in BEFORE
    assert not same_program(BEFORE, BEFORE.replace(old, new, 1))


def test_what_does_not_parse_is_not_shown_unchanged() -> None:
    assert not same_program(BEFORE, BEFORE.replace("def warmup(", "def warmup(("))


# -- end to end on a git history ---------------------------------------------------------


def git(repo: Path, *args: str, when: str = "2025-03-01T12:00:00+00:00") -> str:
    env = {
        "GIT_AUTHOR_NAME": "dev",
        "GIT_AUTHOR_EMAIL": "dev@example.org",
        "GIT_COMMITTER_NAME": "dev",
        "GIT_COMMITTER_EMAIL": "dev@example.org",
        "GIT_AUTHOR_DATE": when,
        "GIT_COMMITTER_DATE": when,
        "PATH": "/usr/bin:/bin:/usr/local/bin",
    }
    done = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, env=env
    )
    return done.stdout.strip()


def commit(repo: Path, files: dict[str, str], subject: str, when: str) -> None:
    for path, text in files.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", subject, when=when)


MODULES = [f"pkg/m{i}.py" for i in range(4)]
TEST = "tests/test_m.py"


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("layout")
    git(repo, "init", "-q", "-b", "main")
    base = {path: BEFORE for path in MODULES} | {TEST: "def test_a():\n    assert 1\n"}
    commit(repo, base, "start", "2025-03-01T10:00:00+00:00")
    formatted = {path: FORMATTED for path in MODULES} | {TEST: "def test_a():\n    assert 1\n\n"}
    commit(repo, formatted, "[misc] style: ruff format (#2)", "2025-03-02T10:00:00+00:00")
    feature = {
        MODULES[0]: FORMATTED.replace("base * step / total", "base * (step + 1) / total"),
        TEST: "def test_a():\n    assert 1\n\n\ndef test_b():\n    assert 2\n",
    }
    commit(repo, feature, "[trainer] fix: warm-up off by one (#3)", "2025-03-03T10:00:00+00:00")
    return repo


def judged(repo: Path, config: MiningConfig) -> dict[int, tuple[FilterName | None, str | None]]:
    source = GitSource(repo)
    since, until = datetime(2025, 3, 2, tzinfo=UTC), datetime(2025, 3, 4, tzinfo=UTC)
    scan = source.scan(ScanRequest(since, until, None))
    reverts = RevertIndex(scan.history)
    results = {}
    for pr in scan.prs:
        item = judge(pr, source.files(pr), config, reverts, partial(source.unchanged_programs, pr))
        results[pr.ref.number] = (item.verdict.failed_filter, item.verdict.reason)
    return results


CONFIG = MiningConfig(size_threshold=2, reject_formatting_only=True, formatting_min_modules=2)


def test_a_formatter_pass_is_rejected_and_a_fix_in_formatted_code_is_kept(history: Path) -> None:
    results = judged(history, CONFIG)
    assert results[3] == (None, None)
    name, reason = results[2]
    assert name is FilterName.formatting_only
    assert reason is not None and "100% of its" in reason and "in 4 module(s)" in reason


def test_the_filter_is_off_unless_asked_for_and_below_the_module_count(history: Path) -> None:
    assert judged(history, CONFIG.model_copy(update={"reject_formatting_only": False}))[2] == (
        None,
        None,
    )
    assert judged(history, CONFIG.model_copy(update={"formatting_min_modules": 5}))[2] == (
        None,
        None,
    )


def test_blobs_are_read_in_one_batch_and_missing_ones_left_out(history: Path) -> None:
    head = git(history, "rev-parse", "HEAD")
    names = [f"{head}:{MODULES[1]}", f"{head}:no/such file.py", f"{head}~2:{TEST}"]
    blobs = read_blobs(history, names)
    assert blobs == {names[0]: FORMATTED, names[2]: "def test_a():\n    assert 1\n"}
