"""The pytest plugin and markers: probes that cannot run here are skipped with their reason."""

from __future__ import annotations

import json

import pytest

from probe_builder.kit import ProbeNeeds, file_needs, needs_from_source, unsupported_reason
from tests.kit.support import without_cuda

pytest_plugins = ["pytester"]

PLUGIN_ARGS = ("-p", "probe_builder.kit.plugin", "-p", "no:probewatch_probes")

MARKED_PROBES = """
import pytest
from probe_builder.kit import ProbeUnsupported

@pytest.mark.probe_gpu(2)
def test_two_gpus():
    pass

@pytest.mark.probe_cuda_graph
def test_graphs():
    pass

@pytest.mark.probe_cpu_ok
def test_on_cpu():
    pass

@pytest.fixture
def nvlink():
    raise ProbeUnsupported("no NVLink between the GPUs")

def test_needs_nvlink(nvlink):
    pass
"""


@without_cuda
def test_probes_needing_missing_hardware_are_skipped_with_their_reason(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_marked=MARKED_PROBES)
    result = pytester.runpytest(*PLUGIN_ARGS, "--strict-markers", "-rs")
    result.assert_outcomes(passed=1, skipped=3)
    result.stdout.fnmatch_lines_random(
        [
            "*SKIPPED*probewatch: needs 2 CUDA GPU(s); this machine has 0*",
            "*SKIPPED*probewatch: needs CUDA graph capture (a CUDA GPU); this machine has none*",
            "*SKIPPED*probewatch: unsupported here: no NVLink between the GPUs*",
        ]
    )


def test_without_the_plugin_markers_are_unknown_and_unsupported_is_an_error_not_a_skip(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_marked=MARKED_PROBES)
    # A subprocess: an in-process run would share the warnings registry and dedupe the warning.
    result = pytester.runpytest_subprocess("-p", "no:probewatch_probes")
    result.assert_outcomes(passed=3, errors=1)
    result.stdout.fnmatch_lines(["*Unknown pytest.mark.probe_gpu*", "*ERROR*test_needs_nvlink*"])


def test_collection_writes_each_probes_needs_as_json(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_marked=MARKED_PROBES)
    target = pytester.path / "needs.json"
    result = pytester.runpytest(*PLUGIN_ARGS, "--collect-only", f"--probewatch-needs={target}")
    assert result.ret == 0
    needs = json.loads(target.read_text())
    assert needs["test_marked.py::test_two_gpus"] == {
        "gpus": 2,
        "cuda_graph": False,
        "cpu_ok": False,
    }
    assert needs["test_marked.py::test_graphs"]["cuda_graph"] is True
    assert needs["test_marked.py::test_on_cpu"]["cpu_ok"] is True


STATIC_SOURCE = """
import pytest
from pytest import mark

pytestmark = [pytest.mark.probe_cpu_ok, pytest.mark.filterwarnings("ignore")]

@pytest.mark.parametrize("n", list(range(3)))
def test_plain(n):
    pass

@mark.probe_gpu(n=4)
def test_four():
    pass

@pytest.mark.probe_gpu(2)
class TestGroup:
    @pytest.mark.probe_cuda_graph
    def test_graph(self):
        pass

    def helper(self):
        pass
"""


def test_needs_are_read_statically_from_source_with_module_and_class_markers() -> None:
    needs = needs_from_source(STATIC_SOURCE)
    assert needs == {
        "test_plain": ProbeNeeds(cpu_ok=True),
        "test_four": ProbeNeeds(gpus=4, cpu_ok=True),
        "TestGroup::test_graph": ProbeNeeds(gpus=2, cuda_graph=True, cpu_ok=True),
    }
    assert file_needs(STATIC_SOURCE) == ProbeNeeds(gpus=4, cuda_graph=True, cpu_ok=True)


def test_a_probe_gpu_count_that_is_not_a_literal_is_refused() -> None:
    with pytest.raises(ValueError, match="literal arguments"):
        needs_from_source("import pytest\n@pytest.mark.probe_gpu(N)\ndef test_x():\n    pass\n")
    with pytest.raises(ValueError, match="positive integer"):
        needs_from_source("import pytest\n@pytest.mark.probe_gpu(0)\ndef test_x():\n    pass\n")


def test_unsupported_reason_is_none_where_the_hardware_suffices() -> None:
    assert unsupported_reason(ProbeNeeds(gpus=2), gpus_here=8) is None
    assert unsupported_reason(ProbeNeeds(cuda_graph=True), gpus_here=1) is None
    assert unsupported_reason(ProbeNeeds(cpu_ok=True), gpus_here=0) is None
    assert "needs 8 CUDA GPU(s)" in (unsupported_reason(ProbeNeeds(gpus=8), gpus_here=2) or "")


def test_the_kit_imports_only_the_standard_library_torch_and_pytest() -> None:
    # Probes run in the task's own environment, which has torch and pytest but not
    # probewatch's dependencies: the kit must be copyable on its own.
    import ast
    import sys
    from pathlib import Path

    import probe_builder.kit

    allowed = set(sys.stdlib_module_names) | {"torch", "pytest", "probe_builder"}
    for path in Path(probe_builder.kit.__file__).parent.glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                roots = {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                roots = {node.module.split(".")[0]}
            else:
                continue
            assert roots <= allowed, f"{path.name} imports {roots - allowed}"
            if "probe_builder" in roots and isinstance(node, ast.ImportFrom):
                assert node.module.startswith("probe_builder.kit"), f"{path.name}: {node.module}"
