"""The GitHub Actions backend against the GitHub emulator: PyGithub really dispatches, lists, polls,
cancels and downloads over HTTP. A dispatch hook plays the self-hosted runner: it reads the request
the way a runner does (``runners.backends.remote``), writes ``result.json`` and ``junit.xml`` with the same
code, zips them into the results artifact and completes the run with a chosen conclusion. The
workflow the emulator serves is seeded from ``gh_actions/workflows/probewatch-run.yml`` itself, so
input names and the run name cannot drift from what the backend sends.
"""

from __future__ import annotations

import json
import re
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from probewatch.github import GitHubClientConfig, make_client
from runners.backends import remote
from runners.backends.github_actions import (
    CONCLUSION_FAULTS,
    RESULTS_ARTIFACT,
    RUN_NAME_PREFIX,
    ActionsPool,
    DispatchError,
    GitHubActionsBackend,
    Input,
    PollPolicy,
    job_timeout_minutes,
    origin_repository,
    parse_results_zip,
)
from runners.backends.serialize import decode_inline, request_from_json, request_to_json
from runners.types import (
    FaultKind,
    Hardware,
    Outcome,
    PatchSpec,
    RunRequest,
    RunResult,
    TestCaseResult,
    TestStatus,
)
from tests.github_emulator import EmulatorState, GitHubEmulator, WorkflowRun, make_zip
from tests.github_emulator.fixtures import github_emulator  # noqa: F401  (fixture)

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW_FILE = ROOT / "gh_actions" / "workflows" / "probewatch-run.yml"
ACTION_FILE = ROOT / "gh_actions" / "actions" / "probewatch-run" / "action.yml"
REPO = "org/probewatch-runs"
UPSTREAM = "volcengine/verl"
FAST = PollPolicy(first_s=0.01, factor=2.0, max_s=0.05, find_timeout_s=3.0, queue_timeout_s=5.0)


def workflow_document() -> dict:
    return yaml.safe_load(WORKFLOW_FILE.read_text())


def dispatch_inputs(document: dict) -> dict:
    triggers = document.get("on", document.get(True))  # YAML 1.1 reads a bare `on` as true
    return triggers["workflow_dispatch"]["inputs"]


def seed(state: EmulatorState) -> None:
    document = workflow_document()
    inputs = dispatch_inputs(document)
    state.add_repo(REPO)
    state.add_workflow(
        REPO,
        ".github/workflows/probewatch-run.yml",
        name=document["name"],
        inputs=list(inputs),
        required_inputs=[name for name, spec in inputs.items() if spec.get("required")],
        run_name=re.sub(r"\$\{\{\s*inputs\.(\w+)\s*\}\}", r"{\1}", document["run-name"]),
    )


def a_request(**changes: object) -> RunRequest:
    fields: dict = {
        "repo": Path("/srv/mirrors/verl"),
        "base_commit": "c0ffee" * 6 + "abcd",
        "patches": (PatchSpec("golden", "diff --git a/a.py b/a.py\n"),),
        "tests": ("tests/test_a_on_cpu.py",),
        "timeout_run_s": 600.0,
        "env": {"OMP_NUM_THREADS": "2", "GH_TOKEN": "ghp_do_not_ship"},
        "label": "golden#1",
    }
    return RunRequest(**{**fields, **changes})


def passing(request: RunRequest) -> RunResult:
    """What the local backend on the runner reports: every requested test passed."""
    tests = tuple(TestCaseResult(f"{t}::test_ok", TestStatus.passed, 0.5) for t in request.tests)
    return RunResult(outcome=Outcome.completed, tests=tests, log="1 passed")


