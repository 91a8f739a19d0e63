"""Promise extraction: boilerplate stripped, categories and quantities found by rule."""

from __future__ import annotations

import pytest

from probe_builder.material.description import clean_description, clean_title, description_sentences
from probe_builder.promises.extract import extract_promises
from task_registry.types import PromiseCategory

TEMPLATE_BODY = """\
### What does this PR do?

> Add **concise** overview of what this PR aims to achieve or
accomplish. Reference related GitHub issues and PRs that help with the
review.

Cut peak memory of the loss by 40% with chunking. See [the docs](https://example.com/x) and https://example.com/y.

<!-- reviewers: please look at the kernel -->
<img src="https://example.com/chart.png" />

```python
loss = chunked_loss(x, chunk_size=2048)
```

### Checklist Before Starting

- [ ] Search for similar PRs. Paste at least one query link here: ...
- [x] Format the PR title as `[{modules}] {type}: {description}`

| size | before | after |
|------|--------|-------|
| 4K   | 10 GB  | 6 GB  |

### Checklist Before Submitting

> [!IMPORTANT]
> Please check all the following items before requesting a review,
otherwise the reviewer might deprioritize this PR for review.

- [ ] Read the Contribute Guide.

Co-authored-by: someone <a@b.c>
"""


def test_template_code_links_html_checklists_and_tables_are_stripped():
    cleaned = clean_description(TEMPLATE_BODY)
    assert cleaned == "Cut peak memory of the loss by 40% with chunking. See the docs and"
    for gone in (
        "What does this PR do",
        "concise",
        "chunk_size",
        "reviewers",
        "Search for similar",
        "4K",
        "IMPORTANT",
        "Co-authored",
    ):
        assert gone not in cleaned


def test_a_pr_template_yields_only_the_authors_promise():
    promises = extract_promises("[fsdp] perf: chunked loss (#12)", TEMPLATE_BODY)
    assert [(p.category, p.quantity) for p in promises] == [
        (PromiseCategory.functional, None),  # the title, "chunked loss"
        (PromiseCategory.memory, "40%"),
    ]
    assert promises[-1].quote.startswith("Cut peak memory of the loss by 40%")


def test_title_prefixes_and_numbers_are_removed():
    assert (
        clean_title("[BREAKING][megatron, fsdp] feat: dynamic batching (#1617)")
        == "dynamic batching"
    )
    assert clean_title("ADLR/megatron-lm!2524 - Persistent worker") == "Persistent worker"


def test_short_lines_followed_by_a_capital_start_a_new_sentence():
    sentences = description_sentences(
        "t", "This PR implements fused losses. #710\nIt reduces memory to a constant."
    )
    assert [s.text for s in sentences[1:]] == [
        "This PR implements fused losses. #710",
        "It reduces memory to a constant.",
    ]


@pytest.mark.parametrize(
    ("title", "body", "expected"),
    [
        ("Reduce peak memory of the optimizer", "", [PromiseCategory.memory]),
        (
            "Speed up rollout",
            "Achieves up to 2.1x speedup.",
            [PromiseCategory.time, PromiseCategory.time],
        ),
        (
            "Send only changed weights",
            "We significantly reduce redundant data transmission.",
            [PromiseCategory.functional, PromiseCategory.traffic],
        ),
        ("Fix prefix cache reset after abort", "", [PromiseCategory.state]),
        ("Add CUDA graph support for decode", "", [PromiseCategory.mode]),
        (
            "Fix loss scaling",
            "The loss is scaled twice by the number of micro-batches.",
            [PromiseCategory.numeric, PromiseCategory.numeric],
        ),
        ("Add a --use-foo flag", "", [PromiseCategory.functional]),
    ],
)
def test_categories_by_rule(title, body, expected):
    assert [p.category for p in extract_promises(title, body)] == expected


def test_measuring_a_resource_is_not_a_resource_promise():
    promises = extract_promises(
        "add megatron memory log", "Log memory footprints in wandb during running."
    )
    assert {p.category for p in promises} == {PromiseCategory.functional}


def test_a_limitation_is_not_a_mode_promise():
    body = "So `torch.compile` might not be able to be enabled on top of it."
    assert extract_promises("Memory efficient loss", body)[1:] == []


def test_documentation_changes_promise_nothing():
    assert extract_promises("[doc] fix: quickstart faster on zsh", "Reduce peak memory.") == []
    assert extract_promises("Add ProRL to README.md", "It resets the reference policy.") == []


def test_quantities_are_kept_for_resource_promises():
    (promise,) = extract_promises("x", "Reduces peak memory by an order of magnitude.")[1:]
    assert (
        promise.category is PromiseCategory.memory and promise.quantity == "an order of magnitude"
    )
    (promise,) = extract_promises("x", "Rollout is 6.5x faster.")[1:]
    assert promise.quantity == "6.5x"


def test_a_sentence_repeated_in_title_and_body_is_one_promise():
    promises = extract_promises(
        "Make free_cache_engine option workable",
        "Make free_cache_engine option workable in latest vLLM",
    )
    assert len(promises) == 1 and promises[0].position == 1
