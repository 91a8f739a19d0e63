"""GitHub failures turned into the miner's errors, each one clear message.

The clients themselves come from the one factory, ``probewatch.github``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

import github
import requests
from github import GithubException

from pr_miner.errors import (
    GitHubAuthFailed,
    GitHubUnavailable,
    QuotaExhausted,
    UnknownRepository,
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
