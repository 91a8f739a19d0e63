"""In-repo configuration: ``.github/probewatch.yml`` in the upstream repository.

Maintainers decide there whether probewatch comments (``comment``), opens a
check run (``check_run``), which paths it ignores (``ignore_paths``, globs with
the watch file's gitignore rules: ``megatron/legacy/`` is that folder,
``*.md`` a file name at any depth) and
which PR label silences it (``skip_label``) and how many gaps a comment shows
(``max_entries``, default 3; the rest are on the task page). The file is read through the
contents API at the default branch; a missing file means the defaults. Every
key is checked: an unknown key or a wrong type fails with the file, the key and
the reason, and then nothing is posted.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from probewatch.errors import ConfigError
from probewatch.paths import GlobError, PathMatcher

if TYPE_CHECKING:
    from github.Repository import Repository

CONFIG_PATH = ".github/probewatch.yml"


class RepoConfigError(ConfigError, ValueError):
    """An in-repo configuration that cannot be used."""

    def __init__(self, source: str, key: str, reason: str) -> None:
        self.source, self.key, self.reason = source, key, reason
        super().__init__(f"{source}: {key}: {reason}")


class RepoConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    comment: bool = True
    check_run: bool = False
    ignore_paths: list[str] = Field(default_factory=list)
    skip_label: str | None = Field(default=None, min_length=1)
    max_entries: int = Field(default=3, ge=1, le=20)  # gaps in the comment; the rest: task page

    @cached_property
    def _ignored(self) -> PathMatcher:
        return PathMatcher(self.ignore_paths)

    def ignores(self, path: str) -> bool:
        return self._ignored.matches(path)


def parse_repo_config(text: str, *, source: str = CONFIG_PATH) -> RepoConfig:
    """Parse and check the YAML text of a configuration file."""
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise RepoConfigError(source, "(syntax)", str(exc).replace("\n", " ")) from None
    if raw is None:
        return RepoConfig()
    if not isinstance(raw, dict):
        raise RepoConfigError(source, "(file)", "must be a mapping of keys to values")
    return _validate(raw, source)


def _validate(raw: dict[str, Any], source: str) -> RepoConfig:
    try:
        config = RepoConfig.model_validate(raw)
        config.ignores("")  # compile the globs now: a bad one fails here, naming the key
        return config
    except GlobError as exc:
        raise RepoConfigError(source, "ignore_paths", str(exc)) from None
    except ValidationError as exc:
        error = exc.errors()[0]
        key = ".".join(str(part) for part in error["loc"]) or "(file)"
        reason = "unknown key" if error["type"] == "extra_forbidden" else error["msg"]
        raise RepoConfigError(source, key, reason) from None


def load_repo_config(repo: Repository, ref: str | None = None) -> RepoConfig:
    """Read the file through the contents API; a 404 means the defaults."""
    from github import UnknownObjectException

    source = f"{repo.full_name}:{CONFIG_PATH}"
    try:
        found = repo.get_contents(CONFIG_PATH, ref=ref) if ref else repo.get_contents(CONFIG_PATH)
    except UnknownObjectException:
        return RepoConfig()
    if isinstance(found, list):
        raise RepoConfigError(source, "(file)", "is a directory")
    return parse_repo_config(found.decoded_content.decode("utf-8"), source=source)
