"""The fixed choices of command options, as types Typer validates and shows in help.

They mirror vocabularies of ``task_registry`` (``Decision``, ``Window``, ``ScoreSuite``,
``TaskStatus``), which cannot be imported here: that would load SQLAlchemy for ``--help``.
A test holds each one equal to the vocabulary it mirrors.
"""

from __future__ import annotations

from typing import Literal, get_args

Verdict = Literal["passed", "rejected", "all"]  # FilterVerdict, or both
DecisionChoice = Literal["pending", "accepted", "rejected"]
WindowChoice = Literal["month", "quarter"]
SuiteChoice = Literal["with_probes", "original"]
RuleChoice = Literal["set", "count"]  # the two Resolved rules
StatusChoice = Literal["candidate", "built", "validated", "published", "retired"]  # TaskStatus
FormatChoice = Literal["swebench"]  # export formats

VERDICTS: tuple[str, ...] = get_args(Verdict)
DECISIONS: tuple[str, ...] = get_args(DecisionChoice)
WINDOWS: tuple[str, ...] = get_args(WindowChoice)
SUITES: tuple[str, ...] = get_args(SuiteChoice)
RULES: tuple[str, ...] = get_args(RuleChoice)
STATUSES: tuple[str, ...] = get_args(StatusChoice)
