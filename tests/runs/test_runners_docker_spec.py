"""The Docker backend: the container specification as a pure function, the engine path against a
Docker Engine API emulator (this machine has no engine; see tests/docker_engine.py), and the engine
path against a real engine where one answers."""

from __future__ import annotations

import os
import subprocess
from dataclasses import replace
from pathlib import Path

import docker
import pytest
from docker.types import DeviceRequest, Ulimit

from runners.backends import remote
from runners.backends.docker import (
    CONTAINER_IO,
    CONTAINER_REPO,
    CONTAINER_WORK,
    GPU_ULIMITS,
    REQUEST_FILE,
    BaseImage,
    DockerBackend,
    DockerConfig,
    DockerSpecError,
    Limits,
    Mounts,
    container_spec,
    docker_fault,
    read_results,
    run_ulimits,
    to_run_kwargs,
)
from runners.backends.serialize import RESULT_FILE, request_from_json
from runners.sandbox.limits import CPU_GRACE_S, DEFAULT_LIMITS
from runners.sandbox.limits import Limits as RunLimits
from runners.types import (
    EnvironmentRef,
    FaultKind,
    Hardware,
    Outcome,
    RunRequest,
    RunResult,
    SandboxKind,
    TestCaseResult,
    TestStatus,
)
from tests.docker_engine import Container, DockerEngineEmulator, Exit

GiB = 1024**3
REAL_IMAGE_ENV = "PROBEWATCH_TEST_DOCKER_IMAGE"
CPU = BaseImage("probewatch/base:py3.11", python="3.11")
CUDA = BaseImage("probewatch/base:cuda12.4-py3.11", python="3.11", cuda="12.4")
CUDA_NEW = BaseImage(
    "probewatch/base:cuda12.8-py3.12", python="3.12", cuda="12.8", gpu_types=("B200",)
)
CONFIG = DockerConfig(images=(CPU, CUDA, CUDA_NEW), user="1000:1000", gpus=8, gpu_type="H100")
ENVS = Path("/srv/probewatch/envs")
ASSETS = Path("/srv/probewatch/assets")
MOUNTS = Mounts(
    io=Path("/tmp/pw/io-1"),
    work=Path("/tmp/pw/work-1"),
    repo=Path("/srv/mirrors/verl"),
    environments=ENVS,
    assets=ASSETS,
    extra_read_only=(Path("/srv/uv/python"),),
)


def environment(root: Path = ENVS / "abc123") -> EnvironmentRef:
    return EnvironmentRef(
        "abc123",
        root,
        root / "bin" / "python",
        {
            "VIRTUAL_ENV": str(root),
            "PATH": f"{root}/bin:/home/me/bin:/usr/bin",
            "HF_HOME": "/srv/probewatch/assets/huggingface",
            "HF_TOKEN": "hf_secret",
        },
    )


def request(gpus: int = 0, gpu_type: str | None = None, **changes: object) -> RunRequest:
    fields: dict = {
        "repo": Path("/srv/mirrors/verl"),
        "base_commit": "abc123def",
        "tests": ("tests/test_x.py",),
        "environment": environment(),
        "hardware": Hardware(gpus, gpu_type),
        "env": {"OMP_NUM_THREADS": "4", "PROBEWATCH_GITHUB_TOKEN": "ghp_x"},
        "label": "golden#1",
    }
    return RunRequest(**{**fields, **changes})


# -- the pure specification ------------------------------------------------------------


def test_cpu_run_gets_the_cpu_image_no_gpus_and_base_limits() -> None:
    spec = container_spec(request(), CONFIG, MOUNTS)
    assert spec.image == CPU.ref
    assert spec.gpus is None
    assert spec.ulimits == run_ulimits(DEFAULT_LIMITS)
    limits = Limits()
    assert (spec.mem_bytes, spec.nano_cpus, spec.shm_bytes, spec.pids_limit) == (
        limits.mem_bytes,
        int(limits.cpus * 1e9),
        limits.shm_bytes,
        DEFAULT_LIMITS.processes,
    )


def test_gpu_run_requests_its_gpus_and_scales_limits_per_gpu() -> None:
    spec = container_spec(request(8, "H100"), CONFIG, MOUNTS)
    assert spec.image == CUDA.ref
    assert spec.gpus is not None and (spec.gpus.count, spec.gpus.capabilities) == (8, (("gpu",),))
    assert spec.mem_bytes == 16 * GiB + 8 * 64 * GiB
    assert spec.nano_cpus == int((4 + 8 * 8) * 1e9)
    assert spec.shm_bytes == 2 * GiB + 8 * 8 * GiB  # NCCL's shared-memory transport
    assert spec.ulimits == run_ulimits(DEFAULT_LIMITS) + GPU_ULIMITS


