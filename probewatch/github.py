"""The one factory of PyGithub clients: the miner's, the bot's and the Actions backend's.

Every client retries 5xx answers and rate limits with PyGithub's ``GithubRetry`` up
to a maximum wait. A ``Retry-After`` or a quota reset further away than ``max_wait_s``
fails at once with a clear message (``long_waits="fail"``: the miner and the bot must
not block the scheduler for an hour), or is waited out only up to the cap
(``long_waits="cap"``: following a CI run, where waiting is the job). Only idempotent
methods are retried by the transport: a POST that errored may still have landed, so
the caller retries, after looking for what it may already have written. Writes are
spaced (GitHub's secondary limits). Tokens never reach a log: a filter on PyGithub's
and urllib3's loggers redacts them from their debug lines.
"""

from __future__ import annotations

import logging
import re
import threading
from typing import Any, Literal

import github
from github import Auth, GithubIntegration, GithubRetry
from pydantic import BaseModel, ConfigDict, Field, SecretStr

from probewatch.errors import ConfigError


class GitHubTokenMissing(ConfigError):
    """No token to talk to GitHub with; the message names the variable that sets it."""


GITHUB_API_URL = "https://api.github.com"
# Methods the transport may repeat on its own: none of them creates something twice.
IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "PUT", "PATCH", "DELETE", "OPTIONS"})
REDACTED = "***"
SECRET_PATTERNS = (
    re.compile(r'("token"\s*:\s*")[^"]+(")'),
    re.compile(r"\bgh[pousr]_[A-Za-z0-9_]{16,}"),
    re.compile(r"\beyJ[\w-]+\.[\w-]+\.[\w-]+"),
    re.compile(r"((?:token|bearer)\s+)[^\s'\",}]+", re.IGNORECASE),
)
GITHUB_LOGGERS = ("github", "github.Requester", "github.GithubRetry", "urllib3.connectionpool")


class GitHubClientConfig(BaseModel):
    """How every client talks to GitHub; the application fills it from its settings."""

    model_config = ConfigDict(frozen=True)

    token: SecretStr | None = None
    base_url: str = GITHUB_API_URL
    per_page: int = Field(default=100, ge=1, le=100)
    max_wait_s: float = Field(default=120.0, ge=0)
    retries: int = Field(default=5, ge=0)
    backoff_factor: float = Field(default=0.5, ge=0)
    seconds_between_requests: float | None = None
    seconds_between_writes: float | None = 1.0
    timeout_s: float = 30.0
    long_waits: Literal["fail", "cap"] = "fail"


class CappedRetry(GithubRetry):
    """``GithubRetry`` that also refuses to sleep through a long ``Retry-After``."""

    def get_retry_after(self, response: Any) -> float | None:
        wait = super().get_retry_after(response)
        cap = self.max_rate_limit_wait
        if wait is not None and cap is not None and wait > cap:
            headers = dict(response.headers)
            raise github.RateLimitExceededExceedsMaxWait(
                response.status,
                {"message": "Retry-After beyond the maximum wait"},
                headers,
                wait=wait,
            )
        return wait


class WaitingRetry(GithubRetry):
    """``GithubRetry`` that waits out a long ``Retry-After`` only up to its cap, then tries."""

    def get_retry_after(self, response: Any) -> float | None:
        wait = super().get_retry_after(response)
        cap = self.max_rate_limit_wait
        return min(wait, cap) if wait is not None and cap is not None else wait


def make_retry(config: GitHubClientConfig) -> GithubRetry:
    kind = WaitingRetry if config.long_waits == "cap" else CappedRetry
    return kind(
        total=config.retries,
        backoff_factor=config.backoff_factor,
        backoff_max=config.max_wait_s,
        max_rate_limit_wait=config.max_wait_s,
        secondary_rate_wait=min(config.max_wait_s, 60.0),
        allowed_methods=IDEMPOTENT_METHODS,
    )


def make_client(config: GitHubClientConfig, auth: Auth.Auth | None = None) -> github.Github:
    """A PyGithub client for ``config``, with the token or the given auth (a GitHub App
    installation); no request is made yet."""
    if auth is None:
        if config.token is None or not config.token.get_secret_value():
            raise GitHubTokenMissing("no GitHub token: set PROBEWATCH_GITHUB_TOKEN")
        auth = Auth.Token(config.token.get_secret_value())
    install_log_redaction(_known_secrets(config))
    return github.Github(
        base_url=config.base_url,
        auth=auth,
        per_page=config.per_page,
        retry=make_retry(config),
        timeout=int(config.timeout_s),
        seconds_between_requests=config.seconds_between_requests,
        seconds_between_writes=config.seconds_between_writes,
    )


def make_integration(config: GitHubClientConfig, app_auth: Auth.AppAuth) -> GithubIntegration:
    """The GitHub App itself (JWT auth): installations and installation tokens."""
    install_log_redaction(_known_secrets(config))
    return GithubIntegration(
        auth=app_auth,
        base_url=config.base_url,
        retry=make_retry(config),
        timeout=int(config.timeout_s),
    )


def _known_secrets(config: GitHubClientConfig) -> tuple[str, ...]:
    return (config.token.get_secret_value(),) if config.token else ()


class RedactSecrets(logging.Filter):
    """Rewrite a record's message with every token-looking string replaced by ***."""

    def __init__(self, known: tuple[str, ...] = ()) -> None:
        super().__init__()
        self.known = tuple(secret for secret in known if secret)

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg, record.args = redact(record.getMessage(), self.known), None
        return True


def redact(text: str, known: tuple[str, ...] = ()) -> str:
    for secret in known:
        text = text.replace(secret, REDACTED)
    for pattern in SECRET_PATTERNS:
        text = pattern.sub(_keep_groups, text)
    return text


def _keep_groups(match: re.Match[str]) -> str:
    groups = [g for g in match.groups() if g is not None]
    if not groups:
        return REDACTED
    return groups[0] + REDACTED + (groups[1] if len(groups) > 1 else "")


_filter_lock = threading.Lock()


def install_log_redaction(known: tuple[str, ...] = ()) -> RedactSecrets:
    """Attach one redacting filter to PyGithub's and urllib3's loggers (idempotent)."""
    with _filter_lock:
        for name in GITHUB_LOGGERS:
            logger = logging.getLogger(name)
            for old in [f for f in logger.filters if isinstance(f, RedactSecrets)]:
                logger.removeFilter(old)
        shared = RedactSecrets(known)
        for name in GITHUB_LOGGERS:
            logging.getLogger(name).addFilter(shared)
        return shared
