"""Each planted gap of the demo repository comes out of the real pipeline on its own.

Mined from git history, built, its adversarial found by the mechanical mutants (never
hand-fed), and its curator probe accepted by the protocol (golden x3, snapshot, hollow,
adversarials) — and that probe rejects the surviving mutant.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine

from bot.repos import mining_config
from bot.watchfile import load_watch_file
from pr_miner.mining import mine
from pr_miner.sources.git_source import GitSource
from probe_builder.demo_repo import DemoRepo, create_demo_repo
from probe_builder.pipeline import (
    RepoSettings,
    ValidationResult,
    build_task,
    load_probe_folder,
    validate_task,
)
from runners.backends.local import LocalBackend
from task_registry.candidates import list_candidates
from task_registry.db import make_engine, session_scope, upgrade
from task_registry.swebench import instance_id_for
from task_registry.types import Decision, FilterVerdict, PromiseVerdict


@dataclass
class MinedDemo:
    demo: DemoRepo
    engine: Engine
    settings: RepoSettings
    workspaces: Path


@pytest.fixture(scope="module")
def mined(tmp_path_factory: pytest.TempPathFactory) -> MinedDemo:
    root = tmp_path_factory.mktemp("demo")
    demo = create_demo_repo(root / "minirl")
    watched = load_watch_file(demo.watch_file).get(demo.name)
    engine = make_engine(f"sqlite:///{root / 'probewatch.db'}")
    upgrade(engine)
    mine(
        engine=engine,
        repo=demo.name,
        source=GitSource(demo.path),
        config=mining_config(watched),
        since=datetime(2000, 1, 1, tzinfo=UTC),
    )
    settings = RepoSettings(test_globs=tuple(watched.tests.globs))
    return MinedDemo(demo, engine, settings, root / "runs")


def test_mining_keeps_exactly_the_three_planted_prs_and_accepts_them(mined: MinedDemo) -> None:
    with session_scope(mined.engine) as session:
        passed = list_candidates(session=session, verdict=FilterVerdict.passed)
        accepted = {c.number for c in passed if c.decision == Decision.accepted}
    assert sorted(c.number for c in passed) == [12, 15, 19]
    assert accepted == {12, 15, 19}


@pytest.fixture(scope="module")
def validated(mined: MinedDemo) -> dict[int, ValidationResult]:
    results = {}
    backend = LocalBackend(workspace_root=mined.workspaces, cpu_slots=2, gpu_indices=())
    for pr in mined.demo.prs:
        instance_id = instance_id_for(mined.demo.name, pr.number)
        build_task(
            engine=mined.engine,
            instance_id=instance_id,
            mirror=mined.demo.path,
            settings=mined.settings,
        )
        results[pr.number] = validate_task(
            engine=mined.engine,
            instance_id=instance_id,
            mirror=mined.demo.path,
            settings=mined.settings,
            backend=backend,
            workspace_root=mined.workspaces,
            probes=load_probe_folder(pr.probe_dir),
        )
    return results


@pytest.mark.parametrize("number", [12, 15, 19])
def test_each_planted_gap_is_found_and_closed_by_its_probe(
    mined: MinedDemo, validated: dict[int, ValidationResult], number: int
) -> None:
    pr = mined.demo.pr(number)
    result = validated[number]
    table = result.table
    promised = [p for p in table.promises if p.category == pr.category]
    assert promised, f"#{number}: no {pr.category} promise extracted"
    # The planted promise is the one its tests miss; another promise of its category that
    # they do check (#15's tests compare a repeated prompt's two results) may be checked.
    planted_promise = [p for p in promised if pr.promise.lower() in p.quote.lower()]
    assert planted_promise, f"#{number}: {pr.promise!r} not extracted"
    assert all(p.verdict != PromiseVerdict.checked for p in planted_promise)

    survivors = [a for a in table.adversarials if a.survives_original]
    assert survivors, f"#{number}: no mechanical mutant survives the PR's own tests"
    planted = [
        a for a in survivors if a.line is not None and pr.planted.before.strip() in a.description
    ]
    assert result.accepted, f"#{number}: {result.notes}"
    probe_paths = {p.path for p in table.probes if p.status == "accepted"}
    assert probe_paths
    defended = [p for p in promised if set(p.probes) & probe_paths and p.survivors]
    assert defended, f"#{number}: no {pr.category} promise lists its probe and the survivor"
    rejected = [a for a in survivors if set(a.rejected_by) & probe_paths]
    assert rejected, f"#{number}: the accepted probe rejects no survivor"
    assert all(set(a.rejected_by) & probe_paths for a in planted)


def _line_of(repo: Path, commit: str, path: str, stripped: str) -> int:
    text = subprocess.run(
        ["git", "-C", str(repo), "show", f"{commit}:{path}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    (line,) = [n for n, t in enumerate(text.splitlines(), start=1) if t.strip() == stripped]
    return line
