"""Every bench that reads a mirror refuses a folder that is none in one line."""

from __future__ import annotations

import pytest

from bench.hollow_rate import main as hollow_rate
from bench.mutant_counts import main as mutant_counts
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