@dataclass
class SelfHostedRunner:
    """The runner's side of a dispatched run: remote.execute, write_results, upload, complete."""

    workdir: Path
    local: Callable[[RunRequest], RunResult] = passing
    conclusion: str = "success"
    upload: bool = True
    finish_after_s: float | None = 0.0  # None: never finishes
    status_meanwhile: str = "queued"
    seen: list[RunRequest] = field(default_factory=list)

    def __call__(self, state: EmulatorState, run: WorkflowRun) -> None:
        if self.status_meanwhile != "queued":
            state.set_run_status(run.id, self.status_meanwhile)
        if self.finish_after_s is None:
            return
        if self.finish_after_s == 0:
            self.finish(state, run)
        else:
            threading.Timer(self.finish_after_s, self.finish, (state, run)).start()

    def finish(self, state: EmulatorState, run: WorkflowRun) -> None:
        result = remote.execute(
            run.inputs[Input.request], repo=self.workdir / "target", runner=lambda: self.record
        )
        out = self.workdir / f"results-{run.id}"
        remote.write_results(result, out)
        files = {path.name: path.read_bytes() for path in out.iterdir()}
        artifacts = [(RESULTS_ARTIFACT, make_zip(files))] if self.upload else []
        state.complete_run(run.id, conclusion=self.conclusion, artifacts=artifacts)

    def record(self, request: RunRequest) -> RunResult:
        self.seen.append(request)
        return self.local(request)


