"""pytest plugin injected into every probewatch run with ``-p``: time limits and exact reports.

It gives each test a time limit over setup, call and teardown: at the limit a
``TestTimeout`` is raised in the test (SIGALRM); if the test is stuck where no
signal can reach it, a watchdog thread, after a grace period, notes the test,
writes the JUnit report of the tests done so far and ends the session, so the
harness can resume with the rest. It writes the exact node id and the
``xpassed`` / ``timeout`` outcomes (which JUnit cannot express) as testcase
properties, notes the test in flight for the harness's own run time limit,
turns SIGTERM into a clean interrupt (pytest then still writes its report) and
registers the ``probe_gpu(n)`` marker, adds ``--pw-also`` paths (probes) to
a full-suite run's own selection and collects nothing a link leads out of the
tree to. The file is copied next to each run
rather than imported from probewatch: it runs in the task's own environment,
which has pytest but not probewatch, so it uses the standard library and
pytest only. Names shared with the harness are repeated in runners/testrun/junit.py
and runners/testrun/pytest_run.py; a test keeps them equal.
"""

from __future__ import annotations

import faulthandler
import os
import signal
import sys
import threading
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

NODEID_PROPERTY = "probewatch.nodeid"
OUTCOME_PROPERTY = "probewatch.outcome"
HARD_TIMEOUT_EXIT = 86
IN_FLIGHT_PREFIX = "in-flight-"
HARD_TIMEOUTS_FILE = "hard-timeouts"
OUTPUT_PROPERTY = "probewatch.output"
HARD_OUTPUT_PREFIX = "hard-output-"
OUTPUT_TAIL_CHARS = 1200
DEFAULT_GRACE_S = 5.0


_TREE_KEY = pytest.StashKey[Path]()  # the resolved rootdir, read once per session


class TestTimeout(BaseException):
    """A test's time is up. A BaseException, so ``except Exception`` in a test cannot swallow it."""

    __test__ = False


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("probewatch")
    group.addoption("--pw-timeout", type=float, default=0.0, help="seconds per test; 0: none")
    group.addoption("--pw-grace", type=float, default=DEFAULT_GRACE_S, help="hard-limit grace")
    group.addoption("--pw-state", default=None, help="folder for in-flight and timeout notes")
    group.addoption("--pw-also", action="append", default=[], help="collect this path too (probes)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "probe_gpu(n): the probe needs n GPUs")
    # A full-suite run keeps pytest's own selection (testpaths) and adds the probes to it.
    config.args.extend(config.getoption("pw_also"))
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _interrupt)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """A path that a link leads out of the tree is not the PR's: it is not collected, so a
    link to ``/tmp`` or ``/`` cannot make the run import and run files from elsewhere."""
    root = config.stash.get(_TREE_KEY, None)
    if root is None:
        root = config.stash[_TREE_KEY] = config.rootpath.resolve()
    try:
        collection_path.resolve().relative_to(root)
    except (ValueError, OSError):  # outside the tree, or a link loop: nothing to collect
        return True
    return None


def _interrupt(signum: int, _frame: FrameType | None) -> None:
    # pytest ends an interrupted session cleanly and still writes the JUnit report.
    raise KeyboardInterrupt(f"stopped by signal {signum}")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(
    item: pytest.Item, nextitem: pytest.Item | None
) -> Generator[None, object, object]:
    item.user_properties.append((NODEID_PROPERTY, item.nodeid))
    with _in_flight(item.config, item.nodeid), _time_limit(item):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    timed_out = call.excinfo is not None and call.excinfo.errisinstance(TestTimeout)
    if timed_out:
        item.user_properties.append((OUTCOME_PROPERTY, "timeout"))
    report: pytest.TestReport = yield
    if report.when == "call" and report.passed and hasattr(report, "wasxfail"):
        item.user_properties.append((OUTCOME_PROPERTY, "xpassed"))
    tail = (report.capstdout + report.capstderr)[-OUTPUT_TAIL_CHARS:]
    if timed_out and tail.strip():
        # What the test printed while it waited (a cluster that waits for GPUs says so):
        # the harness reads it to tell a machine's fault from a patch's hang.
        item.user_properties.append((OUTPUT_PROPERTY, tail))
        report.user_properties.append((OUTPUT_PROPERTY, tail))
    return report


def _state(config: pytest.Config) -> Path | None:
    folder = config.getoption("pw_state")
    return Path(folder) if folder else None


@contextmanager
def _in_flight(config: pytest.Config, nodeid: str) -> Iterator[None]:
    """Name the running test in a file per process, for the harness's run time limit."""
    state = _state(config)
    note = state / f"{IN_FLIGHT_PREFIX}{os.getpid()}" if state else None
    if note is not None:
        note.write_text(nodeid, encoding="utf-8")
    yield
    # Not in a ``finally``: a test interrupted by the harness's stop stays noted.
    if note is not None:
        note.unlink(missing_ok=True)


@contextmanager
def _time_limit(item: pytest.Item) -> Iterator[None]:
    seconds = float(item.config.getoption("pw_timeout") or 0.0)
    if seconds <= 0 or threading.current_thread() is not threading.main_thread():
        yield
        return
    grace = float(item.config.getoption("pw_grace"))
    watchdog = threading.Timer(seconds + grace, _abandon, args=(item.config, item.nodeid, seconds))
    watchdog.daemon = True
    previous = signal.signal(signal.SIGALRM, _make_alarm(item.nodeid, seconds))
    signal.setitimer(signal.ITIMER_REAL, seconds)
    watchdog.start()
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        watchdog.cancel()


def _make_alarm(nodeid: str, seconds: float) -> Any:
    def alarm(_signum: int, _frame: FrameType | None) -> None:
        raise TestTimeout(f"probewatch: {nodeid} ran past its time limit of {seconds:g}s")

    return alarm


def _abandon(config: pytest.Config, nodeid: str, seconds: float) -> None:
    """The test did not stop at its limit (stuck outside Python): end the session."""
    printed = _captured_so_far(config)[-OUTPUT_TAIL_CHARS:]  # before the dump below joins it
    sys.stderr.write(
        f"\nprobewatch: {nodeid} still running after its time limit of {seconds:g}s "
        "and the grace period; ending the session\n"
    )
    faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
    state = _state(config)
    if state is not None:
        with open(state / HARD_TIMEOUTS_FILE, "a", encoding="utf-8") as notes:
            notes.write(nodeid + "\n")
        if printed.strip():
            note = state / f"{HARD_OUTPUT_PREFIX}{os.getpid()}"
            note.write_text(f"{nodeid}\n{printed}", encoding="utf-8")
    _write_partial_junit(config)
    sys.stderr.flush()
    os._exit(HARD_TIMEOUT_EXIT)


def _captured_so_far(config: pytest.Config) -> str:
    """What the stuck test has printed, read from pytest's capture (best effort)."""
    try:
        capman = config.pluginmanager.getplugin("capturemanager")
        if capman is None:
            return ""
        out, err = capman.read_global_capture()
        return f"{out}{err}"
    except Exception:  # the capture may be suspended or closed: the timeout still stands
        return ""


def _write_partial_junit(config: pytest.Config) -> None:
    """Write the JUnit report of the tests finished so far, before the hard exit."""
    try:
        from _pytest.junitxml import xml_key

        xml = config.stash.get(xml_key, None)
        if xml is not None:
            xml.pytest_sessionfinish()
    except Exception as exc:  # best effort on the way out: the harness reruns what is missing
        sys.stderr.write(f"probewatch: could not write the partial JUnit report: {exc!r}\n")