def test_gpu_type_with_its_own_image_gets_that_image() -> None:
    assert container_spec(request(8, "B200"), CONFIG, MOUNTS).image == CUDA_NEW.ref


def test_preferred_python_decides_between_otherwise_equal_images() -> None:
    config = replace(CONFIG, python="3.12")
    assert container_spec(request(2), config, MOUNTS).image == CUDA_NEW.ref
    assert container_spec(request(2), CONFIG, MOUNTS).image == CUDA.ref


def test_gpu_run_without_a_cuda_image_is_refused() -> None:
    with pytest.raises(
        DockerSpecError, match="no CUDA image configured for a run that needs 2 GPU"
    ):
        container_spec(request(2), replace(CONFIG, images=(CPU,)), MOUNTS)


def test_cpu_run_falls_back_to_a_cuda_image() -> None:
    assert container_spec(request(), replace(CONFIG, images=(CUDA,)), MOUNTS).image == CUDA.ref


def test_caches_are_read_only_at_their_host_paths_and_the_work_tree_is_writable() -> None:
    volumes = {
        v.target: (v.source, v.read_only) for v in container_spec(request(), CONFIG, MOUNTS).volumes
    }
    assert volumes == {
        str(CONTAINER_IO): (str(MOUNTS.io), False),
        str(CONTAINER_WORK): (str(MOUNTS.work), False),
        str(CONTAINER_REPO): (str(MOUNTS.repo), True),
        str(ENVS): (str(ENVS), True),  # same path: venv shebangs and pyvenv.cfg stay valid
        str(ASSETS): (str(ASSETS), True),
        "/srv/uv/python": ("/srv/uv/python", True),
    }


def test_a_test_run_has_no_network_and_libraries_are_told_to_stay_offline() -> None:
    for spec in (
        container_spec(request(), CONFIG, MOUNTS),
        container_spec(request(2), CONFIG, MOUNTS),
    ):
        assert spec.network_mode == "none"
        assert spec.environment["HF_HUB_OFFLINE"] == "1"
        assert spec.environment["TRANSFORMERS_OFFLINE"] == "1"


def test_the_run_limits_are_the_containers_pids_limit_and_ulimits() -> None:
    """The limits the local sandbox sets with a cgroup and prlimit, in Docker's terms."""
    run_limits = RunLimits(processes=64, file_bytes=1024**2, cpu_s=30)
    config = replace(CONFIG, run_limits=run_limits)
    kwargs = to_run_kwargs(container_spec(request(), config, MOUNTS))
    assert kwargs["pids_limit"] == 64
    ulimits = {u.name: (u.soft, u.hard) for u in kwargs["ulimits"]}
    assert ulimits == {"fsize": (1024**2, 1024**2), "cpu": (30, 30 + CPU_GRACE_S)}
    assert kwargs["network_mode"] == "none"
    unlimited = replace(CONFIG, run_limits=RunLimits(processes=None, file_bytes=None, cpu_s=None))
    spec = container_spec(request(), unlimited, MOUNTS)
    assert (spec.pids_limit, spec.ulimits) == (-1, ())


def test_environment_is_scrubbed_and_path_rebuilt_for_the_image() -> None:
    env = container_spec(request(), CONFIG, MOUNTS).environment
    assert "PROBEWATCH_GITHUB_TOKEN" not in env and "HF_TOKEN" not in env
    assert "ghp_x" not in env.values() and "hf_secret" not in env.values()
    assert env["OMP_NUM_THREADS"] == "4"
    assert env["VIRTUAL_ENV"] == str(ENVS / "abc123")
    assert env["PATH"].split(":")[0] == str(ENVS / "abc123" / "bin")
    assert "/home/me/bin" not in env["PATH"]  # the host's PATH means nothing in the image
    assert env["HF_HOME"] == "/srv/probewatch/assets/huggingface"  # the environment's own
    assert env["HOME"] == env["TMPDIR"] == str(CONTAINER_WORK)


def test_asset_cache_variables_are_set_when_the_environment_sets_none() -> None:
    env = container_spec(request(environment=None), CONFIG, MOUNTS).environment
    assert env["HF_HOME"] == str(ASSETS / "huggingface")
    assert env["HF_HUB_CACHE"] == str(ASSETS / "huggingface" / "hub")


