"""JUnit XML from pytest into per-test outcomes, keyed by pytest node ids.

pytest's JUnit report loses what scoring needs: node ids are mangled into a
dotted ``classname`` (``tests/sub/test_a.py::TestC::test[x]`` becomes
``tests.sub.test_a.TestC`` + ``test[x]``), a non-strict XPASS looks like a
pass, and a test that fails and then errors in teardown appears twice. Runs
made through :mod:`runners.testrun.pytest_run` carry properties written by the
injected plugin (the exact node id, ``xpassed``, ``timeout``); plain reports
from elsewhere are mapped back with the ``file`` attribute (``xunit1``) or, as
a last resort, by finding the module among the files under ``root``.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from pathlib import Path

from probewatch.errors import RunnerError
from runners.types import TestCaseResult, TestStatus

# Properties the injected plugin writes (runners/testrun/pytest_plugin.py keeps the same names).
NODEID_PROPERTY = "probewatch.nodeid"
OUTCOME_PROPERTY = "probewatch.outcome"
OUTPUT_PROPERTY = "probewatch.output"  # what a timed-out test printed before its limit
MESSAGE_LIMIT = 2000
# When one node id has several testcase elements, the worst status describes it.
_SEVERITY = (
    TestStatus.timeout,
    TestStatus.failed,
    TestStatus.error,
    TestStatus.xpassed,
    TestStatus.passed,
    TestStatus.xfailed,
    TestStatus.skipped,
)
_XFAIL_TYPE = "pytest.xfail"
# A traceback's location lines: ``path:line: in function`` (--tb=short) or
# ``path:line: Error`` (--tb=long). A KeyError raised inside ``os.environ`` ends in the os module.
_LOCATION = re.compile(r"^(?P<path>[^\s:][^:\n]*):\d+: (?:in \w+|\w+)\s*$", re.MULTILINE)
_OS_MODULE = re.compile(r"^(?:<frozen os>|.*[\\/]os\.py)$")
ENVIRON_MARK = "[os.environ]"
OUTPUT_MARK = "; printed before the limit: "
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


class JunitError(RunnerError, ValueError):
    """The file is not a JUnit XML report."""


@dataclass(frozen=True)
class _Case:
    node_id: str
    status: TestStatus
    duration_s: float
    message: str | None


def parse_junit_file(
    path: Path, *, root: Path | None = None, probes: Collection[str] = ()
) -> tuple[TestCaseResult, ...]:
    """Per-test outcomes from the report at ``path``; JunitError when it cannot be read."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise JunitError(f"cannot read the JUnit report {path}: {exc}") from exc
    return parse_junit(text, root=root, probes=probes)


def parse_junit(
    text: str, *, root: Path | None = None, probes: Collection[str] = ()
) -> tuple[TestCaseResult, ...]:
    """Per-test outcomes, one per node id in report order; ``probes`` are probe file paths."""
    try:
        document = ET.fromstring(text)
    except ET.ParseError as exc:
        raise JunitError(f"not a JUnit XML report: {exc}") from exc
    merged: dict[str, _Case] = {}
    for element in _testcases(document):
        if not element.get("name"):
            continue  # a report written mid-test (a session abandoned on a stuck test) has these
        case = _case(element, root)
        merged[case.node_id] = _worse(merged.get(case.node_id), case)
    return tuple(_result(case, probes) for case in merged.values())


def _testcases(document: ET.Element) -> Iterator[ET.Element]:
    if document.tag == "testcase":
        yield document
        return
    yield from document.iter("testcase")


def _case(element: ET.Element, root: Path | None) -> _Case:
    props = _properties(element)
    status, message = _status(element, props.get(OUTCOME_PROPERTY))
    if status is TestStatus.timeout and props.get(OUTPUT_PROPERTY):
        message = with_output(message, props[OUTPUT_PROPERTY])
    return _Case(
        node_id=props.get(NODEID_PROPERTY) or node_id_of(element, root),
        status=status,
        duration_s=_float(element.get("time")),
        message=message,
    )


def _properties(element: ET.Element) -> dict[str, str]:
    return {
        prop.get("name", ""): prop.get("value", "")
        for prop in element.iterfind("properties/property")
    }


def _status(element: ET.Element, marked: str | None) -> tuple[TestStatus, str | None]:
    """The outcome of one testcase element; the plugin's mark wins over the XML's shape."""
    child = next((c for c in element if c.tag in ("failure", "error", "skipped")), None)
    message = _message(child)
    if marked in (TestStatus.timeout, TestStatus.xpassed):
        return TestStatus(marked), message
    if child is None:
        return TestStatus.passed, None
    if child.tag == "skipped":
        kind = TestStatus.xfailed if child.get("type") == _XFAIL_TYPE else TestStatus.skipped
        return kind, message
    return (TestStatus.failed if child.tag == "failure" else TestStatus.error), message


