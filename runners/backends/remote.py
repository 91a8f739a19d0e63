"""The entry point a remote runner executes: one serialized request in, one result out.

A self-hosted Actions runner (through the composite action) and a Docker
container both run ``python -m runners.backends.remote``: it reads the request (a file,
an environment variable, inline gzip+base64 text or an https URL), points it
at the clone this machine has and at this machine's copy of the shared
environment (built here from the request's environment spec when this runner
has none: the same requirements resolved in the same era, with this runner's
own overrides, such as its CUDA build of torch), runs it through the local
backend and writes ``result.json`` (the :class:`RunResult`) and ``junit.xml``
into the output folder, atomically.
Whatever goes wrong, a result is written: a request that cannot be read or run
becomes a fault result, so the caller always has something to collect. The
exit status is 0 when the run produced outcomes and 3 for a fault, so a
failed harness shows as a failed job.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import subprocess
import sys
import urllib.request
import xml.etree.ElementTree as ET
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from functools import partial
from pathlib import Path

from probewatch.disk import write_atomic
from probewatch.errors import RunnerError
from runners.backends.serialize import (
    JUNIT_FILE,
    RESULT_FILE,
    SerializationError,
    decode_inline,
    is_url_reference,
    request_from_json,
    result_to_json,
)
from runners.testrun.junit import NODEID_PROPERTY, OUTCOME_PROPERTY
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

EXIT_OK, EXIT_FAULT = 0, 3
URL_TOKEN_ENV = "PROBEWATCH_REQUEST_TOKEN"  # a secret of the runner, never a workflow input
FETCH_TIMEOUT_S = 60.0
# junit element for each status that is not a plain pass (pytest writes the same shapes).
JUNIT_ELEMENTS = {
    TestStatus.failed: "failure",
    TestStatus.error: "error",
    TestStatus.timeout: "error",
    TestStatus.skipped: "skipped",
    TestStatus.xfailed: "skipped",
}

Runner = Callable[[RunRequest], RunResult]


class RemoteError(RunnerError):
    """A request this runner cannot take; becomes a fault result."""

    def __init__(self, kind: FaultKind, detail: str, retryable: bool = False) -> None:
        super().__init__(detail)
        self.fault = Fault(kind, detail, retryable)


def read_request_text(value: str) -> str:
    """The request document behind ``value``: inline text, an https URL, or JSON itself."""
    if value.startswith("b64gz:"):
        return decode_inline(value)
    if is_url_reference(value):
        return fetch(value)
    return value


def fetch(url: str) -> str:
    headers = {"Accept": "application/json"}
    token = os.environ.get(URL_TOKEN_ENV)
    if token:
        headers["Authorization"] = f"Bearer {token}"
    try:
        with urllib.request.urlopen(  # the caller checked: http(s) only
            urllib.request.Request(url, headers=headers), timeout=FETCH_TIMEOUT_S
        ) as answer:
            return str(answer.read().decode())
    except OSError as exc:
        raise RemoteError(FaultKind.network, f"cannot fetch the request: {exc}", True) from exc


@dataclasses.dataclass(frozen=True)
class RunnerEnvironment:
    """This runner's side of environments: its home, and the pins it imposes on every build."""

    home: Path | None = None
    overrides: tuple[str, ...] = ()  # e.g. "torch==2.5.1+cu124"
    find_links: tuple[Path, ...] = ()  # folders of local wheels for those overrides


def localize(
    request: RunRequest, *, repo: Path | None, env_home: Path | RunnerEnvironment | None
) -> RunRequest:
    """The request pointed at this machine's clone and this machine's environment."""
    if isinstance(env_home, RunnerEnvironment):
        runner_env = env_home
    else:
        runner_env = RunnerEnvironment(env_home)
    if repo is not None:
        request = dataclasses.replace(request, repo=repo.resolve())
    if request.environment is not None:
        environment = _local_environment(request.environment, runner_env)
        request = dataclasses.replace(request, environment=environment)
    return request


