"""Every bench that reads a mirror refuses a folder that is none in one line, and every
bench refuses a count it cannot use the same way."""

from __future__ import annotations

import pytest

from bench.hollow_rate import main as hollow_rate
from bench.mine_git import main as mine_git
from bench.mutant_counts import main as mutant_counts
from bench.promise_eval import main as promise_eval
from bench.real_prs import main as real_prs
from bench.service.leaderboard_load import main as leaderboard_load
from bench.service.webhook_bodies import main as webhook_bodies
from bench.verl_cpu_prs import main as verl_cpu_prs
from tests.bench_support import refusal


@pytest.mark.parametrize(
    ("main", "argv"),
    [
        (hollow_rate, ["{folder}"]),
        (mutant_counts, ["{folder}"]),
        (verl_cpu_prs, ["--mirror", "{folder}", "--home", "{folder}/home", "--no-run"]),
    ],
)
def test_a_folder_that_is_no_clone_is_refused_before_anything_runs(tmp_path, capsys, main, argv):
    # each ran git in it and ended in a traceback (CalledProcessError, GitError)
    line = refusal(main, [a.format(folder=tmp_path) for a in argv], capsys)
    assert f"{tmp_path} is not a git repository (nor a bare mirror): pass a clone" in line
    assert not (tmp_path / "home").exists()


@pytest.mark.parametrize(
    ("main", "argv", "said"),
    [
        (hollow_rate, ["--min-lines", "-5"], "-5 is below 0"),
        (mutant_counts, ["--min-lines", "-5"], "-5 is below 0"),
        (promise_eval, ["--learned", "rules", "--top", "-3"], "-3 is below 0"),
        (leaderboard_load, ["--clients", "0"], "0 is below 1"),
        (leaderboard_load, ["--requests", "-1"], "-1 is below 1"),
        (webhook_bodies, ["--clients", "0"], "0 is below 1"),
        (webhook_bodies, ["--megabytes", "many"], "'many' is not a whole number"),
        (mine_git, ["--repeat", "0"], "0 is below 1"),
        (real_prs, ["--cpu-slots", "0"], "0 is below 1"),
        (real_prs, ["--count", "-2"], "-2 is below 1"),
        (verl_cpu_prs, ["--count", "0"], "0 is below 1"),
    ],
)
def test_a_count_the_bench_cannot_use_is_refused_before_anything_runs(capsys, main, argv, said):
    # each took the number as it came: no clients, no repeats, no CPU slots to run on, or
    # (``--top -3``) every feature but the last three
    line = refusal(main, argv, capsys)
    assert said in line
