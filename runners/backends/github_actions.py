"""Runs on self-hosted GitHub Actions runners: dispatch, find, follow, collect.

The backend dispatches ``probewatch-run.yml`` (``gh_actions/workflows``) with a
fresh run id, the request (inline as gzip+base64, or as a URL a payload store
gave when it is too large for a workflow input) and the pool's ``runs-on``
labels. Finding the run it created: the dispatch endpoint has long answered
204 with no run id, and only recently returns one when asked
(``return_run_details``); the backend asks, and when the answer carries no id
(older GitHub Enterprise Server) it lists the workflow's ``workflow_dispatch``
runs created since just before the dispatch and takes the one whose name
carries the run id, because the workflow's ``run-name`` echoes that input.
"Created after + event" alone is ambiguous when two dispatches race; the id is
not. It then polls the run with backoff (conditional requests, which cost no
quota while nothing changed) until it completes, a queue limit says no runner
took it, or the overall deadline passes (the run is cancelled then), and turns
the results artifact's ``result.json`` into a :class:`RunResult`. How a run
ended and what went wrong map to faults through data tables; GitHub's own
rate-limit answers (403/429 with Retry-After) are absorbed by PyGithub's retry
with a cap on how long it may wait.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import subprocess
import time
import uuid
import zipfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeVar

from probewatch.errors import RunnerError
from runners.backends.placement import describe_capacity, describe_hardware, fits, unschedulable
from runners.backends.serialize import (
    RESULT_FILE,
    SerializationError,
    encode_inline,
    request_to_json,
    result_from_json,
)
from runners.types import Capacity, Fault, FaultKind, Outcome, RunRequest, RunResult

if TYPE_CHECKING:
    import github
    from github.Repository import Repository
    from github.Workflow import Workflow
    from github.WorkflowRun import WorkflowRun

WORKFLOW_FILE = "probewatch-run.yml"
RESULTS_ARTIFACT = "probewatch-results"
RUN_NAME_PREFIX = "probewatch run "  # the workflow's run-name: "probewatch run <run_id>"
# GitHub caps a dispatch's inputs at 65,535 characters in all; the other inputs are short.
INLINE_LIMIT = 60_000
MAX_ARTIFACT_BYTES = 256 * 1024**2
CLOCK_SKEW = timedelta(minutes=2)  # our clock against GitHub's run timestamps
COMPLETED = "completed"
QUEUED_STATUSES = frozenset({"queued", "waiting", "pending", "requested"})
_T = TypeVar("_T")


class Input(StrEnum):
    """The workflow's dispatch inputs (``gh_actions/workflows/probewatch-run.yml``)."""

    run_id = "run_id"
    request = "request"
    repository = "repository"
    base_commit = "base_commit"
    runs_on = "runs_on"
    timeout_minutes = "timeout_minutes"


# How a completed run that is not success/failure ended: (fault kind, retryable, meaning).
CONCLUSION_FAULTS: Mapping[str, tuple[FaultKind, bool, str]] = {
    "timed_out": (FaultKind.harness_timeout, True, "the job ran past its timeout-minutes"),
    "cancelled": (FaultKind.runner_lost, True, "the run was cancelled or lost its runner"),
    "stale": (FaultKind.runner_lost, True, "GitHub marked the run stale"),
    "startup_failure": (FaultKind.internal, False, "the workflow could not start"),
    "action_required": (FaultKind.internal, False, "the run waits for an approval"),
    "skipped": (FaultKind.internal, False, "the job was skipped"),
    "neutral": (FaultKind.internal, False, "the run ended neutral without results"),
}
# What a GitHub error answer means here: status -> (fault kind, retryable, meaning).
GITHUB_FAULTS: Mapping[int, tuple[FaultKind, bool, str]] = {
    401: (FaultKind.internal, False, "GitHub refused the credentials"),
    403: (FaultKind.internal, False, "the token may not dispatch workflows (needs actions:write)"),
    404: (FaultKind.internal, False, "the workflow is not there or the token cannot see it"),
    410: (FaultKind.internal, False, "the results artifact has expired"),
    422: (FaultKind.internal, False, "GitHub refused the dispatch"),
}
UNKNOWN_GITHUB_FAULT = (FaultKind.network, True, "GitHub did not answer as expected")


