"""What every command group shares: the context, the consoles, help, and errors as one line.

Every group and command is built by :class:`ProbewatchTyper`, so they all share two
things. Errors: any ``ProbewatchError`` a command raises, from whichever stage, becomes
``error: <message>`` on stderr and exit code 1, never a traceback, and so does a disk
that refuses (full, read-only, a file where a folder goes), with the fix; a bad argument or
option value (``typer.BadParameter``) is one such line too, with exit code 2. A command
that finds a problem of its own raises :class:`CommandError` through :func:`fail`.
Help: a parameter is shown as it is typed (``TASK``, ``--since YYYY-MM-DD``,
``--verdict [passed|rejected|all]``), never by its Python type (``<str>``, ``<bool>``).
"""

from __future__ import annotations

import errno
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption
from typer.models import CommandFunctionType

from bot.console import console as console  # every command prints through it
from probewatch.errors import ProbewatchError

if TYPE_CHECKING:
    from bot.context import AppContext

USAGE_ERROR_EXIT = 2
PYDANTIC_PREFIX = "Value error, "
# What to do when the disk refuses, by errno; PROBEWATCH_HOME holds everything probewatch writes.
DISK_FIXES = {
    errno.ENOSPC: "free space on that disk, or set PROBEWATCH_HOME to a folder on another",
    errno.EDQUOT: "free space within your quota, or set PROBEWATCH_HOME to another disk",
    errno.EROFS: "reads work on a read-only home; for this, set PROBEWATCH_HOME to a writable "
    "folder",
    errno.EACCES: "make it writable for this user, or set PROBEWATCH_HOME to a folder that is",
    errno.ENOTDIR: "a path above it is a file: set PROBEWATCH_HOME (or the path given) to a folder",
}
DEFAULT_DISK_FIX = "check the path and PROBEWATCH_HOME"


class CommandError(ProbewatchError):
    """A command cannot do what it was asked; the message says why and what to do."""


def err_console() -> Console:
    return Console(stderr=True)


def app_context(ctx: typer.Context) -> AppContext:
    """The settings and lazy database the root callback put on the context."""
    return ctx.find_root().obj  # type: ignore[no-any-return]


def repo_option(value: str | None) -> str | None:
    """Typer callback of every ``--repo OWNER/NAME``: a name that is not owner/name is a
    usage error (one line, exit 2) before the command runs or stores anything."""
    from probewatch.names import BadRepoName, check_repo_name

    if not value:
        return value
    try:
        return check_repo_name(value)
    except BadRepoName as exc:
        raise typer.BadParameter(str(exc)) from None


def fail(message: str) -> NoReturn:
    raise CommandError(message)


def os_error_line(exc: OSError) -> str:
    """``<what the system said>: <path> (<what to do>)``, one line."""
    what = exc.strerror or str(exc)
    where = f": {exc.filename}" if exc.filename else ""
    return f"{what}{where} ({DISK_FIXES.get(exc.errno or 0, DEFAULT_DISK_FIX)})"


def print_error(message: str) -> None:
    err_console().print(f"[red]error:[/red] {escape(message)}", highlight=False, soft_wrap=True)


@contextmanager
def progress(label: str) -> Iterator[Callable[[str], None]]:
    """Progress on stderr, so stdout stays the result: in a terminal a spinner showing the
    latest message; in a pipe or a log, where a spinner leaves nothing, one line each."""
    out = err_console()
    if out.is_terminal:
        with out.status(escape(label)) as status:
            yield lambda message: status.update(escape(f"{label}: {message}"))
        return

    def line(message: str) -> None:
        out.print(f"{label}: {message}", markup=False, highlight=False, soft_wrap=True)

    yield line


# --- help: parameters shown as they are typed -------------------------------------------


def choices_metavar(choices: tuple[str, ...]) -> str:
    """``[a|b|c]``: how an option with fixed choices shows them in help."""
    return "[" + "|".join(choices) + "]"


class _PlainArgument(TyperArgument):
    """An argument shown by its name alone: ``TASK`` (required), ``[PATH]`` (optional)."""

    def display_type_rich(self, ctx: Any) -> str | None:
        return None

    def get_usage_pieces(self, ctx: Any) -> list[str]:
        name = self.metavar or (self.name or "").upper()
        shown = name if self.required else f"[{name}]"
        return [shown + ("..." if self.nargs != 1 else "")]


class _PlainOption(TyperOption):
    """An option shown with the value it takes: its metavar, its choices, or its name."""

    def display_type_rich(self, ctx: Any) -> str | None:
        if self.is_flag or self.count:
            return None  # a flag takes no value
        if self.metavar is not None:
            return self.metavar
        descriptor = self.type_descriptor
        if descriptor.is_choice and descriptor.choices:
            return choices_metavar(tuple(str(c) for c in descriptor.choices))
        return (self.name or "value").upper()


def _plain(param: Any) -> Any:
    # Typer builds its parameter objects itself and offers no hook for their class; the
    # subclasses only change how help shows them, so the objects are re-classed in place.
    if type(param) is TyperArgument:
        param.__class__ = _PlainArgument
        if param.metavar is None:
            param.metavar = (param.name or "").upper()
    elif type(param) is TyperOption:
        param.__class__ = _PlainOption
    return param


class _PlainParams:
    def get_params(self, ctx: Any) -> list[Any]:
        return [_plain(param) for param in super().get_params(ctx)]  # type: ignore[misc]


class ProbewatchCommand(_PlainParams, TyperCommand):
    """A command whose help shows parameters as they are typed."""


class ProbewatchGroup(_PlainParams, TyperGroup):
    """A command group: where errors become one line and an exit code, for every command."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except ProbewatchError as exc:
            print_error(str(exc))
            raise typer.Exit(1) from None
        except OSError as exc:  # the disk refused: full, read-only, a file where a folder goes
            print_error(os_error_line(exc))
            raise typer.Exit(1) from None
        except typer.BadParameter as exc:
            # Typer validates choices through pydantic, whose message carries its own prefix.
            print_error(exc.format_message().replace(PYDANTIC_PREFIX, ""))
            raise typer.Exit(USAGE_ERROR_EXIT) from None


class ProbewatchTyper(typer.Typer):
    """``typer.Typer`` whose groups and commands are the classes above."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("cls", ProbewatchGroup)
        super().__init__(**kwargs)

    def command(
        self, name: str | None = None, *, cls: type[TyperCommand] | None = None, **kwargs: Any
    ) -> Callable[[CommandFunctionType], CommandFunctionType]:
        return super().command(name, cls=cls or ProbewatchCommand, **kwargs)
