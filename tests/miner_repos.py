"""Synthetic upstream repositories for the miner's tests, built with real git.

``RepoBuilder`` makes mainline commits the way upstream projects merge PRs:
GitHub squash merges (``Title (#N)``), GitHub merge commits (``Merge pull
request #N from ...``), GitLab merge requests (``See merge request
GROUP/PROJECT!N``), reverts and reapplies, direct pushes. Dates are fixed, so
every run builds the same history. ``build_scenario`` builds the shared
repository with one PR of each kind the issue lists (test modules build it
once, in a module fixture).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

Content = str | bytes | None
START = datetime(2025, 1, 2, 12, 0, tzinfo=UTC)


def code_lines(count: int, name: str = "value") -> str:
    """``count`` distinct lines of Python."""
    return "".join(f"{name}_{index} = {index}\n" for index in range(count))


def assert_lines(count: int, name: str = "case") -> str:
    body = "".join(f"    assert {name}_{index} == {index}\n" for index in range(count - 1))
    return f"def test_{name}():\n{body}"


def binary_blob(size: int) -> bytes:
    return bytes(range(256)) * (size // 256) + b"\x00" * (size % 256)


def git(repo: Path, *args: str, env: Mapping[str, str] | None = None) -> str:
    result = subprocess.run(
        ["git", "-C", str(repo), *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        check=False,
    )
    if result.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {result.stderr}")
    return result.stdout.strip()


@dataclass
class RepoBuilder:
    """A work tree on ``main`` that grows one dated mainline commit at a time."""

    path: Path
    clock: datetime = START
    step: timedelta = timedelta(days=1)
    _branches: int = 0

    @classmethod
    def create(cls, path: Path, *, start: datetime = START) -> RepoBuilder:
        path.mkdir(parents=True, exist_ok=True)
        git(path, "init", "-q", "-b", "main")
        for key, value in (
            ("user.name", "Ada Author"),
            ("user.email", "ada@example.com"),
            ("commit.gpgsign", "false"),
            ("core.autocrlf", "false"),
        ):
            git(path, "config", key, value)
        builder = cls(path, clock=start)
        builder.commit("Initial commit", {"README.md": "# widgets\n"})
        return builder

    def _tick(self) -> dict[str, str]:
        self.clock += self.step
        stamp = self.clock.isoformat()
        return {"GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp}

    def _write(self, files: Mapping[str, Content], renames: Mapping[str, str]) -> None:
        for old, new in renames.items():
            (self.path / new).parent.mkdir(parents=True, exist_ok=True)
            git(self.path, "mv", old, new)
        for name, content in files.items():
            target = self.path / name
            if content is None:
                git(self.path, "rm", "-q", name)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                target.write_bytes(content)
            else:
                target.write_text(content, encoding="utf-8")
            git(self.path, "add", name)

    def commit(
        self,
        message: str,
        files: Mapping[str, Content] = {},
        *,
        renames: Mapping[str, str] = {},
        author: str = "Ada Author <ada@example.com>",
    ) -> str:
        """A commit on the current branch; returns its sha."""
        self._write(files, renames)
        subprocess.run(
            [
                "git",
                "-C",
                str(self.path),
                "commit",
                "-q",
                "--allow-empty",
                "--author",
                author,
                "-F",
                "-",
            ],
            input=message,
            text=True,
            env={**os.environ, **self._tick()},
            check=True,
            capture_output=True,
        )
        return git(self.path, "rev-parse", "HEAD")

    def squash_pr(
        self,
        number: int,
        title: str,
        files: Mapping[str, Content] = {},
        *,
        body: str = "",
        renames: Mapping[str, str] = {},
    ) -> str:
        message = f"{title} (#{number})" + (f"\n\n{body}" if body else "")
        return self.commit(message, files, renames=renames)

    def _merge(self, files: Mapping[str, Content], message: str, branch: str) -> str:
        git(self.path, "checkout", "-q", "-b", branch)
        self.commit(f"work on {branch}", files)
        git(self.path, "checkout", "-q", "main")
        env = self._tick()
        git(self.path, "merge", "-q", "--no-ff", branch, "-m", message, env=env)
        return git(self.path, "rev-parse", "HEAD")

    def merge_pr(
        self, number: int, title: str, files: Mapping[str, Content], *, body: str = ""
    ) -> str:
        """GitHub's merge-commit style: the PR title is the first line of the body."""
        message = f"Merge pull request #{number} from dev/feature-{number}\n\n{title}"
        return self._merge(files, message + (f"\n\n{body}" if body else ""), f"feature-{number}")

    def gitlab_mr(
        self,
        number: int,
        title: str,
        files: Mapping[str, Content],
        *,
        project: str = "ADLR/widgets",
    ) -> str:
        branch = f"mr-{number}"
        message = f"Merge branch '{branch}' into 'main'\n\n{title}\n\nSee merge request {project}!{number}"
        return self._merge(files, message, branch)

    def revert(self, sha: str, *, number: int | None = None, verb: str = "Revert") -> str:
        """A squash-merged revert PR the way GitHub writes one, or a plain ``git revert``."""
        subject = git(self.path, "log", "-1", "--format=%s", sha)
        git(self.path, "revert", "--no-commit", sha)
        suffix = f" (#{number})" if number is not None else ""
        message = f'{verb} "{subject}"{suffix}\n\nThis reverts commit {sha}.'
        return self.commit(message)

    def bare_clone(self, destination: Path) -> Path:
        subprocess.run(
            ["git", "clone", "-q", "--bare", str(self.path), str(destination)],
            check=True,
            capture_output=True,
        )
        return destination


