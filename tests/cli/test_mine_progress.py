"""``mine --github`` tells its progress on stderr (pages fetched, PRs seen, file lists read)
while stdout stays the report; it used to say nothing until the end of a long first run."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from tests.cli.cli_support import migrated_home, probewatch
from tests.github_emulator import GitHubEmulator, PullFile

CLOSED, MERGED = 150, 10  # 160 PRs: two pages of 100


def test_progress_names_pages_prs_and_file_lists(
    tmp_path: Path, github_emulator: GitHubEmulator
) -> None:
    migrated_home(tmp_path).dispose()
    state = github_emulator.state
    state.add_repo("acme/widgets")
    start = datetime(2025, 6, 1, tzinfo=UTC)
    for n in range(1, CLOSED + 1):
        state.add_pull("acme/widgets", n, closed_at=start + timedelta(minutes=n))
    files = [PullFile("widgets/a.py", additions=1000), PullFile("tests/test_a.py", additions=50)]
    for n in range(CLOSED + 1, CLOSED + MERGED + 1):
        at = start + timedelta(minutes=n)
        state.add_pull("acme/widgets", n, merged=True, merged_at=at, files=files)
    env: dict[str, str | None] = {
        "PROBEWATCH_GITHUB_API_URL": github_emulator.base_url,
        "PROBEWATCH_GITHUB_TOKEN": "t",
    }

    mined = probewatch(
        tmp_path, "mine", "--github", "--repo", "acme/widgets", "--since", "2025-05-01", "--json",
        env=env,
    )  # fmt: skip

    assert mined.exit_code == 0, mined.stderr
    assert json.loads(mined.stdout)["funnel"][0]["count"] == CLOSED + MERGED
    assert mined.stderr.splitlines() == [
        "mining acme/widgets: GitHub: 1 page(s), 100 PR(s) seen",
        "mining acme/widgets: GitHub: 2 page(s), 160 PR(s) seen",
        "mining acme/widgets: GitHub: 2 page(s), 160 PR(s) seen; files of 10 PR(s) read",
    ]
