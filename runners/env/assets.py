"""The shared, read-only cache of model weights, tokenizers and data sets.

Runs see it through the Hugging Face variables, with every offline switch on:
a test that needs an asset nobody cached fails at once with the library's
"offline / not in cache" error (which the fault table classifies as a missing
asset) instead of waiting out a network timeout per test.

Some test suites read assets from their user's home instead (verl's CPU tests
load ``~/models/Qwen/...``). Whatever a curator puts under ``home/`` in the
cache appears, linked read-only, in every run's own HOME: ``home/models`` is
the runs' ``~/models``.
"""

from __future__ import annotations

from pathlib import Path

OFFLINE_FLAGS = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
HOME_FOLDER = "home"  # in the asset cache: entries linked into every run's HOME


def asset_env(assets: Path) -> dict[str, str]:
    """Variables that point the Hugging Face libraries at ``assets`` and keep them offline."""
    hf_home = assets / "huggingface"
    return {
        "HF_HOME": str(hf_home),
        "HF_HUB_CACHE": str(hf_home / "hub"),
        "TRANSFORMERS_CACHE": str(hf_home / "hub"),
        "HF_DATASETS_CACHE": str(hf_home / "datasets"),
        **OFFLINE_FLAGS,
        "HF_HUB_DISABLE_TELEMETRY": "1",
    }


def ensure_asset_folders(assets: Path) -> None:
    for sub in ("huggingface/hub", "huggingface/datasets", HOME_FOLDER):
        (assets / sub).mkdir(parents=True, exist_ok=True)


def link_home_assets(assets: Path, home: Path) -> list[str]:
    """Link each entry of the cache's ``home/`` into a run's ``home``; the names linked.

    An entry the run's home already has is left alone: the run's own files win.
    """
    source = assets / HOME_FOLDER
    if not source.is_dir():
        return []
    linked = []
    for entry in sorted(source.iterdir()):
        target = home / entry.name
        if target.exists() or target.is_symlink():
            continue
        target.symlink_to(entry, target_is_directory=entry.is_dir())
        linked.append(entry.name)
    return linked
