"""The verdict bench's readings of commits: read in parallel, kept, and read again when stale."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bench import readings
from bench.readings import (
    READING_MODULES,
    CacheError,
    ReadingCache,
    read_commits,
    readers_version,
)
from tests.probe_builder_support import git

CHANGED = "def fused_loss(x):\n    return x * 1\n"
TEST = """
import torch
from pkg import fused_loss


def test_fused_loss_matches():
    x = torch.ones(3)
    torch.testing.assert_close(fused_loss(x), x)
"""


def _repo(tmp_path: Path, commits: int = 1) -> tuple[Path, list[str]]:
    """A repository whose last ``commits`` commits each change the code and a test."""
    repo = tmp_path / "lib"
    (repo / "pkg").mkdir(parents=True)
    (repo / "tests").mkdir()
    git(repo, "init", "--quiet", "--initial-branch=main")
    (repo / "pkg" / "__init__.py").write_text("def fused_loss(x):\n    return x\n")
    git(repo, "add", "-A")
    git(repo, "commit", "--quiet", "-m", "base")
    shas = []
    for n in range(commits):
        (repo / "pkg" / "__init__.py").write_text(CHANGED + f"\n\nLEVEL = {n}\n")
        test = textwrap.dedent(TEST).lstrip().replace("matches", f"matches_{n}")
        (repo / "tests" / f"test_p{n}.py").write_text(test)
        git(repo, "add", "-A")
        git(repo, "commit", "--quiet", "-m", f"Fused loss, part {n}")
        shas.append(git(repo, "rev-parse", "HEAD").strip())
    return repo, shas


def _readings(commits, *args, **kwargs):
    """Every reading ``read_commits`` gives, by (mirror, commit)."""
    return dict(read_commits(commits, *args, **kwargs))


def _unread(job):  # a reader that must not run: the cache holds the reading
    raise AssertionError(f"read again: {job}")


def test_the_reading_modules_are_every_project_module_the_readers_load():
    # A list that misses a module would keep a reading its change makes stale.
    script = (
        "import sys, bench.readings\n"
        "roots = ('probe_builder', 'probewatch', 'task_registry', 'bot', 'pr_miner', 'runners')\n"
        "print('\\n'.join(sorted(m for m in sys.modules if m.split('.')[0] in roots)))\n"
    )
    root = Path(__file__).resolve().parents[2]
    loaded = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=root
    ).stdout.split()
    assert sorted(READING_MODULES) == loaded


def test_a_kept_reading_is_used_and_not_read_again(tmp_path, monkeypatch):
    repo, [sha] = _repo(tmp_path)
    cache = ReadingCache(tmp_path / "cache")
    first = _readings([(repo, sha)], cache=cache)
    kept = list((tmp_path / "cache").iterdir())
    assert [p.name.split("-")[1] for p in kept] == [sha]
    monkeypatch.setattr(readings, "_read", _unread)
    again = _readings([(repo, sha)], cache=ReadingCache(tmp_path / "cache"))
    assert again == first
    assert [t.name for t in again[(repo, sha)].profile.tests] == ["test_fused_loss_matches_0"]


def test_a_reading_is_read_again_when_a_reader_changes(tmp_path, monkeypatch):
    reader = tmp_path / "modules" / "a_reader.py"
    reader.parent.mkdir()
    reader.write_text("RULE = 1\n")
    monkeypatch.syspath_prepend(str(reader.parent))
    monkeypatch.setattr(readings, "READING_MODULES", ("a_reader",))
    before = readers_version()
    reader.write_text("RULE = 2\n")
    assert readers_version() != before
    repo, [sha] = _repo(tmp_path)
    cache = ReadingCache(tmp_path / "cache")
    _readings([(repo, sha)], cache=cache)
    reader.write_text("RULE = 3\n")
    stale = ReadingCache(tmp_path / "cache")
    assert stale.get(repo, sha) is None
    assert cache.get(repo, sha) is not None  # the version it was written under
    assert cache.get(repo, sha, ("tests/**",)) is None  # read under other test globs
    _readings([(repo, sha)], cache=stale)  # the newer reading replaces the older
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [stale.path(repo, sha).name]


def test_readings_under_other_test_globs_are_kept_apart(tmp_path):
    repo, [sha] = _repo(tmp_path)
    cache = ReadingCache(tmp_path / "cache")
    everything = _readings([(repo, sha)], cache=cache)[(repo, sha)]
    nothing = _readings([(repo, sha)], ("spec/**",), cache=cache)[(repo, sha)]
    assert [t.name for t in everything.profile.tests] == ["test_fused_loss_matches_0"]
    assert nothing.profile.tests == ()  # no file is a test under these globs
    assert len(list((tmp_path / "cache").iterdir())) == 2


def test_a_kept_file_that_cannot_be_loaded_is_read_again_and_replaced(tmp_path):
    repo, [sha] = _repo(tmp_path)
    cache = ReadingCache(tmp_path / "cache")
    first = _readings([(repo, sha)], cache=cache)
    path = cache.path(repo, sha)
    path.write_bytes(path.read_bytes()[:40])  # cut short
    assert cache.get(repo, sha) is None
    assert _readings([(repo, sha)], cache=cache) == first
    assert cache.get(repo, sha) == first[(repo, sha)]
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [path.name]  # no leftovers


def test_commits_read_in_parallel_read_as_one_at_a_time(tmp_path):
    repo, shas = _repo(tmp_path, commits=3)
    keys = [(repo, sha) for sha in shas]
    assert _readings(keys, jobs=3) == _readings(keys, jobs=1)
    names = [r.profile.tests[0].name for r in _readings(keys, jobs=2).values()]
    assert names == [f"test_fused_loss_matches_{n}" for n in range(3)]


def test_a_cache_folder_that_cannot_be_written_is_refused_in_one_line(tmp_path):
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    with pytest.raises(CacheError) as raised:
        ReadingCache(blocked / "cache")
    message = str(raised.value)
    assert message.startswith(f"--cache {blocked / 'cache'}: cannot keep readings there (")
    assert message.endswith("pass a folder you can write")
    assert "\n" not in message


def test_the_verdict_bench_refuses_an_unusable_cache_before_reading(tmp_path, capsys):
    from bench.verdict_eval import main

    blocked = tmp_path / "a-file"
    blocked.write_text("")
    with pytest.raises(SystemExit) as exited:
        main(["--mirror", f"acme/lib={tmp_path}", "--cache", str(blocked / "cache")])
    assert exited.value.code == 2
    assert "cannot keep readings there" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--jobs", "0"])
    assert "--jobs" in capsys.readouterr().err