class PayloadStore(Protocol):
    """Somewhere a request too large for a workflow input is kept for the runner to fetch."""

    def put(self, key: str, document: str) -> str:
        """Store ``document`` and return an https URL the runner can GET it from."""
        ...


@dataclass(frozen=True)
class PollPolicy:
    """How often and how long to look: waits grow from ``first_s`` by ``factor`` to ``max_s``."""

    first_s: float = 5.0
    factor: float = 1.5
    max_s: float = 60.0
    find_timeout_s: float = 120.0  # until the dispatched run shows up in the run list
    queue_timeout_s: float = 6 * 3600.0  # until a runner takes it

    def intervals(self) -> Iterator[float]:
        interval = self.first_s
        while True:
            yield interval
            interval = min(self.max_s, interval * self.factor)


@dataclass(frozen=True)
class ActionsPool:
    """A pool of self-hosted runners sharing one label set, and the workflow that reaches it."""

    workflow_repo: str  # "owner/name" holding .github/workflows/probewatch-run.yml
    labels: tuple[str, ...] = ("self-hosted", "linux")
    gpus: int = 0
    gpu_type: str | None = None
    slots: int = 1  # runners in the pool: how many runs it takes at once
    workflow: str = WORKFLOW_FILE
    ref: str = "main"
    setup_minutes: int = 30  # checkout and environment set-up, on top of the run's own limit
    name: str = "github-actions"
    run_details: bool = True  # ask the dispatch for the run id; off: always match by name


class DispatchError(RunnerError):
    """A run that could not be dispatched or followed; carries its fault."""

    def __init__(self, fault: Fault) -> None:
        super().__init__(fault.detail)
        self.fault = fault


