"""The environment a test run sees: scrubbed of the host's secrets and state, set for the run.

Tests run code we did not write (a candidate's patch, an upstream test
suite), so nothing of the service may reach them: no credential (GitHub and
Hugging Face tokens, webhook secrets, database URLs, any URL carrying a
password), none of probewatch's own settings, none of the host's pytest, git,
CI or interpreter state. What they get: the host's basics (PATH, locale), the
shared environment's variables (HF_HOME, offline flags), the request's own,
a HOME of their own inside the run's scratch folder (with the asset cache's
``home/`` entries linked in), and a TMPDIR of their own: the workspace's short
one where it has it, since Unix sockets made under TMPDIR (Ray's, torch's
rendezvous files) must fit in 107 bytes.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path

from runners.backends.serialize import is_secret_name
from runners.env.assets import link_home_assets
from runners.types import EnvironmentRef

PLUGIN_FOLDER = "plugin"  # in the scratch folder: where the injected pytest plugin lives

# Variables tests never see: the service's settings and credentials,
# the host's own pytest, git and CI state, and where the host's Python lives.
_HIDDEN_PREFIXES = ("PROBEWATCH_", "PYTEST_", "GIT_", "GITHUB_", "GH_", "ACTIONS_", "AWS_")
_HIDDEN_NAMES = frozenset(
    {"PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV", "SSH_AUTH_SOCK", "PGPASSFILE"}
)
_URL_WITH_PASSWORD = re.compile(r"\w+://[^/\s:@]+:[^/\s@]+@")


def is_hidden_variable(name: str, value: str) -> bool:
    """Whether an inherited variable must not reach the tests."""
    upper = name.upper()
    return (
        is_secret_name(name)
        or upper.startswith(_HIDDEN_PREFIXES)
        or upper in _HIDDEN_NAMES
        or bool(_URL_WITH_PASSWORD.search(value))
    )


def scrub_environment(env: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if not is_hidden_variable(k, v)}


def run_environment(
    *,
    tree: Path,
    scratch: Path,
    environment: EnvironmentRef | None,
    extra: Mapping[str, str],
    base: Mapping[str, str] | None = None,
    tmp: Path | None = None,
) -> dict[str, str]:
    """The scrubbed environment of a run: host basics, the shared environment, the request's.

    ``tmp`` is the run's TMPDIR (default: ``tmp`` in the scratch folder).
    """
    env = scrub_environment(os.environ if base is None else base)
    if environment is not None:
        env.update(scrub_environment(environment.env))
        env["VIRTUAL_ENV"] = str(environment.root)
        env["PATH"] = os.pathsep.join([str(environment.python.parent), env.get("PATH", "")])
    env.update(scrub_environment(extra))
    home, tmp = scratch / "home", tmp or scratch / "tmp"
    home.mkdir(exist_ok=True)
    tmp.mkdir(exist_ok=True)
    if environment is not None and environment.assets is not None:
        link_home_assets(environment.assets, home)
    # The plugin must be importable by -p; the tree too, for subprocesses the tests start.
    paths = [str(scratch / PLUGIN_FOLDER), str(tree), env.get("PYTHONPATH", "")]
    env.update(
        HOME=str(home),
        TMPDIR=str(tmp),
        PYTHONPATH=os.pathsep.join(p for p in paths if p),
        PYTHONUNBUFFERED="1",
        PYTHONDONTWRITEBYTECODE="1",
    )
    return env


def python_of(environment: EnvironmentRef | None) -> Path:
    """The interpreter of the shared environment, or this one's when the run names none."""
    return environment.python if environment is not None else Path(sys.executable)
