"""A sandbox's limits are faults of their own kind, told apart from the host's OOM killer."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.evaluate.harness import local_harness
from bot.repos import validation_backend
from bot.settings import load_settings
from bot.watchfile import WatchFile
from runners.backends.local import LocalBackend
from runners.sandbox.limits import GIB, Limits
from runners.testrun.faults import classify
from runners.types import FaultKind, Hardware
from task_registry.db import make_engine


def test_a_killed_run_with_the_sandboxs_memory_note_is_a_memory_limit_not_the_hosts_oom() -> None:
    note = "tests/test_big.py \n[probewatch sandbox] the run reached its memory limit (1 GiB)\n"
    assert classify(note, -9).kind is FaultKind.memory_limit  # type: ignore[union-attr]
    assert classify("tests/test_big.py \n", -9).kind is FaultKind.harness_oom  # type: ignore[union-attr]


def test_signals_of_the_file_size_and_cpu_limits_are_read_from_the_exit_status() -> None:
    assert classify("", -25).kind is FaultKind.file_limit  # type: ignore[union-attr]
    assert classify("", -24).kind is FaultKind.cpu_limit  # type: ignore[union-attr]
    assert classify("", -15) is None


def test_an_operator_sets_the_limits_of_runs_and_agents_in_the_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in {
        "RUN_MEMORY_GIB": "2",
        "RUN_PROCESSES": "128",
        "RUN_DISK_GIB": "0.5",
        "RUN_DISK_FLOOR_GIB": "0",
        "RUN_CPU_S": "0",
    }.items():
        monkeypatch.setenv(f"PROBEWATCH_{name}", value)
    settings = load_settings(home=tmp_path / "home")
    limits = settings.run_limits()
    assert limits == Limits(
        memory_bytes=2 * GIB,
        processes=128,
        file_bytes=64 * GIB,
        cpu_s=None,
        disk_bytes=GIB // 2,
        disk_floor_bytes=None,
    )
    backend = validation_backend(settings, WatchFile(), "acme/widgets", Hardware(), cpu_slots=1)
    assert isinstance(backend, LocalBackend) and backend.limits == limits
    harness = local_harness(
        engine=make_engine(f"sqlite:///{tmp_path / 'r.db'}"), settings=settings, watch=WatchFile()
    )
    assert harness.limits == limits and harness.backend.limits == limits  # type: ignore[attr-defined]
