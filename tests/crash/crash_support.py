"""Real ``probewatch`` processes on a test registry, killed with SIGKILL mid-job.

:class:`ProbewatchHome` starts ``probewatch`` processes (a ``serve`` worker, ``grade``) on the
test's registry and a home of their own; :class:`DemoService` adds the demo repository, a
watch file for it (dry run off, host environment) and the GitHub emulator's copy of its
PR #15. :func:`run_processes` lists the processes of a run (by the run
folders and TMPDIRs it names in its working directory, command line or environment): what
a killed worker leaves running, and what must be gone once another worker took over.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy.engine import Engine

from bot.service.jobs.kinds import JobKind, PRPayload, job_create, mine_key
from probe_builder.demo_repo import DemoRepo, create_demo_repo
from task_registry.db import session_scope
from task_registry.jobs import enqueue_job, list_jobs
from task_registry.models import Job
from tests.bot_support import SECRET, db_url
from tests.github_emulator import GitHubEmulator
from tests.service.test_bot_builds_the_task import pull_files

ROOT = Path(__file__).parents[2]
NUMBER = 15  # the demo's prefix-cache PR: a handful of short pytest runs
LEASE_S = 3


@dataclass
class ProbewatchHome:
    """A probewatch home on the test's registry, and the processes started on it."""

    engine: Engine
    emulator: GitHubEmulator
    tmp_path: Path
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def home(self) -> Path:
        return self.tmp_path / "home"

    @property
    def runs(self) -> Path:
        return self.home / "runs"

    @property
    def watch(self) -> Path:
        return self.tmp_path / "watch.toml"

    def env(self) -> dict[str, str]:
        return {
            **os.environ,
            "PROBEWATCH_HOME": str(self.home),
            "PROBEWATCH_DATABASE_URL": db_url(self.engine),
            "PROBEWATCH_WATCH_FILE": str(self.watch),
            "PROBEWATCH_GITHUB_API_URL": self.emulator.base_url,
            "PROBEWATCH_GITHUB_TOKEN": "t",
            "PROBEWATCH_WEBHOOK_SECRET": SECRET,
            "PROBEWATCH_WORKER_LEASE_S": str(LEASE_S),
            "PROBEWATCH_WORKER_POLL_S": "0.1",
            "PROBEWATCH_GITHUB_WRITE_SPACING_S": "0",
            "PROBEWATCH_GITHUB_RETRIES": "0",
        }

    def start(self, name: str, *command: str) -> subprocess.Popen[bytes]:
        """A ``probewatch`` process (a worker: ``serve`` without web and scheduler, by
        default) on this registry and home."""
        argv = list(command) or ["serve", "--no-web", "--no-scheduler"]
        log = (self.tmp_path / f"{name}.log").open("ab")
        process = subprocess.Popen(
            [sys.executable, "-m", "bot.cli.main", *argv],
            cwd=ROOT,
            env=self.env(),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        self.processes.append(process)
        return process

    def log(self, name: str) -> str:
        return (self.tmp_path / f"{name}.log").read_text(errors="replace")

    def jobs(self, kind: JobKind) -> list[Job]:
        with session_scope(self.engine) as session:
            return [job for job in list_jobs(session=session) if job.kind == kind]

    def stop_all(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(10)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(10)


@dataclass
class DemoService(ProbewatchHome):
    """The demo repository watched (dry run off, host environment), its PR #15 merged on the
    GitHub emulator."""

    demo: DemoRepo = field(init=False)

    def __post_init__(self) -> None:
        self.demo = create_demo_repo(self.tmp_path / "minirl")
        pr = self.demo.pr(NUMBER)
        self.emulator.state.add_repo(self.demo.name)
        self.emulator.state.add_pull(
            self.demo.name,
            NUMBER,
            title=pr.title,
            body="Invalidates the prefix cache on reset.",
            merged=True,
            merge_commit_sha=pr.merge_sha,
            base_sha=pr.base_sha,
            files=pull_files(self.demo.path, pr.merge_sha),
        )
        self.watch.write_text(
            f'[[repo]]\nname = "{self.demo.name}"\ngit = "{self.demo.path}"\n'
            f'size_threshold = 100\ndry_run = false\nenvironment = "host"\n'
            f"auto_accept = {{ min_core_share = 0.1 }}\n"
            f'[repo.tests]\nglobs = ["tests/**", "**/test_*.py"]\n',
            encoding="utf-8",
        )

    @property
    def merge_sha(self) -> str:
        return self.demo.pr(NUMBER).merge_sha

    def queue_merged_pr(self) -> None:
        """What the webhook queues for the merged PR: mining it, then its report."""
        payload = PRPayload(repo=self.demo.name, number=NUMBER, merge_sha=self.merge_sha)
        key = mine_key(self.demo.name, NUMBER, self.merge_sha)
        with session_scope(self.engine) as session:
            enqueue_job(session=session, job_in=job_create(JobKind.mine_pr, payload, key))


def kill_hard(process: subprocess.Popen[bytes]) -> None:
    process.kill()  # SIGKILL: nothing of the worker's own clean-up runs
    process.wait(10)


def wait_until(condition: Callable[[], object], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:.0f}s waiting for {what}")
        time.sleep(0.02)


@dataclass(frozen=True)
class LeftRun:
    """What a run had on the host when its worker was killed: its processes and folders."""

    pids: frozenset[int]
    folders: frozenset[Path]  # its folders under the runs root and its TMPDIRs

    def live_processes(self) -> list[int]:
        return run_processes(self.folders)

    def existing_folders(self) -> list[Path]:
        return sorted(f for f in self.folders if f.exists())


def run_processes(markers: Iterable[Path]) -> list[int]:
    """Live processes (zombies excluded) whose working directory, command line or
    environment names one of ``markers``."""
    needles = [str(m) for m in markers]
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        if _state(entry) in (None, "Z"):
            continue
        if any(n in _described(entry) for n in needles):
            found.append(int(entry.name))
    return found


def pytest_running(runs: Path) -> bool:
    """A run's pytest has started under ``runs`` (a command line naming pytest)."""
    return any(_runs_pytest(_cmdline(pid)) for pid in run_processes([runs]))


def _runs_pytest(cmdline: bytes) -> bool:
    return any(arg == b"pytest" or arg.endswith(b"/pytest") for arg in cmdline.split(b"\0"))


def left_run(runs: Path) -> LeftRun:
    """The processes and folders of the runs under ``runs`` now (with their TMPDIRs)."""
    folders = {p for p in runs.glob("run-*") if p.is_dir()}
    pids = set(run_processes(folders))
    for pid in pids:
        folders |= _tmpdir_of(pid)
    return LeftRun(frozenset(pids), frozenset(folders))


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _state(entry: Path) -> str | None:
    try:
        return (entry / "stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return None


def _described(entry: Path) -> str:
    parts = []
    for name in ("cmdline", "environ"):
        try:
            parts.append((entry / name).read_bytes().replace(b"\0", b" ").decode(errors="replace"))
        except OSError:
            continue
    with contextlib.suppress(OSError):
        parts.append(os.readlink(entry / "cwd"))
    return " ".join(parts)


def _tmpdir_of(pid: int) -> set[Path]:
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return set()
    values = [item[len(b"TMPDIR=") :].decode() for item in environ if item.startswith(b"TMPDIR=")]
    return {Path(v) for v in values if v.startswith("/tmp/pw-")}
