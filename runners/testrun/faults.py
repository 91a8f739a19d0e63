"""System faults told apart from candidate failures by signature, and a bounded retry.

A run that fails because of the machine (the environment did not build, an
asset is not in the offline cache, the harness was OOM-killed, the disk is
full, GPUs or the Docker engine are missing, the network or the runner went
away) says nothing about the patch under test: scoring excludes it and counts
it. The signatures are one table, checked in order, most specific first; a
signature may match the log, the exit status, or either. Only runs that did
not pass are classified, so a passing test that merely prints such a line is
never turned into a fault. Most signatures also read one failing test's own
message (:func:`message_fault`): a test that needs a GPU, an uncached model or the
network fails for the machine's sake while its neighbours run; the rest (an
OOM kill, a full disk, the Docker engine, the runner, pytest itself) only make
sense for a whole run.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from runners.types import Fault, FaultKind, Outcome, RunResult

EVIDENCE_LIMIT = 300
DEFAULT_RETRIES = 2


@dataclass(frozen=True)
class Signature:
    kind: FaultKind
    pattern: re.Pattern[str] | None
    explanation: str  # may name the asset: "{asset}"
    retryable: bool = True
    exit_statuses: frozenset[int] = frozenset()
    per_test: bool = True  # also read in one failing test's message


def _sig(
    kind: FaultKind,
    pattern: str | None,
    explanation: str,
    *,
    retryable: bool = True,
    exits: Iterable[int] = (),
    per_test: bool = True,
) -> Signature:
    compiled = re.compile(pattern, re.MULTILINE) if pattern else None
    return Signature(kind, compiled, explanation, retryable, frozenset(exits), per_test)


_MISSING = "not in the read-only asset cache and downloads are off (offline mode): {asset}"

# The sandbox's own note that the run reached a limit of its cgroup (runners/sandbox/limits.py).
_SANDBOX_NOTE = r"^\[probewatch sandbox\] the run reached its {} limit"

SIGNATURES: tuple[Signature, ...] = (
    # Limits of the run's sandbox. Its cgroup's evidence is about the whole run (the OOM
    # killer ends a session, a refused fork may hit any test); what one process shows is
    # about its test.
    _sig(
        FaultKind.memory_limit,
        _SANDBOX_NOTE.format("memory"),
        "the run went past its memory limit: a process was killed",
        retryable=False,
        per_test=False,
    ),
    _sig(
        FaultKind.process_limit,
        _SANDBOX_NOTE.format("process"),
        "the run went past its process limit: a fork or a thread was refused",
        retryable=False,
        per_test=False,
    ),
    _sig(
        FaultKind.disk_limit,
        _SANDBOX_NOTE.format("disk"),
        "the run's files went past its disk limit: the run was stopped",
        retryable=False,
        per_test=False,
    ),
    # The host ran low while the run wrote: the machine's fault, tried again once it has room.
    _sig(
        FaultKind.disk_full,
        r"^\[probewatch sandbox\] the host's free disk space fell below",
        "the host's disk ran low during the run: the run was stopped",
        per_test=False,
    ),
    _sig(
        FaultKind.memory_limit,
        r"^(?:E\s+)?MemoryError\b|\bCannot allocate memory\b",
        "a process of the run went past its memory limit",
        retryable=False,
    ),
    _sig(
        FaultKind.process_limit,
        r"fork\(\)[^\n]*\n(?:[^\n]*\n){0,8}?[^\n]*\[Errno 11\] Resource temporarily unavailable"
        r"|fork: (?:retry: )?Resource temporarily unavailable|can't start new thread",
        "a process of the run went past its process limit (a fork or a thread was refused)",
        retryable=False,
    ),
    _sig(
        FaultKind.file_limit,
        r"\[Errno 27\] File too large|File size limit exceeded|signal SIGXFSZ",
        "a process of the run wrote a file past the file size limit",
        retryable=False,
        exits=(-25, 153),
    ),
    _sig(
        FaultKind.cpu_limit,
        r"CPU time limit exceeded|signal SIGXCPU",
        "a process of the run used up its CPU time limit",
        retryable=False,
        exits=(-24, 152),
    ),
    # pytest itself died of a SIGKILL the harness did not send: the kernel's OOM killer.
    _sig(
        FaultKind.harness_oom,
        r"^Killed\s*$",
        "the test process was killed (SIGKILL), most likely by the out-of-memory killer",
        exits=(-9, 137),
        per_test=False,
    ),
    _sig(FaultKind.disk_full, r"No space left on device|\bENOSPC\b", "the disk is full"),
    # A missing asset stays missing on a retry: the cache has to be filled first.
    _sig(
        FaultKind.missing_asset,
        r"OfflineModeIsEnabled|offline mode is enabled",
        _MISSING,
        retryable=False,
    ),
    _sig(
        FaultKind.missing_asset,
        r"We couldn't connect to '?https?://huggingface\.co",
        _MISSING,
        retryable=False,
    ),
    _sig(
        FaultKind.missing_asset,
        r"LocalEntryNotFoundError|outgoing traffic has been disabled",
        _MISSING,
        retryable=False,
    ),
    _sig(FaultKind.missing_asset, r"Couldn't reach '[^']+' on the Hub", _MISSING, retryable=False),
    # A local model path (``~/models/Qwen/...``) that is not there: the libraries take it for
    # a hub name and refuse it, or say the path is wrong. The curator's cache lacks it.
    _sig(
        FaultKind.missing_asset,
        r"Repo id must be in the form 'repo_name' or 'namespace/repo_name': '/"
        r"|Incorrect path_or_model_id: '/",
        _MISSING,
        retryable=False,
    ),
    # CUDA missing, as torch, NCCL, Triton and the tests' own guards say it: the test goes
    # to a GPU runner, it did not fail.
    _sig(
        FaultKind.needs_gpu,
        r"(?i:no CUDA GPUs are available|CUDA is not available|cuda not available)"
        r"|Found no NVIDIA driver on your system|Torch not compiled with CUDA enabled"
        r"|couldn't communicate with the NVIDIA driver|cudaGetDeviceCount"
        r"|NCCL error.*(?:no CUDA-capable device|cudaErrorNoDevice)"
        r"|ProcessGroupNCCL is only supported with GPUs|Distributed package doesn't have NCCL"
        r"|NCCL is not available|<module 'torch\.cuda'|torch\.cuda\.(?:is_available|device_count)"
        r"|\b0 active drivers\b|libcuda\.so[.\d]*: cannot open"
        r"|Total available GPUs 0 is less than"  # a resource pool sized in GPUs (verl, Ray)
        # Ray's autoscaler, while a placement group or actor waits for GPUs forever: read in
        # what a test printed before its time limit stopped it.
        r"|(?:cannot be scheduled right now|No available node types can fulfill resource "
        r"request)[^{\n]*\{[^}\n]*'GPU'",
        "the test needs CUDA GPUs and this runner offers none (or no driver)",
        retryable=False,
    ),
    # A variable the repository's CI sets (``os.environ["ROLLOUT_NAME"]``) and this run lacks:
    # the junit reader marks a KeyError the os module raised.
    _sig(
        FaultKind.unset_variable,
        r"KeyError: '(?P<variable>[^']+)'.*\[os\.environ\]",
        "the test reads the environment variable {variable}, which this run does not set "
        "(the repository's CI sets it): give it in the watch file's [repo.tests] env",
        retryable=False,
    ),
    # torch.distributed's env:// rendezvous outside a launcher (torchrun sets RANK and the rest).
    _sig(
        FaultKind.unset_variable,
        r"environment variable (?P<variable>[A-Z_][A-Z0-9_]*) expected, but not set",
        "the test initialises torch.distributed from the environment and expects "
        "{variable}, which a launcher such as torchrun sets: the repository's CI runs it "
        "under one (give the variables in the watch file's [repo.tests] env)",
        retryable=False,
    ),
    _sig(
        FaultKind.docker,
        r"Cannot connect to the Docker daemon|Error response from daemon"
        r"|docker\.errors\.(?:APIError|DockerException)|OCI runtime (?:create|exec) failed",
        "the Docker engine failed",
        per_test=False,
    ),
    _sig(
        FaultKind.environment_build,
        r"No solution found when resolving dependencies|ResolutionImpossible"
        r"|Could not find a version that satisfies the requirement"
        r"|Failed to build installable wheels|Failed to build `",
        "the environment could not be built (resolution or a package build failed)",
        retryable=False,
    ),
    _sig(
        FaultKind.network,
        r"Temporary failure in name resolution|Name or service not known"
        r"|Network is unreachable|Could not resolve host",
        "the network failed (name resolution or no route)",
    ),
    _sig(
        FaultKind.runner_lost,
        r"The runner has received a shutdown signal|lost communication with the server",
        "the runner went away during the run",
        per_test=False,
    ),
    _sig(
        FaultKind.harness_timeout,
        r"has exceeded the maximum execution time",
        "the CI job ran past its time limit",
        retryable=False,
        per_test=False,
    ),
    _sig(
        FaultKind.internal,
        r"AF_UNIX path length cannot exceed|AF_UNIX path too long",
        "a Unix socket path under the run's TMPDIR is over 107 bytes: the harness gave the "
        "run too deep a temporary folder",
        retryable=False,
    ),
    _sig(
        FaultKind.internal,
        r"^INTERNALERROR>",
        "pytest failed inside itself",
        retryable=False,
        per_test=False,
    ),
)

# Where the missing asset is named, most specific message first.
ASSET_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p)
    for p in (
        r"it looks like (?P<asset>\S+) is not the path to a directory",
        r"namespace/repo_name': '(?P<asset>/[^']+)'",
        r"Incorrect path_or_model_id: '(?P<asset>[^']+)'",
        r"Couldn't reach '(?P<asset>[^']+)' on the Hub",
        r"huggingface\.co/(?:api/(?:models|datasets|spaces)/|datasets/|spaces/)?"
        r"(?!docs/|api/)(?P<asset>[A-Za-z0-9][\w.-]*/[\w.-]+)",
        r"repo_id=['\"](?P<asset>[^'\"]+)['\"]",
    )
)


def classify(log: str, exit_status: int | None, *, home: str | None = None) -> Fault | None:
    """The first signature that ``log`` or ``exit_status`` matches, as a Fault; else None.

    ``home``: the run's HOME; an asset path under it is named as ``~/...``, the way the
    curator puts it into the asset cache's ``home/``.
    """
    for signature in SIGNATURES:
        evidence = _evidence(signature, log, exit_status)
        if evidence is not None:
            return _fault(signature, log, evidence, home)
    return None


def message_fault(message: str | None, *, home: str | None = None) -> Fault | None:
    """The system fault behind one failing test, read from its own failure message; None
    when the message shows none (the test failed on its merits)."""
    if not message:
        return None
    for signature in SIGNATURES:
        if not signature.per_test:
            continue
        evidence = _evidence(signature, message, None)
        if evidence is not None:
            return _fault(signature, message, evidence, home)
    return None


def _fault(signature: Signature, log: str, evidence: str, home: str | None) -> Fault:
    """The fault ``signature`` names, its explanation filled in from the log: the missing
    asset, or what the pattern's named groups caught (the unset variable)."""
    match = signature.pattern.search(log) if signature.pattern else None
    named = {k: v for k, v in (match.groupdict() if match else {}).items() if v is not None}
    detail = signature.explanation.format(asset=_from_home(missing_asset(log), home), **named)
    return Fault(signature.kind, f"{detail} [{evidence}]", signature.retryable)