class FakeTime:
    """A clock that moves only when the backend sleeps: limits of hours pass in no time."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


@pytest.fixture
def emulator(github_emulator: GitHubEmulator) -> GitHubEmulator:  # noqa: F811
    seed(github_emulator.state)
    return github_emulator


def backend_for(
    emulator: GitHubEmulator,
    pool: ActionsPool | None = None,
    *,
    poll: PollPolicy = FAST,
    time_source: FakeTime | None = None,
    max_wait_s: float = 5.0,
    **options: object,
) -> GitHubActionsBackend:
    config = GitHubClientConfig(
        token="t",
        base_url=emulator.base_url,
        max_wait_s=max_wait_s,
        backoff_factor=1.0,
        seconds_between_writes=None,
        long_waits="cap",  # following a CI run, a long Retry-After is waited out to the cap
    )
    client = make_client(config)
    timing: dict = {}
    if time_source is not None:
        timing = {"clock": time_source.clock, "sleep": time_source.sleep}
    return GitHubActionsBackend(
        client,
        pool or ActionsPool(REPO),
        poll=poll,
        repository_of=lambda request: UPSTREAM,
        **timing,
        **options,
    )


def run_state(emulator: GitHubEmulator) -> WorkflowRun:
    (dispatch,) = emulator.state.dispatches
    return emulator.state.find_run(dispatch.run_id)


# -- success ---------------------------------------------------------------------------


def test_successful_run_returns_the_result_the_runner_wrote(
    emulator: GitHubEmulator, tmp_path: Path
) -> None:
    runner = SelfHostedRunner(tmp_path)
    emulator.state.on_dispatch = runner
    result = backend_for(emulator).run(a_request())
    assert result.outcome is Outcome.completed, result
    assert result.passed == {"tests/test_a_on_cpu.py::test_ok"}
    assert result.log == "1 passed"
    assert runner.seen[0].repo == (tmp_path / "target").resolve()  # pointed at the runner's clone
    assert (
        emulator.count("GET", route="/repos/{owner}/{repo}/actions/artifacts/{artifact_id}/zip")
        == 1
    )


def test_dispatch_inputs_carry_the_request_labels_and_timeout_but_no_secret(
    emulator: GitHubEmulator, tmp_path: Path
) -> None:
    emulator.state.on_dispatch = SelfHostedRunner(tmp_path)
    pool = ActionsPool(
        REPO,
        labels=("self-hosted", "linux", "gpu", "8xH100"),
        gpus=8,
        gpu_type="H100",
        setup_minutes=20,
    )
    request = a_request(hardware=Hardware(8, "H100"))
    backend = backend_for(emulator, pool, new_run_id=lambda: "run-42")
    assert backend.run(request).outcome is Outcome.completed
    inputs = emulator.state.dispatches[0].inputs
    assert inputs[Input.run_id] == "run-42"
    assert inputs[Input.repository] == UPSTREAM
    assert inputs[Input.base_commit] == request.base_commit
    assert json.loads(inputs[Input.runs_on]) == ["self-hosted", "linux", "gpu", "8xH100"]
    assert inputs[Input.timeout_minutes] == "30"  # 600 s of run + 20 of set-up
    shipped = request_from_json(decode_inline(inputs[Input.request]))
    assert shipped.patches == request.patches and shipped.hardware == Hardware(8, "H100")
    assert "GH_TOKEN" not in shipped.env and "ghp_do_not_ship" not in json.dumps(inputs)
    assert run_state(emulator).display_title == RUN_NAME_PREFIX + "run-42"


def test_without_run_details_the_run_is_found_by_its_name_once_it_appears(
    emulator: GitHubEmulator, tmp_path: Path
) -> None:
    emulator.state.dispatch_delay_s = 0.3  # GitHub lists a dispatched run only after a while
    emulator.state.add_workflow_run(  # another dispatch racing ours: same workflow, same event
        REPO,
        "probewatch-run.yml",
        event="workflow_dispatch",
        status="completed",
        conclusion="failure",
        inputs={"run_id": "someone-else"},
    )
    emulator.state.on_dispatch = SelfHostedRunner(tmp_path, finish_after_s=0.1)
    backend = backend_for(emulator, ActionsPool(REPO, run_details=False))
    result = backend.run(a_request())
    assert result.outcome is Outcome.completed, result
    listing = "/repos/{owner}/{repo}/actions/workflows/{workflow}/runs"
    assert emulator.count("GET", route=listing) >= 2  # it looked again until the run showed
    query = next(r.query for r in emulator.requests if r.route == listing)
    assert query["event"] == "workflow_dispatch" and query["created"].startswith(">=")


def test_a_run_that_never_appears_is_a_fault(emulator: GitHubEmulator, tmp_path: Path) -> None:
    emulator.state.dispatch_delay_s = 60.0
    backend = backend_for(
        emulator,
        ActionsPool(REPO, run_details=False),
        poll=PollPolicy(first_s=0.01, max_s=0.02, find_timeout_s=0.2),
    )
    result = backend.run(a_request())
    assert result.fault is not None and result.fault.kind is FaultKind.runner_lost
    assert "no such run appeared within 0 s" in result.fault.detail


def test_run_completing_later_is_polled_with_growing_intervals(
    emulator: GitHubEmulator, tmp_path: Path
) -> None:
    emulator.state.on_dispatch = SelfHostedRunner(
        tmp_path, finish_after_s=0.3, status_meanwhile="in_progress"
    )
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        time.sleep(seconds)

    result = backend_for(emulator, sleep=sleep).run(a_request())
    assert result.outcome is Outcome.completed
    assert slept[:4] == [0.01, 0.02, 0.04, 0.05]
    conditional = [r for r in emulator.requests if r.conditional and r.status == 304]
    assert conditional, "polls of an unchanged run should be conditional (304, no quota)"


# -- failures --------------------------------------------------------------------------


def test_failing_run_with_results_returns_the_runners_fault(
    emulator: GitHubEmulator, tmp_path: Path
) -> None:
    def env_missing(request: RunRequest) -> RunResult:
        raise remote.RemoteError(FaultKind.environment_build, "uv could not resolve torch", True)

    emulator.state.on_dispatch = SelfHostedRunner(tmp_path, local=env_missing, conclusion="failure")
    result = backend_for(emulator).run(a_request())
    assert result.outcome is Outcome.fault
    assert result.fault is not None
    assert (result.fault.kind, result.fault.detail) == (
        FaultKind.environment_build,
        "uv could not resolve torch",
    )


def test_failing_run_without_artifact_is_a_fault_pointing_at_the_run(
    emulator: GitHubEmulator, tmp_path: Path
) -> None:
    emulator.state.on_dispatch = SelfHostedRunner(tmp_path, conclusion="failure", upload=False)
    result = backend_for(emulator).run(a_request())
    assert result.fault is not None and result.fault.kind is FaultKind.internal
    run = run_state(emulator)
    assert f"workflow run {run.id} ended failure but left no 'probewatch-results' artifact" in (
        result.fault.detail
    )
    assert f"/actions/runs/{run.id}" in result.fault.detail


def test_successful_run_with_missing_artifact_is_a_clear_fault(
    emulator: GitHubEmulator, tmp_path: Path
) -> None:
    emulator.state.on_dispatch = SelfHostedRunner(tmp_path, upload=False)
    result = backend_for(emulator).run(a_request())
    assert result.outcome is Outcome.fault and result.fault is not None
    assert "succeeded but left no 'probewatch-results' artifact" in result.fault.detail


def test_expired_artifact_counts_as_missing(emulator: GitHubEmulator, tmp_path: Path) -> None:
    runner = SelfHostedRunner(tmp_path)

    def finish_and_expire(state: EmulatorState, run: WorkflowRun) -> None:
        runner(state, run)
        for artifact in state.list_artifacts(REPO, run_id=run.id):
            state.expire_artifact(artifact.id)

    emulator.state.on_dispatch = finish_and_expire
    result = backend_for(emulator).run(a_request())
    assert (
        result.fault is not None and "left no 'probewatch-results' artifact" in result.fault.detail
    )


@pytest.mark.parametrize("conclusion", ["timed_out", "cancelled", "stale"])
def test_conclusions_without_results_map_to_their_fault_kind(
    emulator: GitHubEmulator, tmp_path: Path, conclusion: str
) -> None:
    emulator.state.on_dispatch = SelfHostedRunner(tmp_path, conclusion=conclusion)
    result = backend_for(emulator).run(a_request())
    kind, retryable, meaning = CONCLUSION_FAULTS[conclusion]
    assert result.fault is not None
    assert (result.fault.kind, result.fault.retryable) == (kind, retryable)
    assert meaning in result.fault.detail


def test_run_never_taken_by_a_runner_is_cancelled_as_runner_lost(
    emulator: GitHubEmulator, tmp_path: Path
) -> None:
    emulator.state.on_dispatch = SelfHostedRunner(tmp_path, finish_after_s=None)
    clock = FakeTime()
    poll = PollPolicy(first_s=30, factor=2, max_s=600, queue_timeout_s=3600)
    pool = ActionsPool(REPO, labels=("self-hosted", "gpu", "8xB200"))
    result = backend_for(emulator, pool, poll=poll, time_source=clock).run(a_request())
    assert result.outcome is Outcome.fault and result.fault is not None
    assert result.fault.kind is FaultKind.runner_lost and result.fault.retryable
    assert "was not taken by a runner labelled ['self-hosted', 'gpu', '8xB200']" in (
        result.fault.detail
    )
    assert run_state(emulator).conclusion == "cancelled"
    assert 3600 <= clock.now < 3600 + 600


def test_run_that_never_completes_times_out_and_is_cancelled(
    emulator: GitHubEmulator, tmp_path: Path
) -> None:
    emulator.state.on_dispatch = SelfHostedRunner(
        tmp_path, finish_after_s=None, status_meanwhile="in_progress"
    )
    clock = FakeTime()
    poll = PollPolicy(first_s=30, factor=2, max_s=600, queue_timeout_s=600)
    pool = ActionsPool(REPO, setup_minutes=10)
    result = backend_for(emulator, pool, poll=poll, time_source=clock).run(a_request())
    assert result.fault is not None and result.fault.kind is FaultKind.harness_timeout
    assert "still in_progress after" in result.fault.detail
    assert run_state(emulator).conclusion == "cancelled"
    overall = 600 + 60 * job_timeout_minutes(a_request(), pool)
    assert clock.now == overall  # the last wait is cut to the deadline, not overshooting it


def test_secondary_rate_limit_while_polling_is_waited_out(
    emulator: GitHubEmulator, tmp_path: Path
) -> None:
    runner = SelfHostedRunner(tmp_path, finish_after_s=0.2)

    def dispatch_then_limit(state: EmulatorState, run: WorkflowRun) -> None:
        state.fail_next(403, count=1, retry_after=1, path_contains=f"/actions/runs/{run.id}")
        runner(state, run)

    emulator.state.on_dispatch = dispatch_then_limit
    started = time.monotonic()
    result = backend_for(emulator).run(a_request())
    assert result.outcome is Outcome.completed, result
    assert emulator.count(status=403) == 1
    assert time.monotonic() - started >= 1.0  # Retry-After was honoured


def test_retry_after_longer_than_the_cap_waits_only_the_cap(
    emulator: GitHubEmulator, tmp_path: Path
) -> None:
    runner = SelfHostedRunner(tmp_path)

    def dispatch_then_limit(state: EmulatorState, run: WorkflowRun) -> None:
        state.fail_next(403, count=1, retry_after=30, path_contains=f"/actions/runs/{run.id}")
        runner(state, run)

    emulator.state.on_dispatch = dispatch_then_limit
    started = time.monotonic()
    result = backend_for(emulator, max_wait_s=1.0).run(a_request())
    assert result.outcome is Outcome.completed, result
    assert time.monotonic() - started < 10


def test_missing_workflow_is_a_fault_that_is_not_retried(emulator: GitHubEmulator) -> None:
    backend = backend_for(emulator, ActionsPool(REPO, workflow="nope.yml"))
    result = backend.run(a_request())
    assert result.fault is not None
    assert (result.fault.kind, result.fault.retryable) == (FaultKind.internal, False)
    assert "the workflow is not there or the token cannot see it: 404" in result.fault.detail
    assert emulator.state.dispatches == []


def test_refused_token_is_a_fault_naming_credentials(emulator: GitHubEmulator) -> None:
    emulator.state.tokens = {"other"}
    result = backend_for(emulator).run(a_request())
    assert result.fault is not None and "GitHub refused the credentials: 401" in result.fault.detail


def test_unknown_branch_is_refused_with_githubs_message(emulator: GitHubEmulator) -> None:
    result = backend_for(emulator, ActionsPool(REPO, ref="no-such-branch")).run(a_request())
    assert result.fault is not None
    assert (
        "GitHub refused the dispatch: 422 No ref found for: no-such-branch" in result.fault.detail
    )


def test_run_needing_more_gpus_than_the_pool_is_unschedulable_and_not_dispatched(
    emulator: GitHubEmulator,
) -> None:
    pool = ActionsPool(REPO, gpus=4, gpu_type="A100", name="a100x4")
    result = backend_for(emulator, pool).run(a_request(hardware=Hardware(8, "A100")))
    assert result.outcome is Outcome.unschedulable
    assert result.detail == "needs 8 GPU(s) of type A100; a100x4 offers 4xA100, 1 CPU slot(s)"
    assert emulator.state.dispatches == []


# -- large requests --------------------------------------------------------------------


@dataclass
class ContentsStore:
    """A payload store on the emulator's raw-content URLs: the runner fetches the request."""

    state: EmulatorState

    def put(self, key: str, document: str) -> str:
        self.state.add_content(REPO, f"requests/{key}.json", document)
        return f"{self.state.base_url}/_emulator/raw/{REPO}/main/requests/{key}.json"