def origin_repository(repo: Path) -> str:
    """``owner/name`` of the GitHub repository a local clone's ``origin`` points at."""
    try:
        url = subprocess.run(
            ["git", "-C", str(repo), "config", "--get", "remote.origin.url"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except subprocess.CalledProcessError:
        url = ""
    path = url.removesuffix(".git").replace(":", "/").rstrip("/")
    parts = path.split("/")
    if len(parts) < 2 or not all(parts[-2:]):
        raise DispatchError(
            Fault(
                FaultKind.internal,
                f"cannot tell which GitHub repository {repo} mirrors: remote.origin.url "
                f"is {url or 'unset'}",
                retryable=False,
            )
        )
    return "/".join(parts[-2:])


def job_timeout_minutes(request: RunRequest, pool: ActionsPool) -> int:
    return math.ceil(request.timeout_run_s / 60) + pool.setup_minutes


def _fault(kind: FaultKind, detail: str, retryable: bool = True) -> RunResult:
    return RunResult(outcome=Outcome.fault, fault=Fault(kind, detail, retryable))


class GitHubActionsBackend:
    """Dispatches each run to a pool of self-hosted runners and collects its results artifact."""

    def __init__(
        self,
        client: github.Github,
        pool: ActionsPool,
        *,
        poll: PollPolicy | None = None,
        payload_store: PayloadStore | None = None,
        repository_of: Callable[[RunRequest], str] = lambda r: origin_repository(r.repo),
        new_run_id: Callable[[], str] = lambda: uuid.uuid4().hex,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.client = client
        self.pool = pool
        self.name = pool.name
        self.poll = poll or PollPolicy()
        self.payload_store = payload_store
        self.repository_of = repository_of
        self.new_run_id = new_run_id
        self.clock = clock
        self.sleep = sleep
        self._repository: Repository | None = None

    def capacity(self) -> Capacity:
        p = self.pool
        return Capacity(cpu_slots=p.slots, gpus=p.gpus, gpu_type=p.gpu_type, labels=p.labels)

    def run(self, request: RunRequest) -> RunResult:
        capacity = self.capacity()
        if not fits(capacity, request.hardware):
            return unschedulable(
                f"needs {describe_hardware(request.hardware)}; "
                f"{self.name} offers {describe_capacity(capacity)}"
            )
        try:
            run = self._dispatch(request)
            return self._collect(self._follow(run, request))
        except DispatchError as exc:
            return RunResult(outcome=Outcome.fault, fault=exc.fault)

    # -- dispatch ----------------------------------------------------------------

    def _dispatch(self, request: RunRequest) -> WorkflowRun:
        run_id = self.new_run_id()
        inputs = self.inputs(request, run_id)
        workflow = self._call(lambda: self._repo().get_workflow(self.pool.workflow))
        since = datetime.now(UTC) - CLOCK_SKEW
        created = self._call(lambda: self._create_dispatch(workflow, inputs))
        if created is not None:
            return self._call(lambda: self._repo().get_workflow_run(created))
        return self._find(workflow, run_id, since)

    def _create_dispatch(self, workflow: Workflow, inputs: dict[str, str]) -> int | None:
        """Dispatch; the new run's id when GitHub tells it (asked for, and answered 200)."""
        if not self.pool.run_details:
            workflow.create_dispatch(self.pool.ref, inputs, throw=True)
            return None
        answer: WorkflowRun | bool = workflow.create_dispatch(
            self.pool.ref, inputs, throw=True, return_run_details=True
        )
        # A server that ignores the flag answers 204, and PyGithub returns True.
        return None if isinstance(answer, bool) else answer.id

    def inputs(self, request: RunRequest, run_id: str) -> dict[str, str]:
        """The dispatch inputs for ``request``: all strings, no secrets."""
        return {
            Input.run_id: run_id,
            Input.request: self._payload(request, run_id),
            Input.repository: self.repository_of(request),
            Input.base_commit: request.base_commit,
            Input.runs_on: json.dumps(list(self.pool.labels)),
            Input.timeout_minutes: str(job_timeout_minutes(request, self.pool)),
        }

    def _payload(self, request: RunRequest, run_id: str) -> str:
        document = request_to_json(request)
        inline = encode_inline(document)
        if len(inline) <= INLINE_LIMIT:
            return inline
        if self.payload_store is None:
            raise DispatchError(
                Fault(
                    FaultKind.internal,
                    f"the request is {len(inline)} characters inline, over the {INLINE_LIMIT} a "
                    "workflow input may carry; configure a payload store",
                    retryable=False,
                )
            )
        return self.payload_store.put(run_id, document)

    def _find(self, workflow: Workflow, run_id: str, since: datetime) -> WorkflowRun:
        """The dispatched run, by the run id its name carries (dispatch answered without an id)."""
        deadline = self.clock() + self.poll.find_timeout_s
        created = ">=" + since.strftime("%Y-%m-%dT%H:%M:%SZ")
        for interval in self.poll.intervals():
            runs = self._call(
                lambda: list(workflow.get_runs(event="workflow_dispatch", created=created))
            )
            found = [r for r in runs if r.display_title == RUN_NAME_PREFIX + run_id]
            if found:
                return found[-1]  # newest first: the oldest match is the dispatch's own run
            if self.clock() >= deadline:
                break
            self.sleep(min(interval, max(0.0, deadline - self.clock())))
        raise DispatchError(
            Fault(
                FaultKind.runner_lost,
                f"dispatched {self.pool.workflow} (run id {run_id}) but no such run appeared "
                f"within {self.poll.find_timeout_s:.0f} s",
            )
        )

    # -- follow ------------------------------------------------------------------

    def _follow(self, run: WorkflowRun, request: RunRequest) -> WorkflowRun:
        """Poll ``run`` until it completes; cancel it and raise when a limit passes."""
        start = self.clock()
        overall = start + self.poll.queue_timeout_s + 60 * job_timeout_minutes(request, self.pool)
        for interval in self.poll.intervals():
            if run.status == COMPLETED:
                return run
            now = self.clock()
            waited = now - start
            if run.status in QUEUED_STATUSES and waited >= self.poll.queue_timeout_s:
                labels = list(self.pool.labels)
                why = f"was not taken by a runner labelled {labels} within {waited:.0f} s"
                self._give_up(run, FaultKind.runner_lost, why)
            if now >= overall:
                self._give_up(
                    run, FaultKind.harness_timeout, f"still {run.status} after {waited:.0f} s"
                )
            self.sleep(min(interval, max(0.0, overall - now)))
            self._refresh(run)
        raise AssertionError("unreachable: intervals() never ends")

    def _refresh(self, run: WorkflowRun) -> None:
        import github

        # Transient after PyGithub's own retries: the deadline bounds how long we keep trying.
        with contextlib.suppress(github.GithubException, OSError):
            run.update()  # conditional: a 304 while nothing changed costs no quota

    def _give_up(self, run: WorkflowRun, kind: FaultKind, why: str) -> None:
        import github

        # It may have completed meanwhile: the fault stands either way.
        with contextlib.suppress(github.GithubException, OSError):
            run.cancel()
        raise DispatchError(Fault(kind, f"workflow run {run.id} {why}: cancelled"))

    # -- collect -----------------------------------------------------------------

    def _collect(self, run: WorkflowRun) -> RunResult:
        conclusion = run.conclusion or "unknown"
        if conclusion in CONCLUSION_FAULTS:
            kind, retryable, meaning = CONCLUSION_FAULTS[conclusion]
            return _fault(kind, f"workflow run {run.id}: {meaning} ({run.html_url})", retryable)
        data = self._artifact(run)
        if data is None:
            why = "succeeded" if conclusion == "success" else f"ended {conclusion}"
            return _fault(
                FaultKind.internal,
                f"workflow run {run.id} {why} but left no {RESULTS_ARTIFACT!r} artifact: it "
                f"failed before writing results, see {run.html_url}",
            )
        return parse_results_zip(data, f"workflow run {run.id}")

    def _artifact(self, run: WorkflowRun) -> bytes | None:
        artifacts = self._call(lambda: list(run.get_artifacts()))
        found = [a for a in artifacts if a.name == RESULTS_ARTIFACT and not a.expired]
        if not found:
            return None
        return self._call(lambda: self._download(found[0].archive_download_url))

    def _download(self, url: str) -> bytes:
        status, _headers, chunks = self.client.requester.getStream(url, chunk_size=1 << 16)
        if status != 200:
            raise DispatchError(Fault(FaultKind.network, f"artifact download answered {status}"))
        data = bytearray()
        for chunk in chunks:
            data += chunk
            if len(data) > MAX_ARTIFACT_BYTES:
                raise DispatchError(
                    Fault(FaultKind.internal, "results artifact exceeds 256 MiB", retryable=False)
                )
        return bytes(data)

    # -- GitHub calls ------------------------------------------------------------

    def _repo(self) -> Repository:
        if self._repository is None:  # fetched once: every call below hangs off it
            self._repository = self.client.get_repo(self.pool.workflow_repo)
        return self._repository

    def _call(self, call: Callable[[], _T]) -> _T:
        """Run a PyGithub call; its failure, after PyGithub's retries, becomes a fault."""
        import github
        import requests

        try:
            return call()
        except github.GithubException as exc:
            kind, retryable, meaning = GITHUB_FAULTS.get(exc.status, UNKNOWN_GITHUB_FAULT)
            message = exc.data.get("message") if isinstance(exc.data, dict) else exc.data
            detail = f"{meaning}: {exc.status} {message} ({self.pool.workflow_repo})"
            raise DispatchError(Fault(kind, detail, retryable)) from exc
        except (requests.exceptions.RequestException, OSError) as exc:
            raise DispatchError(Fault(FaultKind.network, f"GitHub unreachable: {exc}")) from exc


def parse_results_zip(data: bytes, where: str) -> RunResult:
    """The :class:`RunResult` in a results artifact (a zip holding ``result.json``)."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            names = {Path(n).name: n for n in archive.namelist()}
            if RESULT_FILE not in names:
                listed = ", ".join(sorted(names)) or "nothing"
                return _fault(
                    FaultKind.internal, f"{where}: the artifact holds {listed}, no {RESULT_FILE}"
                )
            text = archive.read(names[RESULT_FILE])
    except zipfile.BadZipFile as exc:
        return _fault(FaultKind.internal, f"{where}: the artifact is not a zip archive ({exc})")
    try:
        return result_from_json(text)
    except SerializationError as exc:
        return _fault(FaultKind.internal, f"{where}: {exc}", retryable=False)
