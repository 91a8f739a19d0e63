"""The watch file: which repositories probewatch watches, and how each one is judged.

A TOML file with an optional ``[defaults]`` table and one ``[[repo]]`` table per
watched repository. Every key is checked; a bad file fails with the file, the
key and the reason (``WatchFileError``), never with a traceback.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from probewatch.errors import ConfigError
from probewatch.names import RepoName
from probewatch.testfiles import DEFAULT_TEST_GLOBS

DEFAULT_SIZE_THRESHOLD = 1000


class WatchFileError(ConfigError, ValueError):
    """A watch file that cannot be used; the message names the file, the key and the reason."""

    def __init__(self, path: Path | str, key: str, reason: str) -> None:
        self.path, self.key, self.reason = Path(path), key, reason
        super().__init__(f"watch file {path}: {key}: {reason}")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TestConventions(_Strict):
    """How a repository lays out and marks its tests."""

    # Without [tests] globs a repository gets the list every stage falls back to, so the
    # miner, the split and grading agree on it too.
    globs: list[str] = Field(default_factory=lambda: list(DEFAULT_TEST_GLOBS), min_length=1)
    cpu_globs: list[str] = Field(default_factory=list, description="Test files that run on CPU.")
    cpu_marker: str | None = Field(default=None, description="pytest marker of CPU-only tests.")
    gpu_paths: list[str] = Field(default_factory=list, description="Test paths that need GPUs.")
    default_gpus: int = Field(default=0, ge=0, description="GPUs a test needs unless marked.")
    env: dict[str, str] = Field(
        default_factory=dict,
        description="Variables every test run gets, as the repository's CI sets them.",
    )


class GpuPool(_Strict):
    """Self-hosted GitHub Actions runners that take the tasks needing GPUs this host lacks:
    runs are dispatched to ``workflow_repo``'s probewatch-run workflow on ``labels``."""

    name: str = Field(min_length=1)
    workflow_repo: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9_.-]+$")
    labels: list[str] = Field(default_factory=lambda: ["self-hosted", "linux", "gpu"])
    gpus: int = Field(ge=1)
    gpu_type: str | None = None
    slots: int = Field(default=1, ge=1)
    ref: str = "main"


class RunnerPins(_Strict):
    """This host's own pins on every environment it builds (its torch build) and where their
    wheels are (``PROBEWATCH_RUNNER_OVERRIDES`` / ``_FIND_LINKS`` win over this table), and
    the GPU pools a task goes to when its tests need GPUs this host lacks."""

    overrides: list[str] = Field(default_factory=list)
    find_links: list[Path] = Field(default_factory=list)
    pythons: list[Path] = Field(default_factory=list)  # interpreters besides probewatch's
    pools: list[GpuPool] = Field(default_factory=list)


class AutoAccept(_Strict):
    """Accept candidates without a curator when they are this core."""

    min_core_share: float = Field(ge=0.0, le=1.0)


class WatchedRepo(_Strict):
    name: RepoName = Field(description="owner/name on GitHub")
    default_branch: str = "main"
    git: Path | None = Field(default=None, description="Local clone or mirror for backfill.")
    url: str | None = Field(
        default=None,
        description="Where the service clones its own mirror from when `git` is not set "
        "(default: the repository on GitHub).",
    )
    size_threshold: int = Field(default=DEFAULT_SIZE_THRESHOLD, ge=1)
    exclude_globs: list[str] = Field(default_factory=list, description="Not counted as changed.")
    core_paths: list[str] = Field(default_factory=list)
    reject_formatting_only: bool = Field(
        default=False,
        description="Reject PRs whose code changes keep the programs (formatter passes); "
        "reads module contents from the local clone.",
    )
    runner_labels: list[str] = Field(default_factory=lambda: ["self-hosted", "linux"])
    dry_run: bool = Field(default=True, description="Never post to the repo unless false.")
    poll_interval_minutes: int = Field(default=60, ge=1)
    auto_accept: AutoAccept | None = None
    setup_commands: list[str] = Field(default_factory=list)
    tests: TestConventions = Field(default_factory=TestConventions)
    environment: Literal["shared", "host"] = Field(
        default="shared",
        description="shared: each task's own era-locked environment; host: this interpreter.",
    )

    @field_validator("git")
    @classmethod
    def _expand(cls, value: Path | None) -> Path | None:
        return value.expanduser() if value is not None else None

    @property
    def slug(self) -> str:
        """``owner__name``, the prefix of SWE-bench instance ids."""
        return self.name.replace("/", "__")


