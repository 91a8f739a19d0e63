"""Secrets from files: ``PROBEWATCH_<NAME>_FILE`` names a file holding the secret, so the
service's environment, which every process it starts inherits, never holds one.

The end-to-end test starts a real test run from a process configured that way, with and
without the sandbox: the run reads its own environment and every ``/proc/*/environ`` it can
see and finds no secret. The same run started from a process holding the secrets in its
environment, unsandboxed, finds them: that is what the files are for.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bot.settings import FILE_SUFFIX, SECRET_FIELDS, SettingsError, load_settings
from runners.sandbox import bwrap
from tests.runner_repos import READ_ENVIRONS, FixtureRepo

ROOT = Path(__file__).parents[2]
SECRETS = {
    "github_token": "pw-gh-7c1d",
    "github_app_private_key": "-----BEGIN pw-key-7c1d",
    "webhook_secret": "pw-hook-7c1d",
    "admin_token": "pw-admin-7c1d",
    "openai_api_key": "pw-openai-7c1d",
    "database_url": "postgresql+psycopg://probewatch:pw-db-7c1d@127.0.0.1:1/none",
}


def variable(field: str) -> str:
    return f"PROBEWATCH_{field.upper()}"


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in list(os.environ):
        if name.startswith("PROBEWATCH_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)  # no stray .env from the caller's folder


def secret_files(folder: Path) -> dict[str, str]:
    """A file per secret (mode 0600, ending in a newline as an editor leaves it), and the
    variables that name them."""
    folder.mkdir(mode=0o700)
    found = {}
    for field, value in SECRETS.items():
        path = folder / field
        path.write_text(value + "\n")
        path.chmod(0o600)
        found[variable(field) + FILE_SUFFIX] = str(path)
    return found


def test_every_secret_can_come_from_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert set(SECRETS) == set(SECRET_FIELDS)
    for name, path in secret_files(tmp_path / "secrets").items():
        monkeypatch.setenv(name, path)
    settings = load_settings(home=tmp_path / "home")
    for field, value in SECRETS.items():
        read = getattr(settings, field)
        assert (read if isinstance(read, str) else read.get_secret_value()) == value, field
    assert "pw-db-7c1d" not in settings.shown_database_url


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (lambda p: None, "No such file or directory"),
        (lambda p: p.mkdir(), "Is a directory"),
        (lambda p: p.write_bytes(b"\xff\xfe token"), "can't decode"),
        (lambda p: p.write_text("\n"), "is empty"),
    ],
    ids=["missing", "a_folder", "not_utf8", "empty"],
)
def test_an_unusable_secret_file_is_one_line_naming_the_variable_and_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, make: object, reason: str
) -> None:
    path = tmp_path / "webhook-secret"
    make(path)  # type: ignore[operator]
    monkeypatch.setenv("PROBEWATCH_WEBHOOK_SECRET_FILE", str(path))
    with pytest.raises(SettingsError) as caught:
        load_settings()
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("PROBEWATCH_WEBHOOK_SECRET_FILE: ") and reason in message
    assert "unset" in message and str(path) in message


def test_an_unreadable_secret_file_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if os.geteuid() == 0:
        pytest.skip("root reads a file of mode 0000")
    path = tmp_path / "token"
    path.write_text("secret")
    path.chmod(0)
    monkeypatch.setenv("PROBEWATCH_ADMIN_TOKEN_FILE", str(path))
    with pytest.raises(SettingsError, match=r"PROBEWATCH_ADMIN_TOKEN_FILE: .*Permission denied"):
        load_settings()


def test_a_secret_given_both_ways_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = secret_files(tmp_path / "secrets")
    monkeypatch.setenv("PROBEWATCH_ADMIN_TOKEN_FILE", files["PROBEWATCH_ADMIN_TOKEN_FILE"])
    monkeypatch.setenv("PROBEWATCH_ADMIN_TOKEN", "other")
    with pytest.raises(SettingsError, match="both set: unset one of them"):
        load_settings()


# --- a real run started by a process configured from files ------------------------------

SNOOP = (
    READ_ENVIRONS
    + """
