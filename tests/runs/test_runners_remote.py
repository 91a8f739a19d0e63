"""The remote entry point: reading a request in every form a runner gets it, pointing it at the
runner's clone and environment, and always leaving result.json and junit.xml behind."""

from __future__ import annotations

import http.server
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from runners.backends import remote
from runners.backends.serialize import encode_inline, request_to_json, result_from_json
from runners.env import EnvHome
from runners.env.manifest import Manifest, read_manifest, write_manifest
from runners.testrun.junit import parse_junit
from runners.types import (
    EnvironmentRef,
    EnvironmentSpec,
    Fault,
    FaultKind,
    Outcome,
    RunRequest,
    RunResult,
    TestCaseResult,
    TestStatus,
)
from tests.runners_env_support import make_wheel


def a_request(**changes: object) -> RunRequest:
    fields: dict = {
        "repo": Path("/controller/mirrors/verl"),
        "base_commit": "abc",
        "tests": ("t.py",),
    }
    return RunRequest(**{**fields, **changes})


def every_status() -> RunResult:
    tests = tuple(
        TestCaseResult(
            f"tests/sub/test_x.py::TestK::test_{s.value}[a-1]",
            s,
            0.5,
            None if s is TestStatus.passed else f"because {s.value}",
        )
        for s in TestStatus
    )
    return RunResult(
        outcome=Outcome.completed,
        tests=(*tests, TestCaseResult("test_m.py", TestStatus.error, 0, "collection error")),
    )


@pytest.fixture
def served() -> Iterator[tuple[str, list[dict[str, str]]]]:
    """An http server answering every GET with one request document; records the headers."""
    document = request_to_json(a_request(label="fetched"))
    seen: list[dict[str, str]] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(dict(self.headers))
            if self.path != "/requests/1.json":
                self.send_error(404)
                return
            body = document.encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        thread.join()


# -- reading ---------------------------------------------------------------------------