class WatchFile(_Strict):
    path: Path | None = None
    repos: list[WatchedRepo] = Field(default_factory=list)
    runner: RunnerPins = Field(default_factory=RunnerPins)

    def get(self, name: str) -> WatchedRepo:
        for repo in self.repos:
            if repo.name.lower() == name.lower():
                return repo
        raise KeyError(name)

    def find(self, name: str) -> WatchedRepo | None:
        try:
            return self.get(name)
        except KeyError:
            return None


def load_watch_file(path: Path | str) -> WatchFile:
    """Parse and check a watch file; relative ``git`` paths are taken from the file's folder."""
    path = Path(path).expanduser()
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise WatchFileError(path, "(file)", "no such file") from None
    except UnicodeDecodeError as exc:
        reason = f"is not UTF-8 text (byte {exc.object[exc.start]:#04x} at offset {exc.start})"
        raise WatchFileError(path, "(file)", f"{reason}; save it as UTF-8") from None
    except OSError as exc:
        reason = f"cannot be read ({exc.strerror})"
        raise WatchFileError(path, "(file)", f"{reason}; check PROBEWATCH_WATCH_FILE") from None
    except tomllib.TOMLDecodeError as exc:
        raise WatchFileError(path, "(syntax)", str(exc)) from None
    return parse_watch_data(raw, path=path)


def parse_watch_data(raw: dict[str, Any], *, path: Path) -> WatchFile:
    unknown = sorted(set(raw) - {"defaults", "repo", "runner"})
    if unknown:
        raise WatchFileError(
            path, unknown[0], "unknown top-level key (expected [defaults], [[repo]], [runner])"
        )
    defaults = raw.get("defaults", {})
    entries = raw.get("repo", [])
    if not isinstance(defaults, dict):
        raise WatchFileError(path, "defaults", "must be a table")
    if not isinstance(entries, list):
        raise WatchFileError(path, "repo", "must be an array of tables ([[repo]])")
    repos = [_parse_repo(path, index, defaults, entry) for index, entry in enumerate(entries)]
    _check_unique(path, repos)
    return WatchFile(path=path, repos=repos, runner=_parse_runner(path, raw.get("runner", {})))


def _parse_runner(path: Path, raw: Any) -> RunnerPins:
    if not isinstance(raw, dict):
        raise WatchFileError(path, "runner", "must be a table")
    try:
        pins = RunnerPins.model_validate(raw)
    except ValidationError as exc:
        error = exc.errors()[0]
        key = ".".join(str(part) for part in ("runner", *error["loc"]))
        raise WatchFileError(path, key, _message(error["msg"])) from None
    folders = [p if p.is_absolute() else path.parent / p for p in pins.find_links]
    return pins.model_copy(update={"find_links": [p.expanduser() for p in folders]})


def _parse_repo(path: Path, index: int, defaults: dict[str, Any], entry: Any) -> WatchedRepo:
    label = f"repo[{index}]"
    if not isinstance(entry, dict):
        raise WatchFileError(path, label, "must be a table")
    if "name" in entry:
        label = f'repo[{index}] ("{entry["name"]}")'
    merged = _merge(defaults, entry)
    if merged.get("git") is not None and not Path(str(merged["git"])).expanduser().is_absolute():
        merged["git"] = str(path.parent / str(merged["git"]))
    try:
        return WatchedRepo.model_validate(merged)
    except ValidationError as exc:
        error = exc.errors()[0]
        key = ".".join(str(part) for part in error["loc"]) or "(entry)"
        raise WatchFileError(path, f"{label}.{key}", _message(error["msg"])) from None


def _merge(defaults: dict[str, Any], entry: dict[str, Any]) -> dict[str, Any]:
    merged = {**defaults, **entry}
    if isinstance(defaults.get("tests"), dict) and isinstance(entry.get("tests"), dict):
        merged["tests"] = {**defaults["tests"], **entry["tests"]}
    return merged


def _check_unique(path: Path, repos: list[WatchedRepo]) -> None:
    seen: set[str] = set()
    for index, repo in enumerate(repos):
        if repo.name.lower() in seen:
            raise WatchFileError(path, f"repo[{index}].name", f"{repo.name} is listed twice")
        seen.add(repo.name.lower())


def example_watch_file() -> Path:
    """The shipped example that configures Megatron-LM, verl and vLLM."""
    return Path(__file__).with_name("watch.example.toml")


def _message(pydantic_message: str) -> str:
    """pydantic's message without the prefix it puts before a validator's own words."""
    return pydantic_message.removeprefix("Value error, ")
