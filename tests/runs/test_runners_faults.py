"""Fault signatures tell system faults from candidate failures; system faults retry, bounded."""

from __future__ import annotations

import pytest

from runners.testrun.faults import SIGNATURES, classify, message_fault, missing_asset, with_retries
from runners.types import Fault, FaultKind, Outcome, RunResult

# The sandbox's limits come first: a cgroup's OOM kill is a memory limit, not the host's OOM.
LIMIT_ROWS = [
    (
        "[probewatch sandbox] the run reached its memory limit (256 MiB)",
        "a test printed: the run reached its memory limit",
    ),
    (
        "[probewatch sandbox] the run reached its process limit (64)",
        "[probewatch sandbox] the run reached its memory high-water mark",
    ),
    (
        "[probewatch sandbox] the run reached its disk limit (16 GiB)",
        "OSError: the run reached its disk limit, a test said",
    ),
    (
        "[probewatch sandbox] the host's free disk space fell below 2 GiB: the run was stopped",
        "a test checks that the host's free disk space fell below a line",
    ),
    ("E   MemoryError", "def test_raises_memory_error_on_purpose(): pass"),
    (
        "    pid = os.fork()\nE   BlockingIOError: [Errno 11] Resource temporarily unavailable",
        "sock.recv(1)\nE   BlockingIOError: [Errno 11] Resource temporarily unavailable",
    ),
    ("OSError: [Errno 27] File too large", "OSError: [Errno 28] the file is large"),
    ("the test process died of signal SIGXCPU", "the test checked the CPU time it used"),
]
# One case per signature row, in table order: (a log it must match, a near miss it must not).
ROWS = [
    *LIMIT_ROWS,
    ("tests/test_big.py::test_alloc\nKilled\n", "Killed 3 stale workers before the test\n"),
    (
        "OSError: [Errno 28] No space left on device: '/tmp/ckpt.pt'",
        "checked the space left on the device: 12 GB free",
    ),
    (
        "huggingface_hub.errors.OfflineModeIsEnabled: Cannot reach https://huggingface.co/api/models/Qwen/Qwen2.5-0.5B/revision/main: offline mode is enabled. To disable it, please unset the `HF_HUB_OFFLINE` environment variable.",
        "HF_HUB_OFFLINE=1: loaded Qwen/Qwen2.5-0.5B from the cache",
    ),
    (
        "OSError: We couldn't connect to 'https://huggingface.co' to load this file, couldn't find it in the cached files and it looks like Qwen/Qwen2.5-0.5B-Instruct is not the path to a directory containing a file named config.json.",
        "We couldn't connect to the local test server on port 8000",
    ),
    (
        "huggingface_hub.errors.LocalEntryNotFoundError: Cannot find the requested files in the disk cache and outgoing traffic has been disabled. To enable hf.co look-ups and downloads online, set 'local_files_only' to False.",
        "LocalEntry found in the cache for every file",
    ),
    (
        "ConnectionError: Couldn't reach 'openai/gsm8k' on the Hub (ConnectionError)",
        "Couldn't reach the end of the iterator",
    ),
    (
        "huggingface_hub.errors.HFValidationError: Repo id must be in the form 'repo_name' or 'namespace/repo_name': '/run/home/models/Qwen/Qwen2.5-0.5B-Instruct'. Use `repo_type` argument if needed.",
        "HFValidationError: Repo id must be in the form 'repo_name' or 'namespace/repo_name': 'bad name!'",
    ),
    ("RuntimeError: No CUDA GPUs are available", "skipped: the CUDA GPUs are not needed here"),
    (
        "failed on setup with \"KeyError: 'ROLLOUT_NAME'\"" + " [os.environ]",
        "KeyError: 'ROLLOUT_NAME'",  # a KeyError of the test's own: junit marks no os frame
    ),
    (
        "ValueError: Error initializing torch.distributed using env:// rendezvous: environment"
        " variable RANK expected, but not set",
        "ValueError: the rank was expected, but not set",
    ),
    (
        "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?",
        "see the docker build instructions in the README",
    ),
    (
        "  × No solution found when resolving dependencies:\n  ╰─▶ Because torch==9.9 was not found",
        "Resolved 42 packages in 1.2s",
    ),
    (
        "socket.gaierror: [Errno -3] Temporary failure in name resolution",
        "ConnectionRefusedError: [Errno 111] Connection refused",
    ),
    (
        "The runner has received a shutdown signal. This can happen when the runner service is stopped.",
        "tests/test_signals.py::test_shutdown_signal_handler PASSED",
    ),
    (
        "The job running on runner gpu-01 has exceeded the maximum execution time of 360 minutes.",
        "the retry loop has exceeded the maximum retries (expected)",
    ),
    (
        "OSError: AF_UNIX path length cannot exceed 107 bytes: '/srv/probewatch/runs/run-verl-1-x/scratch/tmp/ray/session_2026/sockets/plasma_store'",
        "OSError: [Errno 98] Address already in use: '/tmp/pw-1/ray/sockets/raylet'",
    ),
    (
        "INTERNALERROR> Traceback (most recent call last):",
        "an assertion message quoting INTERNALERROR> mid-line",
    ),
]