def _evidence(signature: Signature, log: str, exit_status: int | None) -> str | None:
    """The log line or exit status that matched ``signature``, or None."""
    match = signature.pattern.search(log) if signature.pattern else None
    if match:
        start = log.rfind("\n", 0, match.start()) + 1
        end = log.find("\n", match.end())
        return log[start : end if end >= 0 else len(log)].strip()[:EVIDENCE_LIMIT]
    if exit_status is not None and exit_status in signature.exit_statuses:
        return f"exit status {exit_status}"
    return None


def _from_home(asset: str, home: str | None) -> str:
    if home and asset.startswith(home.rstrip("/") + "/"):
        return "~/" + asset[len(home.rstrip("/")) + 1 :]
    return asset


def missing_asset(log: str) -> str:
    """The model or dataset a log says is missing, or a plain statement that it does not.

    Tracebacks quote the library's source too (``raise OSError(f"... '{path}'")``): a
    match holding a format field is that source line, not the message, and is passed over.
    """
    for pattern in ASSET_PATTERNS:
        for match in pattern.finditer(log):
            asset = match.group("asset").rstrip(".")
            if "{" not in asset:
                return asset
    return "an asset the log does not name"


def with_retries(
    attempt: Callable[[], RunResult],
    *,
    retries: int = DEFAULT_RETRIES,
    backoff_s: float = 0.0,
    sleep: Callable[[float], None] = time.sleep,
) -> RunResult:
    """Run ``attempt``; while it ends in a retryable fault, run it again, at most ``retries``
    more times. The last result comes back with the number of attempts made."""
    number = 1
    while True:
        result = attempt()
        if not is_retryable(result) or number > retries:
            return replace(result, attempts=number)
        sleep(backoff_s * number)
        number += 1


def is_retryable(result: RunResult) -> bool:
    return result.outcome is Outcome.fault and result.fault is not None and result.fault.retryable
