"""Recognising merged PRs in mainline commit messages, and where their descriptions come from."""

from __future__ import annotations

import pytest

from pr_miner.sources.styles import description_of, recognise
from pr_miner.types import PRRef, PRStyle
from task_registry.types import DescriptionSource, PRKind

# Shapes of real upstream messages (a few lines each, labelled by where the shape comes from).
VERL_SQUASH = """[ckpt] feat: add checkpoint-engine abstraction (#4775)

### What does this PR do?

Add a checkpoint engine abstraction so weights sync between trainer and rollout.
"""
MEGATRON_SQUASH = """Add hidden state mixing to multi-token prediction (#6566)

Signed-off-by: Yaniv Galron <ygalron@example.com>
Co-authored-by: Jared Casper <155158+jaredcasper@users.noreply.github.com>
"""
MEGATRON_GITLAB = """Merge branch 'denliu/fix_moe_dist_opt_grad_scale' into 'main'

Fix dist opt grad scale when TP != expert-TP.

See merge request ADLR/megatron-lm!2564
"""
GITHUB_MERGE = """Merge pull request #1234 from someone/fix-cache

Invalidate the KV cache on reset

The cache survived reset(), so a second run read stale blocks.
"""


def test_squash_merge_keeps_the_body_as_description() -> None:
    found = recognise(VERL_SQUASH)
    assert found is not None
    assert (found.ref, found.style) == (PRRef(PRKind.github, 4775), PRStyle.squash)
    assert found.title == "[ckpt] feat: add checkpoint-engine abstraction"
    assert found.description.startswith("### What does this PR do?")
    assert found.description_source is DescriptionSource.commit


def test_squash_with_only_sign_off_lines_has_no_description() -> None:
    found = recognise(MEGATRON_SQUASH)
    assert found is not None
    assert found.ref == PRRef(PRKind.github, 6566)
    assert found.description == ""
    assert found.description_source is DescriptionSource.none


def test_gitlab_merge_request_keeps_its_kind_and_takes_the_title_from_the_body() -> None:
    found = recognise(MEGATRON_GITLAB)
    assert found is not None
    assert (found.ref, found.style) == (PRRef(PRKind.gitlab, 2564), PRStyle.gitlab)
    assert found.title == "Fix dist opt grad scale when TP != expert-TP."
    assert found.description_source is DescriptionSource.none


def test_github_merge_commit_takes_title_and_description_from_the_body() -> None:
    found = recognise(GITHUB_MERGE)
    assert found is not None
    assert (found.ref, found.style) == (PRRef(PRKind.github, 1234), PRStyle.merge_commit)
    assert found.title == "Invalidate the KV cache on reset"
    assert found.description == "The cache survived reset(), so a second run read stale blocks."


def test_gitlab_request_wins_over_a_github_number_in_the_subject() -> None:
    message = "Port fix from GitHub (#77)\n\nSee merge request ADLR/megatron-lm!900\n"
    found = recognise(message)
    assert found is not None
    assert found.ref == PRRef(PRKind.gitlab, 900)
    assert found.title == "Port fix from GitHub (#77)"


@pytest.mark.parametrize(
    "message",
    [
        "Bump version to 0.2",
        "Fix the thing (see #12 for context)",
        "Merge branch 'main' into feature",
        "Update docs (#12) again",
    ],
)
def test_direct_pushes_are_not_prs(message: str) -> None:
    assert recognise(message) is None


def test_unicode_subjects_are_recognised() -> None:
    found = recognise("Añadir caché ⚡ für Ünïcødé (#15)\n\n内存优化")
    assert found is not None
    assert found.title == "Añadir caché ⚡ für Ünïcødé"
    assert found.description == "内存优化"


def test_description_drops_trailers_but_keeps_prose_that_mentions_them() -> None:
    body = "Fixes the reviewed-by check.\n\nReviewed-by: A <a@x>\nChange-Id: I123\n"
    assert description_of(body) == "Fixes the reviewed-by check."
