"""The one walker behind every measure of disk use."""

from __future__ import annotations

import os
from pathlib import Path

from probewatch.disk import file_stats
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
