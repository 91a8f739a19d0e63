"""One error root: every error probewatch raises on purpose is a ``ProbewatchError``, each
name means one thing, and the CLI turns any of them into one line and exit code 1."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from probewatch.errors import (
    BuildError,
    ConfigError,
    EvaluationError,
    MinerError,
    ProbewatchError,
    RegistryError,
    RunnerError,
    ServiceError,
)

PACKAGES = ("probewatch", "bot", "pr_miner", "probe_builder", "runners", "task_registry")
# Raised inside a test process, where they are test outcomes (a failed or skipped probe,
# a test out of time), not errors of the service: they keep the bases pytest needs.
TEST_PROCESS_SIDE = ("probe_builder.kit.", "runners.testrun.pytest_plugin")
STAGE_OF_PACKAGE = {
    "pr_miner": (MinerError, ConfigError),
    "probe_builder": (BuildError, ConfigError),
    "runners": (RunnerError,),
    "task_registry": (RegistryError,),
    "bot.evaluate": (EvaluationError,),
    "bot.service": (ServiceError, ConfigError),
}


def _modules() -> list[str]:
    names = []
    for package in PACKAGES:
        root = importlib.import_module(package)
        names.append(package)
        for info in pkgutil.walk_packages(root.__path__, prefix=f"{package}."):
            if ".migrations" not in info.name:
                names.append(info.name)
    return names


def _error_classes() -> list[type[BaseException]]:
    found = []
    for name in _modules():
        if name.startswith(TEST_PROCESS_SIDE):
            continue
        module = importlib.import_module(name)
        for _, value in inspect.getmembers(module, inspect.isclass):
            if issubclass(value, BaseException) and value.__module__ == name:
                found.append(value)
    return found


ERRORS = _error_classes()


def test_the_walk_finds_the_errors_of_every_stage() -> None:
    modules = {error.__module__.split(".")[0] for error in ERRORS}
    assert set(PACKAGES) <= modules
    assert len(ERRORS) > 50


@pytest.mark.parametrize("error", ERRORS, ids=lambda e: f"{e.__module__}.{e.__qualname__}")
def test_every_error_is_a_probewatch_error(error: type[BaseException]) -> None:
    assert issubclass(error, ProbewatchError), (
        f"{error.__module__}.{error.__qualname__} derives from {error.__mro__[1].__name__}, "
        "not from its stage's base in probewatch.errors"
    )


@pytest.mark.parametrize("error", ERRORS, ids=lambda e: f"{e.__module__}.{e.__qualname__}")
def test_an_error_derives_from_its_stages_base(error: type[BaseException]) -> None:
    stage = next(
        (
            bases
            for package, bases in STAGE_OF_PACKAGE.items()
            if error.__module__.startswith(package)
        ),
        None,
    )
    if stage is None:
        return  # the foundation, the CLI, the demo and the application core use any base
    assert issubclass(error, stage), f"{error.__qualname__} is not one of {stage}"


def test_each_error_name_means_one_thing() -> None:
    homes: dict[str, set[str]] = defaultdict(set)
    for error in ERRORS:
        homes[error.__qualname__].add(error.__module__)
    twins = {name: sorted(where) for name, where in homes.items() if len(where) > 1}
    assert not twins


def _probewatch(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bot.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    import os

    keep = {k: v for k, v in os.environ.items() if not k.startswith("PROBEWATCH_")}
    return {**keep, "PROBEWATCH_HOME": str(tmp_path), **extra}


@pytest.mark.parametrize(
    ("args", "extra", "expected"),
    [
        (("config", "check"), {"PROBEWATCH_ENVIRONMENT": "production"}, "PostgreSQL"),
        (("config", "check"), {"PROBEWATCH_WORKER_LEASE_S": "-1"}, "PROBEWATCH_WORKER_LEASE_S"),
        (
            ("db", "current"),
            {"PROBEWATCH_DATABASE_URL": "postgresql+psycopg://nobody@127.0.0.1:1/none"},
            "check PROBEWATCH_DATABASE_URL",
        ),
        (("mine", "--repo", "a/b", "--git", "/nonexistent/mirror"), {}, "/nonexistent/mirror"),
    ],
    ids=["settings", "settings-field", "database", "miner"],
)
def test_the_cli_prints_any_stage_error_as_one_line(
    tmp_path: Path, args: tuple[str, ...], extra: dict[str, str], expected: str
) -> None:
    if args[0] == "mine":
        assert _probewatch("db", "upgrade", env=_env(tmp_path)).returncode == 0
    result = _probewatch(*args, env=_env(tmp_path, **extra))
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert lines[0].startswith("error: ")
    assert expected in result.stderr
