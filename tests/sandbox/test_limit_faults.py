"""A sandbox's limits are faults of their own kind, told apart from the host's OOM killer."""

from __future__ import annotations

from runners.testrun.faults import classify
from runners.types import FaultKind


def test_a_killed_run_with_the_sandboxs_memory_note_is_a_memory_limit_not_the_hosts_oom() -> None:
    note = "tests/test_big.py \n[probewatch sandbox] the run reached its memory limit (1 GiB)\n"
    assert classify(note, -9).kind is FaultKind.memory_limit  # type: ignore[union-attr]
    assert classify("tests/test_big.py \n", -9).kind is FaultKind.harness_oom  # type: ignore[union-attr]


def test_signals_of_the_file_size_and_cpu_limits_are_read_from_the_exit_status() -> None:
    assert classify("", -25).kind is FaultKind.file_limit  # type: ignore[union-attr]
    assert classify("", -24).kind is FaultKind.cpu_limit  # type: ignore[union-attr]
    assert classify("", -15) is None