def test_every_signature_has_a_case() -> None:
    assert len(ROWS) == len(SIGNATURES)


@pytest.mark.parametrize(("index", "case"), list(enumerate(ROWS)))
def test_each_signature_matches_its_log_and_not_its_near_miss(
    index: int, case: tuple[str, str]
) -> None:
    matching, near_miss = case
    pattern = SIGNATURES[index].pattern
    assert pattern is not None and pattern.search(matching)
    fault = classify(f"collected 3 items\n{matching}\n1 failed", 1)
    assert fault is not None and fault.kind is SIGNATURES[index].kind
    assert classify(f"collected 3 items\n{near_miss}\n1 failed", 1) is None


def test_the_unset_variable_is_named_with_the_fix() -> None:
    fault = message_fault("failed on setup with \"KeyError: 'ROLLOUT_NAME'\" [os.environ]")
    assert fault is not None and fault.kind is FaultKind.unset_variable
    assert (
        "environment variable ROLLOUT_NAME" in fault.detail and "[repo.tests] env" in fault.detail
    )


def test_a_rendezvous_outside_a_launcher_names_the_variable_and_the_launcher() -> None:
    message = (
        'failed on setup with "ValueError: Error initializing torch.distributed using env://'
        ' rendezvous: environment variable RANK expected, but not set"'
    )
    fault = message_fault(message)
    assert fault is not None and fault.kind is FaultKind.unset_variable
    assert "expects RANK" in fault.detail and "torchrun" in fault.detail


def test_the_matching_line_is_the_evidence() -> None:
    fault = classify("a\nb\nOSError: [Errno 28] No space left on device: '/x'\nc", 1)
    assert (
        fault is not None and "[OSError: [Errno 28] No space left on device: '/x']" in fault.detail
    )


@pytest.mark.parametrize(
    ("log", "asset"),
    [
        (ROWS[len(LIMIT_ROWS) + 2][0], "Qwen/Qwen2.5-0.5B"),
        (ROWS[len(LIMIT_ROWS) + 3][0], "Qwen/Qwen2.5-0.5B-Instruct"),
        (ROWS[len(LIMIT_ROWS) + 5][0], "openai/gsm8k"),
        (
            "OfflineModeIsEnabled: Cannot reach https://huggingface.co/datasets/openai/gsm8k/resolve/main/x.parquet",
            "openai/gsm8k",
        ),
        (
            "hf_hub_download(repo_id='meta/llama-tiny')\nLocalEntryNotFoundError: ...",
            "meta/llama-tiny",
        ),
        (ROWS[len(LIMIT_ROWS) + 6][0], "/run/home/models/Qwen/Qwen2.5-0.5B-Instruct"),
        (
            "OSError: Incorrect path_or_model_id: '/run/home/models/tiny'. Please provide either the path to a local folder or the repo_id of a model on the Hub.",
            "/run/home/models/tiny",
        ),
        (
            "    raise OSError(f\"Incorrect path_or_model_id: '{path_or_repo_id}'. Please\")\n"
            "E   OSError: Incorrect path_or_model_id: '/run/home/models/tiny'. Please provide",
            "/run/home/models/tiny",
        ),
        (ROWS[len(LIMIT_ROWS) + 4][0], "an asset the log does not name"),
        (
            "OSError: We couldn't connect to 'https://huggingface.co' to load the files. See https://huggingface.co/docs/transformers/installation#offline-mode",
            "an asset the log does not name",
        ),
    ],
)
def test_a_missing_asset_is_named(log: str, asset: str) -> None:
    assert missing_asset(log) == asset
    fault = classify(log, 1)
    assert fault is not None and fault.kind is FaultKind.missing_asset
    assert asset in fault.detail and not fault.retryable


def test_a_missing_path_under_the_runs_home_is_named_from_home() -> None:
    fault = classify(ROWS[len(LIMIT_ROWS) + 6][0], 1, home="/run/home")
    assert fault is not None and "~/models/Qwen/Qwen2.5-0.5B-Instruct" in fault.detail
    other = classify(
        ROWS[len(LIMIT_ROWS) + 6][0], 1, home="/run/ho"
    )  # a prefix of a folder name is not home
    assert other is not None and "/run/home/models/Qwen" in other.detail


