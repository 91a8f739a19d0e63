"""The root of every error the shared-environment code raises, so callers can catch them as one."""

from __future__ import annotations

from probewatch.errors import RunnerError


class EnvError(RunnerError):
    """Something about a shared environment went wrong; the message says what."""