def test_command_runs_the_remote_entry_point_on_the_mounted_request() -> None:
    spec = container_spec(request(), CONFIG, MOUNTS)
    assert spec.command[:3] == (CONFIG.entry_python, "-m", "runners.backends.remote")
    args = remote._parser().parse_args(list(spec.command[3:]))
    assert args.request_file == Path(CONTAINER_IO / REQUEST_FILE)
    assert args.out == Path(CONTAINER_IO)
    assert args.repo == Path(CONTAINER_REPO)
    assert args.work == Path(CONTAINER_WORK)
    assert spec.working_dir == str(CONTAINER_WORK) and spec.user == "1000:1000"


def test_labels_name_the_run_the_commit_and_the_environment() -> None:
    labels = container_spec(request(), CONFIG, MOUNTS).labels
    assert labels == {
        "io.probewatch.base": "abc123def",
        "io.probewatch.run": "golden#1",
        "io.probewatch.lock": "abc123",
    }


def test_environment_outside_the_mounted_root_is_refused() -> None:
    elsewhere = request(environment=environment(Path("/home/me/.probewatch/envs/abc123")))
    with pytest.raises(DockerSpecError, match="is not under the mounted environments root"):
        container_spec(elsewhere, CONFIG, MOUNTS)
    with pytest.raises(DockerSpecError, match="environments root None"):
        container_spec(request(), CONFIG, replace(MOUNTS, environments=None))


def test_relative_mounts_are_refused() -> None:
    with pytest.raises(DockerSpecError, match="mount 'work' must be an absolute path"):
        container_spec(request(), CONFIG, replace(MOUNTS, work=Path("work")))


def test_spec_is_pure_same_inputs_same_spec_and_no_disk_touched() -> None:
    assert not MOUNTS.io.exists()
    assert container_spec(request(4), CONFIG, MOUNTS) == container_spec(request(4), CONFIG, MOUNTS)
    assert not MOUNTS.io.exists()


def test_run_kwargs_use_the_sdks_device_requests_and_read_only_binds() -> None:
    kwargs = to_run_kwargs(container_spec(request(2), CONFIG, MOUNTS))
    (device,) = kwargs["device_requests"]
    assert isinstance(device, DeviceRequest)
    assert (device.count, device.capabilities) == (2, [["gpu"]])
    assert kwargs["volumes"][str(MOUNTS.repo)] == {"bind": str(CONTAINER_REPO), "mode": "ro"}
    assert kwargs["volumes"][str(MOUNTS.io)] == {"bind": str(CONTAINER_IO), "mode": "rw"}
    assert kwargs["network_mode"] == "none" and kwargs["detach"] is True
    assert kwargs["memswap_limit"] == kwargs["mem_limit"]  # no swap
    assert all(isinstance(u, Ulimit) for u in kwargs["ulimits"])
    assert {u.name for u in kwargs["ulimits"]} == {"fsize", "cpu", "memlock", "stack"}
    assert to_run_kwargs(container_spec(request(), CONFIG, MOUNTS))["device_requests"] == []


# -- results and engine errors ---------------------------------------------------------


def test_results_missing_after_an_oom_kill_are_a_harness_oom_fault(tmp_path: Path) -> None:
    result = read_results(tmp_path, 137, True, "Killed")
    assert result.fault is not None and result.fault.kind is FaultKind.harness_oom
    assert result.log == "Killed"


def test_results_missing_after_an_ordinary_exit_are_a_docker_fault(tmp_path: Path) -> None:
    result = read_results(tmp_path, 2, False, "python: No module named runners")
    assert result.fault is not None and result.fault.kind is FaultKind.docker
    assert result.fault.detail == "the container exited 2 without writing result.json"


def test_unreadable_result_file_is_an_internal_fault(tmp_path: Path) -> None:
    (tmp_path / RESULT_FILE).write_text("{half")
    result = read_results(tmp_path, 0, False, "")
    assert result.fault is not None and result.fault.kind is FaultKind.internal
    assert "unreadable result.json" in result.fault.detail


