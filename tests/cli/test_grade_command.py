"""``probewatch grade --predictions FILE``: SWE-bench predictions graded as ``eval`` grades.

The task is ``acme/memo`` PR #7 (tests/harness_support.py), published with an
accepted probe and an empty FAIL_TO_PASS: the PR's tests check values, the probe
checks that a repeated lookup is a cache hit. Each model of the file is graded
in a clean tree with the PR's tests and the probe, and appears on the
leaderboard under its own name. A bad file stops before anything is stored.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bot.cli.main import app
from task_registry.db import make_engine, upgrade
from tests.harness_support import PROBE_PATH, PROBE_TESTS, MemoRepo, make_memo_repo, seed

INSTANCE = "acme__memo-7"
MODELS = ("golden-model", "hollow-model", "adversarial-model", "garbled-model")


def probewatch(home: Path, *args: str) -> tuple[int, str, str]:
    env = {
        "PROBEWATCH_HOME": str(home),
        "PROBEWATCH_WATCH_FILE": str(home / "watch.toml"),
        "COLUMNS": "200",
    }
    result = CliRunner().invoke(app, list(args), env=env)
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def write_predictions(path: Path, *rows: object) -> Path:
    lines = [row if isinstance(row, str) else json.dumps(row) for row in rows]
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return path


def prediction(model: str, patch: str, instance_id: str = INSTANCE) -> dict[str, str]:
    return {"instance_id": instance_id, "model_name_or_path": model, "model_patch": patch}


@pytest.fixture(scope="module")
def memo(tmp_path_factory: pytest.TempPathFactory) -> MemoRepo:
    return make_memo_repo(tmp_path_factory.mktemp("upstream"))


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory, memo: MemoRepo) -> Path:
    root = tmp_path_factory.mktemp("home")
    engine = make_engine(f"sqlite:///{root / 'probewatch.db'}")
    upgrade(engine)
    seed(engine, memo)
    engine.dispose()
    (root / "watch.toml").write_text(f'[[repo]]\nname = "acme/memo"\ngit = "{memo.mirror}"\n')
    return root


@pytest.fixture(scope="module")
def graded(home: Path, memo: MemoRepo) -> dict[str, dict[str, object]]:
    """One file, four models: the golden patch, the hollow one, the adversarial one (passes
    the PR's tests, breaks the promise) and text that is no diff."""
    path = write_predictions(
        home / "predictions.jsonl",
        prediction("golden-model", memo.golden),
        prediction("hollow-model", memo.hollow),
        prediction("adversarial-model", memo.adversarial),
        prediction("garbled-model", "Sure! Here is the fix: use a dict.\n"),
    )
    code, stdout, stderr = probewatch(home, "grade", "--predictions", str(path), "--json")
    assert code == 0, stderr
    runs = json.loads(stdout)["runs"]
    return {run["agent"]: run["results"][0] for run in runs}


def resolved(result: dict[str, object], suite: str) -> bool:
    scores = result["scores"]
    assert isinstance(scores, dict)
    return bool(scores[suite]["resolved_set"])


def test_the_golden_patch_as_a_prediction_is_resolved(graded: dict[str, dict[str, object]]) -> None:
    golden = graded["golden-model"]
    assert golden["state"] == "graded"
    assert resolved(golden, "original") and resolved(golden, "with_probes")


def test_hollow_adversarial_and_garbled_predictions_are_not_resolved(
    graded: dict[str, dict[str, object]],
) -> None:
    assert not resolved(graded["hollow-model"], "with_probes")
    assert not resolved(graded["hollow-model"], "original")
    adversarial = graded["adversarial-model"]
    assert resolved(adversarial, "original") and not resolved(adversarial, "with_probes")
    garbled = graded["garbled-model"]
    assert garbled["state"] == "unappliable" and not resolved(garbled, "original")


def test_each_model_is_on_the_leaderboard_and_a_rerun_grades_nothing_again(
    home: Path, graded: dict[str, dict[str, object]]
) -> None:
    code, stdout, stderr = probewatch(home, "leaderboard", "--json")
    assert code == 0, stderr
    runs = {run["run"]: run for run in json.loads(stdout)["runs"]}
    assert set(MODELS) <= set(runs)
    assert runs["golden-model"]["with_probes"]["resolved_set_n"] == 1
    assert runs["adversarial-model"]["overturned"] == [INSTANCE]

    code, stdout, stderr = probewatch(
        home, "grade", "--predictions", str(home / "predictions.jsonl")
    )
    assert code == 0, stderr
    assert stdout.count(f"skipped {INSTANCE} graded by an earlier run") == len(MODELS)
    assert INSTANCE in stdout and "golden-model" in stdout


def test_a_graded_task_exports_its_probes_as_fail_to_pass_a_harness_can_apply(
    home: Path, memo: MemoRepo, graded: dict[str, dict[str, object]]
) -> None:
    public, hidden = home / "public.jsonl", home / "hidden.jsonl"
    code, _, stderr = probewatch(home, "export", str(public))
    assert code == 0
    assert f"warning: {INSTANCE}: empty FAIL_TO_PASS" in stderr and "--include-hidden" in stderr
    assert json.loads(public.read_text())["FAIL_TO_PASS"] == "[]"

    code, _, stderr = probewatch(home, "export", "--include-hidden", str(hidden))
    assert code == 0 and "warning" not in stderr
    row = json.loads(hidden.read_text())
    assert json.loads(row["FAIL_TO_PASS"]) == sorted(PROBE_TESTS)
    tree = home / "harness-tree"
    subprocess.run(["git", "clone", "--quiet", str(memo.mirror), str(tree)], check=True)
    subprocess.run(["git", "checkout", "--quiet", memo.base], cwd=tree, check=True)
    subprocess.run(["git", "apply", "-"], cwd=tree, input=row["test_patch"], text=True, check=True)
    assert (tree / PROBE_PATH).exists() and (tree / "tests" / "test_memo.py").exists()


def test_another_patch_for_a_graded_prediction_needs_a_new_label(
    home: Path, graded: dict[str, dict[str, object]]
) -> None:
    path = write_predictions(home / "changed.jsonl", prediction("golden-model", "diff --git x\n"))
    code, _, stderr = probewatch(home, "grade", "--predictions", str(path))
    assert code == 1
    assert f"{path}:1: golden-model on {INSTANCE} was graded with another patch" in stderr
    assert "pass --label NEW" in stderr


@pytest.mark.parametrize(
    ("bad_line", "message"),
    [
        (
            "{not json",
            ":2: not JSON (Expecting property name enclosed in double quotes); each line",
        ),
        ('["a list"]', ":2: not a JSON object; each line is one JSON object"),
        (
            {"instance_id": INSTANCE, "model_name_or_path": "m"},
            ":2: no model_patch; each line is one JSON object with instance_id, "
            "model_name_or_path and model_patch",
        ),
        (
            prediction("m", "diff --git a/x b/x\n", "acme__memo-99"),
            ":2: unknown instance_id acme__memo-99; import or build its task first",
        ),
        (prediction("m", ""), f":2: model_patch of {INSTANCE} is empty; put the model's diff in"),
        (
            {"instance_id": INSTANCE, "model_name_or_path": "m", "model_patch": None},
            f":2: model_patch of {INSTANCE} is empty",
        ),
        (prediction("oracle", "diff"), ":2: 'oracle' is already an agent's name"),
        (prediction("fresh-model", "diff"), ":2: fresh-model on acme__memo-7 repeats line 1"),
    ],
    ids=["not-json", "not-object", "missing-key", "unknown-id", "empty", "null", "clash", "twice"],
)
def test_a_bad_line_is_one_error_naming_it_and_nothing_is_stored(
    home: Path, memo: MemoRepo, bad_line: object, message: str
) -> None:
    path = write_predictions(home / "bad.jsonl", prediction("fresh-model", memo.golden), bad_line)
    code, _, stderr = probewatch(home, "grade", "--predictions", str(path))
    assert code == 1
    assert stderr.strip().startswith(f"error: {path}{message}"), stderr
    assert len(stderr.strip().splitlines()) == 1
    agents = json.loads(probewatch(home, "agents", "list", "--json")[1])
    assert "fresh-model" not in {agent["name"] for agent in agents}


def test_a_missing_file_is_one_error_naming_it(home: Path) -> None:
    missing = home / "nowhere.jsonl"
    code, _, stderr = probewatch(home, "grade", "--predictions", str(missing))
    assert code == 1
    assert stderr.strip() == (
        f"error: {missing}: no such file; pass the path of a SWE-bench predictions file (JSONL)"
    )
