"""The shared, read-only cache of model weights, tokenizers and data sets.

Runs see it through the Hugging Face variables, with every offline switch on:
a test that needs an asset nobody cached fails at once with the library's
"offline / not in cache" error (which the fault table classifies as a missing
asset) instead of waiting out a network timeout per test.
"""

from __future__ import annotations

from pathlib import Path

OFFLINE_FLAGS = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}


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
    for sub in ("huggingface/hub", "huggingface/datasets"):
        (assets / sub).mkdir(parents=True, exist_ok=True)