@pytest.mark.parametrize(
    ("error", "retryable", "meaning"),
    [
        (docker.errors.ImageNotFound("No such image: x"), False, "image not on the engine"),
        (docker.errors.NotFound("No such container"), True, "the container vanished"),
        (docker.errors.APIError("500 Server Error"), True, "the engine refused the request"),
        (
            docker.errors.DockerException("Error while fetching server API version"),
            True,
            "no Docker engine answered",
        ),
    ],
)
def test_docker_errors_map_to_docker_faults_most_specific_first(
    error: Exception, retryable: bool, meaning: str
) -> None:
    fault = docker_fault(error)
    assert (fault.kind, fault.retryable) == (FaultKind.docker, retryable)
    assert fault.detail.startswith(meaning)


# -- the engine path, against the engine emulator --------------------------------------


def passing(request: RunRequest) -> RunResult:
    tests = tuple(TestCaseResult(f"{t}::test_ok", TestStatus.passed, 0.1) for t in request.tests)
    return RunResult(outcome=Outcome.completed, tests=tests)


def container_runs_remote(container: Container) -> Exit:
    """What the image's entry point does: read the request, run it, write the results."""
    io = container.host_path(str(CONTAINER_IO))
    text = (io / REQUEST_FILE).read_text()
    result = remote.execute(text, repo=Path("/probewatch/repo"), runner=lambda: passing)
    remote.write_results(result, io)
    return Exit(0, logs="probewatch: completed")


def local_request(tmp_path: Path, **changes: object) -> RunRequest:
    return request(environment=None, repo=tmp_path / "repo", **changes)


def backend(engine: DockerEngineEmulator, tmp_path: Path, **options: object) -> DockerBackend:
    return DockerBackend(
        CONFIG,
        scratch=tmp_path / "scratch",
        environments=ENVS,
        assets=ASSETS,
        client_factory=engine.client,
        **options,
    )


def test_engine_run_returns_the_result_the_container_wrote(tmp_path: Path) -> None:
    with DockerEngineEmulator(container_runs_remote, images=(CUDA.ref,)) as engine:
        result = backend(engine, tmp_path).run(
            local_request(tmp_path, hardware=Hardware(2, "H100"))
        )
        container = engine.only()
    assert result.outcome is Outcome.completed, result
    assert result.passed == {"tests/test_x.py::test_ok"}
    host = container.host_config
    assert host["NetworkMode"] == "none"
    assert host["DeviceRequests"][0]["Count"] == 2
    assert host["DeviceRequests"][0]["Capabilities"] == [["gpu"]]
    assert f"{(tmp_path / 'repo').resolve()}:{CONTAINER_REPO}:ro" in host["Binds"]
    assert f"{ENVS}:{ENVS}:ro" in host["Binds"]
    assert host["Memory"] == 16 * GiB + 2 * 64 * GiB and host["ShmSize"] == 18 * GiB
    assert host["PidsLimit"] == DEFAULT_LIMITS.processes and host["NanoCpus"] == 20 * 10**9
    assert {u["Name"] for u in host["Ulimits"]} == {"fsize", "cpu", "memlock", "stack"}
    assert result.sandbox is not None and result.sandbox.kind is SandboxKind.namespaces
    assert "no-new-privileges" in host["SecurityOpt"]
    assert container.body["User"] == "1000:1000"
    assert container.removed
    assert list((tmp_path / "scratch").iterdir()) == []  # io and work folders removed


def test_engine_run_ships_the_request_without_secrets(tmp_path: Path) -> None:
    shipped: list[RunRequest] = []

    def capture(container: Container) -> Exit:
        io = container.host_path(str(CONTAINER_IO))
        shipped.append(request_from_json((io / REQUEST_FILE).read_text()))
        return container_runs_remote(container)

    with DockerEngineEmulator(capture, images=(CPU.ref,)) as engine:
        backend(engine, tmp_path).run(local_request(tmp_path))
        env = dict(e.split("=", 1) for e in engine.only().body["Env"])
    assert shipped[0].env == {"OMP_NUM_THREADS": "4"}
    assert "PROBEWATCH_GITHUB_TOKEN" not in env


def test_container_killed_for_memory_is_a_harness_oom_fault(tmp_path: Path) -> None:
    with DockerEngineEmulator(
        lambda c: Exit(137, oom_killed=True, logs="Killed"), images=(CPU.ref,)
    ) as engine:
        result = backend(engine, tmp_path).run(local_request(tmp_path))
        assert engine.only().removed
    assert result.fault is not None and result.fault.kind is FaultKind.harness_oom
    assert result.log == "Killed"


