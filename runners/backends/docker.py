"""Runs in a Docker container: a pure container specification and the engine path.

:func:`container_spec` turns (request, image configuration, host mounts) into a
:class:`ContainerSpec` with no I/O, so every choice is testable without an
engine: the image for the run's base (CUDA + Python, or a CPU image), the
shared environments and the asset cache read-only at their host paths (a
virtual environment's shebangs and ``pyvenv.cfg`` name absolute paths, so they
must not move), the repository read-only, a scratch folder and the I/O folder
read-write, GPUs as a device request, no network (a test run never has one: the
local backend's sandbox gives it loopback only), memory and CPU limits and a
``/dev/shm`` sized for NCCL, and the run limits every backend applies
(runners/sandbox/limits.py) in Docker's own terms: the process count as the
container's ``pids_limit``, the file size and CPU time as its ``fsize`` and ``cpu``
ulimits (soft, and hard a grace later, as ``prlimit`` sets them locally). The container runs the
same entry point as a self-hosted Actions runner (:mod:`runners.backends.remote`), so a
run behaves alike on every backend. :class:`DockerBackend` writes the request,
starts the container through the docker SDK, waits with a harness guard, reads
the result the container wrote and always removes the container; engine
errors become :attr:`FaultKind.docker` faults through one table.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Any

from probewatch.errors import RunnerError
from runners.backends.placement import describe_capacity, describe_hardware, fits, unschedulable
from runners.backends.serialize import (
    RESULT_FILE,
    SerializationError,
    request_to_json,
    result_from_json,
    scrub_env,
)
from runners.env.assets import OFFLINE_FLAGS, asset_env
from runners.sandbox.limits import CPU_GRACE_S, DEFAULT_LIMITS
from runners.sandbox.limits import Limits as RunLimits
from runners.types import (
    Capacity,
    Fault,
    FaultKind,
    Outcome,
    RunRequest,
    RunResult,
    Sandboxing,
    SandboxKind,
)

GiB = 1024**3
CONTAINER_IO = PurePosixPath("/probewatch/io")
CONTAINER_WORK = PurePosixPath("/probewatch/work")
CONTAINER_REPO = PurePosixPath("/probewatch/repo")
REQUEST_FILE = "request.json"
LOG_TAIL_LINES = 200
LABEL_PREFIX = "io.probewatch"
IMAGE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# NCCL pins host memory and needs a deep stack; the engine's defaults refuse both.
GPU_ULIMITS = (("memlock", -1, -1), ("stack", 64 * 1024**2, 64 * 1024**2))
UNLIMITED_PIDS = -1  # the engine's word for no process limit
# A container has its own mount, PID and network namespaces: what the run is recorded as.
CONTAINER_SANDBOX = Sandboxing(SandboxKind.namespaces)


class DockerSpecError(RunnerError, ValueError):
    """A run that cannot be expressed as a container with this configuration."""


@dataclass(frozen=True)
class BaseImage:
    """One base image: Python with probewatch installed, on CUDA or not."""

    ref: str  # e.g. "ghcr.io/org/probewatch-base:cuda12.8-py3.11"
    python: str  # "3.11"
    cuda: str | None = None  # "12.8"; None for a CPU image
    gpu_types: tuple[str, ...] = ()  # GPUs this image is preferred for (e.g. B200: newer CUDA)


@dataclass(frozen=True)
class Limits:
    """Resource limits: a base for every run plus a share per GPU the run asks for. The
    process count, file size and CPU time are the run limits (DockerConfig.run_limits)."""

    mem_bytes: int = 16 * GiB
    cpus: float = 4.0
    shm_bytes: int = 2 * GiB
    mem_per_gpu_bytes: int = 64 * GiB
    cpus_per_gpu: float = 8.0
    shm_per_gpu_bytes: int = 8 * GiB  # NCCL's shared-memory transport grows with ranks


@dataclass(frozen=True)
class DockerConfig:
    images: tuple[BaseImage, ...]
    python: str = "3.11"  # preferred Python when several images fit
    limits: Limits = field(default_factory=Limits)
    run_limits: RunLimits = DEFAULT_LIMITS  # the same as the local backend's
    user: str | None = None  # "uid:gid": files in the scratch folder stay the caller's
    entry_python: str = "/opt/probewatch/bin/python"  # the image's interpreter with probewatch
    gpus: int = 0  # GPUs the engine's host offers
    gpu_type: str | None = None
    cpu_slots: int = 1


@dataclass(frozen=True)
class Mounts:
    """Host folders a run sees; caches keep their host path inside the container."""

    io: Path  # request in, result and junit out (read-write)
    work: Path  # scratch for the work tree (read-write)
    repo: Path  # the clone holding the base commit (read-only)
    environments: Path | None = None  # root of the shared environments (read-only)
    assets: Path | None = None  # weights, tokenizers, datasets (read-only)
    extra_read_only: tuple[Path, ...] = ()  # e.g. the Python installs venvs link to


@dataclass(frozen=True)
class VolumeMount:
    source: str
    target: str
    read_only: bool


@dataclass(frozen=True)
class GpuRequest:
    count: int
    capabilities: tuple[tuple[str, ...], ...] = (("gpu",),)


@dataclass(frozen=True)
class ContainerSpec:
    image: str
    command: tuple[str, ...]
    environment: Mapping[str, str]
    volumes: tuple[VolumeMount, ...]
    gpus: GpuRequest | None
    network_mode: str  # "none": a test run has no network
    mem_bytes: int
    nano_cpus: int
    pids_limit: int
    shm_bytes: int
    ulimits: tuple[tuple[str, int, int], ...]
    working_dir: str
    user: str | None
    labels: Mapping[str, str]


def choose_image(request: RunRequest, config: DockerConfig) -> BaseImage:
    """The image for the run's base: CUDA when it needs GPUs, CPU-only when it does not."""
    gpu_run = request.hardware.gpus > 0
    candidates = [i for i in config.images if (i.cuda is not None) == gpu_run]
    if not candidates and not gpu_run:
        candidates = list(config.images)  # a CUDA image runs CPU tests too, only bigger
    if not candidates:
        raise DockerSpecError(
            f"no CUDA image configured for a run that needs {describe_hardware(request.hardware)}"
        )
    wanted = (request.hardware.gpu_type or "").upper()
    return min(candidates, key=lambda i: _image_rank(i, wanted, config.python))


