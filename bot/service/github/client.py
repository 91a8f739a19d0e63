"""GitHub clients for the bot: a personal token or a GitHub App installation.

With App credentials, each repository's installation is looked up once and its
installation token is fetched from the App's JWT and refreshed by PyGithub
shortly before it expires. Every client comes from the one factory
(``pr_miner.sources.github_client``), configured from the settings the miner's
clients use too: retries capped by a longest wait, spaced writes, no POST
retried by the transport, tokens redacted from PyGithub's logs.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

from github import Auth, Github, GithubException, GithubIntegration

from bot.settings import Settings
from probewatch.errors import ConfigError
from probewatch.github import make_client, make_integration


class GitHubAuthError(ConfigError):
    """No usable GitHub credentials, or the App is not installed on a repository."""


@dataclass
class GitHubClients:
    """Builds and caches clients: one per installation with App auth, one with a token."""

    settings: Settings
    _installations: dict[str, int] = field(default_factory=dict, repr=False)
    _clients: dict[object, Github] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def for_repo(self, repo: str) -> Github:
        """A client allowed to read and write ``repo`` (``owner/name``)."""
        if self.settings.has_github_app:
            return self._installation_client(repo)
        if self.settings.github_token is not None:
            return self._cached("token", lambda: None)
        raise GitHubAuthError(
            "no GitHub credentials: set PROBEWATCH_GITHUB_TOKEN, or PROBEWATCH_GITHUB_APP_ID "
            "with PROBEWATCH_GITHUB_APP_PRIVATE_KEY[_PATH]"
        )

    def integration(self) -> GithubIntegration:
        """The App itself (JWT auth): installations, installation tokens."""
        return make_integration(self.settings.github_client_config(), self._app_auth())

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
        """One client per key; ``auth`` makes its credentials (None: the settings' token)."""
        with self._lock:
            if key not in self._clients:
                config = self.settings.github_client_config()
                self._clients[key] = make_client(config, auth())  # type: ignore[operator]
            return self._clients[key]

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
