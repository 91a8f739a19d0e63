"""Tables written to a pipe keep every character: titles and paths were cut at 80 columns."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.cli_support import add_candidate, migrated_home, probewatch

LONG_TITLE = (
    "Make the rollout workers resume from the last synced weight version after a restart "
    "instead of replaying every step from the start of the epoch"
)
LONG_PATH = (
    "verl/workers/rollout/sglang_rollout/async_sglang_server/weight_sync/"
    "incremental_bucketed_transfer.py"
)


def test_a_long_title_and_a_long_path_reach_a_pipe_whole(tmp_path: Path) -> None:
    engine = migrated_home(tmp_path)
    add_candidate(
        engine, 7, title=LONG_TITLE, files=[{"path": LONG_PATH, "additions": 900, "deletions": 3}]
    )
    engine.dispose()

    listed = probewatch(tmp_path, "candidates", "list")
    shown = probewatch(tmp_path, "candidates", "show", "acme/infra-lib#7")

    assert listed.exit_code == 0, listed.stderr
    assert LONG_TITLE in listed.stdout
    assert shown.exit_code == 0, shown.stderr
    assert LONG_PATH in shown.stdout


def test_an_explicit_columns_still_sets_the_width(tmp_path: Path) -> None:
    engine = migrated_home(tmp_path)
    add_candidate(engine, 7, title=LONG_TITLE)
    engine.dispose()

    narrow = probewatch(tmp_path, "candidates", "list", env={"COLUMNS": "80"})

    assert narrow.exit_code == 0, narrow.stderr
    assert LONG_TITLE not in narrow.stdout
    assert max(len(line) for line in narrow.stdout.splitlines()) <= 80


def test_evaluation_tables_reach_a_pipe_whole(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The eval, leaderboard and compare tables print through the same console as the CLI's.
    monkeypatch.delenv("COLUMNS", raising=False)
    from bot.evaluate.text import progress_line
    from bot.evaluate.types import EvalEvent, Stage

    progress_line(
        EvalEvent(stage=Stage.graded, instance_id=LONG_PATH, done=1, total=1, detail=LONG_TITLE)
    )
    out = capsys.readouterr().out
    assert LONG_PATH in out and LONG_TITLE in out
