"""Service settings: one pydantic-settings class read once at start-up.

Values come from ``PROBEWATCH_*`` environment variables and an optional ``.env``
file; a secret (:data:`SECRET_FIELDS`) may instead be a file that
``PROBEWATCH_<NAME>_FILE`` names (Docker and Kubernetes secrets), so it never sits in the
environment of the service, which every process the service starts would inherit. Nothing
here is read at import time: :func:`load_settings` is the one way to
read them (the CLI calls it when a command starts), and everything else gets the
same object handed down, the web app through its dependencies (``bot.service.deps``).
"""

from __future__ import annotations

import os
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import Field, SecretStr, ValidationError, model_validator
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from probewatch.errors import ConfigError
from runners.sandbox.limits import GIB, Limits
from runners.types import MAX_PATCH_BYTES

if TYPE_CHECKING:
    from probewatch.github import GitHubClientConfig

DEFAULT_HOME = Path("~/.probewatch")
GITHUB_API_URL = "https://api.github.com"
# GitHub caps webhook payloads at 25 MB; anything larger is not from GitHub.
DEFAULT_MAX_BODY_BYTES = 25 * 1024 * 1024
# Bodies are held until their signature is checked: this many at most, at the limit above.
DEFAULT_MAX_CONCURRENT_BODIES = 8
ENV_PREFIX = "PROBEWATCH_"
# Settings that may be read from a file named by PROBEWATCH_<NAME>_FILE instead.
SECRET_FIELDS = (
    "github_token",
    "github_app_private_key",
    "webhook_secret",
    "admin_token",
    "openai_api_key",
    "database_url",  # its password
)
FILE_SUFFIX = "_FILE"


class Environment(StrEnum):
    development = "development"
    production = "production"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, env_file=".env", env_file_encoding="utf-8", extra="ignore"
    )

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        secret_files = SecretFiles(settings_cls)
        return init_settings, env_settings, secret_files, dotenv_settings, file_secret_settings

    environment: Environment = Environment.development
    home: Path = Field(
        default=DEFAULT_HOME, description="Folder for the database, work trees, caches."
    )
    database_url: str | None = Field(
        default=None, description="SQLAlchemy URL; default: a SQLite file in the home folder."
    )
    watch_file: Path | None = Field(default=None, description="TOML file listing watched repos.")
    github_api_url: str = GITHUB_API_URL
    github_token: SecretStr | None = None
    github_app_id: int | None = None
    github_app_private_key: SecretStr | None = None
    github_app_private_key_path: Path | None = None
    webhook_secret: SecretStr | None = None
    admin_token: SecretStr | None = None
    author: str = Field(default="mechanical", description="Who proposes adversarials and probes.")
    openai_base_url: str | None = Field(
        default=None, description="OpenAI-compatible endpoint (a local vLLM server works)."
    )
    openai_model: str | None = None
    openai_api_key: SecretStr | None = None
    openai_timeout_s: float = 120.0
    webhook_enabled: bool = Field(
        default=True, description="Serve POST /webhook (needs PROBEWATCH_WEBHOOK_SECRET)."
    )
    webhook_max_body_bytes: int = Field(default=DEFAULT_MAX_BODY_BYTES, ge=1024)
    webhook_max_concurrent_bodies: int = Field(
        default=DEFAULT_MAX_CONCURRENT_BODIES,
        ge=1,
        description="Webhook bodies read at once; one more is answered 503.",
    )
    patch_max_bytes: int = Field(
        default=MAX_PATCH_BYTES,
        ge=1024,
        description="The largest patch a test run applies; a larger one is refused unread.",
    )
    worker_lease_s: float = Field(default=120.0, gt=0, description="Job lease of a worker.")
    worker_poll_s: float = Field(default=1.0, gt=0, description="Idle worker's wait for work.")
    github_retries: int = Field(default=5, ge=0)
    github_max_wait_s: float = Field(
        default=120.0, ge=0, description="Longest rate-limit wait before a call gives up."
    )
    github_write_spacing_s: float = Field(
        default=1.0, ge=0, description="Seconds between writes (GitHub's secondary limits)."
    )
    github_timeout_s: int = Field(default=30, ge=1)
    public_url: str = Field(
        default="http://127.0.0.1:8080", description="Where the dashboard is reachable."
    )
    runner_overrides: str = Field(
        default="",
        description="This runner's own pins on every environment, space separated "
        "(torch==2.13.0+cpu); the watch file's [runner] table when unset.",
    )
    runner_find_links: str = Field(
        default="", description="Folders of local wheels for the pins, separated by ':'."
    )
    runner_pythons: str = Field(
        default="",
        description="Interpreters this runner offers besides its own, separated by ':', for "
        "repositories whose requires-python its own does not meet.",
    )
    # Limits of every local run and agent (runners/sandbox/limits.py); 0: no limit.
    run_memory_gib: float | None = Field(
        default=None,
        ge=0,
        description="Memory of one run, all processes (default: half the host's).",
    )
    run_processes: int = Field(default=4096, ge=0, description="Processes and threads of one run.")
    run_file_gib: float = Field(default=64, ge=0, description="The largest file one run writes.")
    run_cpu_s: int = Field(default=8 * 3600, ge=0, description="CPU seconds of one process.")
    run_disk_gib: float = Field(default=16, ge=0, description="What one run writes, all files.")
    run_disk_floor_gib: float = Field(
        default=2, ge=0, description="A run stops when the host has less free disk than this."
    )

    def run_limits(self) -> Limits:
        """The limits every local run and agent gets, from these settings."""
        return Limits(
            memory_bytes=_bytes(self.run_memory_gib) if self.run_memory_gib else None,
            processes=self.run_processes or None,
            file_bytes=_bytes(self.run_file_gib),
            cpu_s=self.run_cpu_s or None,
            disk_bytes=_bytes(self.run_disk_gib),
            disk_floor_bytes=_bytes(self.run_disk_floor_gib),
        )

    @model_validator(mode="after")
    def _expand_paths(self) -> Settings:
        self.home = self.home.expanduser()
        if self.watch_file is not None:
            self.watch_file = self.watch_file.expanduser()
        return self

    @model_validator(mode="after")
    def _home_is_a_folder(self) -> Settings:
        blocker = file_above(self.home)
        if blocker is not None:
            raise ValueError(
                f"PROBEWATCH_HOME {self.home} is under {blocker}, which is a file, not a folder; "
                "set PROBEWATCH_HOME to a folder (or a path where one can be made)"
            )
        return self

    @model_validator(mode="after")
    def _enforce_safe_production(self) -> Settings:
        if self.environment is not Environment.production:
            return self
        if self.database_url is None or self.database_url.startswith("sqlite"):
            raise ValueError(
                "PROBEWATCH_DATABASE_URL must name a PostgreSQL database in production "
                "(SQLite is for one process on one machine)"
            )
        if self.admin_token is None:
            raise ValueError("PROBEWATCH_ADMIN_TOKEN must be set in production")
        return self

    @property
    def resolved_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite:///{self.home / 'probewatch.db'}"

    @property
    def shown_database_url(self) -> str:
        """The database URL as it may be printed or logged: its password as ``***``."""
        from sqlalchemy.engine import make_url
        from sqlalchemy.exc import ArgumentError

        try:
            return make_url(self.resolved_database_url).render_as_string(hide_password=True)
        except ArgumentError:
            return "(not a URL; not shown, it may hold a password)"

    @model_validator(mode="after")
    def _author_needs_an_endpoint(self) -> Settings:
        if self.author == "openai" and not (self.openai_base_url and self.openai_model):
            raise ValueError(
                "PROBEWATCH_AUTHOR=openai needs PROBEWATCH_OPENAI_BASE_URL "
                "and PROBEWATCH_OPENAI_MODEL"
            )
        return self

    def github_client_config(self) -> GitHubClientConfig:
        """How every GitHub client is made, for the miner's ``mine --github`` and the bot."""
        from probewatch.github import GitHubClientConfig

        return GitHubClientConfig(
            token=self.github_token,
            base_url=self.github_api_url,
            max_wait_s=self.github_max_wait_s,
            retries=self.github_retries,
            seconds_between_writes=self.github_write_spacing_s or None,
            timeout_s=self.github_timeout_s,
        )

    @property
    def has_github_app(self) -> bool:
        key = self.github_app_private_key or self.github_app_private_key_path
        return self.github_app_id is not None and key is not None