def _local_environment(ref: EnvironmentRef, runner_env: RunnerEnvironment) -> EnvironmentRef:
    if runner_env.home is not None:
        from runners.env import EnvHome, environment_ref
        from runners.env.build import is_ready

        home = EnvHome(runner_env.home)
        if is_ready(home.env_dir(ref.lock_hash)):
            return environment_ref(home, ref.lock_hash)
    if ref.python.exists():
        return ref  # a shared volume mounted at the same path (the Docker backend does this)
    if runner_env.home is not None and ref.spec is not None:
        return build_from_spec(ref.spec, runner_env)
    folder = runner_env.home
    looked = f"{folder}/envs/{ref.lock_hash} or {ref.root}" if folder else str(ref.root)
    raise RemoteError(
        FaultKind.environment_build,
        f"environment {ref.lock_hash} is not on this runner (looked in {looked}) and the request "
        "carries no spec to build it from: build it here first",
        retryable=True,
    )


def build_from_spec(spec: EnvironmentSpec, runner_env: RunnerEnvironment) -> EnvironmentRef:
    """This runner's environment for ``spec``: resolved in its era with this runner's
    overrides, built once per lock hash under this runner's home."""
    from runners.env import EnvError, EnvHome, RunnerOverrides, ensure_environment, resolve
    from runners.env.uv import Uv

    assert runner_env.home is not None
    home = EnvHome(runner_env.home)
    home.create()
    uv = Uv(home.uv_cache)
    era = datetime.fromisoformat(spec.exclude_newer) if spec.exclude_newer else None
    overrides = RunnerOverrides(runner_env.overrides, runner_env.find_links)
    python = python_for(spec.python_version)
    try:
        lock = resolve(
            spec.requirements, python=python, uv=uv, overrides=overrides, exclude_newer=era
        )
        return ensure_environment(lock, home, uv).ref
    except EnvError as exc:
        raise RemoteError(
            FaultKind.environment_build, f"building the environment here failed: {exc}"
        ) from exc


def _minor_of(python: Path) -> str:
    """``3.11`` for a working interpreter, "" for one that does not run."""
    from runners.env.lock import interpreter

    try:
        return ".".join(interpreter(python).version.split(".")[:2])
    except (OSError, subprocess.CalledProcessError, ValueError):
        return ""


def python_for(version: str) -> Path:
    """An interpreter of ``version``'s major.minor on this runner (this one's when it fits)."""
    wanted = ".".join(version.split(".")[:2])
    mine = f"{sys.version_info.major}.{sys.version_info.minor}"
    if not wanted or wanted == mine:
        return Path(sys.executable)
    found = shutil.which(f"python{wanted}")
    if found is None or _minor_of(Path(found)) != wanted:  # a shim (pyenv) may name what is absent
        raise RemoteError(
            FaultKind.environment_build,
            f"the environment needs Python {wanted}; this runner has {mine} and no python{wanted}",
        )
    return Path(found)


def local_runner(work: Path | None = None) -> Runner:
    """The local backend's run function, work trees under ``work`` (default: the temp folder).

    Work trees are shared clones: they only read this machine's clone, which a
    container mounts read-only.
    """
    try:
        from runners.backends.local import LocalBackend
        from runners.workspace import WorkspaceMode
    except ImportError as exc:
        raise RemoteError(FaultKind.internal, f"the local backend is not installed: {exc}") from exc
    return LocalBackend(workspace_root=work, mode=WorkspaceMode.shared).run


def execute(
    request_text: str,
    *,
    repo: Path | None = None,
    env_home: Path | RunnerEnvironment | None = None,
    runner: Callable[[], Runner] = local_runner,
) -> RunResult:
    """Read, localize and run a request; every failure becomes a fault result."""
    try:
        request = localize(
            request_from_json(read_request_text(request_text)), repo=repo, env_home=env_home
        )
        return runner()(request)
    except SerializationError as exc:
        return RunResult(outcome=Outcome.fault, fault=Fault(FaultKind.internal, str(exc), False))
    except RemoteError as exc:
        return RunResult(outcome=Outcome.fault, fault=exc.fault)


def write_results(result: RunResult, out: Path) -> None:
    """``result.json`` and ``junit.xml`` in ``out``, each replaced atomically."""
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / RESULT_FILE, result_to_json(result))
    write_atomic(out / JUNIT_FILE, junit_xml(result))


