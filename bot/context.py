"""What a CLI command or the web app needs at hand: settings, and lazily, the database."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from bot.settings import Settings

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine
    from sqlmodel import Session

    from bot.watchfile import WatchFile


@dataclass
class AppContext:
    settings: Settings
    _engine: Engine | None = field(default=None, repr=False)

    @property
    def engine(self) -> Engine:
        if self._engine is None:
            from task_registry.db import make_engine

            self._engine = make_engine(self.settings.resolved_database_url)
        return self._engine

    def checked_engine(self) -> Engine:
        """The engine, after refusing a schema that is not at the head revision."""
        from task_registry.db import check_schema

        check_schema(self.engine)
        return self.engine

    @contextmanager
    def session(self) -> Iterator[Session]:
        from task_registry.db import session_scope

        with session_scope(self.checked_engine()) as session:
            yield session

    def watch_file(self) -> WatchFile:
        from bot.watchfile import WatchFile, load_watch_file

        if self.settings.watch_file is None:
            return WatchFile()
        return load_watch_file(self.settings.watch_file)
