"""Real-PR experiment: era-locked environments for verl PRs with CPU tests, then run those tests.

For each selected PR (a squash-merged commit that adds or changes
``tests/**/*_on_cpu.py`` files) the environment is resolved from the
requirement files at the base commit as the package index was at merge time,
with the runner's torch build as an override and verl's GPU-only packages left
out, repaired against the PR's CPU tests, and built once per lock hash under a
shared home. The CPU tests then run at the merge commit in a fresh work tree,
with a per-run overlay taking ``pip install --no-deps -e .``. Prints the build
success rate, build times, storage with and without sharing, and per-PR
outcome counts with faults named; writes the same as JSON.

    python -m bench.verl_cpu_prs --mirror PATH --home "$(mktemp -d)" --count 10 \
        --override torch==2.13.0+cpu --find-links DIR_WITH_TORCH_WHEEL
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path

from bench.args import clone, positive
from runners.env import (
    EnvError,
    EnvHome,
    EnvRequest,
    Prepared,
    RunnerOverrides,
    overlay_environment,
    prepare_environment,
)
from runners.env.config import known_repo_config
from runners.env.store import disk_usage, home_usage, list_environments
from runners.testrun.faults import classify

REPO_NAME = "volcengine/verl"
CPU_TEST_GLOB = "tests/**/*_on_cpu.py"
SETUP_COMMAND = "pip install --no-deps -e ."  # verl's, from the watch file
RUN_ENV = {"RAY_USAGE_STATS_ENABLED": "0", "WANDB_MODE": "offline"}
RUN_TIMEOUT_S = 900.0
MIN_FREE_BYTES = 12 * 2**30
# Why a CPU test failed, after the system-fault table (runners.testrun.faults) had its say:
# causes that are the environment's or the test's, named for the report. First match wins.
FAILURE_CAUSES: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(
            r"operator torchvision::\w+ does not exist|Could not import module "
            r"'(?:AutoProcessor|ProcessorMixin)'"
        ),
        "torch_companion_mismatch",
    ),
    (re.compile(r"ModuleNotFoundError|No module named"), "missing_module"),
    (
        re.compile(r"ImportError: cannot import name|AttributeError: module '[\w.]+' has no"),
        "api_mismatch",
    ),
    (re.compile(r"CUDA|cuda|NCCL|nvidia", re.I), "needs_cuda"),
    (re.compile(r"ConnectionError|Max retries exceeded"), "network"),
    (re.compile(r"timed? ?out|Timeout", re.I), "timeout"),
)


@dataclass
class PrCase:
    number: int
    title: str
    merge_commit: str
    base_commit: str
    merged_at: str
    cpu_tests: list[str]


@dataclass
class CaseRecord:
    case: PrCase
    built: bool = False
    build_error: str = ""
    lock_hash: str = ""
    build_seconds: float = 0.0
    environments_built: int = 0
    repairs: list[str] = field(default_factory=list)
    collection_ok: bool | None = None
    env_apparent_bytes: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    faults: dict[str, int] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)  # "node [fault] first error line"
    run_seconds: float = 0.0
    outcome: str = ""
    run_fault: str = ""
    run_note: str = ""


def select_prs(mirror: Path, count: int) -> list[PrCase]:
    """The newest ``count`` squash-merged PRs that add or change CPU test files."""
    out = _git(
        mirror,
        "log",
        "--first-parent",
        "--diff-filter=AM",
        "--name-only",
        "--format=@@%H%x09%P%x09%cI%x09%s",
        "HEAD",
        "--",
        CPU_TEST_GLOB,
    )
    cases: list[PrCase] = []
    for block in out.split("@@")[1:]:
        head, *files = [line for line in block.splitlines() if line.strip()]
        sha, parents, merged_at, title = head.split("\t", 3)
        number = re.search(r"\(#(\d+)\)\s*$", title)
        if number is None or title.startswith("Revert") or " " in parents:
            continue
        cases.append(PrCase(int(number.group(1)), title, sha, parents, merged_at, sorted(files)))
        if len(cases) == count:
            break
    return cases


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
    ).stdout


def build_case(
    case: PrCase, mirror: Path, home: EnvHome, overrides: RunnerOverrides, record: CaseRecord
) -> Prepared | None:
    request = EnvRequest(
        repo=mirror,
        commit=case.base_commit,
        merge_time=datetime.fromisoformat(case.merged_at),
        config=known_repo_config(REPO_NAME),
        overrides=overrides,
        tests=tuple(case.cpu_tests),
        tests_commit=case.merge_commit,
        repo_name=REPO_NAME,
    )
    started = time.monotonic()
    try:
        prepared = prepare_environment(request, home)
    except EnvError as exc:
        record.build_error = str(exc)[-1500:]
        record.build_seconds = time.monotonic() - started
        return None
    record.built, record.lock_hash = True, prepared.build.ref.lock_hash
    record.build_seconds, record.environments_built = prepared.seconds, prepared.builds
    record.repairs = [f"{r.module}->{r.distribution}:{r.outcome}" for r in prepared.repairs]
    record.collection_ok = prepared.collection.ok if prepared.collection else None
    record.env_apparent_bytes = disk_usage([prepared.build.ref.root]).apparent_bytes
    return prepared


def run_case(
    case: PrCase, prepared: Prepared, mirror: Path, home: EnvHome, record: CaseRecord
) -> None:
    """Run the PR's CPU tests at the merge commit through the local backend; count outcomes.

    The run gets a writable overlay of the shared environment (made here, removed
    after), so the setup command installs into the overlay, never the shared one.
    """
    from runners.backends.local import LocalBackend
    from runners.types import RunRequest
    from runners.workspace import WorkspaceMode

    started = time.monotonic()
    runs = home.home / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f"overlay-{case.number}-", dir=runs) as tmp:
        overlay = overlay_environment(prepared.build.ref, Path(tmp) / "venv")
        request = RunRequest(
            repo=mirror,
            base_commit=case.merge_commit,
            tests=tuple(case.cpu_tests),
            environment=overlay,
            setup_commands=(SETUP_COMMAND,),
            env=RUN_ENV,
            timeout_per_test_s=300.0,
            timeout_run_s=RUN_TIMEOUT_S,
            label=f"verl-{case.number}",
        )
        backend = LocalBackend(workspace_root=runs, mode=WorkspaceMode.shared, retries=0)
        result = backend.run(request)
    record.run_seconds = time.monotonic() - started
    record.outcome = str(result.outcome)
    record.run_fault = f"{result.fault.kind}: {result.fault.detail[:300]}" if result.fault else ""
    record.run_note = result.detail[:300]
    sections = _sections(result.log)
    settled = {r.module: str(r.outcome) for r in prepared.repairs if r.outcome != "added"}
    for test in result.tests:
        record.counts[test.status] = record.counts.get(test.status, 0) + 1
        if test.status in ("failed", "error", "timeout"):
            text = _section_of(sections, test.node_id) + " " + (test.message or "")
            kind = _fault(text, settled)
            record.faults[kind] = record.faults.get(kind, 0) + 1
            record.failures.append(f"{test.node_id} [{kind}] {_first_error(text)}")


_SECTION = re.compile(r"^_{3,} (?:ERROR collecting )?(.+?) _{3,}$", re.M)


def _sections(log: str) -> dict[str, str]:
    """pytest's per-test report sections ("____ test_x ____" + traceback), by their title."""
    found: dict[str, str] = {}
    matches = list(_SECTION.finditer(log))
    if not matches:
        return {}
    ends = [m.start() for m in matches[1:]] + [len(log)]
    for match, end in zip(matches, ends, strict=True):
        found[match.group(1)] = log[match.end() : end]
    return found


