"""The grading-time test overlay: post-change tests and probes, written into a run's tree only.

The overlay is applied after the patches, in the throwaway tree of a grading
run, and never committed or staged, so probes exist in no tree an agent sees
(an agent's tree is the base commit plus its own edits) and vanish with the
run's folder. ``replace_dirs`` are removed first (the repository's old tests
must not mix with the post-change ones), then ``files`` and ``probes`` are
written. Paths are checked like patch paths: relative, inside the tree, not
in ``.git``, not through a symlink.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from probewatch.disk import write_atomic
from probewatch.errors import RunnerError
from probewatch.testfiles import is_pytest_module
from runners.patches import unsafe_path_reason
from runners.types import TestOverlay
from runners.workspace import force_rmtree


class OverlayError(RunnerError, ValueError):
    """The overlay names a path it may not write."""


@dataclass(frozen=True)
class AppliedOverlay:
    # overlay files pytest collects; the rest (conftest.py, helpers, data) support them
    test_files: tuple[str, ...] = ()
    probes: tuple[str, ...] = ()

    @property
    def selection(self) -> tuple[str, ...]:
        """The tests a judgement runs by default: the post-change test files and the probes."""
        return (*self.test_files, *self.probes)


def apply_overlay(tree: Path, overlay: TestOverlay | None) -> AppliedOverlay:
    """Write ``overlay`` into ``tree``; OverlayError names the first unsafe path."""
    if overlay is None:
        return AppliedOverlay()
    _check_paths(tree, overlay)
    for folder in overlay.replace_dirs:
        _remove(tree / folder)
    _write_all(tree, overlay.files)
    _write_all(tree, overlay.probes)
    tests = tuple(p for p in overlay.files if is_pytest_module(p))
    return AppliedOverlay(test_files=tests, probes=tuple(overlay.probes))


def _check_paths(tree: Path, overlay: TestOverlay) -> None:
    clash = set(overlay.files) & set(overlay.probes)
    if clash:
        raise OverlayError(f"paths are both test files and probes: {sorted(clash)}")
    for path in (*overlay.replace_dirs, *overlay.files, *overlay.probes):
        reason = unsafe_path_reason(tree, _normal(path))
        if reason:
            raise OverlayError(f"test overlay: {reason}")


def _normal(path: str) -> str:
    return path.rstrip("/") or path


def _remove(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        force_rmtree(path)


def _write_all(tree: Path, files: Mapping[str, str]) -> None:
    for relative, text in files.items():
        target = tree / relative
        if target.is_symlink():
            target.unlink()  # replace a link with a file; never write through it
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(target, text)
