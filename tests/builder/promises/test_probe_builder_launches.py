"""What a launch script of the test patch runs, and the verdict of a promise it runs."""

from __future__ import annotations

import textwrap

import pytest

from probe_builder.gitio import MemoryTree
from probe_builder.promises.assertions import profile_source
from probe_builder.promises.extract import ExtractedPromise
from probe_builder.promises.launches import ProgramReader, launched
from probe_builder.promises.linking import CodeUnderTest, TestScript, changed_symbol
from probe_builder.promises.verdicts import judge_promises
from task_registry.types import PromiseCategory, PromiseVerdict
from tests.probe_builder_support import make_pr


def _files_run(reader: ProgramReader, script_path: str, script: str) -> frozenset[str]:
    return reader.files_run(reader.programs(script_path, script))


SCRIPT = """\
#!/usr/bin/env bash
set -xeuo pipefail
# python3 -m pkg.commented_out
python3 -m pkg.main \\
    trainer.epochs=1 \\
    trainer.resume=auto
torchrun --nproc_per_node 2 --master_port=29500 tools/train.py --steps 2
python3 tests/e2e/test_results.py --out "$OUT"
python3 "${ENTRY}.py"
python -c "print(1)"
python -m torch.distributed.run --nproc_per_node 2 tools/pretrain.py --steps 2
python3 -m pytest -q tests/unit
"""


def test_a_launch_script_starts_its_modules_and_files_but_not_its_tests():
    assert launched(SCRIPT) == [
        ("module", "pkg.main"),
        ("file", "tools/train.py"),
        ("module", "torch.distributed.run"),
        ("file", "tools/pretrain.py"),
        ("module", "pytest"),
    ]


# The repository a script's program imports: eagerly, inside a function (a trainer builds
# its workers lazily), relatively, and a module nothing imports.
REPO = {
    "pkg/__init__.py": "",
    "pkg/main.py": """
        import os

        import torch

        from pkg.config import Config


        def run():
            from pkg.workers import Worker

            return Worker(Config())
        """,
    "pkg/config.py": "class Config:\n    pass\n",
    "pkg/workers/__init__.py": "from .worker import Worker\n",
    "pkg/workers/worker.py": "from ..kernels import fused\n\n\nclass Worker:\n    pass\n",
    "pkg/kernels.py": "def fused():\n    return 1\n",
    "pkg/unused.py": "def never():\n    return 0\n",
}


class CountingTree:
    """Files in memory, and how often each path was read."""

    def __init__(self, files: dict[str, str]) -> None:
        self.files = files
        self.reads: dict[str, int] = {}

    def read(self, path: str) -> str | None:
        self.reads[path] = self.reads.get(path, 0) + 1
        return MemoryTree(self.files).read(path)


def _tree() -> CountingTree:
    return CountingTree({p: textwrap.dedent(t).lstrip() for p, t in REPO.items()})


def test_a_script_runs_what_its_program_imports_at_any_depth():
    tree = _tree()
    runs = _files_run(ProgramReader(tree), "tests/e2e/run.sh", "python3 -m pkg.main x=1\n")
    assert runs == {
        "pkg/__init__.py",
        "pkg/main.py",
        "pkg/config.py",
        "pkg/workers/__init__.py",
        "pkg/workers/worker.py",
        "pkg/kernels.py",
    }
    # a package that is not the repository's is looked for once, never below its top
    assert not any(p.startswith("torch/") and p != "torch/__init__.py" for p in tree.reads)
    assert tree.reads.get("torch.py", 0) <= 1


def test_a_script_whose_program_is_not_in_the_repository_runs_nothing():
    tree = _tree()
    assert (
        _files_run(ProgramReader(tree), "tests/e2e/run.sh", "python3 -m other.main\n")
        == frozenset()
    )
    assert _files_run(ProgramReader(tree), "tests/e2e/run.sh", "pytest tests/\n") == frozenset()
    # a file is found from the repository root or beside the script
    beside = CountingTree({"tests/e2e/drive.py": "import pkg.config\n", **_tree().files})
    assert _files_run(ProgramReader(beside), "tests/e2e/run.sh", "python drive.py\n") == {
        "tests/e2e/drive.py",
        "pkg/__init__.py",
        "pkg/config.py",
    }


