"""GitHub clients: personal token and GitHub App (JWT → installation token, refreshed), retry
policy (POST never repeated by the transport), and tokens kept out of every log line. The App
endpoints are the emulator's, which checks the JWT's RS256 signature against the app's key."""

from __future__ import annotations

import logging
import time

import github
import httpx
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from bot.service.github.client import GitHubAuthError, GitHubClients
from probewatch.github import make_client, redact
from tests.bot_support import REPO, bot_settings
from tests.github_emulator import GitHubEmulator

APP_ID = 4242
PAT = "ghp_" + "A1b2C3d4" * 5


@pytest.fixture(scope="module")
def key_pair() -> tuple[str, str]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    public = (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
    return private, public


@pytest.fixture
def emulator(github_emulator: GitHubEmulator, key_pair: tuple[str, str]) -> GitHubEmulator:
    state = github_emulator.state
    state.add_repo(REPO)
    state.add_repo("acme/elsewhere")
    state.add_pull(REPO, 5)
    state.add_app(APP_ID, key_pair[1])
    state.add_installation(APP_ID, "acme", [REPO])
    state.tokens.add(PAT)
    return github_emulator


def app_clients(emulator: GitHubEmulator, private_key: str, **service: object) -> GitHubClients:
    settings = bot_settings(
        github_api_url=emulator.base_url,
        github_app_id=APP_ID,
        github_app_private_key=private_key,
        **service,
    )
    return GitHubClients(settings)


def test_app_auth_fetches_an_installation_token_and_uses_it(
    emulator: GitHubEmulator, key_pair: tuple[str, str]
) -> None:
    clients = app_clients(emulator, key_pair[0])

    title = clients.for_repo(REPO).get_repo(REPO).get_pull(5).title

    assert title
    assert emulator.count("GET", route="/repos/{owner}/{repo}/installation") == 1
    assert emulator.count("POST", route="/app/installations/{installation_id}/access_tokens") == 1
    pull_calls = [r for r in emulator.requests if r.route == "/repos/{owner}/{repo}/pulls/{number}"]
    assert pull_calls and all((r.token or "").startswith("ghs_") for r in pull_calls)


def test_installation_token_is_refreshed_before_it_expires(
    emulator: GitHubEmulator, key_pair: tuple[str, str]
) -> None:
    emulator.state.installation_token_ttl_s = 22  # PyGithub renews 20 s before expiry
    repo = app_clients(emulator, key_pair[0]).for_repo(REPO).get_repo(REPO)
    repo.get_pull(5)
    time.sleep(2.5)
    repo.get_pull(5)

    calls = [r for r in emulator.requests if r.route == "/repos/{owner}/{repo}/pulls/{number}"]
    assert calls[0].token != calls[-1].token
    assert all(call.status == 200 for call in calls)
    assert emulator.count("POST", route="/app/installations/{installation_id}/access_tokens") >= 2


def test_an_expired_installation_token_is_refused(
    emulator: GitHubEmulator, key_pair: tuple[str, str]
) -> None:
    emulator.state.installation_token_ttl_s = 0
    app_clients(emulator, key_pair[0]).for_repo(REPO)
    installation = emulator.state.repo_installation(str(APP_ID), REPO)
    token, _ = emulator.state.issue_installation_token(str(APP_ID), installation.id)
    with httpx.Client(base_url=emulator.base_url) as client:
        answer = client.get(f"/repos/{REPO}", headers={"Authorization": f"token {token}"})
    assert answer.status_code == 401


def test_app_endpoints_refuse_a_token_and_a_jwt_signed_by_another_key(
    emulator: GitHubEmulator,
) -> None:
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = other.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    forged_jwt = github.Auth.AppAuth(APP_ID, pem).token
    with httpx.Client(base_url=emulator.base_url) as client:
        with_token = client.get(
            f"/repos/{REPO}/installation", headers={"Authorization": f"token {PAT}"}
        )
        with_forged = client.get(
            f"/repos/{REPO}/installation", headers={"Authorization": f"Bearer {forged_jwt}"}
        )
    assert (with_token.status_code, with_forged.status_code) == (401, 401)


def test_a_repository_without_the_app_is_a_clear_error(
    emulator: GitHubEmulator, key_pair: tuple[str, str]
) -> None:
    with pytest.raises(GitHubAuthError, match="not installed on acme/elsewhere"):
        app_clients(emulator, key_pair[0]).for_repo("acme/elsewhere")


def test_no_credentials_is_a_clear_error(emulator: GitHubEmulator) -> None:
    clients = GitHubClients(bot_settings(github_api_url=emulator.base_url))
    with pytest.raises(GitHubAuthError, match="PROBEWATCH_GITHUB_TOKEN"):
        clients.for_repo(REPO)


def test_personal_token_auth_and_post_is_not_repeated_by_the_transport(
    emulator: GitHubEmulator,
) -> None:
    settings = bot_settings(github_api_url=emulator.base_url, github_token=PAT, github_retries=2)
    pull = GitHubClients(settings).for_repo(REPO).get_repo(REPO).get_pull(5)
    emulator.state.fail_next(502, path_contains="/issues/5/comments", method="POST")
    emulator.state.fail_next(502, path_contains="/issues/5/comments", method="GET")

    with pytest.raises(github.GithubException):
        pull.create_issue_comment("a comment that may have landed")
    listed = list(pull.get_issue_comments())

    assert listed == []
    assert emulator.count("POST", path_contains="/issues/5/comments") == 1
    assert emulator.count("GET", path_contains="/issues/5/comments") == 2
    assert {r.token for r in emulator.requests} == {PAT}


def test_tokens_never_reach_the_logs(
    emulator: GitHubEmulator, key_pair: tuple[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.DEBUG, logger="github")  # PyGithub logs response bodies at DEBUG
    app_clients(emulator, key_pair[0]).for_repo(REPO).get_repo(REPO).get_pull(5)
    settings = bot_settings(github_api_url=emulator.base_url, github_token=PAT)
    GitHubClients(settings).for_repo(REPO).get_repo(REPO).get_pull(5)

    text = caplog.text
    assert '"token":' in text  # PyGithub did log the response that carries the token
    secrets = [*emulator.state.installation_tokens, PAT]
    assert [s for s in secrets if s in text] == []
    assert "eyJ" not in text


def test_redaction_catches_token_shapes_and_known_secrets() -> None:
    line = '{"token":"v1.abc","expires_at":"x"} Authorization: token ghs_abcdefghijklmnopqrstu Bearer eyJa.eyJb.sig my-secret'
    cleaned = redact(line, ("my-secret",))
    assert cleaned == '{"token":"***","expires_at":"x"} Authorization: token *** Bearer *** ***'


def test_the_miner_and_the_bot_make_clients_from_one_configuration(
    emulator: GitHubEmulator,
) -> None:
    settings = bot_settings(
        github_api_url=emulator.base_url,
        github_token=PAT,
        github_max_wait_s=7,
        github_retries=2,
        github_write_spacing_s=0.5,
    )
    for client in (
        GitHubClients(settings).for_repo(REPO),
        make_client(settings.github_client_config()),  # what `mine --github` uses
    ):
        made = client.requester.kwargs
        retry = made["retry"]
        assert (retry.total, retry.max_rate_limit_wait) == (2, 7)
        assert "POST" not in retry.allowed_methods
        assert (made["base_url"], made["seconds_between_writes"]) == (emulator.base_url, 0.5)
