"""PyGithub clients for the bot: a personal token or a GitHub App installation.

With App credentials, each repository's installation is looked up once and its
installation token is fetched from the App's JWT and refreshed by PyGithub
shortly before it expires. Retries follow ``GithubRetry`` with a cap on how long
a rate limit may make a call wait; writes are spaced. POST is not retried by
the transport: a create that errored may still have landed, so the job retries
instead, after looking for what it may already have written. Tokens never reach
a log: a filter on PyGithub's loggers redacts them from its debug lines.
"""

from __future__ import annotations

import logging
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path

from github import Auth, Github, GithubException, GithubIntegration, GithubRetry

from bot.settings import Settings
from probewatch.errors import ConfigError

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


class GitHubAuthError(ConfigError):
    """No usable GitHub credentials, or the App is not installed on a repository."""


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


def make_retry(service: Settings) -> GithubRetry:
    return GithubRetry(
        total=service.github_retries,
        backoff_factor=0.5,
        backoff_max=service.github_max_wait_s,
        secondary_rate_wait=min(60.0, service.github_max_wait_s),
        max_rate_limit_wait=service.github_max_wait_s,
        allowed_methods=IDEMPOTENT_METHODS,
    )


@dataclass
class GitHubClients:
    """Builds and caches clients: one per installation with App auth, one with a token."""

    settings: Settings
    service: Settings
    _installations: dict[str, int] = field(default_factory=dict, repr=False)
    _clients: dict[object, Github] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        token = self.settings.github_token
        install_log_redaction((token.get_secret_value(),) if token else ())

    def for_repo(self, repo: str) -> Github:
        """A client allowed to read and write ``repo`` (``owner/name``)."""
        if self.settings.has_github_app:
            return self._installation_client(repo)
        if self.settings.github_token is not None:
            return self._cached("token", lambda: Auth.Token(self._token()))
        raise GitHubAuthError(
            "no GitHub credentials: set PROBEWATCH_GITHUB_TOKEN, or PROBEWATCH_GITHUB_APP_ID "
            "with PROBEWATCH_GITHUB_APP_PRIVATE_KEY[_PATH]"
        )

    def integration(self) -> GithubIntegration:
        """The App itself (JWT auth): installations, installation tokens."""
        return GithubIntegration(
            auth=self._app_auth(),
            base_url=self.settings.github_api_url,
            retry=make_retry(self.service),
            timeout=self.service.github_timeout_s,
        )

    def installation_id(self, repo: str) -> int:
        with self._lock:
            if repo.lower() in self._installations:
                return self._installations[repo.lower()]
        owner, _, name = repo.partition("/")
        try:
            found = self.integration().get_repo_installation(owner, name).id
        except GithubException as exc:
            raise GitHubAuthError(f"the GitHub App is not installed on {repo}") from exc
        with self._lock:
            self._installations[repo.lower()] = found
        return found

    def _installation_client(self, repo: str) -> Github:
        installation = self.installation_id(repo)
        return self._cached(
            ("installation", installation),
            lambda: Auth.AppInstallationAuth(self._app_auth(), installation),
        )

    def _cached(self, key: object, auth: object) -> Github:
        with self._lock:
            if key not in self._clients:
                self._clients[key] = self._client(auth())  # type: ignore[operator]
            return self._clients[key]

    def _client(self, auth: Auth.Auth) -> Github:
        return Github(
            auth=auth,
            base_url=self.settings.github_api_url,
            retry=make_retry(self.service),
            timeout=self.service.github_timeout_s,
            seconds_between_requests=None,
            seconds_between_writes=self.service.github_write_spacing_s or None,
        )

    def _token(self) -> str:
        assert self.settings.github_token is not None
        return self.settings.github_token.get_secret_value()

    def _app_auth(self) -> Auth.AppAuth:
        assert self.settings.github_app_id is not None
        return Auth.AppAuth(self.settings.github_app_id, self._private_key())

    def _private_key(self) -> str:
        if self.settings.github_app_private_key is not None:
            return self.settings.github_app_private_key.get_secret_value()
        path = self.settings.github_app_private_key_path
        assert path is not None
        try:
            return Path(path).expanduser().read_text(encoding="utf-8")
        except OSError as exc:
            raise GitHubAuthError(f"cannot read the GitHub App private key {path}: {exc}") from exc