def _verdict(quote: str, code: CodeUnderTest) -> PromiseVerdict:
    promise = ExtractedPromise(category=PromiseCategory.functional, quote=quote)
    return judge_promises([promise], code)[0].verdict


@pytest.mark.parametrize(
    ("quote", "verdict"),
    [
        # imported inside a function, then through a relative import: the run loads it
        ("fused kernel for the worker", PromiseVerdict.exercised),
        # nothing the program imports: the script does not run it
        ("never called helper", PromiseVerdict.unchecked),
    ],
)
def test_a_promise_a_launched_program_loads_is_exercised(quote, verdict):
    runs = _files_run(ProgramReader(_tree()), "tests/e2e/run.sh", "python3 -m pkg.main\n")
    script = TestScript("tests/e2e/run.sh", frozenset({"python3", "main"}), runs)
    symbols = (
        changed_symbol("fused", "The fused kernel of the worker.", "pkg/kernels.py"),
        changed_symbol("never", "A never called helper.", "pkg/unused.py"),
    )
    code = CodeUnderTest(profile_source("tests/test_p.py", "x = 1\n"), symbols, (script,))
    assert _verdict(quote, code) is verdict


def test_a_changed_launch_script_of_a_pr_is_read_whole_at_the_head(tmp_path):
    base = {p: textwrap.dedent(t).lstrip() for p, t in REPO.items()}
    base["tests/e2e/run.sh"] = "python3 -m pkg.main trainer.epochs=1\n"
    change = {
        "pkg/kernels.py": "def fused():\n    return 2\n",
        # the PR changes only an unrelated line of the script: its program still runs
        "tests/e2e/run.sh": "python3 -m pkg.main trainer.epochs=2\n",
    }
    pr = make_pr(tmp_path, base, change)
    code = pr.code_under_test()
    assert [s.path for s in code.scripts] == ["tests/e2e/run.sh"]
    assert "pkg/kernels.py" in code.scripts[0].runs
    check = judge_promises(
        [ExtractedPromise(category=PromiseCategory.functional, quote="fused returns two")], code
    )[0]
    assert check.verdict is PromiseVerdict.exercised
    assert "loaded by the program started by tests/e2e/run.sh" in check.evidence


GOLDEN_BASE = {
    "pkg/__init__.py": "",
    "pkg/args.py": 'def add_args(parser):\n    parser.add_argument("--steps", type=int)\n',
    "pkg/infer.py": "def decode(steps):\n    return steps\n",
}
GOLDEN_CHANGE = {
    "pkg/args.py": GOLDEN_BASE["pkg/args.py"]
    + '    parser.add_argument("--fused-sampling", action="store_true")\n',
    "pkg/infer.py": "def decode(steps, fused_sampling=False):\n    return steps\n",
    "tests/functional/case_a/model_config.yaml": "ARGS:\n  --fused-sampling: true\n",
    "tests/functional/case_a/golden_values.json": '{"tokens": [1, 2, 3]}\n',
    "tests/functional/case_b/model_config.yaml": "ARGS:\n  --fused-sampling: true\n",
}


@pytest.mark.parametrize(
    ("goldens", "category", "verdict"),
    [
        # the run under the new flag is compared with recorded outputs
        ({"case_a"}, PromiseCategory.functional, PromiseVerdict.checked),
        ({"case_a"}, PromiseCategory.mode, PromiseVerdict.checked),
        # a recorded result says nothing of the run's time
        ({"case_a"}, PromiseCategory.time, PromiseVerdict.exercised),
        # the run is compared with nothing
        (set(), PromiseCategory.functional, PromiseVerdict.exercised),
    ],
)
def test_a_run_configuration_beside_golden_values_checks_what_it_sets(
    tmp_path, goldens, category, verdict
):
    change = dict(GOLDEN_CHANGE)
    if not goldens:
        del change["tests/functional/case_a/golden_values.json"]
        # a test module named for goldens is no recorded output
        change["tests/functional/case_a/test_golden_helpers.py"] = "def helper():\n    pass\n"
    pr = make_pr(tmp_path, GOLDEN_BASE, change)
    code = pr.code_under_test()
    assert {s.path.split("/")[2] for s in code.scripts if s.goldens} == goldens
    promise = ExtractedPromise(category=category, quote="add --fused-sampling to decode faster")
    check = judge_promises([promise], code)[0]
    assert check.verdict is verdict
    if verdict is PromiseVerdict.checked:
        assert check.evidence.startswith("tests/functional/case_a/model_config.yaml sets it")


