"""The shared asset cache: Hugging Face libraries pointed at it, offline, failing fast."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from runners.env.assets import asset_env, ensure_asset_folders

FETCH = """
import sys
from huggingface_hub import hf_hub_download
try:
    hf_hub_download("probewatch/never-cached-model", "config.json")
except Exception as exc:
    print(type(exc).__name__, exc)
    sys.exit(3)
"""


def test_asset_variables_point_into_the_cache_and_turn_every_library_offline(
    tmp_path: Path,
) -> None:
    env = asset_env(tmp_path)
    for key in ("HF_HOME", "HF_HUB_CACHE", "TRANSFORMERS_CACHE", "HF_DATASETS_CACHE"):
        assert Path(env[key]).is_relative_to(tmp_path), key
    assert {env[k] for k in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE")} == {
        "1"
    }


def test_a_missing_asset_fails_at_once_with_a_clear_reason(tmp_path: Path) -> None:
    ensure_asset_folders(tmp_path)
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), **asset_env(tmp_path)}
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", FETCH],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert time.monotonic() - started < 20
    assert done.returncode == 3, done.stderr
    assert "offline" in done.stdout.lower() or "LocalEntryNotFound" in done.stdout
