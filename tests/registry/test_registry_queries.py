from __future__ import annotations

from datetime import UTC, date, datetime

import pytest
from sqlalchemy.engine import Engine

from task_registry.candidates import decide_candidate, list_candidates, upsert_candidate
from task_registry.db import session_scope
from task_registry.deliveries import record_delivery
from task_registry.errors import AlreadyExists, InvalidTransition, NotFound
from task_registry.evaluation import (
    get_or_create_submission,
    list_scores,
    record_score,
    register_agent,
    register_model,
)
from task_registry.models import (
    AgentCreate,
    CandidatePRCreate,
    ModelCreate,
    RepoCreate,
    ScoreCreate,
    SubmissionCreate,
    TestResultBase,
    ValidationRunCreate,
)
from task_registry.repos import get_cursor, get_or_create_repo, get_repo, set_cursor
from task_registry.tasks import (
    get_task,
    list_tasks,
    list_test_results,
    list_validation_runs,
    record_validation_run,
    set_task_status,
)
from task_registry.types import (
    CursorSource,
    Decision,
    FilterVerdict,
    PRKind,
    ScoreSuite,
    TaskStatus,
)
from tests.factories import make_task


def test_repo_is_created_once_and_cursors_are_per_source(engine: Engine) -> None:
    with session_scope(engine) as session:
        repo = get_or_create_repo(session=session, repo_in=RepoCreate(full_name="acme/lib"))
        again = get_or_create_repo(session=session, repo_in=RepoCreate(full_name="acme/lib"))
        assert repo.id == again.id
        assert repo.id is not None
        set_cursor(session=session, repo_id=repo.id, source=CursorSource.git, position="abc")
        set_cursor(session=session, repo_id=repo.id, source=CursorSource.git, position="def")
        set_cursor(
            session=session, repo_id=repo.id, source=CursorSource.github, position="2026-01-01"
        )
    with session_scope(engine) as session:
        assert get_cursor(session=session, repo_id=repo.id, source=CursorSource.git) == "def"
        assert (
            get_cursor(session=session, repo_id=repo.id, source=CursorSource.github) == "2026-01-01"
        )
        with pytest.raises(NotFound, match="no repo acme/other"):
            get_repo(session=session, full_name="acme/other")


def test_remining_a_candidate_keeps_the_curators_decision(engine: Engine) -> None:
    with session_scope(engine) as session:
        repo = get_or_create_repo(session=session, repo_in=RepoCreate(full_name="acme/lib"))
        assert repo.id is not None
        first = upsert_candidate(
            session=session,
            candidate_in=CandidatePRCreate(repo_id=repo.id, number=7, title="old", additions=10),
        )
        decide_candidate(
            session=session, candidate_id=first.id or 0, decision=Decision.accepted, reason="core"
        )
        again = upsert_candidate(
            session=session,
            candidate_in=CandidatePRCreate(repo_id=repo.id, number=7, title="new", additions=1200),
        )
        assert again.id == first.id
        assert (again.title, again.additions, again.decision) == ("new", 1200, Decision.accepted)
        gitlab = upsert_candidate(
            session=session,
            candidate_in=CandidatePRCreate(repo_id=repo.id, number=7, kind=PRKind.gitlab),
        )
        assert gitlab.id != first.id  # a GitLab MR !7 is not GitHub PR #7


def test_candidates_are_listed_by_verdict_decision_and_rank(engine: Engine) -> None:
    with session_scope(engine) as session:
        repo = get_or_create_repo(session=session, repo_in=RepoCreate(full_name="acme/lib"))
        assert repo.id is not None
        for number, score, verdict in [
            (1, 0.2, "passed"),
            (2, 0.9, "passed"),
            (3, 0.5, "rejected"),
        ]:
            upsert_candidate(
                session=session,
                candidate_in=CandidatePRCreate(
                    repo_id=repo.id, number=number, rank_score=score, filter_verdict=verdict
                ),
            )
        passed = list_candidates(session=session, verdict=FilterVerdict.passed)
        assert [c.number for c in passed] == [2, 1]
        assert [c.number for c in list_candidates(session=session, decision=Decision.pending)] == [
            2,
            3,
            1,
        ]


