"""JUnit reports from real pytest sessions read back into outcomes keyed by pytest node ids."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from runners.testrun import junit, pytest_plugin, pytest_run
from runners.testrun.junit import JunitError, parse_junit, parse_junit_file
from runners.types import TestStatus
from tests.runner_repos import OUTCOME_IDS, OUTCOMES_MODULE

MODULE = "tests/sub.pkg/test_outcomes.py"  # a folder with a dot: dotted names are ambiguous


def session_report(tmp_path: Path, *options: str, plugin: bool = False) -> Path:
    """Run a real pytest session over the outcome module; the JUnit report's path."""
    (tmp_path / MODULE).parent.mkdir(parents=True)
    (tmp_path / MODULE).write_text(OUTCOMES_MODULE)
    (tmp_path / "tests/test_broken.py").write_text("import not_a_module_anywhere\n")
    report = tmp_path / "report.xml"
    argv = [sys.executable, "-m", "pytest", f"--junitxml={report}", "-p", "no:cacheprovider"]
    if plugin:
        (tmp_path / "plugin").mkdir()
        (tmp_path / "plugin" / "probewatch_pytest_plugin.py").write_text(
            pytest_run.PLUGIN_SOURCE.read_text()
        )
        argv += ["-p", "probewatch_pytest_plugin"]
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path / "plugin")}
    argv += ["--continue-on-collection-errors", "--rootdir", str(tmp_path), *options, "tests"]
    subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, check=False)
    return report


def by_id(results: tuple) -> dict[str, object]:
    return {r.node_id: r for r in results}


def expected_ids(prefix: str = MODULE) -> dict[str, str]:
    return {f"{prefix}::{name}": status for name, status in OUTCOME_IDS.items()}


def test_a_plain_xunit2_report_maps_back_to_node_ids_with_the_tree(tmp_path: Path) -> None:
    results = by_id(parse_junit_file(session_report(tmp_path), root=tmp_path))
    statuses = {node: r.status for node, r in results.items()}  # type: ignore[attr-defined]
    for node, status in expected_ids().items():
        assert statuses.pop(node) == status, node
    # Without the plugin a non-strict XPASS is indistinguishable from a pass.
    assert statuses.pop(f"{MODULE}::test_xpasses") == TestStatus.passed
    assert statuses == {"tests/test_broken.py": TestStatus.error}


def test_an_xunit1_report_maps_back_with_its_file_attribute(tmp_path: Path) -> None:
    report = session_report(tmp_path, "-o", "junit_family=xunit1")
    results = by_id(parse_junit_file(report))  # no root needed
    assert set(expected_ids()) <= set(results)
    assert "tests/test_broken.py" in results


def test_the_plugins_properties_give_exact_ids_and_xpass(tmp_path: Path) -> None:
    results = by_id(parse_junit_file(session_report(tmp_path, plugin=True)))
    statuses = {node: r.status for node, r in results.items()}  # type: ignore[attr-defined]
    for node, status in expected_ids().items():
        assert statuses[node] == status, node
    assert statuses[f"{MODULE}::test_xpasses"] == TestStatus.xpassed


def test_skip_reasons_and_failure_messages_are_kept(tmp_path: Path) -> None:
    results = by_id(parse_junit_file(session_report(tmp_path), root=tmp_path))
    assert results[f"{MODULE}::test_skips"].message == "needs a GPU"  # type: ignore[attr-defined]
    assert results[f"{MODULE}::test_xfails"].message == "known bug"  # type: ignore[attr-defined]
    assert "one is not two" in results[f"{MODULE}::test_fails"].message  # type: ignore[attr-defined]
    assert "setup broke" in results[f"{MODULE}::test_errors_in_setup"].message  # type: ignore[attr-defined]
    assert "No module named" in results["tests/test_broken.py"].message  # type: ignore[attr-defined]


ENVIRON_MODULE = """
import os


def test_reads_the_ci_variable():
    assert os.environ["PROBEWATCH_UNSET_CI_VARIABLE"]


def test_reads_its_own_dict():
    assert {}["PROBEWATCH_UNSET_CI_VARIABLE"]
"""


@pytest.mark.parametrize("traceback", ["--tb=short", "--tb=long"])
def test_a_key_error_of_os_environ_is_marked_and_one_of_the_tests_own_is_not(
    tmp_path: Path, traceback: str
) -> None:
    (tmp_path / "test_environ.py").write_text(ENVIRON_MODULE)
    report = tmp_path / "report.xml"
    argv = [sys.executable, "-m", "pytest", f"--junitxml={report}", traceback, "test_environ.py"]
    subprocess.run(argv, cwd=tmp_path, capture_output=True, check=False)
    results = by_id(parse_junit_file(report, root=tmp_path))
    environ = results["test_environ.py::test_reads_the_ci_variable"].message  # type: ignore[attr-defined]
    own = results["test_environ.py::test_reads_its_own_dict"].message  # type: ignore[attr-defined]
    assert "KeyError: 'PROBEWATCH_UNSET_CI_VARIABLE'" in environ and environ.endswith(
        junit.ENVIRON_MARK
    )
    assert "KeyError" in own and junit.ENVIRON_MARK not in own


DEVICE_COUNT_MODULE = """
import torch


def initialise(rank):
    torch.cuda.set_device(rank % torch.cuda.device_count())


def test_initialises_on_its_device():
    initialise(0)


def test_averages_nothing():
    items = []
    assert sum(items) / len(items) == 0
"""


