"""Resolution in the PR's era, runner overrides, the torch guard, and what the lock hash covers."""

from __future__ import annotations

import sys
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from packaging.version import Version

from runners.env import GuardedPackageError, Lock, ResolutionError, RunnerOverrides, resolve
from runners.env.lock import era_timestamp, interpreter, lock_hash, parse_pins
from runners.env.uv import Uv
from tests.runners_env_support import ERA, OLD_ERA, make_wheel

pytest_plugins = ["tests.runners_env_fixtures"]

PY = Path(sys.executable)


def version_of(lock: Lock, name: str) -> Version:
    pin = lock.pin_of(name)
    assert pin is not None, f"{name} not in {lock.pins}"
    return Version(pin.split("==")[1])


def test_an_older_merge_time_resolves_older_versions(uv: Uv) -> None:
    old = resolve(["six", "idna"], python=PY, uv=uv, exclude_newer=OLD_ERA)
    new = resolve(["six", "idna"], python=PY, uv=uv, exclude_newer=ERA)
    # six 1.12.0 was the newest on 2019-01-01; 1.16.0 (May 2021) the newest on 2023-06-01.
    assert version_of(old, "six") == Version("1.12.0")
    assert version_of(new, "six") == Version("1.16.0")
    assert version_of(old, "idna") < version_of(new, "idna")
    assert old.lock_hash != new.lock_hash
    assert old.exclude_newer == "2019-01-01T00:00:00Z"


def test_the_harness_is_part_of_every_resolution(six_lock: Lock) -> None:
    assert six_lock.pin_of("pytest") is not None and six_lock.pin_of("pip") is not None
    assert version_of(six_lock, "pytest") < Version("7.4")  # pytest 7.4.0 came out 2023-06-23


def test_same_inputs_same_hash_and_the_hash_is_the_pins(six_lock: Lock, uv: Uv) -> None:
    again = resolve(["packaging", "six"], python=PY, uv=uv, exclude_newer=ERA)
    assert again.lock_hash == six_lock.lock_hash
    assert lock_hash(interpreter(PY), six_lock.pins) == six_lock.lock_hash
    other = lock_hash(interpreter(PY), (*six_lock.pins, "idna==3.4"))
    assert other != six_lock.lock_hash


def test_torch_from_the_index_is_refused(uv: Uv) -> None:
    with pytest.raises(GuardedPackageError, match=r"torch==.* would be installed from the package"):
        resolve(["torch"], python=PY, uv=uv, exclude_newer=ERA)


def test_torchvision_built_for_another_torch_is_refused_too(tmp_path: Path, uv: Uv) -> None:
    wheels = tmp_path / "wheels"
    make_wheel(wheels, "torch", "2.13.0+cpu")
    only_torch = RunnerOverrides(requirements=("torch==2.13.0+cpu",), find_links=(wheels,))
    with pytest.raises(GuardedPackageError, match=r"torchvision==.* must be the runner's own"):
        resolve(["torchvision"], python=PY, uv=uv, overrides=only_torch, exclude_newer=ERA)


def test_a_runner_override_from_local_wheels_wins_and_enters_the_hash(
    tmp_path: Path,
    uv: Uv,
) -> None:
    wheels = tmp_path / "wheels"
    make_wheel(wheels, "torch", "2.13.0+cpu")
    overrides = RunnerOverrides(requirements=("torch==2.13.0+cpu",), find_links=(wheels,))
    # The repository asks for another torch; the runner's build replaces it.
    lock = resolve(
        ["torch==2.0.1", "six"], python=PY, uv=uv, overrides=overrides, exclude_newer=ERA
    )
    assert lock.pin_of("torch") == "torch==2.13.0+cpu"
    plain = resolve(["six"], python=PY, uv=uv, exclude_newer=ERA)
    assert lock.lock_hash != plain.lock_hash


def test_an_unsolvable_set_names_the_package(uv: Uv) -> None:
    with pytest.raises(ResolutionError, match="no-such-distribution-probewatch"):
        resolve(["no-such-distribution-probewatch"], python=PY, uv=uv, exclude_newer=ERA)


def test_era_timestamp_is_utc_whatever_the_zone() -> None:
    shanghai = timezone(timedelta(hours=8))
    assert era_timestamp(datetime(2025, 11, 6, 9, 0, tzinfo=shanghai)) == "2025-11-06T01:00:00Z"
    assert era_timestamp(datetime(2025, 11, 6, 9, 0)) == "2025-11-06T09:00:00Z"
    assert era_timestamp(datetime(2025, 11, 6, tzinfo=UTC)) == "2025-11-06T00:00:00Z"


def test_parse_pins_keeps_only_requirement_lines() -> None:
    out = "# header\nsix==1.16.0\n    # via -r req.in\nAttrs==23.1.0\n--find-links x\n\n"
    assert parse_pins(out) == ("Attrs==23.1.0", "six==1.16.0")
