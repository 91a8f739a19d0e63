"""The one walker behind every measure of disk use, and the one way a file is replaced whole."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from probewatch.disk import file_stats, write_atomic
from runners.env.store import disk_usage
from runners.sandbox.disk import used_bytes


def test_files_are_listed_once_per_path_and_links_are_not_followed(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "deep" / "er").mkdir(parents=True)
    (tree / "a.bin").write_bytes(b"x" * 5000)
    (tree / "deep" / "er" / "b.bin").write_bytes(b"y" * 3000)
    os.link(tree / "a.bin", tree / "deep" / "a-again.bin")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "big.bin").write_bytes(b"z" * 100_000)
    (tree / "to-outside").symlink_to(outside)
    (tree / "to-file").symlink_to(outside / "big.bin")

    sizes = sorted(info.st_size for info in file_stats([tree, tmp_path / "gone"]))
    assert sizes == [3000, 5000, 5000]
    usage = disk_usage([tree])
    assert (usage.apparent_bytes, usage.actual_bytes, usage.files) == (13000, 8000, 3)
    # allocated blocks, the hard link once, the folder given twice counted once
    assert 8000 <= used_bytes([tree, tree / "deep"]) < 100_000


def test_a_file_is_replaced_whole_and_a_failed_write_leaves_the_old_one(tmp_path: Path) -> None:
    target = tmp_path / "result.json"
    write_atomic(target, "first")
    write_atomic(target, b"second", mode=0o600)
    assert target.read_bytes() == b"second"
    assert target.stat().st_mode & 0o777 == 0o600

    # text that cannot be encoded fails after the temporary file exists
    with pytest.raises(UnicodeEncodeError):
        write_atomic(target, "half \udcff")
    assert target.read_bytes() == b"second"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["result.json"]