def test_task_status_follows_the_lifecycle(engine: Engine) -> None:
    with session_scope(engine) as session:
        task = make_task(session, 11)
        with pytest.raises(InvalidTransition, match="cannot go from built to published"):
            set_task_status(session=session, task=task, status=TaskStatus.published)
        set_task_status(session=session, task=task, status=TaskStatus.validated)
        set_task_status(session=session, task=task, status=TaskStatus.validated)  # re-validated
        set_task_status(session=session, task=task, status=TaskStatus.published)
        set_task_status(session=session, task=task, status=TaskStatus.retired)
        with pytest.raises(InvalidTransition):
            set_task_status(session=session, task=task, status=TaskStatus.built)
    with session_scope(engine) as session:
        assert (
            get_task(session=session, instance_id="acme__infra-lib-11").status == TaskStatus.retired
        )
        assert list_tasks(session=session, statuses=[TaskStatus.built]) == []


def test_duplicate_task_is_refused(engine: Engine) -> None:
    with session_scope(engine) as session:
        make_task(session, 12)
    with pytest.raises(AlreadyExists, match="acme__infra-lib-12"), session_scope(engine) as session:
        make_task(session, 12)


def test_times_come_back_in_utc(engine: Engine) -> None:
    with session_scope(engine) as session:
        make_task(session, 13)
    with session_scope(engine) as session:
        task = get_task(session=session, instance_id="acme__infra-lib-13")
        assert task.created_at == datetime(2026, 3, 14, 12, 30, 5, 123456, tzinfo=UTC)


def test_a_failed_write_leaves_nothing_behind(engine: Engine) -> None:
    with pytest.raises(RuntimeError), session_scope(engine) as session:
        make_task(session, 14)
        raise RuntimeError("interrupted")
    with session_scope(engine) as session:
        assert list_tasks(session=session) == []


def test_validation_run_keeps_per_test_results(engine: Engine) -> None:
    with session_scope(engine) as session:
        task = make_task(session, 15)
        run = record_validation_run(
            session=session,
            run_in=ValidationRunCreate(
                task_id=task.id or 0, control="golden", n_collected=2, n_passed=1
            ),
            results=[
                TestResultBase(test_id="tests/test_a.py::test_x", outcome="passed", duration_s=0.1),
                TestResultBase(
                    test_id="probes/test_p.py::test_y",
                    outcome="skipped",
                    message="no GPU",
                    is_probe=True,
                ),
            ],
        )
    with session_scope(engine) as session:
        (stored,) = list_validation_runs(session=session, task_id=task.id or 0)
        results = list_test_results(session=session, run_id=run.id or 0)
        assert stored.control == "golden"
        assert [(r.test_id, r.outcome, r.is_probe) for r in results] == [
            ("tests/test_a.py::test_x", "passed", False),
            ("probes/test_p.py::test_y", "skipped", True),
        ]


def test_submission_is_unique_per_agent_task_and_label_and_scores_replace(engine: Engine) -> None:
    with session_scope(engine) as session:
        task = make_task(session, 16)
        model = register_model(
            session=session, model_in=ModelCreate(name="m-1", knowledge_cutoff=date(2026, 1, 31))
        )
        with pytest.raises(AlreadyExists):
            register_model(
                session=session, model_in=ModelCreate(name="m-1", knowledge_cutoff=date(2025, 1, 1))
            )
        agent = register_agent(
            session=session,
            agent_in=AgentCreate(name="a", command="run {workdir}", model_id=model.id),
        )
        sub_in = SubmissionCreate(agent_id=agent.id or 0, task_id=task.id or 0)
        first = get_or_create_submission(session=session, submission_in=sub_in)
        assert get_or_create_submission(session=session, submission_in=sub_in).id == first.id
        for passed in (1, 3):
            record_score(
                session=session,
                score_in=ScoreCreate(
                    submission_id=first.id or 0,
                    suite=ScoreSuite.original,
                    n_collected=3,
                    n_passed=passed,
                    n_golden_passed=3,
                    passed_fraction=passed / 3,
                    resolved_count=passed >= 3,
                    resolved_set=passed >= 3,
                ),
            )
        (score,) = list_scores(session=session, submission_id=first.id or 0)
        assert (score.n_passed, score.resolved_count) == (3, True)


def test_webhook_delivery_is_stored_once(engine: Engine) -> None:
    with session_scope(engine) as session:
        first, created = record_delivery(
            session=session, delivery_id="d-1", event="ping", payload=b"{}"
        )
        again, created_again = record_delivery(
            session=session, delivery_id="d-1", event="ping", payload=b"{}"
        )
        assert (created, created_again) == (True, False)
        assert again.id == first.id
        assert (
            first.payload_sha256
            == "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
        )
