"""bench/mine_git.py refuses a clone, branch, window or date it cannot use in one line."""

from __future__ import annotations

import pytest

from bench.mine_git import main
from tests.bench_support import dated_clone, refusal


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory):
    return dated_clone(tmp_path_factory.mktemp("clone"), "one", "2025-01-02T00:00:00Z")


@pytest.mark.parametrize(
    ("where", "args", "said"),
    [
        ("empty", [], "is not a git repository"),
        ("clone", ["--branch", "trunk"], "has no branch 'trunk' (branches: main)"),
        ("clone", ["--since", "2027-01-01", "--until", "2027-02-01"], "no commits on main"),
        ("clone", ["--since", "2025-01"], "'2025-01' is not a date (YYYY-MM-DD) or ISO time"),
    ],
)
def test_bad_input_is_one_line_that_names_it(tmp_path, clone, capsys, where, args, said):
    # each was a traceback (or git's own "fatal:" and a second line) before it was caught
    path = clone if where == "clone" else tmp_path
    argv = [str(path), "--since", "2025-01-01", "--until", "2025-02-01", "--repeat", "1", *args]
    assert said in refusal(main, argv, capsys)


def test_a_window_it_can_read_is_timed(clone, capsys):
    assert (
        main([str(clone), "--since", "2025-01-01", "--until", "2025-02-01", "--repeat", "1"]) == 0
    )
    assert "goal: scan + judge <= 1.5x git log" in capsys.readouterr().out