def test_an_unexplained_sigkill_is_the_oom_killer_even_with_a_silent_log() -> None:
    fault = classify("collected 3 items\n", -9)
    assert (
        fault is not None
        and fault.kind is FaultKind.harness_oom
        and "exit status -9" in fault.detail
    )


@pytest.mark.parametrize(
    ("log", "status"),
    [
        ("E   AssertionError: assert 1 == 2\n1 failed", 1),
        ("Fatal Python error: Segmentation fault", -11),
        ("ModuleNotFoundError: No module named 'pkg.new_api'", 2),
    ],
)
def test_candidate_failures_are_not_faults(log: str, status: int) -> None:
    assert classify(log, status) is None


def test_the_first_row_wins_when_several_match() -> None:
    fault = classify("No space left on device\nTemporary failure in name resolution", 1)
    assert fault is not None and fault.kind is FaultKind.disk_full


def attempts_of(results: list[RunResult]):
    calls: list[int] = []

    def attempt() -> RunResult:
        calls.append(1)
        return results[min(len(calls), len(results)) - 1]

    return attempt, calls


DISK = RunResult(outcome=Outcome.fault, fault=Fault(FaultKind.disk_full, "full", retryable=True))
ASSET = RunResult(outcome=Outcome.fault, fault=Fault(FaultKind.missing_asset, "x", retryable=False))
DONE = RunResult(outcome=Outcome.completed)


def test_system_faults_are_retried_a_bounded_number_of_times_then_returned() -> None:
    attempt, calls = attempts_of([DISK])
    waits: list[float] = []
    result = with_retries(attempt, retries=2, backoff_s=1.5, sleep=waits.append)
    assert result.outcome is Outcome.fault and result.fault == DISK.fault
    assert (len(calls), result.attempts) == (3, 3)
    assert waits == [1.5, 3.0]


def test_a_retry_that_succeeds_stops_and_counts_its_attempts() -> None:
    attempt, calls = attempts_of([DISK, DONE, DISK])
    result = with_retries(attempt, retries=5, sleep=lambda _: None)
    assert result.outcome is Outcome.completed and result.attempts == 2 and len(calls) == 2


@pytest.mark.parametrize("first", [ASSET, DONE, RunResult(outcome=Outcome.unappliable)])
def test_non_retryable_outcomes_run_once(first: RunResult) -> None:
    attempt, calls = attempts_of([first, DONE])
    result = with_retries(attempt, retries=3, sleep=lambda _: None)
    assert result.outcome is first.outcome and result.attempts == 1 and len(calls) == 1


def test_zero_retries_means_one_attempt() -> None:
    attempt, calls = attempts_of([DISK])
    assert with_retries(attempt, retries=0).attempts == 1 and len(calls) == 1


# Failure messages as junit records them (summary plus the last ``E`` line).
NEEDS_GPU_MESSAGES = [
    "AssertionError: assert False\n +  where False = <function is_available at 0x7f3a>()\n"
    " +    where <function is_available at 0x7f3a> = <module 'torch.cuda' from '/x.py'>.is_available",
    "AssertionError: assert 0 > 0: torch.cuda.device_count() returned 0",
    "AssertionError: Torch not compiled with CUDA enabled",
    "RuntimeError: Distributed package doesn't have NCCL built in",
    "ValueError: ProcessGroupNCCL is only supported with GPUs, no GPUs found!",
    "RuntimeError: 0 active drivers ([]). There should only be one.",
    "AssertionError: CUDA is not available on this machine",
    "ValueError: Total available GPUs 0 is less than total desired GPUs 8",
]
OWN_FAILURES = [
    "AssertionError: assert 3 == 4",
    "AssertionError: expected the tensor on device cpu, the cuda path is not taken here",
    "RuntimeError: Expected all tensors to be on the same device",
    "ValueError: Total available GPUs 8 is less than total desired GPUs 16",  # a real shortfall
    None,
]


@pytest.mark.parametrize("message", NEEDS_GPU_MESSAGES)
def test_a_test_that_needs_a_gpu_says_so_in_its_own_message(message: str) -> None:
    fault = message_fault(message)
    assert fault is not None and fault.kind is FaultKind.needs_gpu and not fault.retryable


@pytest.mark.parametrize("message", OWN_FAILURES)
def test_a_test_failing_on_its_merits_has_no_fault(message: str | None) -> None:
    assert message_fault(message) is None


def test_run_only_signatures_are_not_read_in_a_tests_message() -> None:
    assert message_fault("INTERNALERROR> Traceback") is None
    assert message_fault("Killed") is None
    assert message_fault("OSError: [Errno 28] No space left on device").kind is FaultKind.disk_full  # type: ignore[union-attr]