def _image_rank(image: BaseImage, gpu_type: str, python: str) -> tuple[bool, bool]:
    typed = bool(gpu_type) and gpu_type in (t.upper() for t in image.gpu_types)
    return (not typed, image.python != python)


def container_spec(request: RunRequest, config: DockerConfig, mounts: Mounts) -> ContainerSpec:
    """The container for ``request``: a pure function of its three arguments."""
    _check_mounts(request, mounts)
    image = choose_image(request, config)
    gpus = request.hardware.gpus
    limits = config.limits
    return ContainerSpec(
        image=image.ref,
        command=_command(config),
        environment=_environment(request, mounts),
        volumes=_volumes(mounts),
        gpus=GpuRequest(count=gpus) if gpus else None,
        network_mode="none",
        mem_bytes=limits.mem_bytes + gpus * limits.mem_per_gpu_bytes,
        nano_cpus=int((limits.cpus + gpus * limits.cpus_per_gpu) * 1e9),
        pids_limit=config.run_limits.processes or UNLIMITED_PIDS,
        shm_bytes=limits.shm_bytes + gpus * limits.shm_per_gpu_bytes,
        ulimits=run_ulimits(config.run_limits) + (GPU_ULIMITS if gpus else ()),
        working_dir=str(CONTAINER_WORK),
        user=config.user,
        labels=_labels(request),
    )


def run_ulimits(limits: RunLimits) -> tuple[tuple[str, int, int], ...]:
    """The run limits a process inherits, as (name, soft, hard) ulimits: the largest file
    one process may write, and its CPU seconds (SIGXCPU at the soft limit, SIGKILL at the
    hard one)."""
    found = []
    if limits.file_bytes is not None:
        found.append(("fsize", limits.file_bytes, limits.file_bytes))
    if limits.cpu_s is not None:
        found.append(("cpu", limits.cpu_s, limits.cpu_s + CPU_GRACE_S))
    return tuple(found)


def _check_mounts(request: RunRequest, mounts: Mounts) -> None:
    named: dict[str, Path | None] = {"io": mounts.io, "work": mounts.work, "repo": mounts.repo}
    named |= {"environments": mounts.environments, "assets": mounts.assets}
    for name, path in named.items():
        if path is not None and not path.is_absolute():
            raise DockerSpecError(f"mount {name!r} must be an absolute path: {path}")
    environment = request.environment
    if environment is None:
        return
    root = mounts.environments
    if root is None or not environment.python.is_relative_to(root):
        raise DockerSpecError(
            f"environment {environment.lock_hash} ({environment.python}) is not under the "
            f"mounted environments root {root}"
        )