def _section_of(sections: dict[str, str], node_id: str) -> str:
    name = node_id.rpartition("::")[2]
    for title, text in sections.items():
        if title == node_id or title.endswith(name) or title.replace(".", "::").endswith(name):
            return text
    return ""


def _first_error(text: str) -> str:
    """The first ``E   ...`` line of a pytest report section: the exception, in one line."""
    line = next((ln for ln in text.splitlines() if ln.startswith("E   ")), text.strip()[:160])
    return line.removeprefix("E   ").strip()[:200]


def _fault(message: str, settled: dict[str, str]) -> str:
    """A failed test's cause: a module the repairs could not add (excluded, unresolvable),
    a system fault from the runners' table, else one of the causes above."""
    missing = re.search(r"No module named '([\w]+)", message)
    if missing and missing.group(1) in settled:
        return f"{settled[missing.group(1)]}_module"
    fault = classify(message, None)
    if fault is not None:
        return str(fault.kind)
    return next(
        (kind for pattern, kind in FAILURE_CAUSES if pattern.search(message)), "test_failure"
    )


@dataclass
class Totals:
    prs: int
    built: int
    build_success_rate: float
    median_build_seconds: float
    distinct_environments: int
    environments_on_disk: int  # repairs leave their intermediate environments too
    per_task_copies_bytes: int  # each PR's final environment as a full copy of its own
    all_envs_apparent_bytes: int
    all_envs_actual_bytes: int  # hard links counted once
    uv_cache_only_bytes: int
    shared_on_disk_bytes: int  # environments + the rest of the uv cache
    saving_vs_per_task: float
    elapsed_s: float


