"""Local GitHub REST API emulator for tests: PyGithub (or any HTTP client) talks real HTTP to a
uvicorn server on 127.0.0.1 whose answers come from an in-memory EmulatorState that tests seed and
inspect, with GitHub's pagination, conditional requests, primary quota and injectable faults.
"""

from .app import create_app
from .server import GitHubEmulator
from .state import (
    Artifact,
    CheckRun,
    Comment,
    ContentEntry,
    Dispatch,
    EmulatorError,
    EmulatorState,
    HookDelivery,
    Installation,
    Pull,
    PullFile,
    Quota,
    Repo,
    RequestRecord,
    Workflow,
    WorkflowRun,
    fake_sha,
    make_zip,
)

__all__ = [
    "Artifact",
    "CheckRun",
    "Comment",
    "ContentEntry",
    "Dispatch",
    "EmulatorError",
    "EmulatorState",
    "GitHubEmulator",
    "HookDelivery",
    "Installation",
    "Pull",
    "PullFile",
    "Quota",
    "Repo",
    "RequestRecord",
    "Workflow",
    "WorkflowRun",
    "create_app",
    "fake_sha",
    "make_zip",
]