def _command(config: DockerConfig) -> tuple[str, ...]:
    return (
        config.entry_python,
        "-m",
        "runners.backends.remote",
        "--request-file",
        str(CONTAINER_IO / REQUEST_FILE),
        "--out",
        str(CONTAINER_IO),
        "--repo",
        str(CONTAINER_REPO),
        "--work",
        str(CONTAINER_WORK),
    )


def _environment(request: RunRequest, mounts: Mounts) -> dict[str, str]:
    env: dict[str, str] = {}
    if request.environment is not None:
        env |= scrub_env(request.environment.env)
        # The host's PATH means nothing in the image: the environment's bin, then the image's.
        env["PATH"] = f"{request.environment.root / 'bin'}:{IMAGE_PATH}"
    env |= scrub_env(request.env)
    if mounts.assets is not None and "HF_HOME" not in env:
        env |= asset_env(mounts.assets)
    # Without a network a download can only hang: make the libraries fail at once instead.
    env |= OFFLINE_FLAGS
    # Home and temp are the scratch folder: the image is not ours to dirty, and it must exist.
    env |= {"HOME": str(CONTAINER_WORK), "TMPDIR": str(CONTAINER_WORK)}
    return env


def _volumes(mounts: Mounts) -> tuple[VolumeMount, ...]:
    volumes = [
        VolumeMount(str(mounts.io), str(CONTAINER_IO), read_only=False),
        VolumeMount(str(mounts.work), str(CONTAINER_WORK), read_only=False),
        VolumeMount(str(mounts.repo), str(CONTAINER_REPO), read_only=True),
    ]
    shared = (mounts.environments, mounts.assets, *mounts.extra_read_only)
    volumes += [VolumeMount(str(p), str(p), read_only=True) for p in shared if p is not None]
    return tuple(volumes)


def _labels(request: RunRequest) -> dict[str, str]:
    labels = {f"{LABEL_PREFIX}.base": request.base_commit, f"{LABEL_PREFIX}.run": request.label}
    if request.environment is not None:
        labels[f"{LABEL_PREFIX}.lock"] = request.environment.lock_hash
    return labels


def to_run_kwargs(spec: ContainerSpec) -> dict[str, Any]:
    """Keyword arguments of ``DockerClient.containers.run`` for ``spec`` (detached)."""
    from docker.types import DeviceRequest, Ulimit

    requests = []
    if spec.gpus is not None:
        capabilities = [list(c) for c in spec.gpus.capabilities]
        requests = [DeviceRequest(count=spec.gpus.count, capabilities=capabilities)]
    return {
        "image": spec.image,
        "command": list(spec.command),
        "environment": dict(spec.environment),
        "volumes": {
            v.source: {"bind": v.target, "mode": "ro" if v.read_only else "rw"}
            for v in spec.volumes
        },
        "device_requests": requests,
        "network_mode": spec.network_mode,
        "mem_limit": spec.mem_bytes,
        "memswap_limit": spec.mem_bytes,  # no swap: a swapping run only looks slow
        "nano_cpus": spec.nano_cpus,
        "pids_limit": spec.pids_limit,
        "shm_size": spec.shm_bytes,
        "ulimits": [Ulimit(name=n, soft=s, hard=h) for n, s, h in spec.ulimits],
        "working_dir": spec.working_dir,
        "user": spec.user,
        "labels": dict(spec.labels),
        "security_opt": ["no-new-privileges"],
        "detach": True,
    }


# --------------------------------------------------------------- the engine


# Engine errors, most specific first: (docker.errors class, retryable, what it means).
DOCKER_FAULTS: tuple[tuple[str, bool, str], ...] = (
    ("ImageNotFound", False, "image not on the engine: build or pull it first"),
    ("NotFound", True, "the container vanished while it ran"),
    ("APIError", True, "the engine refused the request"),
    ("DockerException", True, "no Docker engine answered"),
)


def docker_fault(exc: Exception) -> Fault:
    """The fault an exception from the docker SDK (or its HTTP layer) stands for."""
    import docker.errors

    for name, retryable, meaning in DOCKER_FAULTS:
        if isinstance(exc, getattr(docker.errors, name)):
            return Fault(FaultKind.docker, f"{meaning}: {exc}", retryable=retryable)
    return Fault(FaultKind.docker, f"the engine connection failed: {exc}", retryable=True)


def _engine_errors() -> tuple[type[Exception], ...]:
    import docker.errors
    import requests

    return (docker.errors.DockerException, requests.exceptions.RequestException)