def test_a_division_by_the_device_count_needs_a_gpu_and_one_by_the_tests_own_zero_does_not(
    tmp_path: Path,
) -> None:
    # With no GPU, torch.cuda.device_count() is 0: only the raising line names CUDA.
    from runners.testrun.faults import message_fault
    from runners.types import FaultKind

    (tmp_path / "test_devices.py").write_text(DEVICE_COUNT_MODULE)
    report = tmp_path / "report.xml"
    argv = [sys.executable, "-m", "pytest", f"--junitxml={report}", "test_devices.py"]
    subprocess.run(argv, cwd=tmp_path, capture_output=True, check=False)
    results = by_id(parse_junit_file(report, root=tmp_path))
    device = results["test_devices.py::test_initialises_on_its_device"].message  # type: ignore[attr-defined]
    own = results["test_devices.py::test_averages_nothing"].message  # type: ignore[attr-defined]
    assert "ZeroDivisionError" in device and "torch.cuda.device_count()" in device
    fault = message_fault(device)
    assert fault is not None and fault.kind is FaultKind.needs_gpu
    assert "ZeroDivisionError" in own and message_fault(own) is None


def test_probes_are_flagged_by_file(tmp_path: Path) -> None:
    results = parse_junit_file(session_report(tmp_path), root=tmp_path, probes=(MODULE,))
    assert {r.node_id for r in results if r.is_probe} == set(expected_ids()) | {
        f"{MODULE}::test_xpasses"
    }


def test_a_test_reported_twice_keeps_the_worse_status() -> None:
    xml = """<testsuite>
      <testcase classname="t.test_a" name="test_x" time="0.5"/>
      <testcase classname="t.test_a" name="test_x" time="0.2">
        <error message="failed on teardown with &quot;ValueError&quot;"/></testcase>
    </testsuite>"""
    (result,) = parse_junit(xml)
    assert (result.node_id, result.status, result.duration_s) == (
        "t/test_a.py::test_x",
        "error",
        0.5,
    )


def test_a_timeout_mark_wins_over_the_failure_it_caused() -> None:
    xml = """<testsuites><testsuite><testcase classname="t.test_a" name="test_x">
      <properties><property name="probewatch.outcome" value="timeout"/>
      <property name="probewatch.nodeid" value="t/test_a.py::test_x"/></properties>
      <failure message="TestTimeout: ran past its time limit"/></testcase></testsuite></testsuites>"""
    (result,) = parse_junit(xml)
    assert result.status is TestStatus.timeout
    assert "time limit" in (result.message or "")


def test_without_a_tree_a_capitalised_part_starts_the_classes() -> None:
    xml = '<testsuite><testcase classname="a.b.test_m.TestC" name="test_y[1]"/></testsuite>'
    assert parse_junit(xml)[0].node_id == "a/b/test_m.py::TestC::test_y[1]"


def test_something_that_is_not_junit_is_named() -> None:
    with pytest.raises(JunitError, match="not a JUnit XML report"):
        parse_junit("<testsuite><testcase")


def test_a_missing_report_is_named(tmp_path: Path) -> None:
    with pytest.raises(JunitError, match="cannot read"):
        parse_junit_file(tmp_path / "absent.xml")


def test_the_plugin_and_the_harness_share_their_names() -> None:
    assert pytest_plugin.NODEID_PROPERTY == junit.NODEID_PROPERTY
    assert pytest_plugin.OUTCOME_PROPERTY == junit.OUTCOME_PROPERTY
    assert pytest_plugin.HARD_TIMEOUT_EXIT == pytest_run.HARD_TIMEOUT_EXIT
    assert pytest_plugin.IN_FLIGHT_PREFIX == pytest_run.IN_FLIGHT_PREFIX
    assert pytest_plugin.HARD_TIMEOUTS_FILE == pytest_run.HARD_TIMEOUTS_FILE
    assert pytest_plugin.HARD_OUTPUT_PREFIX == pytest_run.HARD_OUTPUT_PREFIX
    assert pytest_plugin.OUTPUT_PROPERTY == junit.OUTPUT_PROPERTY
    assert pytest_plugin.TestTimeout.__name__ == "TestTimeout"


def test_the_plugin_collects_nothing_a_link_leads_out_of_the_tree_to(tmp_path: Path) -> None:
    tree, elsewhere = tmp_path / "tree", tmp_path / "elsewhere"
    (tree / "tests").mkdir(parents=True)
    (tree / "tests" / "test_inside.py").write_text("def test_inside():\n    pass\n")
    (elsewhere / "tests").mkdir(parents=True)
    (elsewhere / "tests" / "test_outside.py").write_text("def test_outside():\n    pass\n")
    (tree / "tests" / "outside_link").symlink_to(elsewhere / "tests")
    (tree / "tests" / "inside_link").symlink_to(tree / "tests" / "sub", target_is_directory=True)
    (tree / "tests" / "sub").mkdir()
    (tree / "tests" / "sub" / "test_sub.py").write_text("def test_sub():\n    pass\n")
    (tmp_path / "plugin").mkdir()
    (tmp_path / "plugin" / "probewatch_pytest_plugin.py").write_text(
        pytest_run.PLUGIN_SOURCE.read_text()
    )
    argv = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"]
    argv += ["-p", "probewatch_pytest_plugin", "--rootdir", str(tree), "tests"]
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path / "plugin")}
    out = subprocess.run(argv, cwd=tree, env=env, capture_output=True, text=True, check=False)
    assert "tests/test_inside.py::test_inside" in out.stdout, out.stdout + out.stderr
    assert "test_sub" in out.stdout  # a link inside the tree is still followed
    assert "test_outside" not in out.stdout
