"""What the probe kit's tests share: which of them a machine with a usable CUDA device runs.

The kit measures on CUDA where it can and says why not where it cannot; a test
of either path holds only on a machine of that kind. Both kinds run on a
self-hosted GPU runner, where the tests that assume no CUDA are skipped and
the CUDA tests run.
"""

from __future__ import annotations

import pytest

from probe_builder.kit.devices import cuda_usable

CUDA_HERE = cuda_usable()

needs_cuda = pytest.mark.skipif(not CUDA_HERE, reason="needs a usable CUDA device")
without_cuda = pytest.mark.skipif(
    CUDA_HERE, reason="asserts what a machine without a usable CUDA device does"
)