COMPARE_BASE = {
    "pkg/__init__.py": "",
    "pkg/train.py": "def train(engine):\n    return engine\n",
    "pkg/main.py": "from pkg.train import train\n\ntrain('a')\n",
    "tests/e2e/run_engine.sh": "python3 -m pkg.main engine=$ENGINE\n",
}
COMPARED = """\
import json
import torch


def compare(golden, other):
    torch.testing.assert_close(other["loss"], golden["loss"], atol=1e-2, rtol=1e-2)
"""
THRESHOLD = """\
import json


def check(result):
    assert result["reward"] > 0.5
"""


@pytest.mark.parametrize(
    ("checker", "verdict"),
    [
        # the new engine's run is asserted close to the reference engine's
        (COMPARED, PromiseVerdict.checked),
        # a score above a bar says the run went somewhere, not that it matches
        (THRESHOLD, PromiseVerdict.exercised),
        (None, PromiseVerdict.exercised),
    ],
)
def test_a_run_a_checker_compares_with_another_run_checks_what_it_sets(tmp_path, checker, verdict):
    all_runs = (
        "ENGINE=ref bash tests/e2e/run_engine.sh\nENGINE=fused bash tests/e2e/run_engine.sh\n"
    )
    change = {
        "pkg/train.py": COMPARE_BASE["pkg/train.py"]
        + "\n\ndef fused_engine_step(x):\n    return x\n",
        "tests/e2e/run_all.sh": all_runs + ("python3 tests/e2e/compare.py\n" if checker else ""),
        "tests/e2e/run_engine.sh": "python3 -m pkg.main engine=$ENGINE fused_engine_step=1\n",
    }
    if checker:
        change["tests/e2e/compare.py"] = checker
    pr = make_pr(tmp_path, COMPARE_BASE, change)
    code = pr.code_under_test()
    promise = ExtractedPromise(category=PromiseCategory.functional, quote="add fused_engine_step")
    check = judge_promises([promise], code)[0]
    assert check.verdict is verdict, check.evidence
    if verdict is PromiseVerdict.checked:
        assert check.evidence == (
            "tests/e2e/run_engine.sh sets it; the run's outputs are compared with another"
            " run's by tests/e2e/compare.py"
        )


def test_a_program_many_scripts_start_is_read_once():
    tree = _tree()
    programs = ProgramReader(tree)
    first = _files_run(programs, "tests/e2e/a.sh", "python3 -m pkg.main\n")
    reads = dict(tree.reads)
    second = _files_run(programs, "tests/e2e/b.sh", "python3 -m pkg.main x=2\n")
    assert first == second
    assert tree.reads == reads  # the closure was not read again


def test_programs_under_a_folder_without_init_are_followed_whichever_script_comes_first():
    """``recipe/`` has no ``__init__.py``: the first program's imports name ``recipe`` itself,
    which is no module, yet the folder is the repository's, and the second script's
    program under it is still found."""
    tree = CountingTree(
        {
            "recipe/a/main.py": "import recipe.a.util\nimport torch\n",
            "recipe/a/util.py": "x = 1\n",
            "recipe/b/main.py": "y = 2\n",
        }
    )
    programs = ProgramReader(tree)
    first = _files_run(programs, "tests/e2e/a.sh", "python3 -m recipe.a.main\n")
    second = _files_run(programs, "tests/e2e/b.sh", "python3 -m recipe.b.main\n")
    assert first == {"recipe/a/main.py", "recipe/a/util.py"}
    assert second == {"recipe/b/main.py"}
    assert not any(p.startswith("torch/") and p != "torch/__init__.py" for p in tree.reads)
