"""Argument types the benches share, so bad input is refused in one line by argparse.

Each defers to the check the service itself makes (the miner's for a repository, the
CLI's for a moment), so a bench and ``probewatch`` refuse the same input alike.
"""

from __future__ import annotations

import argparse
from datetime import datetime
from pathlib import Path

import typer

from bot.cli.mine import parse_moment
from pr_miner.sources.git_source import check_repository
from probewatch.errors import ProbewatchError


def clone(value: str) -> Path:
    """A folder git reads as a repository: a clone or a bare mirror."""
    path = Path(value).expanduser()
    try:
        check_repository(path)
    except ProbewatchError as exc:
        raise argparse.ArgumentTypeError(f"{exc}: pass a clone or a mirror of one") from None
    return path


def moment(value: str) -> datetime:
    """A date (midnight UTC) or an ISO time, as ``probewatch mine --since`` reads it."""
    try:
        found = parse_moment(value, "")
    except typer.BadParameter as exc:
        raise argparse.ArgumentTypeError(exc.message) from None
    assert found is not None  # a value was given
    return found


def _whole(value: str, least: int, example: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{value!r} is not a whole number: give one like {example}"
        ) from None
    if number < least:
        more = "1 or more" if least == 1 else f"{least} (none) or more"
        raise argparse.ArgumentTypeError(f"{number} is below {least}: give {more}")
    return number


def positive(value: str) -> int:
    """A whole number of at least 1 (a count, a size threshold)."""
    return _whole(value, 1, "500")


def non_negative(value: str) -> int:
    """A whole number of at least 0 (how many to list, 0 for none)."""
    return _whole(value, 0, "5")


def share(value: str) -> float:
    """A number strictly between 0 and 1 (a threshold, a level)."""
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number: give one like 0.35") from None
    if not 0 < number < 1:
        raise argparse.ArgumentTypeError(f"{number} is not between 0 and 1: give one like 0.35")
    return number
