"""The demo upstream repository: a small RL library on torch whose history plants three gaps.

``create_demo_repo(path)`` writes ``probewatch-demo/minirl`` as a real git
repository with a deterministic history (the same commit SHAs on every
machine), the curator's probes for each planted PR, and a watch-file entry.
Three squash-merged PRs each promise something their own tests do not check:
#12 sends only changed parameters ("reduces weight-sync traffic"), #15
invalidates a prefix cache on reset, #19 averages gradients across
data-parallel ranks (its tests run one rank, where a sum is the mean). The
whole pipeline — mine, build, mechanical adversarials, probe acceptance —
runs on it on a CPU.
"""

from probe_builder.demo_repo.generator import (
    DemoPR,
    DemoRepo,
    DemoRepoError,
    create_demo_repo,
    watch_file_text,
    write_probes,
)
from probe_builder.demo_repo.history import (
    DEMO_REPO_NAME,
    DEMO_SIZE_THRESHOLD,
    MutationNotFound,
    PlantedGap,
    PlantedMutation,
)

__all__ = [
    "DEMO_REPO_NAME",
    "DEMO_SIZE_THRESHOLD",
    "DemoPR",
    "DemoRepo",
    "DemoRepoError",
    "MutationNotFound",
    "PlantedGap",
    "PlantedMutation",
    "create_demo_repo",
    "watch_file_text",
    "write_probes",
]