@dataclass
class Scenario:
    """The shared synthetic repository and what each PR in it is."""

    path: Path
    bare: Path
    shas: dict[str, str] = field(default_factory=dict)
    since: datetime = START
    until: datetime = START


VERL_STYLE_BODY = """### What does this PR do?

Reduces peak memory of the engine by reusing the cache across steps; the cache
is reset when the model reloads.

### Test

Unit tests in tests/test_engine.py."""


def build_scenario(path: Path) -> Scenario:
    """One repository with every kind of mainline change the miner must tell apart."""
    repo = RepoBuilder.create(path / "work")
    shas: dict[str, str] = {}
    shas["feature"] = repo.squash_pr(
        1,
        "[core] feat: fused engine",
        {"widgets/core/engine.py": code_lines(900), "tests/test_engine.py": assert_lines(300)},
        body=VERL_STYLE_BODY + "\n\nSigned-off-by: Ada Author <ada@example.com>",
    )
    shas["merge_commit"] = repo.merge_pr(
        2,
        "Add the scheduler",
        {
            "widgets/core/scheduler.py": code_lines(1000, "s"),
            "tests/unit/test_sched.py": assert_lines(200, "s"),
        },
        body="Overlaps communication with compute.",
    )
    shas["gitlab"] = repo.gitlab_mr(
        2,
        "Distributed optimizer for widgets",
        {
            "widgets/core/dist_opt.py": code_lines(1100, "d"),
            "tests/test_dist_opt.py": assert_lines(100, "d"),
        },
    )
    shas["direct_push"] = repo.commit("Bump version to 0.2", {"VERSION": "0.2\n"})
    shas["tests_only"] = repo.squash_pr(
        4, "More tests", {"tests/test_more.py": assert_lines(1500, "m")}
    )
    shas["docs_only"] = repo.squash_pr(
        5, "Write the guide", {"docs/guide.md": code_lines(1500, "g")}
    )
    shas["golden_only"] = repo.squash_pr(
        6,
        "Refresh golden values",
        {"tests/functional_tests/gpt/golden_values_dev.json": code_lines(5000, "gv")},
    )
    shas["small"] = repo.squash_pr(
        7,
        "Small fix",
        {"widgets/util.py": code_lines(40, "u"), "tests/test_util.py": assert_lines(10, "u")},
    )
    shas["binary"] = repo.squash_pr(
        8,
        "Add weights",
        {
            "widgets/data/weights.bin": binary_blob(200_000),
            "widgets/load.py": code_lines(60, "l"),
            "tests/test_load.py": assert_lines(20, "l"),
        },
    )
    shas["rename"] = repo.squash_pr(
        9,
        "Move the engine",
        {"tests/test_engine_moved.py": assert_lines(5, "mv")},
        renames={"widgets/core/engine.py": "widgets/engine/core.py"},
    )
    shas["reverted"] = repo.squash_pr(
        10,
        "[core] feat: speculative decoding",
        {
            "widgets/core/spec.py": code_lines(1200, "sp"),
            "tests/test_spec.py": assert_lines(100, "sp"),
        },
    )
    shas["revert"] = repo.revert(shas["reverted"], number=11)
    shas["rereverted"] = repo.squash_pr(
        12,
        "[core] feat: paged cache",
        {
            "widgets/core/paged.py": code_lines(1300, "pg"),
            "tests/test_paged.py": assert_lines(100, "pg"),
        },
    )
    shas["revert_of_rereverted"] = repo.revert(shas["rereverted"], number=13)
    shas["reapply"] = repo.revert(shas["revert_of_rereverted"], number=14)
    shas["unicode"] = repo.squash_pr(
        15,
        "Añadir caché ⚡ für Ünïcødé",
        {
            "widgets/core/i18n.py": code_lines(1100, "i"),
            "tests/test_i18n.py": assert_lines(50, "i"),
        },
        body="内存优化: 减少显存占用 (less memory).",
    )
    shas["follow_up"] = repo.squash_pr(
        16, "Fix a typo left by #1", {"widgets/util.py": code_lines(41, "u")}
    )
    shas["docs_ci"] = repo.squash_pr(
        17,
        "CI scripts and docs config",
        {
            ".github/scripts/report.py": code_lines(700, "ci"),
            "docs/conf.py": code_lines(400, "dc"),
            "tests/test_ci.py": assert_lines(20, "ci"),
        },
    )
    bare = repo.bare_clone(path / "bare.git")
    return Scenario(
        path=repo.path, bare=bare, shas=shas, since=START, until=repo.clock + timedelta(days=1)
    )


# Numbers of the scenario's GitHub PRs and GitLab merge requests, by what they are.
SURVIVORS = {"#1", "#2", "!2", "#12", "#15"}
REJECTED = {
    "#4": "changes_code",
    "#5": "adds_tests",
    "#6": "changes_code",
    "#7": "size",
    "#8": "size",
    "#9": "size",
    "#10": "not_reverted",
    "#11": "adds_tests",
    "#13": "adds_tests",
    "#14": "not_reverted",
    "#16": "size",
    "#17": "docs_ci_only",
}
