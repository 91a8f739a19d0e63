"""The demo repository's history as data: who committed what, when, and which gap each PR plants.

Each commit is a folder of file templates (``templates/<step>/``, every file
with a ``.txt`` suffix so no tool mistakes it for project code) and a message
(``messages/<step>.txt``: subject, blank line, PR description as verl squashes
it). Three squash-merged PRs each plant one failure class the InfraDev study
found that a PR's own tests miss; ``PlantedGap`` records the promise, the
PR's tests, the one-line mechanical mutation that breaks the promise while
passing those tests, and the curator-written probes that catch it.
"""

from __future__ import annotations

from dataclasses import dataclass

from probewatch.errors import BuildError
from task_registry.types import PromiseCategory

DEMO_REPO_NAME = "probewatch-demo/minirl"
DEFAULT_BRANCH = "main"
# The demo's PRs are a few hundred lines, not thousands: its watch-file entry
# lowers the size threshold so the miner keeps them (see watch.toml).
DEMO_SIZE_THRESHOLD = 100
MERGER = ("GitHub", "noreply@github.com")


@dataclass(frozen=True)
class CommitSpec:
    step: str  # folder under templates/ and messages/
    author: tuple[str, str]  # name, email
    authored: str  # ISO 8601 with offset
    committed: str
    pr_number: int | None = None  # squash-merged PR, or a direct commit
    removed: tuple[str, ...] = ()  # paths deleted in this commit


class MutationNotFound(BuildError, ValueError):
    """The planted mutation's line is not (exactly once) in the text it should apply to."""


@dataclass(frozen=True)
class PlantedMutation:
    """A one-line edit of a line the golden patch added, as the mechanical generator makes it."""

    path: str
    before: str  # the golden line, stripped of indentation
    after: str  # the mutated line, stripped of indentation
    operator: str  # the mechanical operator that produces it
    description: str

    def apply(self, text: str) -> str:
        """``text`` (the file at the merge commit) with the mutation applied, indentation kept."""
        lines = text.splitlines(keepends=True)
        hits = [i for i, line in enumerate(lines) if line.strip() == self.before]
        if len(hits) != 1:
            found = f"{self.before!r} found {len(hits)} times, not once"
            raise MutationNotFound(f"{self.path}: {found}")
        line = lines[hits[0]]
        indent = line[: len(line) - len(line.lstrip())]
        lines[hits[0]] = f"{indent}{self.after}\n"
        return "".join(lines)


@dataclass(frozen=True)
class PlantedGap:
    """What one demo PR promises, what its tests miss, and how the miss is shown."""

    pr_number: int
    category: PromiseCategory
    promise: str  # the phrase of the PR description that states the promise
    test_files: tuple[str, ...]  # the PR's own tests
    planted: PlantedMutation
    probe_folder: str  # under probes/


COMMITS: tuple[CommitSpec, ...] = (
    CommitSpec(
        "01-initial",
        ("Mei Lin", "mei.lin@example.com"),
        "2025-02-03T10:12:00+08:00",
        "2025-02-03T10:12:00+08:00",
    ),
    CommitSpec(
        "02-rollout",
        ("Tomás Ortega", "tomas.ortega@example.org"),
        "2025-02-10T16:40:00+01:00",
        "2025-02-11T09:05:00+00:00",
        pr_number=3,
    ),
    CommitSpec(
        "03-trainer",
        ("Mei Lin", "mei.lin@example.com"),
        "2025-02-17T11:00:00+08:00",
        "2025-02-18T02:30:00+00:00",
        pr_number=5,
    ),
    CommitSpec(
        "04-weight-sync",
        ("Priya Raman", "priya.raman@example.net"),
        "2025-03-03T14:20:00+05:30",
        "2025-03-04T08:00:00+00:00",
        pr_number=8,
    ),
    CommitSpec(
        "05-incremental-sync",
        ("Priya Raman", "priya.raman@example.net"),
        "2025-04-14T18:45:00+05:30",
        "2025-04-16T07:10:00+00:00",
        pr_number=12,
    ),
    CommitSpec(
        "06-prefix-cache",
        ("Tomás Ortega", "tomas.ortega@example.org"),
        "2025-05-06T12:00:00+02:00",
        "2025-05-07T15:25:00+00:00",
        pr_number=15,
    ),
    CommitSpec(
        "07-data-parallel",
        ("Mei Lin", "mei.lin@example.com"),
        "2025-06-02T09:30:00+08:00",
        "2025-06-03T06:45:00+00:00",
        pr_number=19,
    ),
    CommitSpec(
        "08-readme",
        ("Jonas Weber", "jonas.weber@example.de"),
        "2025-06-16T17:05:00+02:00",
        "2025-06-16T17:30:00+00:00",
        pr_number=21,
    ),
)

GAPS: tuple[PlantedGap, ...] = (
    PlantedGap(
        pr_number=12,
        category=PromiseCategory.traffic,
        promise="This reduces weight-sync traffic",
        test_files=("tests/test_weight_sync.py",),
        planted=PlantedMutation(
            path="minirl/weight_sync.py",
            before="if self._sent_versions.get(name) == param._version:",
            after="if False:",
            operator="force_branch",
            description="never skip an unchanged parameter: every sync sends every parameter",
        ),
        probe_folder="pr-12",
    ),
    PlantedGap(
        pr_number=15,
        category=PromiseCategory.state,
        promise="The cache is invalidated on reset",
        test_files=("tests/test_prefix_cache.py",),
        planted=PlantedMutation(
            path="minirl/rollout.py",
            before="self._prefix_cache.clear()",
            after="pass",
            operator="delete_call",
            description="reset() never invalidates the prefix cache: stale after a weight update",
        ),
        probe_folder="pr-15",
    ),
    PlantedGap(
        pr_number=19,
        category=PromiseCategory.numeric,
        promise="Gradients are averaged across data-parallel ranks",
        test_files=("tests/test_data_parallel.py",),
        planted=PlantedMutation(
            path="minirl/parallel.py",
            before="param.grad.div_(world_size)",
            after="pass",
            operator="delete_call",
            description="gradients are summed, not averaged: identical on one rank, doubled on two",
        ),
        probe_folder="pr-19",
    ),
)
