"""The author the settings name, with every exchange it makes stored in the registry."""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

    from bot.settings import Settings
    from probe_builder.authors.base import Author, AuthorExchange


class RegistryRecorder:
    """An ``ExchangeRecorder`` that writes each exchange in its own transaction, so a
    failed build still leaves the record of what the model was asked and answered."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def __call__(self, exchange: AuthorExchange) -> None:
        from task_registry.db import session_scope
        from task_registry.exchanges import record_exchange

        fields = asdict(exchange)
        fields["purpose"] = str(fields["purpose"])
        with session_scope(self.engine) as session:
            record_exchange(session=session, **fields)


def configured_author(settings: Settings, engine: Engine) -> Author | None:
    """None for the mechanical default; the OpenAI-compatible author when configured."""
    if settings.author == "mechanical":
        return None
    from probe_builder.authors.base import create_author
    from probe_builder.authors.openai_compat import OpenAIAuthorConfig

    assert settings.openai_base_url and settings.openai_model  # checked by Settings
    config = OpenAIAuthorConfig(
        base_url=settings.openai_base_url,
        model=settings.openai_model,
        api_key=settings.openai_api_key,
        timeout_s=settings.openai_timeout_s,
    )
    return create_author(settings.author, config=config, recorder=RegistryRecorder(engine))
