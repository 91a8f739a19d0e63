"""Repairing environments whose tests import what no requirement file names."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest

from probe_builder.environment import with_exclusions
from runners.env import EnvHome, EnvRequest, RepairOutcome, RepoEnvConfig, prepare_environment
from runners.env.manifest import read_manifest
from runners.env.repair import (
    distribution_for,
    judge,
    missing_modules,
    missing_names,
    modules_of,
)
from runners.env.uv import Uv
from runners.execute import unavailable_module
from runners.types import EnvironmentRef, FaultKind
from tests.runners_env_support import ERA, make_repo

pytest_plugins = ["tests.runners_env_fixtures"]

COLLECT_OUTPUT = """
==================================== ERRORS ====================================
____________________ ERROR collecting tests/test_a.py ____________________
ImportError while importing test module '/w/tests/test_a.py'.
E   ModuleNotFoundError: No module named 'yaml'
____________________ ERROR collecting tests/test_b.py ____________________
E   ModuleNotFoundError: No module named 'google.protobuf'
E   ModuleNotFoundError: No module named 'yaml'
ImportError: LlamaTokenizer requires the sentencepiece library but it was not found in your environment.
"""


def test_missing_modules_are_read_from_collection_errors_once_each() -> None:
    assert missing_modules(COLLECT_OUTPUT) == ["yaml", "google.protobuf", "sentencepiece"]
    assert missing_modules("ImportError: cannot import name 'X' from 'y'") == []


@pytest.mark.parametrize(
    ("module", "distribution"),
    [
        ("yaml", "PyYAML"),
        ("cv2", "opencv-python-headless"),
        ("PIL.Image", "Pillow"),
        ("sklearn.metrics", "scikit-learn"),
        ("google.protobuf.message", "protobuf"),
        ("attr", "attrs"),
        ("openai", "openai"),
        ("math_verify", "math-verify"),
        ("torchdata.stateful_dataloader", "torchdata"),
    ],
)
def test_modules_map_to_their_distribution(module: str, distribution: str) -> None:
    assert distribution_for(module) == distribution


def test_judge_refuses_what_pip_cannot_or_must_not_fix(tmp_path: Path) -> None:
    (tmp_path / "mypkg").mkdir()
    config = RepoEnvConfig(exclude=("vllm",))

    def outcome(module: str, tried: set[str] | None = None) -> RepairOutcome:
        found = judge(module, round_=1, worktree=tmp_path, config=config, tried=tried or set())
        return found.outcome

    assert outcome("json") is RepairOutcome.not_installable  # the standard library
    assert outcome("mypkg.sub") is RepairOutcome.not_installable  # the repository's own code
    assert outcome("vllm") is RepairOutcome.excluded
    assert outcome("yaml", tried={"pyyaml"}) is RepairOutcome.unresolvable
    assert outcome("yaml") is RepairOutcome.added


@pytest.fixture(scope="module")
def repaired(tmp_path_factory: pytest.TempPathFactory, env_home: EnvHome, uv: Uv):  # type: ignore[no-untyped-def]
    repo, commit = make_repo(
        tmp_path_factory.mktemp("repairrepo"),
        {
            "requirements.txt": "six\n",
            "tests/test_uses_yaml.py": "import yaml\nimport attr\nimport six\n\n"
            "def test_ok():\n    assert yaml.safe_load('a: 1') == {'a': 1}\n",
            "tests/test_gpu.py": "import vllm\n\ndef test_gpu():\n    pass\n",
        },
    )
    request = EnvRequest(
        repo=repo,
        commit=commit,
        merge_time=ERA,
        tests=("tests",),
        config=RepoEnvConfig(exclude=("vllm",)),
        repo_name="demo/repairs",
    )
    return prepare_environment(request, env_home, uv)


def test_repair_adds_the_missing_distributions_and_records_them(repaired) -> None:  # type: ignore[no-untyped-def]
    added = {r.module: r.distribution for r in repaired.repairs if r.outcome == "added"}
    assert added == {"yaml": "PyYAML", "attr": "attrs"}
    assert repaired.lock.pin_of("pyyaml") is not None and repaired.lock.pin_of("attrs")
    manifest = read_manifest(repaired.build.ref.root)
    # Every decision up to the last build shaped the environment and is in its manifest.
    assert [(r.module, r.outcome) for r in manifest.repairs] == [
        (r.module, r.outcome) for r in repaired.repairs
    ]
    assert sum(r.module == "vllm" for r in repaired.repairs) == 1  # judged once, not per round
    assert manifest.provenance.repo == "demo/repairs"


def test_repair_never_adds_an_excluded_distribution(repaired) -> None:  # type: ignore[no-untyped-def]
    vllm = [r for r in repaired.repairs if r.module == "vllm"]
    assert vllm and all(r.outcome is RepairOutcome.excluded for r in vllm)
    assert repaired.lock.pin_of("vllm") is None
    # Runs in this environment know vllm cannot be had: its absence is not a patch's fault.
    assert repaired.build.ref.unavailable == {
        "vllm": "the repository's environment config excludes vllm"
    }
    # The excluded import still fails collection: the run will say so, not the build.
    assert (
        repaired.collection is not None and "No module named 'vllm'" in repaired.collection.output
    )


def test_repair_resolves_in_the_same_era(repaired) -> None:  # type: ignore[no-untyped-def]
    assert repaired.lock.exclude_newer == "2023-06-01T00:00:00Z"
    assert repaired.lock.pin_of("pyyaml") == "pyyaml==6.0"  # 6.0.1 came out 2023-07-18


def test_an_unknown_distribution_is_recorded_as_unresolvable(
    tmp_path: Path, env_home: EnvHome, uv: Uv
) -> None:
    repo, commit = make_repo(
        tmp_path / "r",
        {"requirements.txt": "six\n", "tests/test_x.py": "import no_such_module_probewatch\n"},
    )
    request = EnvRequest(repo=repo, commit=commit, merge_time=ERA, tests=("tests",))
    prepared = prepare_environment(request, env_home, uv)
    assert [(r.module, r.outcome) for r in prepared.repairs] == [
        ("no_such_module_probewatch", RepairOutcome.unresolvable)
    ]
    assert prepared.builds == 0  # the base set was built by another test; nothing new to build
    # Judged after the last build, the decision is still in that environment's manifest...
    root = prepared.build.ref.root
    assert ("no_such_module_probewatch", RepairOutcome.unresolvable) in [
        (r.module, r.outcome) for r in read_manifest(root).repairs
    ]
    assert not root.stat().st_mode & 0o222  # ...which stays read-only
    assert "no_such_module_probewatch" in prepared.build.ref.unavailable


def test_a_name_a_fresh_major_release_dropped_holds_that_distribution_back(
    tmp_path: Path, env_home: EnvHome, uv: Uv
) -> None:
    """urllib3 2.0 (April 2023) dropped ``urllib3.packages.six``; code of that era that still
    imports it ran on 1.26 in its own CI. The era's newest release is held below 2."""
    repo, commit = make_repo(
        tmp_path / "r",
        {
            "requirements.txt": "urllib3\n",
            "tests/test_six.py": "from urllib3.packages import six\n\n"
            "def test_six():\n    assert six.PY3\n",
        },
    )
    request = EnvRequest(repo=repo, commit=commit, merge_time=ERA, tests=("tests",))
    prepared = prepare_environment(request, env_home, uv)

    held = [r for r in prepared.repairs if r.outcome is RepairOutcome.held_back]
    assert [(r.distribution, r.requirement) for r in held] == [("urllib3", "urllib3<2")]
    assert "lacks 'packages'" in held[0].detail  # urllib3 2 has no urllib3.packages at all
    assert (prepared.lock.pin_of("urllib3") or "").startswith("urllib3==1.26.")
    assert prepared.collection is not None and prepared.collection.ok


