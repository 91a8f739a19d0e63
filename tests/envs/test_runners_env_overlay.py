"""A run's writable overlay: setup commands install there, the shared environment stays as it was."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from runners.env import EnvHome, ensure_environment, overlay_environment, resolve
from runners.env.store import Usage, disk_usage
from runners.env.uv import Uv
from runners.types import EnvironmentRef
from tests.runners_env_support import ERA, make_repo

pytest_plugins = ["tests.runners_env_fixtures"]

PROJECT = {
    "pyproject.toml": '[build-system]\nrequires = ["setuptools>=64"]\n'
    'build-backend = "setuptools.build_meta"\n[project]\nname = "demo-overlay"\n'
    'version = "0.1"\n[project.scripts]\ndemo-hello = "demo_overlay:hello"\n',
    "src/demo_overlay/__init__.py": "def hello():\n    print('hello from the work tree')\n",
}


def run(
    ref: EnvironmentRef, *cmd: str, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    env = {"HOME": os.environ.get("HOME", "/tmp"), **ref.env}
    return subprocess.run(list(cmd), env=env, cwd=cwd, capture_output=True, text=True, check=False)


@pytest.fixture(scope="module")
def shared(env_home: EnvHome, uv: Uv) -> EnvironmentRef:
    """An environment as one is built for a repository: its requirements and, from its
    pyproject's ``[build-system]``, what builds it (a run has no network to fetch that)."""
    lock = resolve(
        ["six", "packaging", "setuptools>=64", "wheel"],
        python=Path(sys.executable),
        uv=uv,
        exclude_newer=ERA,
    )
    return ensure_environment(lock, env_home, uv).ref


@dataclass(frozen=True)
class Installed:
    tree: Path
    overlay: EnvironmentRef
    result: subprocess.CompletedProcess[str]
    shared_before: Usage


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory, shared: EnvironmentRef) -> Installed:
    """The watch file's setup command, run once in an overlay (pip's build takes seconds)."""
    tmp = tmp_path_factory.mktemp("overlay")
    tree, _ = make_repo(tmp / "tree", PROJECT)
    before = disk_usage([shared.root])
    overlay = overlay_environment(shared, tmp / "run" / "venv")
    result = run(overlay, "pip", "install", "--no-deps", "-e", ".", cwd=tree)
    return Installed(tree, overlay, result, before)


def test_an_editable_install_lands_in_the_overlay_not_the_shared_environment(
    installed: Installed, shared: EnvironmentRef
) -> None:
    assert installed.result.returncode == 0, installed.result.stderr
    imported = run(
        installed.overlay,
        "python",
        "-c",
        "import demo_overlay, six; print(demo_overlay.__file__, six.__file__)",
    )
    assert imported.returncode == 0, imported.stderr
    own, from_shared = imported.stdout.split()
    assert own.startswith(str(installed.tree)) and from_shared.startswith(str(shared.root))
    assert run(installed.overlay, "demo-hello").stdout.strip() == "hello from the work tree"
    after = disk_usage([shared.root])
    before = installed.shared_before
    assert (after.files, after.apparent_bytes) == (before.files, before.apparent_bytes)


def test_the_shared_environment_itself_does_not_see_the_install(
    installed: Installed, shared: EnvironmentRef
) -> None:
    assert installed.result.returncode == 0, installed.result.stderr
    alone = run(shared, str(shared.python), "-c", "import demo_overlay")
    assert "No module named 'demo_overlay'" in alone.stderr


def test_the_overlay_keeps_bytecode_in_the_run_folder(
    tmp_path: Path, shared: EnvironmentRef
) -> None:
    overlay = overlay_environment(shared, tmp_path / "venv")
    assert overlay.lock_hash == shared.lock_hash
    assert overlay.env["PYTHONPYCACHEPREFIX"] == str(tmp_path / "venv" / "pycache")
    assert "PYTHONDONTWRITEBYTECODE" not in overlay.env
    assert overlay.env["PATH"].startswith(f"{tmp_path / 'venv' / 'bin'}{os.pathsep}{shared.root}")
    assert run(overlay, "python", "-c", "import six").returncode == 0
    assert list((tmp_path / "venv" / "pycache").rglob("six*.pyc"))


def test_an_editable_install_needs_no_network_its_build_backend_is_the_environments(
    tmp_path: Path, shared: EnvironmentRef
) -> None:
    """As in a run's sandbox: no index reachable, yet the setup command builds the tree."""
    tree, _ = make_repo(tmp_path / "tree", PROJECT)
    overlay = overlay_environment(shared, tmp_path / "venv")
    offline = EnvironmentRef(
        overlay.lock_hash,
        overlay.root,
        overlay.python,
        {
            **overlay.env,
            "PIP_INDEX_URL": "http://127.0.0.1:9/simple",
            "PIP_NO_INDEX": "1",
            "PIP_FIND_LINKS": "",
            "PIP_CONFIG_FILE": os.devnull,
        },
    )
    done = run(offline, "pip", "install", "--no-deps", "-e", ".", cwd=tree)
    assert done.returncode == 0, done.stdout[-1500:] + done.stderr[-1500:]
    assert run(offline, "demo-hello").stdout.strip() == "hello from the work tree"
