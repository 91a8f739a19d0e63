"""What this machine can measure: a usable CUDA device, and how many."""

from __future__ import annotations

import torch


def cuda_usable() -> bool:
    """A CUDA (or ROCm) build of torch that also sees a device; a CPU build never is."""
    built_with_gpu = torch.version.cuda is not None or torch.version.hip is not None
    return built_with_gpu and torch.cuda.is_available()


def cuda_device_count() -> int:
    return torch.cuda.device_count() if cuda_usable() else 0