def test_request_is_read_as_json_inline_text_or_url(
    served: tuple[str, list[dict[str, str]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    base, seen = served
    document = request_to_json(a_request())
    assert remote.read_request_text(document) == document
    assert remote.read_request_text(encode_inline(document)) == document
    monkeypatch.setenv(remote.URL_TOKEN_ENV, "runner-secret")
    fetched = remote.read_request_text(f"{base}/requests/1.json")
    assert json.loads(fetched)["body"]["label"] == "fetched"
    assert seen[0]["Authorization"] == "Bearer runner-secret"


def test_url_that_does_not_answer_is_a_retryable_network_fault(
    served: tuple[str, list[dict[str, str]]],
) -> None:
    base, _ = served
    with pytest.raises(remote.RemoteError) as caught:
        remote.read_request_text(f"{base}/requests/missing.json")
    assert caught.value.fault.kind is FaultKind.network and caught.value.fault.retryable
    assert "404" in caught.value.fault.detail


# -- localizing ------------------------------------------------------------------------


def test_request_is_pointed_at_the_runners_clone(tmp_path: Path) -> None:
    localized = remote.localize(a_request(), repo=tmp_path / "target", env_home=None)
    assert localized.repo == (tmp_path / "target").resolve()
    assert localized.base_commit == "abc"


def test_environment_is_taken_from_the_runners_home_when_built_there(tmp_path: Path) -> None:
    home = EnvHome(tmp_path / "home")
    root = home.env_dir("hash1")
    (root / "bin").mkdir(parents=True)
    write_manifest(
        root,
        Manifest(
            lock_hash="hash1",
            python_version="3.11.7",
            platform="linux-x86_64",
            base_python=sys.executable,
            pins=["six==1.16.0"],
            requirements=["six"],
            built_at=datetime.now(UTC),
            build_seconds=1.0,
        ),
    )
    controller = EnvironmentRef(
        "hash1", Path("/controller/envs/hash1"), Path("/controller/envs/hash1/bin/python")
    )
    localized = remote.localize(a_request(environment=controller), repo=None, env_home=home.home)
    assert localized.environment is not None
    assert localized.environment.python == root / "bin" / "python"
    assert localized.environment.env["HF_HUB_OFFLINE"] == "1"


def test_environment_reachable_at_its_own_path_is_kept(tmp_path: Path) -> None:
    python = tmp_path / "envs" / "h" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text("")
    ref = EnvironmentRef("h", tmp_path / "envs" / "h", python)
    assert remote.localize(a_request(environment=ref), repo=None, env_home=None).environment == ref


def test_environment_missing_on_the_runner_is_an_environment_fault(tmp_path: Path) -> None:
    ref = EnvironmentRef(
        "hash9", Path("/controller/envs/hash9"), Path("/controller/envs/hash9/bin/python")
    )
    with pytest.raises(remote.RemoteError) as caught:
        remote.localize(a_request(environment=ref), repo=None, env_home=tmp_path)
    fault = caught.value.fault
    assert fault.kind is FaultKind.environment_build
    assert f"looked in {tmp_path}/envs/hash9 or /controller/envs/hash9" in fault.detail
    assert "no spec" in fault.detail


def test_a_missing_environment_is_built_from_the_spec_with_the_runners_overrides(
    tmp_path: Path,
) -> None:
    """The controller's CPU environment; this runner imposes its own (CUDA) torch build."""
    version = ".".join(map(str, sys.version_info[:3]))
    spec = EnvironmentSpec(("six", "pytest", "torch"), "2019-01-01T00:00:00Z", version)
    wheels = make_wheel(tmp_path / "wheels", "torch", "2.5.1+cu124").parent
    ref = EnvironmentRef(
        "hash-on-controller",
        Path("/controller/envs/x"),
        Path("/controller/envs/x/bin/python"),
        spec=spec,
    )
    runner_env = remote.RunnerEnvironment(
        tmp_path / "home", overrides=("torch==2.5.1+cu124",), find_links=(wheels,)
    )
    localized = remote.localize(a_request(environment=ref), repo=None, env_home=runner_env)
    environment = localized.environment
    assert environment is not None and environment.python.exists()
    assert environment.root.parent == (tmp_path / "home" / "envs").resolve()
    manifest = read_manifest(environment.root)
    assert "torch==2.5.1+cu124" in manifest.pins
    assert manifest.exclude_newer == "2019-01-01T00:00:00Z"
    assert "pip==18.1" in manifest.pins  # resolved as the index was in 2019
    # The next request for the same spec finds it: built once per runner.
    again = remote.localize(a_request(environment=ref), repo=None, env_home=runner_env)
    assert again.environment is not None and again.environment.root == environment.root


def test_a_spec_for_a_python_this_runner_lacks_is_an_environment_fault(tmp_path: Path) -> None:
    ref = EnvironmentRef(
        "h",
        Path("/controller/envs/h"),
        Path("/controller/envs/h/bin/python"),
        spec=EnvironmentSpec(("six",), None, "2.7.18"),
    )
    with pytest.raises(remote.RemoteError) as caught:
        remote.localize(a_request(environment=ref), repo=None, env_home=tmp_path / "home")
    assert caught.value.fault.kind is FaultKind.environment_build
    assert "needs Python 2.7" in caught.value.fault.detail


# -- executing -------------------------------------------------------------------------


def test_execute_runs_the_localized_request(tmp_path: Path) -> None:
    seen: list[RunRequest] = []

    def runner(request: RunRequest) -> RunResult:
        seen.append(request)
        return every_status()

    result = remote.execute(
        encode_inline(request_to_json(a_request())), repo=tmp_path, runner=lambda: runner
    )
    assert result == every_status()
    assert seen[0].repo == tmp_path.resolve()


def test_unreadable_request_becomes_a_fault_result_not_a_crash() -> None:
    result = remote.execute("b64gz:????", runner=lambda: pytest.fail("must not run"))
    assert result.outcome is Outcome.fault and result.fault is not None
    assert (result.fault.kind, result.fault.retryable) == (FaultKind.internal, False)
    assert "damaged" in result.fault.detail


def test_runner_refusal_becomes_its_fault() -> None:
    def refuse() -> remote.Runner:
        raise remote.RemoteError(FaultKind.gpus_absent, "needs 8 GPUs, 0 visible", True)

    result = remote.execute(request_to_json(a_request()), runner=refuse)
    assert result.fault == Fault(FaultKind.gpus_absent, "needs 8 GPUs, 0 visible", True)


# -- writing ---------------------------------------------------------------------------


def test_results_are_written_as_json_and_junit_that_agree(tmp_path: Path) -> None:
    result = every_status()
    remote.write_results(result, tmp_path / "out")
    assert result_from_json((tmp_path / "out" / "result.json").read_text()) == result
    parsed = parse_junit((tmp_path / "out" / "junit.xml").read_text())
    assert [(t.node_id, t.status) for t in parsed] == [(t.node_id, t.status) for t in result.tests]
    assert {t.status: t.message for t in parsed}[TestStatus.failed] == "because failed"
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["junit.xml", "result.json"]


def test_junit_counts_and_a_harness_fault_as_an_error_case() -> None:
    xml = remote.junit_xml(
        RunResult(outcome=Outcome.fault, fault=Fault(FaultKind.disk_full, "no space"))
    )
    assert 'errors="1"' in xml and 'tests="1"' in xml
    assert 'message="disk_full: no space"' in xml
    counted = remote.junit_xml(every_status())
    assert 'failures="1"' in counted and 'errors="3"' in counted and 'skipped="2"' in counted


def test_main_writes_a_fault_result_and_exits_3_for_a_missing_request_file(tmp_path: Path) -> None:
    status = remote.main(["--request-file", str(tmp_path / "nope.json"), "--out", str(tmp_path)])
    assert status == remote.EXIT_FAULT
    result = result_from_json((tmp_path / "result.json").read_text())
    assert result.fault is not None and "nope.json" in result.fault.detail


def test_main_reads_the_request_from_an_environment_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PROBEWATCH_REQUEST", "not a request")
    status = remote.main(["--request-env", "PROBEWATCH_REQUEST", "--out", str(tmp_path)])
    assert status == remote.EXIT_FAULT
    assert "not JSON" in result_from_json((tmp_path / "result.json").read_text()).fault.detail


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
    ).stdout.strip()


def test_module_runs_a_real_request_end_to_end_through_the_local_backend(tmp_path: Path) -> None:
    pytest.importorskip(
        "runners.backends.local", reason="the local backend (runners.backends.local) has not landed"
    )
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "test_ok.py").write_text("def test_ok():\n    assert 1 + 1 == 2\n")
    git(repo, "add", ".")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "init")
    request = RunRequest(
        repo=Path("/elsewhere"),
        base_commit=git(repo, "rev-parse", "HEAD"),
        tests=("test_ok.py",),
        timeout_run_s=120,
    )
    out = tmp_path / "out"
    answer = subprocess.run(
        [
            sys.executable,
            "-m",
            "runners.backends.remote",
            "--request",
            encode_inline(request_to_json(request)),
            "--repo",
            str(repo),
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    result = result_from_json((out / "result.json").read_text())
    assert answer.returncode == remote.EXIT_OK, (answer.stderr, result)
    assert result.passed == {"test_ok.py::test_ok"}


def test_the_runners_pins_come_from_flags_else_from_its_service_variables() -> None:
    parse = remote._parser().parse_args
    environ = {
        remote.OVERRIDES_ENV: "torch==2.5.1+cu124  torchvision==0.20.1+cu124",
        remote.FIND_LINKS_ENV: "/srv/probewatch/wheels:/data/wheels",
    }
    from_env = remote.runner_environment(parse(["--request", "{}", "--out", "o"]), environ)
    assert from_env.overrides == ("torch==2.5.1+cu124", "torchvision==0.20.1+cu124")
    assert from_env.find_links == (Path("/srv/probewatch/wheels"), Path("/data/wheels"))
    flags = parse(["--request", "{}", "--out", "o", "--override", "torch==2.6.0+cu126"])
    assert remote.runner_environment(flags, environ).overrides == ("torch==2.6.0+cu126",)
    assert remote.runner_environment(flags, {}).find_links == ()