@pytest.mark.parametrize(
    ("output", "found"),
    [
        (
            "ImportError: cannot import name 'AutoModelForVision2Seq' from 'transformers' "
            "(/envs/abc/lib/python3.11/site-packages/transformers/__init__.py)",
            [("transformers", "AutoModelForVision2Seq")],
        ),
        (  # the repository's own module: a code problem, not a package to hold back
            "ImportError: cannot import name 'helper' from 'verl.utils' (/work/tree/verl/utils/__init__.py)",
            [],
        ),
    ],
)
def test_only_names_missing_from_installed_packages_are_read(
    output: str, found: list[tuple[str, str]]
) -> None:
    assert missing_names(output) == found


def test_the_harness_takes_coverage_when_the_era_has_it_and_builds_without_it_otherwise(
    tmp_path: Path, env_home: EnvHome, uv: Uv
) -> None:
    repo, commit = make_repo(
        tmp_path / "r",
        {"requirements.txt": "six\n", "tests/test_x.py": "def test_x():\n    pass\n"},
    )
    request = EnvRequest(repo=repo, commit=commit, merge_time=ERA, tests=("tests",))
    wanted = prepare_environment(request, env_home, uv)
    assert (wanted.lock.pin_of("coverage") or "").startswith("coverage==")

    # An optional part the era cannot supply costs the survivor search its line data, not the build.
    unavailable = replace(request, optional=("no-such-distribution-probewatch",))
    without = prepare_environment(unavailable, env_home, uv)
    assert without.lock.pin_of("no-such-distribution-probewatch") is None
    assert without.lock.pin_of("six") and without.collection is not None and without.collection.ok


