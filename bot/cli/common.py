"""What every command group shares: the context, the consoles, and errors as one line.

The root app is a :class:`ProbewatchGroup`: any ``ProbewatchError`` a command raises,
from whichever stage, becomes ``error: <message>`` on stderr and exit code 1, never a
traceback; usage errors stay Typer's (exit code 2). A command that finds a problem of
its own raises :class:`CommandError` through :func:`fail`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from typer.core import TyperGroup

from probewatch.errors import ProbewatchError

if TYPE_CHECKING:
    from bot.context import AppContext


class CommandError(ProbewatchError):
    """A command cannot do what it was asked; the message says why and what to do."""


def console() -> Console:
    """Made when a command prints, so the width is the terminal's (or COLUMNS) at that time."""
    return Console()


def err_console() -> Console:
    return Console(stderr=True)


def app_context(ctx: typer.Context) -> AppContext:
    """The settings and lazy database the root callback put on the context."""
    return ctx.find_root().obj  # type: ignore[no-any-return]


def fail(message: str) -> NoReturn:
    raise CommandError(message)


def print_error(message: str) -> None:
    err_console().print(f"[red]error:[/red] {escape(message)}", highlight=False, soft_wrap=True)


class ProbewatchGroup(TyperGroup):
    """The root command group: the one place where errors become a message and an exit code."""

    def invoke(self, ctx: typer.Context) -> Any:  # type: ignore[override]
        try:
            return super().invoke(ctx)
        except ProbewatchError as exc:
            print_error(str(exc))
            raise typer.Exit(1) from None