def _default_client() -> Any:
    import docker

    return docker.from_env()


class DockerBackend:
    """A Docker engine on this host (or at ``DOCKER_HOST``) running one container per run."""

    name = "docker"

    def __init__(
        self,
        config: DockerConfig,
        *,
        scratch: Path,
        environments: Path | None = None,
        assets: Path | None = None,
        extra_read_only: tuple[Path, ...] = (),
        client_factory: Callable[[], Any] = _default_client,
        guard_s: float = 120.0,
    ) -> None:
        self.config = config
        self.scratch = scratch
        self.environments = environments
        self.assets = assets
        self.extra_read_only = extra_read_only
        self.client_factory = client_factory
        self.guard_s = guard_s  # beyond the run's own limit, which the container enforces

    def capacity(self) -> Capacity:
        c = self.config
        return Capacity(cpu_slots=c.cpu_slots, gpus=c.gpus, gpu_type=c.gpu_type, labels=("docker",))

    def run(self, request: RunRequest) -> RunResult:
        capacity = self.capacity()
        if not fits(capacity, request.hardware):
            return unschedulable(
                f"needs {describe_hardware(request.hardware)}; "
                f"{self.name} offers {describe_capacity(capacity)}"
            )
        self.scratch.mkdir(parents=True, exist_ok=True)
        io = Path(tempfile.mkdtemp(prefix="io-", dir=self.scratch))
        work = Path(tempfile.mkdtemp(prefix="work-", dir=self.scratch))
        try:
            mounts = Mounts(
                io=io,
                work=work,
                repo=request.repo.resolve(),
                environments=self.environments,
                assets=self.assets,
                extra_read_only=self.extra_read_only,
            )
            try:
                spec = container_spec(request, self.config, mounts)
            except DockerSpecError as exc:
                return _fault(FaultKind.internal, str(exc), retryable=False)
            (io / REQUEST_FILE).write_text(request_to_json(request))
            return self._run(spec, io, request)
        finally:
            # The container runs as config.user, so what it wrote is ours to remove.
            shutil.rmtree(io, ignore_errors=True)
            shutil.rmtree(work, ignore_errors=True)

    def _run(self, spec: ContainerSpec, io: Path, request: RunRequest) -> RunResult:
        errors = _engine_errors()
        try:
            container = self.client_factory().containers.run(**to_run_kwargs(spec))
        except errors as exc:
            return RunResult(outcome=Outcome.fault, fault=docker_fault(exc))
        try:
            result = self._follow(container, io, request.timeout_run_s + self.guard_s)
            # The entry point inside may find no bubblewrap: the container is the sandbox.
            return replace(result, sandbox=CONTAINER_SANDBOX)
        except errors as exc:
            return RunResult(outcome=Outcome.fault, fault=docker_fault(exc))
        finally:
            _remove(container)

    def _follow(self, container: Any, io: Path, wait_s: float) -> RunResult:
        import requests

        try:
            status = container.wait(timeout=wait_s)
        except (requests.exceptions.ReadTimeout, requests.exceptions.ConnectionError):
            container.kill()
            return _fault(
                FaultKind.harness_timeout, f"container still running after {wait_s:.0f} s: killed"
            )
        log = container.logs(tail=LOG_TAIL_LINES).decode(errors="replace")
        container.reload()
        oom = bool(container.attrs.get("State", {}).get("OOMKilled"))
        return read_results(io, int(status.get("StatusCode", -1)), oom, log)


def _remove(container: Any) -> None:
    try:
        container.remove(force=True)
    except _engine_errors():
        pass  # already gone: the engine removed it or lost it; nothing left to clean


def _fault(kind: FaultKind, detail: str, *, retryable: bool = True, log: str = "") -> RunResult:
    return RunResult(outcome=Outcome.fault, fault=Fault(kind, detail, retryable), log=log)


def read_results(io: Path, exit_code: int, oom_killed: bool, log: str) -> RunResult:
    """The run's result from what the container left in its I/O folder."""
    result_file = io / RESULT_FILE
    if result_file.is_file():
        try:
            return result_from_json(result_file.read_text())
        except SerializationError as exc:
            return _fault(FaultKind.internal, f"unreadable {RESULT_FILE}: {exc}", log=log)
    if oom_killed:
        return _fault(
            FaultKind.harness_oom,
            "the container was killed for memory before it wrote a result",
            log=log,
        )
    return _fault(
        FaultKind.docker, f"the container exited {exit_code} without writing {RESULT_FILE}", log=log
    )
