"""The disk a run fills: a watch that counts what its own folders hold and the host's free space."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from runners.sandbox import disk
from runners.sandbox.disk import DiskWatch, used_bytes
from runners.testrun.faults import classify
from runners.types import FaultKind

MIB = 1024**2


def write(path: Path, size: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(os.urandom(size))


def test_used_bytes_counts_real_blocks_once_for_nested_folders_and_hard_links(
    tmp_path: Path,
) -> None:
    write(tmp_path / "tree" / "a.bin", 2 * MIB)
    os.link(tmp_path / "tree" / "a.bin", tmp_path / "tree" / "same.bin")
    with open(tmp_path / "tree" / "sparse.bin", "wb") as sparse:
        sparse.truncate(512 * MIB)  # holds nothing
    counted = used_bytes([tmp_path / "tree", tmp_path / "tree" / "sub", tmp_path / "gone"])
    assert 2 * MIB <= counted < 3 * MIB


def test_growth_past_the_limit_is_a_breach_and_what_was_there_before_is_not(
    tmp_path: Path,
) -> None:
    write(tmp_path / "tree" / "checkout.bin", 6 * MIB)  # the work tree as checked out
    watch = DiskWatch([tmp_path / "tree", tmp_path / "tmp"], limit=4 * MIB, floor=None)
    write(tmp_path / "tmp" / "model-1.bin", 3 * MIB)
    assert watch.breach(now=float("inf")) is None
    write(tmp_path / "tmp" / "model-2.bin", 3 * MIB)  # 3 + 3 > 4, though each is below it
    note = watch.breach(now=float("inf"))
    assert note is not None and "disk limit (4 MiB)" in note
    assert classify(f"tests/test_ckpt.py ..\n{note}\n", -15).kind is FaultKind.disk_limit  # type: ignore[union-attr]


def test_between_checks_the_watch_does_not_walk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    watch = DiskWatch([tmp_path], limit=1, floor=None)
    write(tmp_path / "big.bin", MIB)
    assert watch.breach() is None  # the first check is CHECK_EVERY_S away
    monkeypatch.setattr(disk, "used_bytes", lambda folders: pytest.fail("walked"))
    assert watch.breach() is None


def test_a_host_below_its_free_space_floor_stops_the_run_as_a_full_disk(tmp_path: Path) -> None:
    free = disk.free_bytes(tmp_path)
    assert free is not None
    assert DiskWatch([tmp_path], limit=None, floor=free // 2).breach(now=float("inf")) is None
    note = DiskWatch([tmp_path], limit=None, floor=free * 2).breach(now=float("inf"))
    assert note is not None
    fault = classify(f"{note}\n", -15)
    assert fault is not None and fault.kind is FaultKind.disk_full and fault.retryable
