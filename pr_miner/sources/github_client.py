"""A PyGithub client set up for polling, and GitHub failures turned into the miner's errors.

The client keeps one request in flight (the miner is single-threaded), spaces
requests and, more widely, writes, and retries 5xx answers and rate limits
with PyGithub's ``GithubRetry`` up to a maximum wait: a ``Retry-After`` or a
quota reset further away than ``max_wait_s`` fails at once with a clear
message instead of blocking the scheduler for an hour.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import github
import requests
from github import GithubException, GithubRetry
from pydantic import BaseModel, ConfigDict, Field, SecretStr

from pr_miner.errors import (
    GitHubAuthFailed,
    GitHubTokenMissing,
    GitHubUnavailable,
    QuotaExhausted,
    UnknownRepository,
)

GITHUB_API_URL = "https://api.github.com"


class GitHubClientConfig(BaseModel):
    model_config = ConfigDict(frozen=True)

    token: SecretStr | None = None
    base_url: str = GITHUB_API_URL
    per_page: int = Field(default=100, ge=1, le=100)
    max_wait_s: float = Field(default=60.0, ge=0)
    retries: int = Field(default=3, ge=0)
    backoff_factor: float = Field(default=1.0, ge=0)
    seconds_between_requests: float | None = 0.25
    seconds_between_writes: float | None = 1.0
    timeout_s: float = 30.0


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


def make_client(config: GitHubClientConfig) -> github.Github:
    """A PyGithub client for ``config``; no request is made yet."""
    if config.token is None or not config.token.get_secret_value():
        raise GitHubTokenMissing("no GitHub token: set PROBEWATCH_GITHUB_TOKEN")
    retry = CappedRetry(
        total=config.retries,
        backoff_factor=config.backoff_factor,
        max_rate_limit_wait=config.max_wait_s,
        secondary_rate_wait=min(config.max_wait_s, 60.0),
    )
    return github.Github(
        base_url=config.base_url,
        auth=github.Auth.Token(config.token.get_secret_value()),
        per_page=config.per_page,
        retry=retry,
        timeout=int(config.timeout_s),
        seconds_between_requests=config.seconds_between_requests,
        seconds_between_writes=config.seconds_between_writes,
    )


@contextmanager
def github_errors(repo: str, client: github.Github) -> Iterator[None]:
    """Turn PyGithub and transport failures into one clear miner error each."""
    try:
        yield
    except github.BadCredentialsException:
        raise GitHubAuthFailed(
            "GitHub rejected the token (401 Bad credentials): check PROBEWATCH_GITHUB_TOKEN"
        ) from None
    except github.UnknownObjectException:
        raise UnknownRepository(
            f"GitHub has no repository {repo} (or the token cannot see it)"
        ) from None
    except github.RateLimitExceededException as exc:
        raise QuotaExhausted(_quota_message(exc)) from None
    except GithubException as exc:
        raise _other_error(repo, exc) from None
    except (requests.exceptions.RetryError, requests.exceptions.ConnectionError) as exc:
        raise GitHubUnavailable(f"GitHub did not answer for {repo}: {exc}") from None
    except requests.exceptions.Timeout:
        raise GitHubUnavailable(f"GitHub timed out for {repo}") from None


def _other_error(repo: str, exc: GithubException) -> Exception:
    message = exc.data.get("message") if isinstance(exc.data, dict) else str(exc.data)
    if exc.status in (401, 403):
        return GitHubAuthFailed(f"GitHub refused access to {repo} ({exc.status}: {message})")
    return GitHubUnavailable(f"GitHub answered {exc.status} for {repo}: {message}")


def _quota_message(exc: github.RateLimitExceededException) -> str:
    headers = {key.lower(): value for key, value in (exc.headers or {}).items()}
    remaining = headers.get("x-ratelimit-remaining", "?")
    limit = headers.get("x-ratelimit-limit", "?")
    reset = headers.get("x-ratelimit-reset")
    when = (
        datetime.fromtimestamp(int(reset), UTC).strftime("%Y-%m-%d %H:%M UTC")
        if reset and str(reset).isdigit()
        else "later"
    )
    wait = getattr(exc, "wait", None)
    waited = f"; waiting {wait:.0f} s is more than allowed" if wait else ""
    what = "quota exhausted" if remaining == "0" else "rate limit hit"
    return (
        f"GitHub {what} ({remaining} of {limit} requests left, resets {when}{waited}): "
        "nothing more was fetched; run again later"
    )


def reset_time(client: github.Github) -> datetime | None:
    stamp = client.requester.rate_limiting_resettime
    return datetime.fromtimestamp(stamp, UTC) if stamp else None
