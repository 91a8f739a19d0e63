"""Measuring, filtering and ranking one PR under a repository's settings."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from pr_miner.config import MiningConfig
from pr_miner.selection.filters import active_filters
from pr_miner.selection.judge import judge
from pr_miner.selection.measure import measure
from pr_miner.selection.ranking import auto_accept_reason, promise_hints, rank_score
from pr_miner.selection.reverts import RevertIndex
from pr_miner.types import FileChange, FilterName, HistoryEntry, MergedPR, PRRef, Verdict
from task_registry.types import DescriptionSource, PRKind

WHEN = datetime(2025, 5, 1, tzinfo=UTC)
MEGATRON = MiningConfig(
    exclude_globs=("**/*.lock", "tests/functional_tests/**/golden_values*.json"),
    test_globs=("tests/**", "**/test_*.py", "**/*_test.py"),
    core_paths=("megatron/core/", "megatron/training/"),
)


def pr(title: str = "Add a feature", body: str = "", number: int = 1) -> MergedPR:
    return MergedPR(
        PRRef(PRKind.github, number), title, body, DescriptionSource.commit, WHEN, f"{number:040x}"
    )


def change(path: str, added: int, deleted: int = 0, *, binary: bool = False) -> FileChange:
    return FileChange(path, added, deleted, binary=binary)


def verdict_of(
    files: list[FileChange],
    config: MiningConfig | None = None,
    history: list[HistoryEntry] | None = None,
) -> Verdict:
    return judge(pr(), files, config or MiningConfig(), RevertIndex(history or [])).verdict


def test_a_large_pr_with_tests_and_code_passes() -> None:
    assert verdict_of([change("pkg/core.py", 900), change("tests/test_core.py", 100)]).passed


def test_changed_lines_count_additions_and_deletions_against_the_threshold() -> None:
    just = [change("pkg/core.py", 450, 450), change("tests/test_core.py", 100)]
    below = [change("pkg/core.py", 450, 449), change("tests/test_core.py", 100)]
    assert verdict_of(just).passed
    failed = verdict_of(below)
    assert failed.failed_filter is FilterName.size
    assert failed.reason == "999 changed lines < 1,000"


def test_binary_files_count_no_lines() -> None:
    files = [
        change("pkg/model.bin", 5000, 0, binary=True),
        change("pkg/a.py", 50),
        change("tests/test_a.py", 10),
    ]
    assert verdict_of(files).failed_filter is FilterName.size


def test_excluded_files_are_dropped_before_counting_and_named_in_the_reason() -> None:
    files = [
        change("uv.lock", 4000),
        change("megatron/core/a.py", 100),
        change("tests/test_a.py", 10),
    ]
    verdict = verdict_of(files, MEGATRON)
    assert verdict.failed_filter is FilterName.size
    assert verdict.reason == "110 changed lines < 1,000 (4,000 more in excluded files)"
    assert verdict_of(files).passed  # without the exclude list the lock file counts


def test_golden_values_only_pr_is_too_small_once_excluded_and_codeless_otherwise() -> None:
    golden = [change("tests/functional_tests/gpt/golden_values_dev.json", 5000)]
    assert verdict_of(golden, MEGATRON).failed_filter is FilterName.size
    assert verdict_of(golden).failed_filter is FilterName.changes_code


def test_a_pr_must_add_lines_to_a_test_file() -> None:
    deletes_tests = [change("pkg/a.py", 1200), change("tests/test_a.py", 0, 50)]
    assert verdict_of(deletes_tests).failed_filter is FilterName.adds_tests
    no_tests = [change("pkg/a.py", 1200)]
    assert verdict_of(no_tests).reason == "adds no lines to a test file"


def test_test_files_are_found_by_the_repository_globs() -> None:
    files = [change("pkg/a.py", 1200), change("pkg/check_a.py", 50)]
    assert verdict_of(files).failed_filter is FilterName.adds_tests
    custom = MiningConfig(test_globs=("**/check_*.py",))
    assert verdict_of(files, custom).passed


def test_tests_only_and_non_python_prs_do_not_change_code() -> None:
    tests_only = [change("tests/test_a.py", 1500)]
    config_only = [change("configs/model.yaml", 1500), change("tests/test_a.py", 10)]
    assert verdict_of(tests_only).failed_filter is FilterName.changes_code
    assert verdict_of(config_only).failed_filter is FilterName.changes_code


def test_docs_and_ci_only_changes_are_rejected_unless_switched_off() -> None:
    files = [
        change(".github/scripts/report.py", 700),
        change("docs/conf.py", 400),
        change("tests/test_ci.py", 10),
    ]
    assert verdict_of(files).failed_filter is FilterName.docs_ci_only
    assert verdict_of(files, MiningConfig(reject_docs_ci_only=False)).passed
    with_code = [*files, change("pkg/a.py", 1)]
    assert verdict_of(with_code).passed


def test_max_files_and_required_paths_filter_only_when_configured() -> None:
    files = [change(f"pkg/m{i}.py", 100) for i in range(12)] + [change("tests/test_m.py", 10)]
    assert verdict_of(files).passed
    assert verdict_of(files, MiningConfig(max_files=10)).reason == "13 files > 10"
    verdict = verdict_of(files, MiningConfig(require_paths=("megatron/core/",)))
    assert (verdict.failed_filter, verdict.reason) == (
        FilterName.paths,
        "touches none of megatron/core/",
    )
    assert verdict_of(files, MiningConfig(require_paths=("pkg/",))).passed


def test_filters_run_in_order_and_the_first_failure_is_recorded() -> None:
    # Small, without tests, without code: every early filter fails; size is recorded.
    assert verdict_of([change("docs/a.md", 3)]).failed_filter is FilterName.size
    names = [f.name for f in active_filters(MiningConfig(max_files=5, require_paths=("a/",)))]
    assert names == [
        FilterName.size,
        FilterName.adds_tests,
        FilterName.changes_code,
        FilterName.not_reverted,
        FilterName.docs_ci_only,
        FilterName.max_files,
        FilterName.paths,
    ]


def test_a_reverted_pr_fails_with_the_revert_named() -> None:
    files = [change("pkg/a.py", 1200), change("tests/test_a.py", 10)]
    history = [
        HistoryEntry(
            WHEN, "Add a feature (#1)", "Add a feature", "", f"{1:040x}", PRRef(PRKind.github, 1)
        ),
        HistoryEntry(
            WHEN.replace(day=2),
            'Revert "Add a feature (#1)" (#2)',
            'Revert "Add a feature (#1)"',
            "",
            "f" * 40,
            PRRef(PRKind.github, 2),
        ),
    ]
    verdict = verdict_of(files, history=history)
    assert verdict.failed_filter is FilterName.not_reverted
    assert verdict.reason == "reverted by ffffffffffff 'Revert \"Add a feature (#1)\" (#2)'"


def test_core_share_counts_lines_under_core_paths_against_all_counted_lines() -> None:
    files = [
        change("megatron/core/a.py", 600),
        change("megatron/core/kernels/b.cu", 100),
        change("examples/run.py", 200),
        change("tests/unit_tests/test_a.py", 100),
        change("uv.lock", 10_000),
    ]
    counts = measure(files, MEGATRON)
    assert (counts.core_lines, counts.counted_lines, counts.code_lines) == (700, 1000, 800)
    assert counts.core_share == pytest.approx(0.7)
    assert counts.test_lines_added == 100


def test_without_core_paths_all_non_test_code_is_core() -> None:
    files = [change("pkg/a.py", 600), change("README.md", 300), change("tests/test_a.py", 100)]
    assert measure(files, MiningConfig()).core_share == pytest.approx(0.6)


def test_promise_hints_read_resource_state_and_mode_words() -> None:
    text = (
        "Reduces peak memory and all-gather traffic; the cache is reset; works under CUDA graphs."
    )
    assert promise_hints(text) == ("resource.memory", "resource.traffic", "state", "mode")
    assert promise_hints("Rename a helper") == ()
    assert promise_hints("memorandum about resetting") == ()  # whole words only


def test_rank_prefers_core_then_tests_then_promises() -> None:
    core = measure([change("pkg/a.py", 900), change("tests/test_a.py", 100)], MiningConfig())
    examples = measure(
        [change("examples/a.py", 900), change("tests/test_a.py", 100)],
        MiningConfig(core_paths=("pkg/",)),
    )
    assert rank_score(core, ()) > rank_score(examples, ())
    assert rank_score(core, ("state",)) > rank_score(core, ())
    assert 0.0 <= rank_score(core, ("state", "mode", "resource.memory", "numeric")) <= 1.0


def test_rejected_prs_are_not_ranked() -> None:
    judged = judge(
        pr(body="peak memory"), [change("pkg/a.py", 10)], MiningConfig(), RevertIndex([])
    )
    assert (judged.rank_score, judged.hints) == (0.0, ())
    assert judged.core_share == 1.0


def test_auto_accept_needs_a_rule_and_enough_core_share() -> None:
    assert auto_accept_reason(MiningConfig(), 1.0) is None
    rule = MiningConfig(auto_accept_min_core_share=0.5)
    assert auto_accept_reason(rule, 0.49) is None
    assert auto_accept_reason(rule, 0.5) == "auto-accepted: core share 0.50 ≥ 0.50"


def test_a_bad_glob_in_the_config_is_a_validation_error() -> None:
    with pytest.raises(ValidationError, match="empty glob"):
        MiningConfig(exclude_globs=("",))
