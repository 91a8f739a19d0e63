"""Revert detection and follow-ups over mainline history entries."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from pr_miner.selection.reverts import RevertIndex
from pr_miner.types import FollowUpRelation, HistoryEntry, MergedPR, PRRef
from task_registry.types import DescriptionSource, PRKind

T0 = datetime(2025, 3, 1, tzinfo=UTC)


def entry(
    day: int,
    subject: str,
    body: str = "",
    *,
    sha: str | None = None,
    number: int | None = None,
    kind: PRKind = PRKind.github,
    title: str | None = None,
) -> HistoryEntry:
    ref = PRRef(kind, number) if number is not None else None
    if title is None:
        title = (
            subject.rsplit(" (#", 1)[0] if number is not None and kind is PRKind.github else subject
        )
    return HistoryEntry(
        at=T0 + timedelta(days=day),
        subject=subject,
        title=title,
        body=body,
        sha=sha or f"{day:040x}",
        ref=ref,
    )


def pr_of(item: HistoryEntry) -> MergedPR:
    assert item.ref is not None
    return MergedPR(
        ref=item.ref,
        title=item.title,
        body=item.body,
        description_source=DescriptionSource.commit,
        merged_at=item.at,
        merge_sha=item.sha,
    )


def test_revert_by_quoted_subject_marks_the_pr_reverted() -> None:
    feature = entry(1, "Add paged cache (#10)", number=10)
    revert = entry(2, 'Revert "Add paged cache (#10)" (#11)', number=11)
    index = RevertIndex([feature, revert])

    assert index.reverted_by(pr_of(feature)) == revert
    assert index.reverts(pr_of(revert)) == [feature]
    assert index.reverted_by(pr_of(revert)) is None


def test_revert_quoting_the_title_without_its_number_still_matches() -> None:
    feature = entry(1, "Add Agent Compose package (#6100)", number=6100)
    revert = entry(3, 'Revert "Add Agent Compose package" (#6292)', number=6292)
    assert RevertIndex([feature, revert]).reverted_by(pr_of(feature)) == revert


def test_revert_by_sha_in_the_body_matches_abbreviated_shas() -> None:
    feature = entry(1, "Speed up loader (#5)", number=5, sha="abcdef1234" + "0" * 30)
    revert = entry(2, "Undo the loader change", "This reverts commit abcdef1234.", number=None)
    assert RevertIndex([feature, revert]).reverted_by(pr_of(feature)) == revert


def test_github_revert_button_body_names_the_pr_even_under_an_old_repo_name() -> None:
    feature = entry(1, "[reward] fix: reward in validate (#5054)", number=5054)
    revert = entry(
        2,
        'Revert "[reward] fix:  reward in validate" (#5091)',
        "Reverts verl-project/verl#5054",
        number=5091,
    )
    assert RevertIndex([feature, revert]).reverted_by(pr_of(feature)) == revert


def test_a_reverted_revert_restores_the_pr() -> None:
    feature = entry(1, "Add paged cache (#12)", number=12)
    revert = entry(2, 'Revert "Add paged cache (#12)" (#13)', number=13)
    reapply = entry(3, 'Revert "Revert "Add paged cache (#12)" (#13)" (#14)', number=14)
    index = RevertIndex([feature, revert, reapply])

    assert index.reverted_by(pr_of(feature)) is None
    assert index.reverted_by(pr_of(revert)) == reapply
    relations = [(f.relation, f.ref) for f in index.follow_ups(pr_of(feature))]
    assert relations == [
        (FollowUpRelation.revert, PRRef(PRKind.github, 13)),
        (FollowUpRelation.reapply, PRRef(PRKind.github, 14)),
    ]


def test_git_reapply_subject_reverts_the_revert() -> None:
    feature = entry(1, "Support multimodule communication (#2031)", number=2031)
    revert = entry(2, 'Revert "Support multimodule communication (#2031)" (#3068)', number=3068)
    reapply = entry(3, 'Reapply "Support multimodule communication (#2031)" (#3069)', number=3069)
    index = RevertIndex([feature, revert, reapply])
    assert index.reverted_by(pr_of(feature)) is None
    assert index.reverts(pr_of(reapply)) == [revert]


def test_reverted_again_after_a_reapply_is_reverted() -> None:
    feature = entry(1, "Add X (#1)", number=1)
    revert = entry(2, 'Revert "Add X (#1)" (#2)', number=2)
    reapply = entry(3, 'Revert "Revert "Add X (#1)" (#2)" (#3)', number=3)
    again = entry(4, 'Revert "Add X (#1)" (#4)', "This reverts commit " + feature.sha, number=4)  # type: ignore[operator]
    assert RevertIndex([feature, revert, reapply, again]).reverted_by(pr_of(feature)) == again


def test_a_revert_never_reaches_forward_in_time() -> None:
    revert = entry(1, 'Revert "Add Y (#7)" (#8)', number=8)
    feature = entry(2, "Add Y (#7)", number=7)
    assert RevertIndex([feature, revert]).reverted_by(pr_of(feature)) is None


def test_a_revert_resolves_to_the_latest_earlier_change_with_that_subject() -> None:
    first = entry(1, "Update README", sha="1" * 40)
    second = entry(2, "Update README", sha="2" * 40)
    revert = entry(3, 'Revert "Update README"')
    index = RevertIndex([first, second, revert])
    assert index.reverts(
        MergedPR(PRRef(PRKind.github, 99), "", "", DescriptionSource.none, revert.at, revert.sha)
    ) == [second]


def test_later_mentions_are_follow_ups_and_earlier_ones_are_not() -> None:
    before = entry(1, "Prepare for #20 (#19)", number=19)
    feature = entry(2, "Fused engine (#20)", number=20)
    fix = entry(3, "Fix a typo left by #20 (#21)", number=21)
    other_repo = entry(4, "Bump vllm-project/vllm#20 pin (#22)", number=22)
    index = RevertIndex([before, feature, fix, other_repo])

    follow_ups = index.follow_ups(pr_of(feature))
    assert [(f.relation, f.ref) for f in follow_ups] == [
        (FollowUpRelation.mention, PRRef(PRKind.github, 21))
    ]
    assert follow_ups[0].as_record()["number"] == 21


def test_gitlab_mentions_use_the_bang_and_never_collide_with_github_numbers() -> None:
    github_pr = entry(1, "Add thing (#7)", number=7)
    gitlab_mr = entry(2, "Add other thing", number=7, kind=PRKind.gitlab)
    fix = entry(3, "Follow up on !7", number=8, kind=PRKind.gitlab)
    index = RevertIndex([github_pr, gitlab_mr, fix])

    assert index.follow_ups(pr_of(github_pr)) == ()
    assert [f.ref for f in index.follow_ups(pr_of(gitlab_mr))] == [PRRef(PRKind.gitlab, 8)]


def test_entries_given_twice_count_once() -> None:
    feature = entry(1, "Add Z (#3)", number=3)
    revert = entry(2, 'Revert "Add Z (#3)" (#4)', number=4)
    index = RevertIndex([feature, revert, feature, revert])
    assert len(index.follow_ups(pr_of(feature))) == 1