def file_above(path: Path) -> Path | None:
    """The nearest existing path at or above ``path`` when it is not a folder: no folder can
    be made at ``path`` then. None when ``path`` is, or can become, a folder."""
    for candidate in (path, *path.parents):
        if candidate.exists():
            return None if candidate.is_dir() else candidate
    return None


def _bytes(gib: float) -> int | None:
    return int(gib * GIB) or None


class SettingsError(ConfigError):
    """Settings that cannot be used; the message names each variable and the reason."""


class SecretFiles(PydanticBaseSettingsSource):
    """The secrets whose ``PROBEWATCH_<NAME>_FILE`` variable names a file: its text, without
    the line end a file usually has. A file that cannot be read, or a secret given both
    ways, is a :class:`SettingsError` naming the variable and the fix."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False  # the whole source is read at once in __call__

    def __call__(self) -> dict[str, Any]:
        environ = {name.upper(): value for name, value in os.environ.items()}
        found = {}
        for field in SECRET_FIELDS:
            variable = f"{ENV_PREFIX}{field.upper()}"
            path = environ.get(variable + FILE_SUFFIX)
            if not path:
                continue
            if variable in environ:
                raise SettingsError(
                    f"{variable} and {variable}{FILE_SUFFIX} are both set: unset one of them"
                )
            found[field] = read_secret_file(variable + FILE_SUFFIX, Path(path))
        return found


def read_secret_file(variable: str, path: Path) -> str:
    """The secret in ``path``, the file ``variable`` names; SettingsError saying why not."""
    try:
        text = path.read_text(encoding="utf-8").rstrip("\r\n")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise SettingsError(
            f"{variable}: cannot read {path} ({reason}); point {variable} at a readable file "
            "holding the secret, or unset it"
        ) from None
    if not text.strip():
        raise SettingsError(
            f"{variable}: {path} is empty; write the secret into it, or unset {variable}"
        )
    return text


def load_settings(**overrides: object) -> Settings:
    """Read settings from the environment (and ``.env``), with explicit overrides on top."""
    try:
        return Settings(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        raise SettingsError(_one_line(exc)) from None


def _one_line(exc: ValidationError) -> str:
    problems = []
    for error in exc.errors():
        name = ".".join(str(part) for part in error["loc"])
        message = error["msg"].removeprefix("Value error, ")
        problems.append(f"PROBEWATCH_{name.upper()}: {message}" if name else message)
    return "bad settings: " + "; ".join(problems)
