"""One environment per lock hash: built once, atomically, read-only, relocatable, under a lock."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from filelock import FileLock

from runners.env import EnvHome, EnvironmentBuildError, Lock, ensure_environment
from runners.env.lock import interpreter
from runners.env.manifest import read_manifest
from runners.env.uv import Uv
from tests.runners_env_support import REPO_ROOT

pytest_plugins = ["tests.runners_env_fixtures"]

BUILDER = """
import json, sys
from pathlib import Path
from datetime import UTC, datetime
from runners.env import EnvHome, ensure_environment, resolve
from runners.env.uv import Uv
home, uv = EnvHome(Path(sys.argv[1])), Uv(Path(sys.argv[2]))
lock = resolve(["six", "attrs"], python=Path(sys.executable), uv=uv,
               exclude_newer=datetime(2023, 6, 1, tzinfo=UTC))
print(lock.lock_hash, flush=True)
if sys.argv[3] == "build":
    print(json.dumps({"built": ensure_environment(lock, home, uv).built}))
"""


def test_an_environment_is_built_once_and_then_found(
    env_home: EnvHome,
    six_lock: Lock,
    uv: Uv,
) -> None:
    first = ensure_environment(six_lock, env_home, uv)
    second = ensure_environment(six_lock, env_home, uv)
    assert second.built is False
    assert first.ref.root == env_home.envs / six_lock.lock_hash
    assert first.ref.python == first.ref.root / "bin" / "python"
    out = subprocess.run(
        [str(first.ref.python), "-c", "import six; print(six.__version__)"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "1.16.0"


def test_the_manifest_records_pins_era_and_interpreter(
    env_home: EnvHome,
    six_lock: Lock,
    uv: Uv,
) -> None:
    manifest = read_manifest(ensure_environment(six_lock, env_home, uv).ref.root)
    assert manifest.lock_hash == six_lock.lock_hash
    assert manifest.pins == list(six_lock.pins)
    assert manifest.exclude_newer == "2023-06-01T00:00:00Z"
    assert manifest.python_version == interpreter(Path(sys.executable)).version


def test_the_environment_is_read_only(env_home: EnvHome, six_lock: Lock, uv: Uv) -> None:
    root = ensure_environment(six_lock, env_home, uv).ref.root
    writable = [
        path
        for path in [root, *root.rglob("*")]
        if not path.is_symlink()
        and path.stat().st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)
    ]
    assert writable == []
    assert root.stat().st_mode & stat.S_IROTH  # other users (a run's user) can read it


def test_scripts_survive_the_rename_into_place(env_home: EnvHome, six_lock: Lock, uv: Uv) -> None:
    root = ensure_environment(six_lock, env_home, uv).ref.root
    done = subprocess.run(
        [str(root / "bin" / "pytest"), "--version"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert ".tmp-" not in (root / "bin" / "pytest").read_text()


def test_packages_are_hard_linked_from_the_shared_cache(
    env_home: EnvHome,
    six_lock: Lock,
    uv: Uv,
) -> None:
    root = ensure_environment(six_lock, env_home, uv).ref.root
    six_py = next(root.glob("lib/python*/site-packages/six.py"))
    assert six_py.stat().st_nlink >= 2


def test_the_reference_carries_the_offline_asset_cache(
    env_home: EnvHome,
    six_lock: Lock,
    uv: Uv,
) -> None:
    env = ensure_environment(six_lock, env_home, uv).ref.env
    assert env["HF_HUB_OFFLINE"] == "1" and env["TRANSFORMERS_OFFLINE"] == "1"
    assert env["HF_HOME"].startswith(str(env_home.assets))
    assert env["PYTHONDONTWRITEBYTECODE"] == "1"


def test_the_reference_carries_the_spec_another_runner_builds_from(
    env_home: EnvHome,
    six_lock: Lock,
    uv: Uv,
) -> None:
    spec = ensure_environment(six_lock, env_home, uv).ref.spec
    assert spec is not None
    assert spec.requirements == six_lock.requirements
    assert spec.exclude_newer == six_lock.exclude_newer
    assert spec.python_version == six_lock.python.version


def test_modules_the_repairs_could_not_add_are_named_unavailable() -> None:
    from datetime import UTC, datetime

    from runners.env.build import unavailable_modules
    from runners.env.manifest import Manifest, Repair, RepairOutcome

    manifest = Manifest(
        lock_hash="h",
        python_version="3.11.7",
        platform="linux-x86_64",
        base_python="/usr/bin/python3",
        pins=[],
        requirements=[],
        repairs=[
            Repair(module="zmq", distribution="pyzmq", round=1, outcome=RepairOutcome.added),
            Repair(module="vllm", distribution="vllm", round=1, outcome=RepairOutcome.excluded),
            Repair(
                module="torchvision",
                distribution="torchvision",
                round=2,
                outcome=RepairOutcome.unresolvable,
            ),
            Repair(
                module="verl", distribution=None, round=1, outcome=RepairOutcome.not_installable
            ),
        ],
        built_at=datetime.now(UTC),
        build_seconds=1.0,
    )
    assert unavailable_modules(manifest) == {
        "vllm": "the repository's environment config excludes vllm",
        "torchvision": "torchvision cannot be resolved in the era on this runner",
    }


def test_a_failed_build_leaves_nothing(tmp_path: Path, six_lock: Lock, uv: Uv) -> None:
    home = EnvHome(tmp_path / "home")
    broken = Lock(
        "0" * 64,
        six_lock.python,
        ("six==1.16.0", "no-such-distribution-probewatch==1.0"),
        ("six",),
        six_lock.exclude_newer,
    )
    with pytest.raises(EnvironmentBuildError, match="no-such-distribution-probewatch"):
        ensure_environment(broken, home, uv)
    assert sorted(p.name for p in home.envs.iterdir()) == [".locks"]


def test_two_builders_of_one_hash_build_it_once(tmp_path: Path, uv: Uv) -> None:
    home = EnvHome(tmp_path / "home")
    home.create()
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}

    def builder(mode: str) -> subprocess.Popen[str]:
        args = [sys.executable, "-c", BUILDER, str(home.home), str(uv.cache), mode]
        return subprocess.Popen(
            args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
        )

    lock_hash = builder("hash").communicate(timeout=120)[0].strip()
    holder = FileLock(str(home.lock_file(lock_hash)))
    holder.acquire()  # both builders must now wait for this lock
    try:
        builders = [builder("build"), builder("build")]
        # Each prints its hash just before asking for the environment.
        assert [b.stdout.readline().strip() for b in builders] == [lock_hash, lock_hash]
        time.sleep(1.0)
        assert not home.env_dir(lock_hash).exists()
    finally:
        holder.release()
    results = [b.communicate(timeout=300) for b in builders]
    assert [b.returncode for b in builders] == [0, 0], [err for _, err in results]
    assert sorted(json.loads(out)["built"] for out, _ in results) == [False, True]
    assert [p.name for p in home.envs.iterdir() if not p.name.startswith(".")] == [lock_hash]