MARKS = MARKS_HERE

def test_no_environment_the_run_can_read_holds_a_secret():
    blobs = read_environs()
    service = [b for b in blobs if b"PROBEWATCH_WEBHOOK_SECRET" in b]
    assert bool(service) is SERVICE_SEEN, "the service's environment is (not) visible"
    leaked = [m for m in MARKS if any(m.encode() in b for b in blobs)]
    assert not leaked, "found in an environment: " + " ".join(leaked)
"""
)

SERVICE = """
import json, sys
from pathlib import Path
from bot.settings import load_settings
from runners.backends.local import LocalBackend
from runners.execute import execute
from runners.sandbox import bwrap
from runners.types import RunRequest, TestOverlay

settings = load_settings()
assert settings.webhook_secret is not None
if sys.argv[1] == "unsandboxed":
    bwrap.BWRAP = "bwrap-that-is-not-installed"
    bwrap.bwrap_refusal.cache_clear()
tests = Path(sys.argv[4]).read_text()
request = RunRequest(
    repo=Path(sys.argv[2]), base_commit="HEAD",
    overlay=TestOverlay(files={"tests/test_snoop.py": tests}), timeout_run_s=120.0,
)
root = Path(sys.argv[3])
result = execute(request, LocalBackend(workspace_root=root, gpu_indices=()), workspace_root=root, retries=0)
statuses = {t.node_id: t.status.value for t in result.tests}
print(json.dumps({"tests": statuses, "sandbox": result.sandbox.kind, "log": result.log[-3000:]}))
"""


def run_from_service(tmp_path: Path, service_env: dict[str, str], mode: str) -> dict:
    """A test run started by a process with ``service_env`` (on top of this one's, less any
    PROBEWATCH_ variable); what the run saw."""
    repo, _ = FixtureRepo.create(tmp_path / f"upstream-{mode}", {"pkg/__init__.py": ""})
    marks = json.dumps(sorted(SECRETS.values()))
    # Unsandboxed, the run sees the service's environment (its variables, never a secret);
    # in the sandbox's PID namespace it sees no process of the host.
    seen = mode == "unsandboxed"
    tests = SNOOP.replace("MARKS_HERE", marks).replace("SERVICE_SEEN", str(seen))
    (tmp_path / f"snoop-{mode}.py").write_text(tests)
    script = tmp_path / "service.py"
    script.write_text(SERVICE)
    base = {k: v for k, v in os.environ.items() if not k.startswith("PROBEWATCH_")}
    args = [str(repo.path), str(tmp_path / f"runs-{mode}"), str(tmp_path / f"snoop-{mode}.py")]
    done = subprocess.run(
        [sys.executable, str(script), mode, *args],
        env={**base, **service_env, "PYTHONPATH": str(ROOT)},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


MODES = [
    "unsandboxed",
    pytest.param(
        "sandboxed",
        marks=pytest.mark.skipif(
            bwrap.bwrap_refusal() is not None, reason=f"no sandbox: {bwrap.bwrap_refusal()}"
        ),
    ),
]


@pytest.mark.parametrize("mode", MODES)
def test_a_run_started_by_a_service_configured_from_files_finds_no_secret(
    tmp_path: Path, mode: str
) -> None:
    seen = run_from_service(tmp_path, secret_files(tmp_path / "secrets"), mode)
    assert seen["sandbox"] == ("none" if mode == "unsandboxed" else "namespaces")
    assert set(seen["tests"].values()) == {"passed"}, seen["log"]


def test_the_same_run_from_a_service_holding_secrets_in_its_environment_finds_them(
    tmp_path: Path,
) -> None:
    """The detector above works: unsandboxed, a secret in the service's environment is read
    from /proc (the reason secrets are given as files)."""
    in_env = {variable(field): value for field, value in SECRETS.items()}
    seen = run_from_service(tmp_path, in_env, "unsandboxed")
    assert set(seen["tests"].values()) == {"failed"}, seen
    assert "found in an environment: " in seen["log"] and "pw-hook-7c1d" in seen["log"]