def junit_xml(result: RunResult) -> str:
    """The per-test outcomes as JUnit XML, for CI pages that render test reports."""
    elements = [JUNIT_ELEMENTS.get(test.status) for test in result.tests]
    harness = [] if result.fault is None else ["error"]
    suite = ET.Element(
        "testsuite",
        name="probewatch",
        tests=str(len(elements) + len(harness)),
        failures=str(elements.count("failure")),
        errors=str(elements.count("error") + len(harness)),
        skipped=str(elements.count("skipped")),
    )
    for test, element in zip(result.tests, elements, strict=True):
        _testcase(suite, test, element)
    if result.fault is not None:
        case = ET.SubElement(suite, "testcase", classname="probewatch", name="harness")
        ET.SubElement(case, "error", message=f"{result.fault.kind}: {result.fault.detail}")
    return ET.tostring(suite, encoding="unicode", xml_declaration=True)


def _testcase(suite: ET.Element, test: TestCaseResult, element: str | None) -> None:
    """One testcase the way pytest writes it, plus the exact node id and status as properties."""
    file, _, rest = test.node_id.partition("::")
    *classes, name = rest.split("::") if rest else [file]
    dotted = ".".join([file.removesuffix(".py").replace("/", "."), *classes])
    case = ET.SubElement(
        suite, "testcase", classname=dotted, name=name, file=file, time=f"{test.duration_s:.3f}"
    )
    properties = ET.SubElement(case, "properties")
    ET.SubElement(properties, "property", name=NODEID_PROPERTY, value=test.node_id)
    ET.SubElement(properties, "property", name=OUTCOME_PROPERTY, value=test.status.value)
    if element is not None:
        child = ET.SubElement(case, element, message=test.message or test.status.value)
        if test.status is TestStatus.xfailed:
            child.set("type", "pytest.xfail")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m runners.backends.remote", description=__doc__)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--request", help="the request: JSON, b64gz:… inline text or an URL")
    source.add_argument("--request-file", type=Path, help="a file holding the request")
    source.add_argument("--request-env", help="an environment variable holding the request")
    parser.add_argument("--out", type=Path, required=True, help="folder for result and junit")
    parser.add_argument("--repo", type=Path, help="this machine's clone holding the base commit")
    parser.add_argument("--env-home", type=Path, help="this machine's PROBEWATCH_HOME")
    parser.add_argument(
        "--override",
        action="append",
        default=[],
        help="a pin this runner imposes on environments it builds (repeatable)",
    )
    parser.add_argument(
        "--find-links", type=Path, action="append", default=[], help="a folder of local wheels"
    )
    parser.add_argument("--work", type=Path, help="folder for work trees (default: temp folder)")
    return parser


OVERRIDES_ENV = "PROBEWATCH_RUNNER_OVERRIDES"  # "torch==2.5.1+cu124 torchvision==0.20.1+cu124"
FIND_LINKS_ENV = "PROBEWATCH_RUNNER_FIND_LINKS"  # folders, separated by ":"


def runner_environment(args: argparse.Namespace, environ: Mapping[str, str]) -> RunnerEnvironment:
    """This runner's home and pins: the flags, else the runner service's own variables."""
    overrides = args.override or environ.get(OVERRIDES_ENV, "").split()
    links = args.find_links or [
        Path(p) for p in environ.get(FIND_LINKS_ENV, "").split(os.pathsep) if p
    ]
    return RunnerEnvironment(args.env_home, tuple(overrides), tuple(links))


def _request_value(args: argparse.Namespace) -> str:
    if args.request_file is not None:
        return str(args.request_file.read_text())
    if args.request_env is not None:
        return os.environ.get(args.request_env, "")
    return str(args.request)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        value = _request_value(args)
    except OSError as exc:
        result = RunResult(outcome=Outcome.fault, fault=Fault(FaultKind.internal, str(exc), False))
    else:
        runner = partial(local_runner, args.work)
        runner_env = RunnerEnvironment(args.env_home, tuple(args.override), tuple(args.find_links))
        result = execute(value, repo=args.repo, env_home=runner_env, runner=runner)
    write_results(result, args.out)
    print(f"probewatch: {result.outcome}: {len(result.tests)} test(s)", file=sys.stderr)
    if result.fault is not None:
        print(f"probewatch: fault {result.fault.kind}: {result.fault.detail}", file=sys.stderr)
    return EXIT_FAULT if result.outcome is Outcome.fault else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
