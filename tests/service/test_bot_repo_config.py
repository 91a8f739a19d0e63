"""`.github/probewatch.yml`: strict parsing with the key in every error, defaults when absent,
read through the contents API."""

from __future__ import annotations

import pytest

from bot.service.github.repo_config import (
    RepoConfig,
    RepoConfigError,
    load_repo_config,
    parse_repo_config,
)
from tests.bot_support import REPO
from tests.github_emulator import GitHubEmulator


def test_a_full_file_is_read() -> None:
    config = parse_repo_config(
        "comment: false\ncheck_run: true\nignore_paths: ['docs/*']\nskip_label: no-bot\n"
        "max_entries: 5\n"
    )
    assert config == RepoConfig(
        comment=False, check_run=True, ignore_paths=["docs/*"], skip_label="no-bot", max_entries=5
    )
    assert config.ignores("docs/index.md") and not config.ignores("pkg/sync.py")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("coment: false\n", ".github/probewatch.yml: coment: unknown key"),
        (
            "comment: 'sometimes'\n",
            ".github/probewatch.yml: comment: Input should be a valid boolean",
        ),
        (
            "ignore_paths: docs\n",
            ".github/probewatch.yml: ignore_paths: Input should be a valid list",
        ),
        (
            "skip_label: ''\n",
            ".github/probewatch.yml: skip_label: String should have at least 1 character",
        ),
        (
            "max_entries: 0\n",
            ".github/probewatch.yml: max_entries: Input should be greater than or equal to 1",
        ),
        ("- comment\n", ".github/probewatch.yml: (file): must be a mapping of keys to values"),
        ("comment: [\n", ".github/probewatch.yml: (syntax):"),
    ],
)
def test_bad_files_name_the_key_and_the_reason(text: str, message: str) -> None:
    with pytest.raises(RepoConfigError) as caught:
        parse_repo_config(text)
    assert str(caught.value).startswith(message)


def test_an_empty_file_means_the_defaults() -> None:
    assert parse_repo_config("") == RepoConfig()


def test_the_file_is_read_through_the_contents_api(github_emulator: GitHubEmulator) -> None:
    github_emulator.state.add_repo(REPO)
    repo = github_emulator.github().get_repo(REPO)
    assert load_repo_config(repo) == RepoConfig()

    github_emulator.state.add_content(REPO, ".github/probewatch.yml", "comment: false\n")
    assert load_repo_config(repo).comment is False
    with pytest.raises(RepoConfigError, match=r"acme/infra-lib:\.github/probewatch\.yml: comment"):
        github_emulator.state.add_content(REPO, ".github/probewatch.yml", "comment: 3\n")
        load_repo_config(repo)


def test_ignore_paths_follow_the_watch_files_glob_rules() -> None:
    """Regression: ``fnmatch`` matched nothing for ``megatron/legacy/`` and let ``*``
    cross folders, unlike the same glob in the watch file."""
    config = parse_repo_config("ignore_paths: ['megatron/legacy/', '*.md', 'tools/*.py']\n")
    assert config.ignores("megatron/legacy/model/gpt.py")
    assert config.ignores("docs/guide/index.md")
    assert config.ignores("tools/run.py") and not config.ignores("tools/sub/run.py")
    assert not config.ignores("megatron/core/legacy.py")


def test_a_bad_ignore_glob_names_its_key() -> None:
    with pytest.raises(RepoConfigError, match="ignore_paths: empty glob"):
        parse_repo_config("ignore_paths: ['docs/', '  ']\n")
