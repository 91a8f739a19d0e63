"""build_task and validate_task against a real registry, a real git mirror and real pytest runs."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine

from probe_builder.acceptance import ProbeFile
from probe_builder.authors.base import AuthorRequest, MechanicalAuthor, ProposedProbe
from probe_builder.pipeline import (
    PipelineError,
    RepoSettings,
    build_task,
    load_probe_folder,
    validate_task,
)
from runners.backends.local import LocalBackend
from runners.sandbox import bwrap
from runners.types import SandboxKind
from task_registry.candidates import decide_candidate, upsert_candidate
from task_registry.coverage import CoverageTable, stored_coverage
from task_registry.db import session_scope
from task_registry.evaluation import get_or_create_submission, register_agent
from task_registry.models import (
    AgentCreate,
    CandidatePRCreate,
    ProbeCreate,
    RepoCreate,
    SubmissionCreate,
)
from task_registry.repos import get_or_create_repo
from task_registry.tasks import (
    add_probe,
    get_task,
    list_adversarials,
    list_probes,
    list_promises,
    list_test_results,
    list_validation_runs,
)
from task_registry.types import (
    Control,
    Decision,
    ProbeStatus,
    PromiseCategory,
    PromiseVerdict,
    TaskStatus,
)
from tests.build_fixtures import (
    GOOD_PROBE,
    HOLLOW_PASSING_PROBE,
    MEMO_BODY,
    MEMO_TITLE,
    memo_pr,
)
from tests.probe_builder_support import TEST_GLOBS, FixturePR, git

INSTANCE = "acme__memo-7"
SETTINGS = RepoSettings(test_globs=TEST_GLOBS, timeout_per_test_s=60.0, timeout_run_s=300.0)
CHANGED_BODY = MEMO_BODY.replace(
    "### Checklist", "The hit counter goes back to zero on reset.\n\n### Checklist"
)
GOOD_PATH = "tests/probes/test_reset_forgets.py"
NAMES_PATH = "tests/probes/test_reset_exists.py"


@pytest.fixture(scope="module")
def memo(tmp_path_factory: pytest.TempPathFactory) -> FixturePR:
    return memo_pr(tmp_path_factory.mktemp("memo"))


def add_candidate(
    engine: Engine, pr: FixturePR, *, body: str = MEMO_BODY, decision: Decision | None = None
) -> int:
    with session_scope(engine) as session:
        repo = get_or_create_repo(session=session, repo_in=RepoCreate(full_name="acme/memo"))
        assert repo.id is not None
        row = upsert_candidate(
            session=session,
            candidate_in=CandidatePRCreate(
                repo_id=repo.id,
                number=7,
                title=MEMO_TITLE,
                body=body,
                base_sha="0" * 40,  # GitHub's base.sha: the branch tip when the PR opened
                merge_sha=pr.head,
            ),
        )
        assert row.id is not None
        if decision is not None:
            decide_candidate(session=session, candidate_id=row.id, decision=decision)
        return row.id


@pytest.fixture
def built(engine: Engine, memo: FixturePR) -> Engine:
    add_candidate(engine, memo, decision=Decision.accepted)
    result = build_task(engine=engine, instance_id=INSTANCE, mirror=memo.repo, settings=SETTINGS)
    assert result.action == "created"
    return engine


def validate(engine: Engine, memo: FixturePR, root: Path, **kwargs):
    backend = LocalBackend(workspace_root=root, cpu_slots=2, gpu_indices=())
    return validate_task(
        engine=engine,
        instance_id=INSTANCE,
        mirror=memo.repo,
        settings=SETTINGS,
        backend=backend,
        workspace_root=root,
        **kwargs,
    )


def probe_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "probes"
    folder.mkdir()
    (folder / "test_reset_forgets.py").write_text(GOOD_PROBE)
    (folder / "test_reset_exists.py").write_text(HOLLOW_PASSING_PROBE)
    (folder / "helpers.py").write_text("X = 1\n")  # not a test file: not a probe
    (folder / "probes.toml").write_text('[categories]\n"test_reset_forgets.py" = "state"\n')
    return folder


# --- build -------------------------------------------------------------------------------


def test_build_stores_the_task_its_promises_verdicts_and_adversarials(built, memo):
    with session_scope(built) as session:
        task = get_task(session=session, instance_id=INSTANCE)
        assert task.status == TaskStatus.built
        # The pre-change snapshot is the merge's first parent, not GitHub's base.sha.
        assert task.base_commit == memo.base and task.merge_commit == memo.head
        assert task.patch == memo.split.golden and task.test_patch == memo.split.test
        assert "`pkg.cache.Cache.reset`" in task.problem_statement
        assert "def reset" in task.hollow_patch and "NotImplementedError" in task.hollow_patch
        assert {s["qualname"] for s in task.contract["symbols"]} >= {"Cache.reset"}
        promises = list_promises(session=session, task_id=task.id)
        assert [(p.category, p.verdict) for p in promises] == [
            ("functional", PromiseVerdict.checked),
            ("state", PromiseVerdict.exercised),
        ]
        adversarials = list_adversarials(session=session, task_id=task.id)
        assert len(adversarials) == 6 and all(a.survives_original is None for a in adversarials)
        table = CoverageTable.model_validate(task.coverage)
    assert [a.id for a in table.adversarials] == [str(a.id) for a in adversarials]
    assert [p.verdict for p in table.promises] == [
        PromiseVerdict.checked,
        PromiseVerdict.exercised,
    ]


def test_build_refuses_a_candidate_the_curator_has_not_accepted(engine, memo):
    add_candidate(engine, memo)
    with pytest.raises(PipelineError, match=r"is pending: .*candidates accept acme/memo#7"):
        build_task(engine=engine, instance_id=INSTANCE, mirror=memo.repo, settings=SETTINGS)


def test_build_names_a_merge_commit_missing_from_the_mirror(engine, memo, tmp_path):
    add_candidate(engine, memo, decision=Decision.accepted)
    other = tmp_path / "empty"
    other.mkdir()
    git(other, "init", "--quiet")
    with pytest.raises(PipelineError, match=r"is not in the mirror .*: fetch it first"):
        build_task(engine=engine, instance_id=INSTANCE, mirror=other, settings=SETTINGS)


def test_an_unchanged_rebuild_leaves_everything_as_it_was(built, memo):
    with session_scope(built) as session:
        task = get_task(session=session, instance_id=INSTANCE)
        before = [a.id for a in list_adversarials(session=session, task_id=task.id)]
    again = build_task(engine=built, instance_id=INSTANCE, mirror=memo.repo, settings=SETTINGS)
    assert again.action == "unchanged"
    with session_scope(built) as session:
        task = get_task(session=session, instance_id=INSTANCE)
        assert [a.id for a in list_adversarials(session=session, task_id=task.id)] == before


def test_a_changed_rebuild_replaces_derived_rows_and_keeps_the_probes(built, memo):
    with session_scope(built) as session:
        task = get_task(session=session, instance_id=INSTANCE)
        promise = list_promises(session=session, task_id=task.id)[1]
        add_probe(
            session=session,
            probe_in=ProbeCreate(
                task_id=task.id, promise_id=promise.id, path=GOOD_PATH, content=GOOD_PROBE
            ),
        )
    add_candidate(built, memo, body=CHANGED_BODY)
    again = build_task(engine=built, instance_id=INSTANCE, mirror=memo.repo, settings=SETTINGS)
    assert again.action == "replaced" and again.promises == 3
    with session_scope(built) as session:
        task = get_task(session=session, instance_id=INSTANCE)
        assert len(list_promises(session=session, task_id=task.id)) == 3
        (probe,) = list_probes(session=session, task_id=task.id)
        assert probe.path == GOOD_PATH and probe.promise_id is None
        assert probe.status == ProbeStatus.proposed


def test_a_task_graded_by_submissions_is_neither_rebuilt_nor_validated(built, memo, tmp_path):
    with session_scope(built) as session:
        task = get_task(session=session, instance_id=INSTANCE)
        agent = register_agent(session=session, agent_in=AgentCreate(name="a", command="true"))
        assert agent.id is not None and task.id is not None
        get_or_create_submission(
            session=session, submission_in=SubmissionCreate(agent_id=agent.id, task_id=task.id)
        )
    assert (  # an unchanged rebuild changes nothing and is not refused
        build_task(engine=built, instance_id=INSTANCE, mirror=memo.repo, settings=SETTINGS).action
        == "unchanged"
    )
    add_candidate(built, memo, body=CHANGED_BODY)
    with pytest.raises(PipelineError, match=r"has 1 submission\(s\) graded against it"):
        build_task(engine=built, instance_id=INSTANCE, mirror=memo.repo, settings=SETTINGS)
    with pytest.raises(PipelineError, match=r"cannot be validated again"):
        validate(built, memo, tmp_path / "runs")


# --- validate ----------------------------------------------------------------------------


def test_validate_stores_probes_runs_survivors_and_the_coverage_table(built, memo, tmp_path):
    probes = load_probe_folder(probe_folder(tmp_path))
    result = validate(built, memo, tmp_path / "runs", probes=probes)
    assert result.accepted and len(result.survivors) == 3
    with session_scope(built) as session:
        task = get_task(session=session, instance_id=INSTANCE)
        assert task.status == TaskStatus.validated
        assert task.fail_to_pass == [
            "tests/test_cache.py::test_repeated_lookup_counts_a_hit",
            "tests/test_cache.py::test_reset_can_be_called_after_lookups",
        ]
        promises = {p.category: p for p in list_promises(session=session, task_id=task.id)}
        probes_by_path = {p.path: p for p in list_probes(session=session, task_id=task.id)}
        good, names = probes_by_path[GOOD_PATH], probes_by_path[NAMES_PATH]
        assert good.status == ProbeStatus.accepted and good.promise_id == promises["state"].id
        assert good.markers == ["promise=state"]
        assert names.status == ProbeStatus.rejected
        assert names.rejection_reason.startswith("passes the hollow patch")
        survivors = [
            a for a in list_adversarials(session=session, task_id=task.id) if a.survives_original
        ]
        assert {(a.line, tuple(a.rejected_by)) for a in survivors} == {
            (21, (good.id,)),
            (22, (good.id,)),
            (25, ()),
        }
        runs = list_validation_runs(session=session, task_id=task.id)
        assert len(runs) == result.runs
        kept = SandboxKind.none if bwrap.bwrap_refusal() else SandboxKind.namespaces
        assert {r.sandbox for r in runs} == {kept}  # each run's record says how it was kept
        golden = [r for r in runs if r.control == Control.golden and r.attempt > 0]
        assert len(golden) == 3 and all(r.n_passed == r.n_collected == 2 for r in golden)
        snapshot = next(r for r in runs if r.control == Control.snapshot)
        results = list_test_results(session=session, run_id=snapshot.id)
        assert {r.test_id for r in results if r.is_probe} == {
            GOOD_PATH + "::test_reset_forgets_entries_and_hits",
            NAMES_PATH + "::test_reset_exists",
        }
        report = stored_coverage(task)
    # The promise the PR's tests check has no survivor (its adversarial dies on them);
    # the one they miss has two, both caught by the accepted probe.
    rows = {row.category: row for row in result.table.promises}
    assert (
        rows["functional"].verdict == PromiseVerdict.checked and rows["functional"].survivors == []
    )
    functional = [a for a in result.table.adversarials if a.promise_category == "functional"]
    assert functional and all(a.survives_original is False for a in functional)
    assert rows["state"].verdict == PromiseVerdict.exercised and len(rows["state"].survivors) == 2
    state = next(row for row in report.promises if row.category == "state")
    assert state.missed and {s.line for s in report.survivors_of(state)} == {21, 22}
    # Validation keeps what the promise concerns and where each patch lies: both survivors
    # are in the method the reset promise names.
    assert state.concerns == ["Cache.reset"]
    assert all(s.symbols == ["Cache", "Cache.reset"] for s in report.survivors_of(state))
    assert all(report.caught_by(s) == [GOOD_PATH] for s in report.survivors_of(state))
    assert result.table.probe(GOOD_PATH).rejects and result.table.probe(NAMES_PATH).redundant
    assert any("survivor search:" in note for note in result.notes)


@dataclass
class ProbeWritingAuthor(MechanicalAuthor):
    """An author that writes the good probe once it is told why its first one failed."""

    name: str = "probe-writer"
    asked: list[AuthorRequest] = field(default_factory=list)

    def propose_probes(self, request: AuthorRequest) -> list[ProposedProbe]:
        self.asked.append(request)
        if "passes the hollow patch" not in request.feedback:
            return []
        return [ProposedProbe(GOOD_PATH, GOOD_PROBE, None)]


def test_an_author_revision_is_stored_and_a_second_validation_replaces_the_runs(
    sqlite_engine, memo, tmp_path
):
    engine = sqlite_engine  # the registry side is covered on both databases above
    add_candidate(engine, memo, decision=Decision.accepted)
    author = ProbeWritingAuthor(max_per_file=2)  # two adversarials keep the test short
    build_task(
        engine=engine, instance_id=INSTANCE, mirror=memo.repo, settings=SETTINGS, author=author
    )
    built = engine
    first = validate(
        built,
        memo,
        tmp_path / "runs",
        probes=[ProbeFile(NAMES_PATH, HOLLOW_PASSING_PROBE)],
        author=author,
        use_coverage=False,
    )
    assert first.accepted and first.rounds == 1
    (asked,) = author.asked
    assert asked.round == 1 and asked.instance_id == INSTANCE and asked.title == MEMO_TITLE
    assert {p.category for p in asked.promises} == {"functional", "state"}
    second = validate(built, memo, tmp_path / "runs", use_coverage=False)  # the stored probes
    assert second.accepted and second.rounds == 0
    assert {o.probe.path: o.accepted for o in second.probes} == {GOOD_PATH: True, NAMES_PATH: False}
    with session_scope(built) as session:
        task = get_task(session=session, instance_id=INSTANCE)
        stored = {
            p.path: (p.author, p.round) for p in list_probes(session=session, task_id=task.id)
        }
        assert stored[GOOD_PATH] == ("probe-writer", 1)
        assert len(list_validation_runs(session=session, task_id=task.id)) == second.runs


def test_a_second_validation_with_nothing_changed_makes_no_run(sqlite_engine, memo, tmp_path):
    add_candidate(sqlite_engine, memo, decision=Decision.accepted)
    build_task(engine=sqlite_engine, instance_id=INSTANCE, mirror=memo.repo, settings=SETTINGS)
    probes = [ProbeFile(GOOD_PATH, GOOD_PROBE, PromiseCategory.state)]
    first = validate(sqlite_engine, memo, tmp_path / "runs", probes=probes, use_coverage=False)
    assert first.runs > 0

    again = validate(sqlite_engine, memo, tmp_path / "runs", probes=probes, use_coverage=False)
    assert (again.runs, again.stats) == (0, None) and "nothing changed" in again.notes[0]
    assert again.survivors == first.survivors and again.accepted == first.accepted
    with session_scope(sqlite_engine) as session:
        task = get_task(session=session, instance_id=INSTANCE)
        assert len(list_validation_runs(session=session, task_id=task.id)) == first.runs

    changed = [ProbeFile(GOOD_PATH, GOOD_PROBE + "\n# revised\n", PromiseCategory.state)]
    assert validate(sqlite_engine, memo, tmp_path / "runs", probes=changed, use_coverage=False).runs
    forced = validate(
        sqlite_engine, memo, tmp_path / "runs", probes=changed, use_coverage=False, force=True
    )
    assert forced.runs > 0


def test_an_unchanged_rebuild_places_a_table_stored_without_places(sqlite_engine, memo, tmp_path):
    add_candidate(sqlite_engine, memo, decision=Decision.accepted)
    build_task(engine=sqlite_engine, instance_id=INSTANCE, mirror=memo.repo, settings=SETTINGS)
    probes = [ProbeFile(GOOD_PATH, GOOD_PROBE, PromiseCategory.state)]
    first = validate(sqlite_engine, memo, tmp_path / "runs", probes=probes, use_coverage=False)
    with session_scope(sqlite_engine) as session:
        task = get_task(session=session, instance_id=INSTANCE)
        placed = stored_coverage(task)
        # the table as a probewatch that did not place promises and patches stored it
        task.coverage = placed.model_copy(
            update={
                "promises": [p.model_copy(update={"concerns": []}) for p in placed.promises],
                "adversarials": [a.model_copy(update={"symbols": []}) for a in placed.adversarials],
            }
        ).model_dump(mode="json")
        session.add(task)
    assert any(p.concerns for p in placed.promises) and any(a.symbols for a in placed.adversarials)

    again = build_task(
        engine=sqlite_engine, instance_id=INSTANCE, mirror=memo.repo, settings=SETTINGS
    )
    assert again.action == "unchanged"
    with session_scope(sqlite_engine) as session:
        task = get_task(session=session, instance_id=INSTANCE)
        assert stored_coverage(task) == placed  # places, links and what it was validated with
        assert len(list_validation_runs(session=session, task_id=task.id)) == first.runs
    # and the validation it was stored with still stands: no run
    assert (
        validate(sqlite_engine, memo, tmp_path / "runs", probes=probes, use_coverage=False).runs
        == 0
    )


def test_a_probe_folder_needs_test_files_and_known_categories(tmp_path):
    folder = probe_folder(tmp_path)
    probes = load_probe_folder(folder, probe_dir="checks")
    assert [(p.path, p.promise_category) for p in probes] == [
        ("checks/test_reset_exists.py", None),
        ("checks/test_reset_forgets.py", "state"),
    ]
    (folder / "probes.toml").write_text('[categories]\n"test_reset_exists.py" = "speed"\n')
    with pytest.raises(PipelineError, match=r"probes.toml: 'speed' is not a valid PromiseCategory"):
        load_probe_folder(folder)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(PipelineError, match="holds no probe file"):
        load_probe_folder(empty)


# --- the commands ------------------------------------------------------------------------


def probewatch(home: Path, *args: str):
    from typer.testing import CliRunner

    from bot.cli.main import app

    result = CliRunner().invoke(app, ["--home", str(home), *args], env={"COLUMNS": "200"})
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


def test_a_watched_repository_builds_from_the_mirror_the_service_keeps(memo, tmp_path, monkeypatch):
    from task_registry.db import make_engine, upgrade

    home = tmp_path / "home"
    home.mkdir()
    engine = make_engine(f"sqlite:///{home / 'probewatch.db'}")
    upgrade(engine)
    add_candidate(engine, memo, decision=Decision.accepted)
    engine.dispose()
    watch = tmp_path / "watch.toml"
    watch.write_text(
        f'[[repo]]\nname = "acme/memo"\nurl = "file://{memo.repo}"\nenvironment = "host"\n'
    )
    monkeypatch.setenv("PROBEWATCH_WATCH_FILE", str(watch))

    built = probewatch(home, "build", INSTANCE)  # no --git: cloned into the home on first use
    assert built.exit_code == 0, built.stderr
    assert (home / "mirrors").is_dir() and any((home / "mirrors").rglob("HEAD"))


def test_build_validate_and_show_from_the_command_line(memo, tmp_path):
    import json

    from task_registry.db import make_engine, upgrade

    home = tmp_path / "home"
    home.mkdir()
    engine = make_engine(f"sqlite:///{home / 'probewatch.db'}")
    upgrade(engine)
    add_candidate(engine, memo, decision=Decision.accepted)
    engine.dispose()

    missing = probewatch(home, "build", "acme__memo-8", "--git", str(memo.repo))
    assert missing.exit_code == 1 and "no candidate acme/memo#8" in missing.stderr
    no_mirror = probewatch(home, "build", INSTANCE)
    assert no_mirror.exit_code == 1 and "pass --git PATH" in no_mirror.stderr

    built = probewatch(home, "build", INSTANCE, "--git", str(memo.repo), "--json")
    assert built.exit_code == 0, built.stderr
    assert json.loads(built.stdout)["action"] == "created"
    again = probewatch(home, "build", INSTANCE, "--git", str(memo.repo))
    assert f"{INSTANCE}: unchanged, status built: 2 promise(s), 6 adversarial" in again.stdout

    folder = probe_folder(tmp_path)
    args = ["--git", str(memo.repo), "--probes", str(folder), "--cpu-slots", "2", "--no-coverage"]
    validated = probewatch(home, "validate", INSTANCE, *args, "--json")
    assert validated.exit_code == 0, validated.stderr
    summary = json.loads(validated.stdout)
    assert summary["probe_set_accepted"] is True
    assert {p["path"]: p["accepted"] for p in summary["probes"]} == {
        GOOD_PATH: True,
        NAMES_PATH: False,
    }
    assert summary["survivor_search"]["coverage_used"] is False

    shown = probewatch(home, "show", INSTANCE)
    assert shown.exit_code == 0, shown.stderr
    assert f"{INSTANCE}: validated; FAIL_TO_PASS 2, PASS_TO_PASS 1" in shown.stdout
    assert "invalidates every stored entry" in shown.stdout and "(accepted)" in shown.stdout
    table = json.loads(probewatch(home, "show", INSTANCE, "--json").stdout)
    assert table["status"] == "validated" and len(table["promises"]) == 2