def large_request() -> RunRequest:
    # Random-looking text: gzip cannot shrink it under the inline limit.
    noise = subprocess.run(
        ["python", "-c", "import os,base64;print(base64.b64encode(os.urandom(90000)).decode())"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return a_request(patches=(PatchSpec("golden", noise),))


def test_request_too_large_to_inline_travels_by_url(
    emulator: GitHubEmulator, tmp_path: Path
) -> None:
    runner = SelfHostedRunner(tmp_path)
    emulator.state.on_dispatch = runner
    request = large_request()
    backend = backend_for(emulator, payload_store=ContentsStore(emulator.state))
    result = backend.run(request)
    assert result.outcome is Outcome.completed, result
    assert emulator.state.dispatches[0].inputs[Input.request].startswith("http://127.0.0.1:")
    assert runner.seen[0].patches == request.patches


def test_request_too_large_without_a_store_is_refused_before_dispatch(
    emulator: GitHubEmulator,
) -> None:
    result = backend_for(emulator).run(large_request())
    assert result.fault is not None and result.fault.retryable is False
    assert "over the 60000 a workflow input may carry" in result.fault.detail
    assert emulator.state.dispatches == []


# -- the artifact ----------------------------------------------------------------------


def test_artifact_without_result_json_names_what_it_holds() -> None:
    result = parse_results_zip(make_zip({"junit.xml": "<testsuite/>"}), "run 7")
    assert result.fault is not None
    assert result.fault.detail == "run 7: the artifact holds junit.xml, no result.json"


def test_artifact_that_is_not_a_zip_is_a_fault() -> None:
    result = parse_results_zip(b"PK not really", "run 7")
    assert result.fault is not None and "not a zip archive" in result.fault.detail


def test_artifact_result_in_a_subfolder_is_found() -> None:
    text = remote.result_to_json(passing(a_request()))
    result = parse_results_zip(make_zip({"results/result.json": text}), "run 7")
    assert result.outcome is Outcome.completed


# -- the target repository -------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "https://github.com/volcengine/verl.git",
        "https://github.com/volcengine/verl",
        "git@github.com:volcengine/verl.git",
        "ssh://git@github.example.com/volcengine/verl",
    ],
)
def test_origin_repository_reads_owner_and_name_from_the_clone(tmp_path: Path, url: str) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "remote", "add", "origin", url], check=True)
    assert origin_repository(tmp_path) == "volcengine/verl"