def _message(child: ET.Element | None) -> str | None:
    """The skip reason, or the failure's summary plus the last ``E`` line of its traceback;
    a KeyError that ``os.environ`` raised (a variable the run lacks) is marked as such."""
    if child is None:
        return None
    text = child.get("message") or ""
    if child.tag != "skipped":
        body = child.text or ""
        detail = _last_error_line(body)
        if detail and detail not in text:
            text = f"{text}: {detail}" if text else detail
        if detail.startswith("KeyError: ") and _raised_in_os(body):
            text = f"{text[: MESSAGE_LIMIT - len(ENVIRON_MARK) - 1]} {ENVIRON_MARK}"
        elif detail.startswith("ZeroDivisionError") and _DIVIDES_BY_DEVICES.search(
            line := _raising_line(body)
        ):  # no GPU: a count of devices that is 0
            text = f"{text[: MESSAGE_LIMIT - len(line) - 8]} [at: {line}]"
    return text[:MESSAGE_LIMIT] or None


# A line dividing by how many accelerators there are (``rank % torch.cuda.device_count()``).
_DIVIDES_BY_DEVICES = re.compile(r"[%/]\s*(?:torch\.)?cuda\.device_count\(\)")


def _raising_line(body: str) -> str:
    """The source line of the traceback's last frame (pytest marks it with ``>``)."""
    marked = [line[1:].strip() for line in body.splitlines() if line.startswith(">")]
    return marked[-1] if marked else ""


def with_output(message: str | None, output: str) -> str:
    """A timed-out test's message with the tail of what it printed while it waited, within
    the message limit; the tail is what tells a cluster waiting for GPUs from a hang."""
    head = message or "stopped at its time limit"
    output = _ANSI.sub("", output)  # terminal colours (Ray's autoscaler) say nothing here
    tail = output.strip()[-(MESSAGE_LIMIT - len(head) - len(OUTPUT_MARK)) :]
    return f"{head}{OUTPUT_MARK}{tail}"[:MESSAGE_LIMIT]


def _last_error_line(body: str) -> str:
    errors = [line[1:].strip() for line in body.splitlines() if line.startswith("E ")]
    return errors[-1] if errors else body.strip().rpartition("\n")[2]


def _raised_in_os(body: str) -> bool:
    """Whether the traceback's last frame is the os module (``os.environ[...]``)."""
    locations = _LOCATION.findall(body)
    return bool(locations) and bool(_OS_MODULE.match(locations[-1]))


def node_id_of(element: ET.Element, root: Path | None = None) -> str:
    """pytest's node id for a testcase element without the plugin's property."""
    classname, name = element.get("classname", ""), element.get("name", "")
    file = element.get("file")
    if not classname:
        # A collection error: ``name`` is the module, dotted.
        return file or _module_path(name.split("."), root)[0]
    parts = classname.split(".")
    if file:
        module = file.removesuffix(".py").replace("/", ".").split(".")
        if parts[: len(module)] == module:
            return "::".join([file, *parts[len(module) :], name])
    path, classes = _module_path(parts, root)
    return "::".join([path, *classes, name])


def _module_path(parts: list[str], root: Path | None) -> tuple[str, list[str]]:
    """Split dotted ``a.b.test_m.TestC`` into ``a/b/test_m.py`` and ``[TestC]``.

    With ``root`` the module is looked up there (a dot may be a folder
    separator or part of a folder's name); otherwise, or when nothing is
    found, the first capitalised part starts the classes (pytest's ``Test*``).
    """
    found = _find_module(root, parts, 0) if root is not None else None
    if found is not None:
        return found
    cut = next((i for i, p in enumerate(parts) if i and p[:1].isupper()), len(parts))
    return "/".join(parts[:cut]) + ".py", parts[cut:]


def _find_module(folder: Path, parts: list[str], start: int) -> tuple[str, list[str]] | None:
    for end in range(len(parts), start, -1):
        name = ".".join(parts[start:end])
        if (folder / f"{name}.py").is_file():
            return f"{name}.py", parts[end:]
        if (folder / name).is_dir():
            found = _find_module(folder / name, parts, end)
            if found is not None:
                return f"{name}/{found[0]}", found[1]
    return None


def _worse(old: _Case | None, new: _Case) -> _Case:
    if old is None:
        return new
    worst = min((old, new), key=lambda c: _SEVERITY.index(c.status))
    duration = max(old.duration_s, new.duration_s)
    return _Case(worst.node_id, worst.status, duration, worst.message or old.message)


def _result(case: _Case, probes: Collection[str]) -> TestCaseResult:
    return TestCaseResult(
        node_id=case.node_id,
        status=case.status,
        duration_s=case.duration_s,
        message=case.message,
        is_probe=case.node_id.split("::", 1)[0] in probes,
    )


def _float(value: str | None) -> float:
    try:
        return float(value) if value else 0.0
    except ValueError:
        return 0.0
