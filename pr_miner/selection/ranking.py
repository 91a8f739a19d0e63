"""Rank surviving PRs for curators, and the per-repository auto-accept rule.

The score (0 to 1) weighs, in this order: the share of changed lines in the
repository's core source paths (a PR mostly in examples, recipes, docs or
tests makes a weak task), the lines of tests it adds (saturating, so a
golden-value dump does not dominate), and the promise categories its
description hints at (memory, time, traffic, state, mode, numerics: the
properties probes check beyond plain outputs). The hint words are a table.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pr_miner.config import MiningConfig
from pr_miner.selection.measure import Measure
from task_registry.types import PromiseCategory

CORE_WEIGHT, TESTS_WEIGHT, HINTS_WEIGHT = 0.6, 0.25, 0.15
TEST_LINES_SATURATION = 400
HINTS_SATURATION = 3
AUTO_ACCEPTED_BY = "auto_accept"

WORD = re.compile(r"[a-z0-9]+(?:[._/-][a-z0-9]+)*")


@dataclass(frozen=True, slots=True)
class HintWords:
    """Single words (matched as whole tokens) and phrases (matched in the lower-cased text)."""

    words: frozenset[str]
    phrases: tuple[str, ...] = ()


def _hints(words: str, *phrases: str) -> HintWords:
    return HintWords(frozenset(words.split()), phrases)


PROMISE_HINTS: dict[PromiseCategory, HintWords] = {
    PromiseCategory.memory: _hints(
        "memory oom footprint offload offloading offloaded recompute recomputation vram gib "
        "mib fragmentation",
        "out of memory",
        "peak mem",
        "activation checkpoint",
    ),
    PromiseCategory.time: _hints(
        "faster speedup speed-up slowdown slower latency throughput overlap overlapping "
        "overlapped performance mfu tokens/s",
        "speed up",
    ),
    PromiseCategory.traffic: _hints(
        "communication all-reduce allreduce all-gather allgather reduce-scatter all-to-all "
        "alltoall bandwidth traffic nccl broadcast p2p",
        "all reduce",
        "all gather",
        "reduce scatter",
    ),
    PromiseCategory.state: _hints(
        "cache cached caching reset stateful resume reload checkpoint checkpointing "
        "invalidate invalidation reentrant re-entrant idempotent leak leaks",
        "state dict",
        "state_dict",
    ),
    PromiseCategory.mode: _hints(
        "cudagraph cudagraphs cuda-graph cuda-graphs eager capture replay torch.compile",
        "cuda graph",
        "graph mode",
        "inference mode",
    ),
    PromiseCategory.numeric: _hints(
        "numerics numerical precision fp8 fp16 bf16 fp32 tolerance deterministic average",
        "loss scal",
        "gradient accumulation",
    ),
}


def promise_hints(text: str) -> tuple[str, ...]:
    """Promise categories whose words appear in ``text`` (a PR's title and description)."""
    lowered = text.lower()
    tokens = set(WORD.findall(lowered))
    return tuple(
        category.value
        for category, hint in PROMISE_HINTS.items()
        if not hint.words.isdisjoint(tokens) or any(p in lowered for p in hint.phrases)
    )


def rank_score(measure: Measure, hints: tuple[str, ...]) -> float:
    tests = min(1.0, measure.test_lines_added / TEST_LINES_SATURATION)
    promised = min(1.0, len(hints) / HINTS_SATURATION)
    score = CORE_WEIGHT * measure.core_share + TESTS_WEIGHT * tests + HINTS_WEIGHT * promised
    return round(score, 4)


def auto_accept_reason(config: MiningConfig, core_share: float) -> str | None:
    """Why the repository's rule accepts a surviving PR without a curator, or None."""
    minimum = config.auto_accept_min_core_share
    if minimum is None or core_share < minimum:
        return None
    return f"auto-accepted: core share {core_share:.2f} ≥ {minimum:.2f}"