def test_clone_without_origin_is_a_fault_that_says_so(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    with pytest.raises(DispatchError, match=r"remote\.origin\.url is unset"):
        origin_repository(tmp_path)


# -- the workflow and the action -------------------------------------------------------


def test_workflow_inputs_are_exactly_what_the_backend_sends() -> None:
    assert set(dispatch_inputs(workflow_document())) == {i.value for i in Input}


def test_workflow_names_its_runs_by_run_id_and_takes_labels_and_timeout_from_inputs() -> None:
    document = workflow_document()
    assert document["run-name"] == RUN_NAME_PREFIX + "${{ inputs.run_id }}"
    (job,) = document["jobs"].values()
    assert job["runs-on"] == "${{ fromJSON(inputs.runs_on) }}"
    assert job["timeout-minutes"] == "${{ fromJSON(inputs.timeout_minutes) }}"
    assert document["permissions"] == {"contents": "read"}


def test_workflow_uploads_the_artifact_the_backend_downloads_even_after_a_failure() -> None:
    (job,) = workflow_document()["jobs"].values()
    upload = next(
        s for s in job["steps"] if s.get("uses", "").startswith("actions/upload-artifact")
    )
    assert upload["with"]["name"] == RESULTS_ARTIFACT
    assert upload["if"] == "${{ always() }}"


def test_workflow_checks_out_the_target_at_the_base_commit_and_uses_the_action() -> None:
    (job,) = workflow_document()["jobs"].values()
    checkouts = [s for s in job["steps"] if s.get("uses", "").startswith("actions/checkout")]
    target = next(s for s in checkouts if "repository" in s["with"])
    assert target["with"]["ref"] == "${{ inputs.base_commit }}"
    assert target["with"]["persist-credentials"] is False
    action = next(s for s in job["steps"] if s.get("uses", "").startswith("./"))
    assert (ROOT / action["uses"].removeprefix("./probewatch/") / "action.yml") == ACTION_FILE


def test_no_script_interpolates_an_input_directly() -> None:
    # An input spliced into `run:` is shell injection; inputs reach scripts through env: only.
    documents = [workflow_document(), yaml.safe_load(ACTION_FILE.read_text())]
    steps = [s for j in documents[0]["jobs"].values() for s in j["steps"]]
    steps += documents[1]["runs"]["steps"]
    scripts = [s["run"] for s in steps if "run" in s]
    assert scripts and not any("${{" in script for script in scripts)


def test_action_runs_the_remote_entry_point_with_flags_it_accepts() -> None:
    steps = yaml.safe_load(ACTION_FILE.read_text())["runs"]["steps"]
    script = next(s["run"] for s in steps if "runners.backends.remote" in s.get("run", ""))
    command = script.split("-m runners.backends.remote", 1)[1].replace("\\\n", " ")
    args = [a.strip('"') for a in command.split()]
    parsed = remote._parser().parse_args(args)
    assert parsed.request_env == "PROBEWATCH_REQUEST" and parsed.out == Path("$RESULTS")


def test_request_json_document_is_what_the_runner_reads() -> None:
    request = a_request()
    assert remote.read_request_text(request_to_json(request)) == request_to_json(request)