def test_container_exiting_without_results_is_a_docker_fault_with_its_log(tmp_path: Path) -> None:
    with DockerEngineEmulator(
        lambda c: Exit(1, logs="ModuleNotFoundError: runners"), images=(CPU.ref,)
    ) as engine:
        result = backend(engine, tmp_path).run(local_request(tmp_path))
    assert result.fault is not None and result.fault.kind is FaultKind.docker
    assert "exited 1 without writing result.json" in result.fault.detail
    assert result.log == "ModuleNotFoundError: runners"


def test_container_running_past_the_guard_is_killed_and_removed(tmp_path: Path) -> None:
    with DockerEngineEmulator(lambda c: Exit(hang=True), images=(CPU.ref,)) as engine:
        result = backend(engine, tmp_path, guard_s=0.3).run(
            local_request(tmp_path, timeout_run_s=0.2)
        )
        container = engine.only()
    assert result.fault is not None and result.fault.kind is FaultKind.harness_timeout
    assert "killed" in result.fault.detail
    assert container.killed and container.removed


def test_missing_image_is_a_docker_fault_that_is_not_retried(tmp_path: Path) -> None:
    with DockerEngineEmulator(container_runs_remote, images=()) as engine:
        result = backend(engine, tmp_path).run(local_request(tmp_path))
        assert engine.pulls == [CPU.ref]
    assert result.fault is not None
    assert (result.fault.kind, result.fault.retryable) == (FaultKind.docker, False)
    assert "image not on the engine" in result.fault.detail


def test_no_engine_is_a_retryable_docker_fault(tmp_path: Path) -> None:
    def no_engine() -> docker.DockerClient:
        return docker.DockerClient(base_url=f"unix://{tmp_path}/no-docker.sock")

    result = DockerBackend(CONFIG, scratch=tmp_path, client_factory=no_engine).run(
        local_request(tmp_path)
    )
    assert result.outcome is Outcome.fault and result.fault is not None
    assert (result.fault.kind, result.fault.retryable) == (FaultKind.docker, True)
    assert result.fault.detail.startswith("no Docker engine answered")


def test_run_needing_more_gpus_than_the_engine_host_is_unschedulable(tmp_path: Path) -> None:
    with DockerEngineEmulator(container_runs_remote, images=(CUDA.ref,)) as engine:
        result = backend(engine, tmp_path).run(local_request(tmp_path, hardware=Hardware(16)))
        assert engine.containers == {}
    assert result.outcome is Outcome.unschedulable
    assert result.detail == "needs 16 GPU(s); docker offers 8xH100, 1 CPU slot(s)"


def test_spec_error_is_an_internal_fault_before_any_container(tmp_path: Path) -> None:
    with DockerEngineEmulator(container_runs_remote, images=(CPU.ref,)) as engine:
        outside = local_request(tmp_path)
        outside = replace(outside, environment=environment(tmp_path / "envs" / "abc123"))
        result = backend(engine, tmp_path).run(outside)
        assert engine.containers == {}
    assert result.fault is not None and result.fault.kind is FaultKind.internal
    assert result.fault.retryable is False


# -- the engine path, against a real engine --------------------------------------------


def _real_engine_reason() -> str | None:
    if not os.environ.get(REAL_IMAGE_ENV):
        return (
            f"{REAL_IMAGE_ENV} is not set (an image with probewatch and pytest in "
            "/opt/probewatch): the real-engine path was not exercised"
        )
    try:
        docker.from_env().ping()
    except docker.errors.DockerException as exc:
        return f"no Docker engine answers ({exc}): the real-engine path was not exercised"
    return None


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
    ).stdout.strip()


@pytest.mark.skipif(_real_engine_reason() is not None, reason=str(_real_engine_reason()))
def test_real_engine_runs_a_request_in_a_container(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "test_ok.py").write_text("def test_ok():\n    assert 1 + 1 == 2\n")
    git(repo, "add", ".")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "init")
    image = BaseImage(os.environ[REAL_IMAGE_ENV], python="3.11")
    config = DockerConfig(images=(image,), user=f"{os.getuid()}:{os.getgid()}")
    request = RunRequest(
        repo=repo,
        base_commit=git(repo, "rev-parse", "HEAD"),
        tests=("test_ok.py",),
        timeout_run_s=300,
    )
    result = DockerBackend(config, scratch=tmp_path / "scratch").run(request)
    assert result.outcome is Outcome.completed, result
    assert result.passed == {"test_ok.py::test_ok"}
    assert list((tmp_path / "scratch").iterdir()) == []