def summary(records: list[CaseRecord], home: EnvHome, elapsed: float) -> Totals:
    built = [r for r in records if r.built]
    usage = home_usage(home)
    per_task = sum(r.env_apparent_bytes for r in built)
    return Totals(
        prs=len(records),
        built=len(built),
        build_success_rate=len(built) / len(records) if records else 0.0,
        median_build_seconds=statistics.median([r.build_seconds for r in records] or [0.0]),
        distinct_environments=len({r.lock_hash for r in built}),
        environments_on_disk=len(list_environments(home)),
        per_task_copies_bytes=per_task,
        all_envs_apparent_bytes=usage.environments.apparent_bytes,
        all_envs_actual_bytes=usage.environments.actual_bytes,
        uv_cache_only_bytes=usage.cache_only_bytes,
        shared_on_disk_bytes=usage.on_disk_bytes,
        saving_vs_per_task=1 - usage.on_disk_bytes / per_task if per_task else 0.0,
        elapsed_s=elapsed,
    )


def _print(records: list[CaseRecord], totals: Totals) -> None:
    gib = 2**30
    for r in records:
        state = f"env {r.lock_hash[:10]} {r.build_seconds:6.1f}s" if r.built else "BUILD FAILED"
        counts = " ".join(f"{k}={v}" for k, v in sorted(r.counts.items())) or "-"
        faults = " ".join(f"{k}={v}" for k, v in sorted(r.faults.items())) or "-"
        print(
            f"#{r.case.number:<5} {state}  repairs={len(r.repairs)}  {r.outcome}  "
            f"tests: {counts}  faults: {faults}  {r.run_fault[:120]}"
        )
        if r.build_error:
            print(f"        build error: {r.build_error[-300:]}")
    t = totals
    print(
        f"build success: {t.built}/{t.prs} ({t.build_success_rate:.0%}); "
        f"median {t.median_build_seconds:.1f}s; {t.distinct_environments} distinct, "
        f"{t.environments_on_disk} on disk"
    )
    print(
        f"storage: per-task copies {t.per_task_copies_bytes / gib:.2f} GiB; all environments "
        f"apparent {t.all_envs_apparent_bytes / gib:.2f} GiB; shared on disk "
        f"{t.shared_on_disk_bytes / gib:.2f} GiB (environments {t.all_envs_actual_bytes / gib:.2f}"
        f" + uv cache {t.uv_cache_only_bytes / gib:.2f}); saving {t.saving_vs_per_task:.1%}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirror", type=clone, required=True)
    parser.add_argument("--home", type=Path, required=True, help="a PROBEWATCH_HOME of its own")
    parser.add_argument("--count", type=positive, default=10)
    parser.add_argument("--override", action="append", default=[])
    parser.add_argument("--find-links", type=Path, action="append", default=[])
    parser.add_argument("--json", type=Path, help="write the records here")
    parser.add_argument("--no-run", action="store_true", help="build only")
    args = parser.parse_args(argv)
    home = EnvHome(args.home)
    overrides = RunnerOverrides(tuple(args.override), tuple(args.find_links))
    started = time.monotonic()
    records = []
    for case in select_prs(args.mirror, args.count):
        if shutil.disk_usage(args.home.parent).free < MIN_FREE_BYTES:
            print(f"stopping before #{case.number}: under {MIN_FREE_BYTES / 2**30:.0f} GiB free")
            break
        record = CaseRecord(case)
        records.append(record)
        prepared = build_case(case, args.mirror, home, overrides, record)
        if prepared is not None and not args.no_run:
            try:
                run_case(case, prepared, args.mirror, home, record)
            except Exception as exc:  # the experiment's edge: one broken run must not end it
                record.outcome, record.run_note = "harness_error", f"{type(exc).__name__}: {exc}"
        print(json.dumps(asdict(record))[:600], flush=True)
    totals = summary(records, home, time.monotonic() - started)
    _print(records, totals)
    if args.json:
        document = {"summary": asdict(totals), "records": [asdict(r) for r in records]}
        args.json.write_text(json.dumps(document, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
