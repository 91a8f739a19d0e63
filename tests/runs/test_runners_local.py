"""The local backend: slot limits for CPU runs and per GPU, GPU assignment, capacity, NVML."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from runners.backends.local import LocalBackend, Slots
from runners.testrun.gpu_usage import GpuSampler, load_nvml, process_group_of
from runners.types import Backend, Hardware, Outcome, RunRequest, TestOverlay
from tests.runner_repos import FixtureRepo, worktrees


def test_the_local_backend_is_a_backend_and_degrades_without_nvml(tmp_path: Path) -> None:
    backend = LocalBackend(workspace_root=tmp_path)
    assert isinstance(backend, Backend)
    assert load_nvml() is None  # this host has no NVIDIA driver
    capacity = backend.capacity()
    assert capacity.gpus == 0 and capacity.gpu_type is None and capacity.cpu_slots >= 1


def test_a_cpu_slot_is_held_until_given_back() -> None:
    slots, order = Slots(cpu_slots=1, gpu_indices=()), []
    first_in, release = threading.Event(), threading.Event()

    def first() -> None:
        with slots.hold(0):
            order.append("first in")
            first_in.set()
            release.wait(5)
            order.append("first out")

    def second() -> None:
        first_in.wait(5)
        with slots.hold(0):
            order.append("second in")

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    first_in.wait(5)
    time.sleep(0.2)
    assert order == ["first in"]  # the second waits
    release.set()
    for thread in threads:
        thread.join(5)
    assert order == ["first in", "first out", "second in"]


def test_gpu_runs_take_all_their_gpus_at_once_or_wait() -> None:
    slots = Slots(cpu_slots=1, gpu_indices=(0, 1, 2))
    with slots.hold(2) as first:
        assert first == (0, 1)
        with slots.hold(1) as other:
            assert other == (2,)
        got: list[tuple[int, ...]] = []
        waiter = threading.Thread(target=lambda: got.append(_hold_briefly(slots, 2)))
        waiter.start()
        time.sleep(0.2)
        assert got == []  # only GPU 2 is free: it takes none rather than one
    waiter.join(5)
    assert got == [(0, 1)]


def _hold_briefly(slots: Slots, gpus: int) -> tuple[int, ...]:
    with slots.hold(gpus) as taken:
        return taken


def test_several_runs_may_share_a_gpu_when_allowed() -> None:
    slots = Slots(cpu_slots=1, gpu_indices=(0, 1), runs_per_gpu=2)
    with slots.hold(1) as a, slots.hold(1) as b, slots.hold(2) as c:
        assert {a, b} == {(0,), (1,)} and c == (0, 1)


def test_more_gpus_than_the_host_has_is_refused_not_awaited() -> None:
    with pytest.raises(ValueError, match="3 GPUs asked of a host with 2"), Slots(1, (0, 1)).hold(3):
        pass


ENV_PROBE = """
import json, os
from pathlib import Path

def test_records_its_gpus():
    Path(os.environ["RECORD"], os.environ["RUN"]).write_text(json.dumps({
        "gpus": os.environ["CUDA_VISIBLE_DEVICES"], "start": __import__("time").time()
    }))
    __import__("time").sleep(float(os.environ.get("HOLD", "0")))
    Path(os.environ["RECORD"], os.environ["RUN"] + ".end").write_text(str(__import__("time").time()))
