"""Pytest fixture for the GitHub emulator: `github_emulator` yields a started GitHubEmulator with
an empty EmulatorState (accepting token "t") and stops it when the test ends. Import it into a
conftest.py, or list this module in `pytest_plugins`, to make it available.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .server import GitHubEmulator


@pytest.fixture
def github_emulator() -> Iterator[GitHubEmulator]:
    with GitHubEmulator() as emulator:
        yield emulator