@pytest.mark.parametrize(
    ("distribution", "module"),
    [("vllm", "vllm"), ("flash-attn", "flash_attn"), ("megatron-core", "megatron.core")],
)
def test_an_excluded_distribution_names_the_modules_it_would_provide(
    distribution: str, module: str
) -> None:
    assert module in modules_of(distribution)


def test_a_tasks_environment_knows_what_its_repository_leaves_out() -> None:
    ref = EnvironmentRef(
        "abc", Path(sys.prefix), Path(sys.executable), unavailable={"yaml": "cannot be resolved"}
    )
    known = with_exclusions(ref, RepoEnvConfig(exclude=("vllm", "megatron-core")))
    assert known.unavailable["vllm"] == "the repository's environment config excludes vllm"
    assert "megatron.core" in known.unavailable and known.unavailable["yaml"]
    # A test importing one as it runs fails for the machine's sake; a sibling package is not it.
    fault = unavailable_module(
        "ModuleNotFoundError: No module named 'megatron.core.parallel_state'", known.unavailable
    )
    assert fault is not None and "cannot provide 'megatron.core'" in fault.detail
    assert unavailable_module("No module named 'megatron'", known.unavailable) is None


@pytest.mark.parametrize(
    "message",
    [
        "ValueError: vllm version None not supported and SGLang also not Found. Currently",
        "ImportError: flash_attn is not installed; pip install flash-attn",
        "RuntimeError: this rollout requires sglang",
    ],
)
def test_a_guard_saying_a_left_out_package_is_absent_is_the_machines_fault(message) -> None:
    ref = EnvironmentRef("abc", Path(sys.prefix), Path(sys.executable))
    known = with_exclusions(ref, RepoEnvConfig(exclude=("vllm", "sglang", "flash-attn")))
    fault = unavailable_module(message, known.unavailable)
    assert fault is not None and fault.kind is FaultKind.environment_build
    assert "the repository's environment config excludes" in fault.detail


@pytest.mark.parametrize(
    "message",
    [
        "AssertionError: vllm outputs differ from the reference",  # a failure of the test
        "ValueError: numpy version None not supported",  # a package the environment has
        "KeyError: 'vllm_config' is required",  # a name that merely starts like the module
    ],
)
def test_a_failure_that_only_names_a_left_out_package_stays_the_tests(message) -> None:
    ref = EnvironmentRef("abc", Path(sys.prefix), Path(sys.executable))
    known = with_exclusions(ref, RepoEnvConfig(exclude=("vllm", "sglang")))
    assert unavailable_module(message, known.unavailable) is None