"""


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, str]:
    fixture, base = FixtureRepo.create(tmp_path / "upstream", {"README": "x\n"})
    return fixture.mirror(tmp_path / "mirror.git"), base


def _request(repo: tuple[Path, str], record: Path, run: str, **options: object) -> RunRequest:
    return RunRequest(
        repo=repo[0],
        base_commit=repo[1],
        overlay=TestOverlay(files={"tests/test_env.py": ENV_PROBE}),
        env={"RECORD": str(record), "RUN": run, **options.pop("env", {})},  # type: ignore[dict-item]
        **options,  # type: ignore[arg-type]
    )


def test_runs_see_only_the_gpus_they_were_given(tmp_path: Path, repo: tuple[Path, str]) -> None:
    # The host inventory is the boundary: this backend is told it has GPUs 0 and 1.
    record = tmp_path / "record"
    record.mkdir()
    backend = LocalBackend(
        workspace_root=tmp_path / "runs", gpu_indices=(0, 1), gpu_type="H100", shared=(record,)
    )
    for run, gpus in (("cpu", 0), ("one", 1), ("two", 2)):
        result = backend.run(_request(repo, record, run, hardware=Hardware(gpus=gpus)))
        assert result.outcome is Outcome.completed, result.log
    seen = {run: json.loads((record / run).read_text())["gpus"] for run in ("cpu", "one", "two")}
    assert seen == {"cpu": "", "one": "0", "two": "0,1"}
    assert backend.capacity().gpus == 2 and backend.capacity().gpu_type == "H100"


def test_more_gpus_or_another_gpu_type_than_offered_is_unschedulable(
    tmp_path: Path, repo: tuple[Path, str]
) -> None:
    backend = LocalBackend(workspace_root=tmp_path / "runs", gpu_indices=(0,), gpu_type="A100")
    for hardware in (Hardware(gpus=2), Hardware(gpus=1, gpu_type="H100")):
        result = backend.run(_request(repo, tmp_path, "x", hardware=hardware))
        assert result.outcome is Outcome.unschedulable and result.attempts == 0
        assert "local offers 1xA100" in result.detail
    assert not (tmp_path / "runs").exists()


def test_a_cpu_slot_limit_of_one_serialises_runs(tmp_path: Path, repo: tuple[Path, str]) -> None:
    record = tmp_path / "record"
    record.mkdir()
    backend = LocalBackend(
        workspace_root=tmp_path / "runs", cpu_slots=1, gpu_indices=(), shared=(record,)
    )
    threads = [
        threading.Thread(
            target=backend.run, args=(_request(repo, record, f"r{i}", env={"HOLD": "1"}),)
        )
        for i in range(2)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    spans = sorted(
        (
            json.loads((record / f"r{i}").read_text())["start"],
            float((record / f"r{i}.end").read_text()),
        )
        for i in range(2)
    )
    assert spans[0][1] <= spans[1][0]  # the second started after the first ended
    assert worktrees(repo[0]) == [str(repo[0])]


class _FakeNvml:
    """NVML as nvidia-ml-py exposes it, for the one device this CPU host does not have."""

    class NVMLError(Exception):
        pass

    def __init__(self, processes: list[tuple[int, int]]) -> None:
        self.processes = processes
        self.shutdowns = 0

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:
        if index != 0:
            raise self.NVMLError("Invalid Argument")
        return index

    def nvmlDeviceGetName(self, handle: int) -> bytes:
        return b"NVIDIA H100 80GB HBM3"

    def nvmlDeviceGetComputeRunningProcesses(self, handle: int) -> list[SimpleNamespace]:
        return [SimpleNamespace(pid=pid, usedGpuMemory=used) for pid, used in self.processes]

    def nvmlShutdown(self) -> None:
        self.shutdowns += 1


def test_gpu_memory_counts_only_the_runs_own_process_group() -> None:
    child = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        assert process_group_of(child.pid) == child.pid
        nvml = _FakeNvml([(child.pid, 3 * 2**30), (os.getpid(), 50 * 2**30)])
        with GpuSampler((0,), nvml=nvml, interval_s=0.01) as sampler:
            sampler.watch(child.pid)
            time.sleep(0.1)
        assert sampler.peak_bytes == 3 * 2**30
        assert sampler.names == ("NVIDIA H100 80GB HBM3",)
        assert nvml.shutdowns == 0  # a module handed in is the caller's to shut down
    finally:
        child.kill()
        child.wait()


def test_without_nvml_a_gpu_run_reports_no_gpu_figures() -> None:
    with GpuSampler((0, 1)) as sampler:
        sampler.watch(os.getpgrp())
    assert sampler.peak_bytes is None and sampler.names == ()


def test_an_index_nvml_does_not_know_gives_no_figures_rather_than_no_run() -> None:
    with GpuSampler((5,), nvml=_FakeNvml([])) as sampler:
        sampler.watch(os.getpgrp())
    assert sampler.peak_bytes is None and sampler.names == ()
