"""The configured author's exchanges land in the registry, credentials never do."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy.engine import Engine

from bot.authoring import RegistryRecorder, configured_author
from bot.settings import Settings
from probe_builder.authors.base import AuthorExchange, AuthorPurpose
from probe_builder.authors.openai_compat import OpenAIAuthor
from task_registry.db import session_scope
from task_registry.exchanges import list_exchanges
from tests.factories import make_task


def exchange(instance_id: str) -> AuthorExchange:
    return AuthorExchange(
        author="openai",
        purpose=AuthorPurpose.adversarials,
        instance_id=instance_id,
        round=1,
        endpoint="http://127.0.0.1:9/v1/chat/completions",
        model="local-model",
        request='{"model": "local-model"}',
        response='{"choices": []}',
        status_code=200,
        error=None,
        started_at=datetime(2026, 11, 29, 12, 0, tzinfo=UTC),
        duration_s=0.25,
        prompt_tokens=11,
        completion_tokens=3,
    )


def test_exchanges_are_stored_and_attached_to_their_task(engine: Engine) -> None:
    with session_scope(engine) as session:
        task = make_task(session, 31)
    recorder = RegistryRecorder(engine)
    recorder(exchange(task.instance_id))
    recorder(exchange("acme__infra-lib-999"))  # before its task exists: kept, unattached
    with session_scope(engine) as session:
        attached = list_exchanges(session=session, task_id=task.id)
        every = list_exchanges(session=session)
    assert [(e.purpose, e.round, e.status_code, e.prompt_tokens) for e in attached] == [
        ("adversarials", 1, 200, 11)
    ]
    assert [e.task_id for e in every] == [task.id, None]


def test_the_mechanical_default_needs_no_author_and_openai_records_to_the_registry(
    sqlite_engine: Engine, tmp_path: Path
) -> None:
    assert configured_author(Settings(home=tmp_path), sqlite_engine) is None
    settings = Settings(
        home=tmp_path,
        author="openai",
        openai_base_url="http://127.0.0.1:9/v1",
        openai_model="local-model",
        openai_api_key="sk-secret",
    )
    author = configured_author(settings, sqlite_engine)
    assert isinstance(author, OpenAIAuthor)
    assert isinstance(author.recorder, RegistryRecorder)
