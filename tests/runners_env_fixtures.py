"""Fixtures of the shared-environment tests, loaded with ``pytest_plugins``.

Environments are real (uv, PyPI, virtual environments), so the home, its uv
cache and the first environment are made once per test session and reused.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from runners.env import EnvHome, Lock, resolve
from runners.env.uv import Uv
from tests.runners_env_support import ERA


@pytest.fixture(scope="session")
def env_home(tmp_path_factory: pytest.TempPathFactory) -> EnvHome:
    """One probewatch home (environments, uv cache, assets) for the whole session."""
    home = EnvHome(tmp_path_factory.mktemp("envhome"))
    home.create()
    return home


@pytest.fixture(scope="session")
def uv(env_home: EnvHome) -> Uv:
    return Uv(env_home.uv_cache)


@pytest.fixture(scope="session")
def six_lock(env_home: EnvHome, uv: Uv) -> Lock:
    """``six`` and ``packaging`` as of mid-2023."""
    return resolve(["six", "packaging"], python=Path(sys.executable), uv=uv, exclude_newer=ERA)
