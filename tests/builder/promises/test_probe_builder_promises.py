"""Promise extraction: boilerplate stripped, categories and quantities found by rule."""

from __future__ import annotations

import itertools

import pytest

from probe_builder.material.description import clean_description, clean_title, description_sentences
from probe_builder.promises.extract import ExtractedPromise, extract_promises, ruled_sentences
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


@pytest.mark.parametrize(
    ("title", "expected"),
    [
        ("Add a CUDA graph scope option for MoE layers", PromiseCategory.mode),
        ("Enable KV caching for hybrid models", PromiseCategory.state),
        ("Overlap param gather with the optimizer step", PromiseCategory.time),
        ("Batch invariance for the sampler", PromiseCategory.numeric),
        ("Fix grad norm undercounting with EP and TP", PromiseCategory.numeric),
        ("Fix async save and resume of distributed checkpoints", PromiseCategory.state),
        ("Implement new optimizer checkpoint formats", PromiseCategory.state),
        ("Weight synchronization between trainer and rollout", PromiseCategory.state),
        ("[Perf] Tune the fused MoE kernel configs", PromiseCategory.time),
    ],
)
def test_a_title_alone_names_its_category_in_its_own_jargon(title, expected):
    assert [p.category for p in extract_promises(title, "")] == [expected]


@pytest.mark.parametrize(
    "sentence",
    [
        "The gather step has no communication overhead.",
        "Weight updates are CUDA IPC-based.",
        "It avoids gathering all data to one rank.",
    ],
)
def test_traffic_stated_without_the_word_traffic(sentence):
    assert PromiseCategory.traffic in {p.category for p in extract_promises("x", sentence)}


def test_a_perf_tag_is_a_time_promise_unless_the_time_or_memory_saved_is_named():
    assert [p.category for p in extract_promises("[Perf] Rework the scheduler", "")] == [
        PromiseCategory.time
    ]
    tagged_memory = extract_promises("[Perf] Rework the scheduler", "Cut peak memory by 2 GB.")
    assert [p.category for p in tagged_memory] == [
        PromiseCategory.functional,
        PromiseCategory.memory,
    ]
    # fewer copies are how the scheduler gets faster: the tag still promises time
    tagged_traffic = extract_promises("[Perf] Rework the scheduler", "Avoid redundant copies.")
    assert [p.category for p in tagged_traffic] == [
        PromiseCategory.time,
        PromiseCategory.traffic,
    ]


@pytest.mark.parametrize(
    ("title", "time"),
    [
        ("[perf] feat: speed up the rollout loop", True),
        # the tag names the module of profilers and metrics: measuring promises no speed
        ("[perf] fix: fix npu profiler and add mstx UT", False),
        ("[perf] feat: log step metrics to wandb", False),
    ],
)
def test_a_perf_tag_on_a_title_about_measuring_promises_no_time(title, time):
    found = {p.category for p in extract_promises(title, "")}
    assert (PromiseCategory.time in found) is time


@pytest.mark.parametrize(
    "sentence",
    [
        "Add tests and show that the loss matches the reference.",
        "Run existing unit test suites.",
        "Add mathematical formulations to the docs.",
        "Rename internal helpers for clarity.",
        "Updated documentation with examples of the new option.",
        "VLLM_USE_V1=1 python bench.py --model m --speedup",
        "Add a small example to demonstrate the new loop.",
        "Fix",
        "Removed `stale_` prefix",  # a name's prefix or suffix: a rename
        "Drop the _v2 suffix from the loader names.",
    ],
)
def test_sentences_about_tests_docs_renames_and_commands_are_not_promises(sentence):
    assert extract_promises("x", sentence)[1:] == []


def test_a_prefix_cache_is_a_feature_not_a_renamed_prefix():
    assert [p.category for p in extract_promises("x", "Removed prefix caching")[1:]] == [
        PromiseCategory.state
    ]


def test_what_a_test_section_reports_is_not_a_promise():
    body = "## Purpose\nCut peak memory of the loss.\n## Test Result\nThroughput is 2x faster."
    assert [p.category for p in extract_promises("x", body)[1:]] == [PromiseCategory.memory]


@pytest.mark.parametrize(
    ("body", "sections"),
    [
        # a section's label before a colon on its prose's first line is its heading
        (
            "Purpose: Cut peak memory of the loss.\nTest Plan: Throughput is 2x faster.",
            {"Cut peak memory of the loss.": "purpose", "Throughput is 2x faster.": "test plan"},
        ),
        ("**Test Result:** Throughput is 2x faster.", {"Throughput is 2x faster.": "test result"}),
        # a colon after other words is prose
        ("Memory: the peak of the loss is cut.", {"Memory: the peak of the loss is cut.": ""}),
    ],
)
def test_a_section_label_inline_with_its_prose_opens_that_section(body, sections):
    sentences = description_sentences("x", body)[1:]
    assert {s.text: s.section for s in sentences if s.text.endswith(".")} == sections


def test_what_an_inline_test_plan_reports_is_not_a_promise():
    body = "Purpose: Cut peak memory of the loss.\nTest Plan: Throughput is 2x faster."
    assert [p.category for p in extract_promises("x", body)[1:]] == [PromiseCategory.memory]


@pytest.mark.parametrize(
    "heading",
    [
        "### ✅ Testing (2 files, 530 lines)",
        "### New tests added",
        "**Test coverage**",
        "### Problem Statement",
        "### ❌ Before (removed)",
        "### Root cause",
    ],
)
def test_what_a_test_or_problem_section_lists_is_not_a_promise(heading):
    # Its bullets say how the PR was tested, or what was wrong before it.
    body = f"{heading}\n- Integration tests with the training loop\n- Training collapse at scale\n"
    assert extract_promises("x", body)[1:] == []


@pytest.mark.parametrize("heading", ["### ✨ Solution (3 files)", "### Key changes"])
def test_the_same_bullets_under_a_heading_of_changes_are_promises(heading):
    body = f"{heading}\n- The loss is now averaged over the data-parallel group, not summed\n"
    assert [p.category for p in extract_promises("x", body)[1:]] == [PromiseCategory.numeric]


def test_one_behaviour_restated_in_several_sentences_is_one_promise():
    body = (
        "This change reduces the peak memory of the logits.\n\n"
        "With it the peak memory of the logits is reduced by half."
    )
    memory = [p for p in extract_promises("x", body) if p.category is PromiseCategory.memory]
    assert len(memory) == 1


def _all_pairs(promises: list[ExtractedPromise]) -> list[ExtractedPromise]:
    """The merge as the rule states it: each promise, longest first, against every kept one."""
    from probe_builder.promises.extract import _Worded

    kept: list[_Worded] = []
    for worded in sorted(map(_Worded.of, promises), key=lambda w: -len(w.words)):
        if not any(worded.restates(k) for k in kept):
            kept.append(worded)
    order = list(PromiseCategory)
    return sorted((w.promise for w in kept), key=lambda p: (p.position, order.index(p.category)))


def test_the_indexed_merge_keeps_what_comparing_every_pair_keeps():
    import random

    from probe_builder.promises.extract import merge_restatements

    draw = random.Random(7)
    words = ["cache", "caches", "memory", "peak", "logits", "reduce", "reduced", "kernel", "graph"]
    words += ["buffer", "offload", "weights", "optimizer", "states", "activation", "chunks"]
    for _ in range(600):
        promises = [
            ExtractedPromise(
                category=draw.choice([PromiseCategory.memory, PromiseCategory.time]),
                quote=" ".join(draw.sample(words, k=draw.randint(1, 14))),
                position=draw.randint(0, 4),
            )
            for _ in range(draw.randint(1, 12))
        ]
        assert merge_restatements(promises) == _all_pairs(promises)


def test_a_sentence_sharing_exactly_the_share_that_restates_is_merged_whatever_it_shares():
    from probe_builder.promises.extract import RESTATEMENT, merge_restatements

    # ten words, seven (RESTATEMENT of them) shared with a longer sentence: its three rarest
    # words are its own, so only its fourth rarest tells which sentence it restates
    assert RESTATEMENT == 0.7
    shared, own, longer = (
        ["bcd", "bcf", "bcg", "bch", "bcj", "bck", "bcl"],
        ["zzb", "zzc", "zzd"],
        ["yyb", "yyc", "yyd", "yyf"],
    )
    kept = ExtractedPromise(
        category=PromiseCategory.memory, quote=" ".join(shared + longer), position=1
    )
    restating = ExtractedPromise(
        category=PromiseCategory.memory, quote=" ".join(own + shared), position=2
    )
    assert merge_restatements([kept, restating]) == [kept]


def test_a_description_of_thousands_of_sentences_is_merged_without_comparing_every_pair(
    monkeypatch,
):
    from probe_builder.promises import extract

    compared = 0
    restates = extract._Worded.restates

    def counted(self, other):
        nonlocal compared
        compared += 1
        return restates(self, other)

    monkeypatch.setattr(extract._Worded, "restates", counted)
    # 2,000 memory bullets (a release's notes), each on its own parts: none restates another
    names = ["".join(letters) for letters in itertools.product("bcdfghjklmnpqrstvwxz", repeat=3)]
    parts = [" ".join(names[4 * i : 4 * i + 4]) for i in range(2000)]
    body = "\n".join(f"- Reduce the peak memory of {part}" for part in parts)
    memory = [p for p in extract_promises("x", body) if p.category is PromiseCategory.memory]
    assert len(memory) == 2000
    assert compared < 2 * len(memory)  # every pair would be 1,999,000


def test_a_mode_named_in_passing_is_not_a_mode_promise():
    body = "The estimate is taken before the CUDA graphs are captured."
    assert PromiseCategory.mode not in {p.category for p in extract_promises("x", body)}
    body = "The decode path now works under CUDA graphs."
    assert PromiseCategory.mode in {p.category for p in extract_promises("x", body)}


def test_each_bullet_of_a_bold_headed_section_is_a_promise():
    body = (
        "**New components**\n"
        "- `Planner`: schedules requests by priority\n"
        "- A custom `RewardManager` that scores whole conversations\n"
    )
    sentences = description_sentences("x", body)
    assert [(s.section, s.listed) for s in sentences[2:]] == [("new components", True)] * 2
    assert [p.category for p in extract_promises("x", body)[1:]] == [PromiseCategory.functional] * 2


@pytest.mark.parametrize(
    "sentence",
    [
        "A new `--workers` arg sets how many servers run.",
        "By default, the budget is None.",
        "It now works with multi-node setups.",
    ],
)
def test_claims_without_a_leading_verb_are_functional_promises(sentence):
    assert [p.category for p in extract_promises("x", sentence)[1:]] == [PromiseCategory.functional]


def test_a_models_promises_join_the_rules_beside_them_without_restating_them():
    from probe_builder.promises.extract import with_proposed

    title = "Prefix cache for rollouts"
    body = "The prefix cache is reset on weight updates. Peak memory drops by 30%."
    found = [
        ExtractedPromise(
            category=PromiseCategory.state,
            quote="The prefix cache is reset on weight updates.",
            position=1,
        )
    ]
    proposed = [
        ExtractedPromise(
            category=PromiseCategory.state, quote="prefix cache is reset on weight updates"
        ),
        ExtractedPromise(category=PromiseCategory.memory, quote="Peak memory drops by 30%."),
    ]
    merged = with_proposed(found, proposed, title, body)
    assert [(p.category, p.position) for p in merged] == [
        (PromiseCategory.state, 1),
        (PromiseCategory.memory, 2),
    ]
    assert merged[1].quantity == "30%"
    assert with_proposed(found, [], title, body) == tuple(found)


def _body_categories(body: str) -> list[PromiseCategory]:
    return [p.category for p in extract_promises("x", body)[1:]]


def test_an_account_of_the_old_code_is_not_a_promise_until_it_turns_to_the_change():
    body = (
        "Currently the planner frees blocks late.\n\n"
        "This leads to an OOM on long prompts and the memory footprint grows.\n\n"
        "This PR frees blocks as soon as the window moves, reducing peak memory."
    )
    promises = extract_promises("x", body)[1:]
    assert [p.category for p in promises] == [PromiseCategory.memory]
    assert promises[0].quote.startswith("This PR frees blocks")
    # the account ends at a change verb too, and at a new section
    assert _body_categories(
        "Previously the cache leaked memory.\n\nFix the leak by freeing the cache on reset, cutting memory usage."
    ) == [PromiseCategory.memory, PromiseCategory.state]
    assert _body_categories("Currently it is slow.\n## Change\nCut peak memory by half.") == [
        PromiseCategory.memory
    ]


def test_an_error_that_the_account_reports_stays_a_promise():
    body = "Currently, saving a checkpoint right after validation raises an error when resumed."
    assert PromiseCategory.state in _body_categories(body)


@pytest.mark.parametrize(
    "sentence",
    [
        "Throughput: 43.10 requests/s, 1200.5 total tokens/s",
        "with the new sampler   Avg latency: 3.8247209864 seconds",
        "bs= 256 | orig=4.10ms vec=0.30ms speedup=13.6x",
    ],
)
def test_a_benchmark_readout_is_not_a_promise(sentence):
    assert _body_categories(sentence) == []


@pytest.mark.parametrize(
    "sentence",
    [
        "The average load duration was reduced from 3.3s to 1.3s.",
        "Output (2% e2e latency reduction): Avg latency: 2.31 seconds",
    ],
)
def test_a_measured_gain_is_a_time_promise_even_with_numbers(sentence):
    assert PromiseCategory.time in _body_categories(sentence)


def test_a_collectives_name_is_not_the_verb_reduce():
    assert _body_categories("Add a fused reduce-scatter + norm + all-gather kernel.") == [
        PromiseCategory.time
    ]
    assert _body_categories("Fuse the per-group AlltoAll calls into a single one.") == [
        PromiseCategory.traffic
    ]
    # a collective fused into the op after it is one launch fewer: time
    assert _body_categories("Fuse the closing all-gather into the output projection.") == [
        PromiseCategory.time
    ]
    assert PromiseCategory.time not in _body_categories(
        "It reduces the memory required for the loss calculation."
    )


@pytest.mark.parametrize(
    ("sentence", "time"),
    [
        ("The performance is usually better than the FP8 KV path with bf16.", True),
        ("In terms of runtime, the performance is comparable to the original method.", True),
        ("Performance was measured on one node with the default settings.", False),
        ("The performance of the old path is unchanged.", False),
    ],
)
def test_performance_said_better_after_the_word_is_a_time_promise(sentence, time):
    assert (PromiseCategory.time in _body_categories(sentence)) is time


C = PromiseCategory


# (title, category, whether the title promises it): one row per cue, with a near miss beside it
TITLE_CUES = [
    # "perf" for "performance", a title tag ending in Perf, and a title naming the fusion done
    ("GDP perf optimizations", C.time, True),
    ("[GLM5.2 Perf] Replace MoE all-reduce", C.time, True),
    ("Fused dLN + add in backwards pass", C.time, True),
    ("Fused dropout and residual add for the MLP", C.time, True),
    ("Add perf counters to the scheduler log", C.time, False),
    ("Fused MoE: support bias in the router", C.time, False),
    # memory set aside beyond what is needed, fixed
    ("Fix over provisioning of Mamba state memory", C.memory, True),
    ("Avoid over-allocating the KV pool when max_requests is set", C.memory, True),
    ("Provision Mamba state per request", C.memory, False),
    # values clipped to a bound compute other numbers
    ("QK logits clipping (non-split version)", C.numeric, True),
    ("Clip the gradients before the optimizer step", C.numeric, True),
    ("Add a clipboard helper to the CLI", C.numeric, False),
    # the switch between training and inference keeps state
    ("RL: fix training <-> inference transition", C.state, True),
    ("RL: fix training script logging", C.state, False),
    # a title's jargon for a speed feature: an optimized part, a prefetch
    ("Inference optimized MoE layers", C.time, True),
    ("Add one-block-ahead weight prefetch for grouped experts", C.time, True),
    ("Memory-optimized attention for long prompts", C.time, False),
]


@pytest.mark.parametrize(("title", "category", "found"), TITLE_CUES)
def test_a_title_carries_the_category_its_cues_say(title, category, found):
    assert (category in {p.category for p in extract_promises(title, "")}) is found


@pytest.mark.parametrize(
    "title",
    [
        "test: enable NVTE_CUTEDSL_FUSED_GROUPED_MLP via pytest fixture",
        "test(determinism): add determinism tests",
        "[test] cover the sampler's edge cases",
    ],
)
def test_a_title_typed_as_tests_promises_nothing(title):
    assert extract_promises(title, "") == []


@pytest.mark.parametrize(
    ("sentence", "promise"),
    [
        ("Fix CI for SFT", False),
        ("Add CI for the SFT trainer with various FSDP configurations", False),
        ("Fix the reward model's crash on empty batches", True),
    ],
)
def test_a_sentence_about_the_ci_promises_nothing(sentence, promise):
    assert bool(_body_categories(sentence)) is promise


# (description sentence, category, whether it promises it): one row per cue or filter, with a
# near miss beside it
SENTENCE_CUES = [
    # work no longer done is time saved; a skipped test is not
    ("For small batches we skip the permutation kernel entirely.", C.time, True),
    ("We were unnecessarily re-creating the sampling metadata on every step.", C.time, True),
    ("Avoid recomputing the logprobs again for each request.", C.time, True),
    ("With no adapters active we get exactly the same speed as the base model.", C.time, True),
    ("Skip the flaky test on CPU runners.", C.time, False),
    # a loop no longer held up by inline work; a result reused; a gain as a share of time
    ("Detokenizing in a worker no longer blocks the event loop for other clients.", C.time, True),
    ("Large prompts block the event loop during rendering.", C.time, False),
    ("Read the cached flag instead of re-calling the parser per token.", C.time, True),
    ("The new gather path gives 15-20% on average for each op.", C.time, True),
    ("The new sampler improves accuracy by 2% on GSM8K.", C.time, False),
    # expensive work gated or skipped (measuring's own work too), a result built only once, a
    # schedule without bubbles; expensive work named in passing is no promise
    ("Hash each image only once per request.", C.time, True),
    ("The expensive statistics are gated behind the debug log level.", C.time, True),
    ("Skip the expensive prompt filter when a sample limit is set.", C.time, True),
    ("Zero-bubble overlap of drafting and verification.", C.time, True),
    ("Log how long the expensive kernels take.", C.time, False),
    ("Severe performance regression when prefix caching is off on ARM hosts.", C.time, True),
    ("A performance regression test now runs nightly.", C.time, False),
    # a memory overhead avoided is a memory promise; one the change adds is its cost
    ("Avoid the large memory overhead of padded logits.", C.memory, True),
    ("This adds a small memory overhead.", C.memory, False),
    # only the data's identifiers kept, or less state held, is memory; keeping one option is not
    ("Keep only the hashes of images in the sender cache.", C.memory, True),
    ("Lower the amount of state each worker keeps between steps.", C.memory, True),
    ("Keep only one backend enabled by default.", C.memory, False),
    # a reduction deferred to be done once; data quantised before it is sent
    ("Defer the data-parallel gradient reduction to the last microbatch.", C.traffic, True),
    ("Quantize the activations before the all-to-all dispatch.", C.traffic, True),
    ("Delay the first scheduler step until the model is loaded.", C.traffic, False),
    ("Delays in startup reduce throughput.", C.traffic, False),
    # memory held on to, leaked, released or over its peak
    ("Fix a memory-retention regression in the prompt cache.", C.memory, True),
    ("Fix workspace resize leaking reserved GPU memory.", C.memory, True),
    ("Release transient Python and accelerator allocator memory before wake.", C.memory, True),
    ("The default preserves existing peak VRAM.", C.memory, True),
    # CUDA graphs by their short name; a numerical issue fixed beside an overlap named
    ("Support CGs with context parallelism in training.", C.mode, True),
    ("CG capture now works with decode batches too.", C.mode, True),
    ("Fix a numerical issue in the fp8 all-gather when overlap is off.", C.numeric, True),
    ("Fix a slow all-gather when overlap is off.", C.numeric, False),
    # the same data read again from device memory is traffic cut, not state
    ("Avoid redundant global-memory loads in the decode kernel.", C.traffic, True),
    ("Repeated HBM reads of each KV block are removed.", C.traffic, True),
    ("The model weights are reloaded into HBM after wake.", C.traffic, False),
    # storage or buffers given back, the release named before or after them
    ("Free the sharded parameter storage once the module is gone.", C.memory, True),
    ("Snapshot buffers are freed after the restore completes.", C.memory, True),
    ("The storage backend is released under the Apache license.", C.memory, False),
    # an OOM fixed is a memory promise even when met while profiling; a leak debugger is not
    ("Fix DeepSeek V3.2 OOM during CG memory profiling", C.memory, True),
    ("Add memory snapshot visualization to debug GPU memory leaks.", C.memory, False),
    # memory a kernel reads through is speed, not memory held, unless a footprint is named
    ("Reduced the number of global memory instructions, improving L2 use.", C.memory, False),
    ("Reduced global memory usage of the sampler by half.", C.memory, True),
    # work handed to a thread pool is time, not memory offloaded
    ("Offload derender CPU work to the renderer thread pool.", C.time, True),
    ("Offload derender CPU work to the renderer thread pool.", C.memory, False),
    # ... however far the work is named from the pool, and however the pool is named
    (
        "The sender offloads the tensor extraction and reshape operations to a dedicated "
        "sending thread.",
        C.memory,
        False,
    ),
    ("Offload that work to the renderer's shared thread pool in one hop.", C.time, True),
    ("Offload that work to the renderer's shared thread pool in one hop.", C.memory, False),
    ("Offload the optimizer states to the CPU to save memory.", C.memory, True),
    # overhead lowered is time saved, as overhead reduced is; a lower memory overhead is not
    ("Add batch-parallel n-gram lookup. Up to 8x lower overhead.", C.time, True),
    ("This lowers the memory overhead of the KV cache.", C.time, False),
    # a cache or a step's state that leaks keeps what it should let go: state, not memory
    ("Fix the encoder cache leak of waiting requests in the scheduler.", C.state, True),
    ("This PR closes the inter-step state leak in the sampler.", C.state, True),
    ("Fix the KV cache memory leak on abort.", C.state, False),
    # a state kept as it was, or brought in line, is state; a state only described is not
    ("Preserve the SSM state for padded prompt tails.", C.state, True),
    ("This operation should not modify the matcher state.", C.state, True),
    ("It returned early without synchronizing the cached terminated state.", C.state, True),
    ("The recurrent state remains intact after the draft is rejected.", C.state, True),
    ("Add a state field to the request for logging.", C.state, False),
    # performance improved, however the batch it improves is named
    ("The new row calculation greatly improved bs<32 performance.", C.time, True),
    ("Quick startup performance for large schemas.", C.time, True),
    ("It keeps using quickreduce where performance was measured.", C.time, False),
    ("Offload optimizer states to CPU.", C.memory, True),
    # a time before and after, or cut by seconds; overhead brought down
    ("Cold compilation time from 24s to 16s on the 70B model.", C.time, True),
    ("The rebalance overhead goes from ~80ms down to ~10ms.", C.time, True),
    ("Timeouts range from 5s to 60s depending on the model.", C.time, True),
    ("Compilation time from the cache is logged per model.", C.time, False),
    ("It reduces the CLI start by around 2 seconds.", C.time, True),
    ("It reduces the batch by 2 requests.", C.time, False),
    ("NCCL brings the over head down to 100s of microseconds.", C.time, True),
    # stalls fixed, extra steps skipped, busy loops removed, the most performant backend
    ("This fixes sporadic stalls in the copy thread.", C.time, True),
    ("Skip the extra handshake step on reconnect.", C.time, True),
    ("It removes the need for a busy loop in idle readers.", C.time, True),
    ("The reader runs a busy loop to wait for writes.", C.time, False),
    ("When applicable it is the most performant backend today.", C.time, True),
    # the accelerator is a device, not a speed-up
    ("Release allocator memory on the accelerator before wake.", C.time, False),
    ("This accelerates decoding of long prompts.", C.time, True),
    # the speed of a kernel for a number format is not a promise about the numbers, unless
    # the sentence claims something of the numbers too
    ("Up to 65% faster FP4 quantization kernels.", C.numeric, False),
    ("Up to 65% faster FP4 quantization kernels.", C.time, True),
    ("Faster FP8 quantization kernels that match the reference output.", C.numeric, True),
    # numbers made more accurate, or left as they were
    ("It uses a more accurate top-p condition.", C.numeric, True),
    ("Generated outputs unchanged.", C.numeric, True),
    ("Generated a new output folder.", C.numeric, False),
    # copies avoided, one collective replaced by another, no communication needed
    ("It helps avoid unnecessary gpu memcopies.", C.traffic, True),
    ("No post-copy is needed after the save.", C.traffic, True),
    ("Copy the config into the run folder.", C.traffic, False),
    ("Replace MoE all-reduce with reduce-scatter.", C.traffic, True),
    ("all-gather(2H) + all-reduce(H) -> all-gather(H)", C.traffic, True),
    ("Use a broadcast of the logits instead of an all-gather.", C.traffic, True),
    ("Use an all-reduce instead of a loop over the ranks.", C.traffic, False),
    ("Replace the config loader with a faster parser.", C.traffic, False),
    ("No collective communication is required for the query.", C.traffic, True),
    # what is cleared when a request's life turns, what is cached and what no longer is
    ("Scheduled speculative tokens were not cleared when the request is preempted.", C.state, True),
    ("Blocks are freed after the request is aborted.", C.state, True),
    ("The request is preempted when the pool runs out.", C.state, False),
    ("Avoid caching full prompts in the fallback path.", C.state, True),
    ("Keep caching reusable placeholder sequences.", C.state, True),
    # "torch compile" without the dot
    ("Add torch compile for the vision encoder.", C.mode, True),
    # scaling applied twice, overhead minimized, one collective only, no resending
    ("Fix routed_scaling_factor double mul for MoE models.", C.numeric, True),
    ("The scale is applied twice in the MoE path.", C.numeric, True),
    ("Use a CUDA kernel instead of Triton to minimize CPU overhead.", C.time, True),
    ("Now we only do a final allgather.", C.traffic, True),
    ("Instead of resending full tensors, the trainer sends patches.", C.traffic, True),
    # exact bytes, a model not held in memory, copies cut, a format's memory is not its numbers
    ("Output is byte-identical to the concatenated path.", C.numeric, True),
    ("This prevents holding the entire high precision model in memory.", C.memory, True),
    ("Improve the row swap to copy only valid indices.", C.traffic, True),
    ("Reduce memory of FP8 quantization kernels.", C.numeric, False),
    # "restore" is said of code and behaviour as often as of state; resuming is state
    ("This restores the previous cache boundary.", C.state, False),
    ("Resume training from the last checkpoint after a crash.", C.state, True),
    # accuracy restored and a dtype fixed are numbers; TTFT slowed down is time
    ("GSM8K accuracy restored from 0% to 86%.", C.numeric, True),
    ("Fix the routing bias dtype for per-block FP8 MoE.", C.numeric, True),
    ("The long-prefill threshold slows down TTFT for no benefit.", C.time, True),
    # less data transferred, zero copies, one collective payload; speeded up
    ("This reduces the data transferred for the RoPE layers.", C.traffic, True),
    ("Zero copies: the tensor memory is handed to the transport.", C.traffic, True),
    ("Pack the output and the LSE into a single collective payload.", C.traffic, True),
    ("Pack the output into a single file.", C.traffic, False),
    ("Construction of the constant tensors speeded up 5 times.", C.time, True),
    # load/offload cycles keep state
    ("Support manual control load/offload.", C.state, True),
    # efficiency gained is time unless it is memory's; a sync-free loop; a batch that fits
    ("This PR improves efficiency by introducing two-step reduction.", C.time, True),
    ("This should mean more efficient serialization.", C.time, True),
    ("This makes the optimizer more memory-efficient.", C.time, False),
    ("An efficient bridge between the two model formats.", C.time, False),
    ("The loop is sync-free since the bounds come from the host.", C.time, True),
    ("We are able to fit more items in the batch.", C.memory, True),
    ("The fit of the curve is logged.", C.memory, False),
    # a result cached or reused by later calls
    ("Later requests with the same hash reuse the cached result.", C.state, True),
    ("Regroup the calculation by line and cache results.", C.state, True),
    ("The results are printed at the end.", C.state, False),
    # a state feature the change does not support, or not yet, is no state promise
    ("Prefix caching: not supported yet.", C.state, False),
    ("Resuming from a checkpoint is not yet supported on this backend.", C.state, False),
    ("Prefix caching now works with the sliding window layers.", C.state, True),
    # performing better, a serving rate raised
    ("This should perform better than the older kernel.", C.time, True),
    ("The older kernel performs the all-to-all in two phases.", C.time, False),
    ("The QPS of the flash attention branch can be improved by 15%.", C.time, True),
    ("The QPS limit is read from the config.", C.time, False),
    # checkpointing a model's state, not activation checkpointing
    ("Fix fused MLA and MTP checkpointing for Megatron-FSDP.", C.state, True),
    ("Enable activation checkpointing for the vision tower.", C.state, False),
    # memory freed by name (activations, VRAM, a workspace), blocks left stranded, an
    # allocation not made
    ("Free activations as soon as the recompute finishes.", C.memory, True),
    ("Release the VRAM of sleeping workers.", C.memory, True),
    ("Notify the prefill node so it frees stranded KV blocks.", C.memory, True),
    ("Reuse the existing workspace without an extra allocation.", C.memory, True),
    ("Reuse the existing workspace for the second GEMM.", C.memory, False),
    ("No extra buffer keys are needed for this model.", C.memory, False),
    # data moved through memory or storage, or copied, no more
    ("This removes inefficient data movement between the kernels.", C.traffic, True),
    ("Each rank reads only its shard, avoiding most storage I/O.", C.traffic, True),
    ("Fusing them saves one HBM round trip per layer.", C.traffic, True),
    ("We won't copy the draft ids to the scheduler any more.", C.traffic, True),
    ("Drop the redundant `.clone()` of the loaded tensors.", C.traffic, True),
    ("Copy the config into the worker's namespace.", C.traffic, False),
    # a performance problem fixed or limited, a cost amortised, occupancy raised, the time to
    # compile or start up
    ("Fix the scheduling perf issue with large max_tokens.", C.time, True),
    ("This limits the performance impact of greedy requests.", C.time, True),
    ("Amortize the mask creation over all attention layers.", C.time, True),
    ("Transposing the problem gives higher SM occupancy.", C.time, True),
    ("The flag brings the warm start time of compiled models down.", C.time, True),
    ("Performance issues were reported by users.", C.time, False),
    ("Load the tokenizer at startup.", C.time, False),
    # padding kept out of the numbers; a value divided by a parallel group's size
    ("Zero out the padded token outputs of the quantized GEMM.", C.numeric, True),
    ("Skip the padding tokens in the router's auxiliary loss.", C.numeric, True),
    ("Divide the expert gradients by the expert-parallel size.", C.numeric, True),
    ("Pad the batch to a multiple of the block size.", C.numeric, False),
    ("Divide the work by layer between the two streams.", C.numeric, False),
    # a mode by its compiler's name: a compilation pass, recompilation, CUDA-graphed
    # execution, full-graph capture, AOT or standalone compilation
    ("Add sequence parallelism as a compilation pass.", C.mode, True),
    ("Fix the recompilation issue on TPU.", C.mode, True),
    ("Support the grouped GEMM when it is CUDA graphed.", C.mode, True),
    ("Add decode full-graph support to the MLA backend.", C.mode, True),
    ("Add an option to use standalone_compile.", C.mode, True),
    ("Add a graph of the pass rates to the dashboard.", C.mode, False),
    # faster convergence is fewer steps, not time
    ("Faster convergence in many scenarios.", C.time, False),
    ("Curriculum sampling can significantly accelerate training convergence.", C.time, False),
    ("With the new schedule the policy converges much faster.", C.time, False),
    ("Faster rollout and faster convergence.", C.time, True),  # the rollout's speed is time
    ("Reduce step time by 30% with convergence unchanged.", C.time, True),
    # driver copies cut, data no longer sent, a collective gated, no retransmission; a cut in
    # the collectives logging needs is traffic, measuring them is not
    ("Cut the cudaMemcpyAsync calls in the sampler by batching the indices.", C.traffic, True),
    ("The engine no longer needs to send the full prompt to each worker.", C.traffic, True),
    ("Gate the all-gather on whether the adapters are sharded.", C.traffic, True),
    ("Weights stay on the device across restarts without retransmission.", C.traffic, True),
    ("Reduce the number of all-reduces this metrics logging needs.", C.traffic, True),
    ("Log the number of all-reduces per step.", C.traffic, False),
    ("The memcpy kernel performance is improved on newer drivers.", C.traffic, False),
    # weights, activations or optimizer state offloaded are memory; a KV-cache tier is a
    # cache's storage
    ("Offload the optimizer state to the CPU between steps.", C.memory, True),
    ("Activations are offloaded after the forward pass.", C.memory, True),
    ("Sleep mode offloads the weights, then drops the KV cache.", C.memory, True),
    ("Add a tiered KV cache offloading framework.", C.memory, False),
    # a title's jargon said in a description's prose is said in passing
    ("The scheduler calls the optimized kernel when the batch is full.", C.time, False),
    # checkpoints supported or managed: state kept for the next run; activation checkpointing
    # recomputes and keeps nothing
    ("Add distributed checkpoint support for the new optimizer.", C.state, True),
    ("Introduce a checkpoint manager for sharded workers.", C.state, True),
    # what a checkpoint restores is state, as what it saves or loads is
    ("Fix how the sharded checkpoint's step counter is restored.", C.state, True),
    ("Restore the old default after the checkpoint refactor.", C.state, False),
    ("Add selective activation checkpointing to the decoder.", C.state, False),
    # a cache of computed results, and what keys it
    ("Enable the encoder cache for the vision tower.", C.state, True),
    ("Include the media loader options in the cache key.", C.state, True),
    # an allocation not made, in either order; an intermediate never built
    ("The draft layers do not allocate their own buffers any more.", C.memory, True),
    ("Compute the loss without materializing the full logits.", C.memory, True),
    ("Materialize the config on first use.", C.memory, False),
    ("The offloading connector now reports each finished job.", C.memory, False),
    ("Offload the last block to the CPU store when a request finishes.", C.memory, False),
    # a device-host synchronisation cut reads fewer values back: traffic, and time as well
    ("Read the lengths from the host copy to remove a GPU->CPU sync per step.", C.traffic, True),
    ("Read the lengths from the host copy to remove a GPU->CPU sync per step.", C.time, True),
    ("The sampler needs no synchronization between the CPU and GPU.", C.traffic, True),
    ("Add a CPU/GPU sync before the timer stops.", C.traffic, False),
    ("Synchronization between the trainer and the rollout workers is retried.", C.traffic, False),
    # what a run carries between steps, what two threads race on, a session kept on a server
    ("Carry the dataloader state over to the next epoch.", C.state, True),
    ("Fix a data race between the prefetch thread and the writer.", C.state, True),
    ("Route each conversation to a sticky worker.", C.state, True),
    ("The optimizer now supports a larger learning rate.", C.state, False),
    ("A race to the first token is run for each request.", C.state, False),
]


@pytest.mark.parametrize(("sentence", "category", "found"), SENTENCE_CUES)
def test_a_sentence_carries_the_category_its_cues_say(sentence, category, found):
    assert (category in _body_categories(sentence)) is found


def test_time_cut_is_a_time_promise_but_time_in_passing_is_not():
    assert PromiseCategory.time in _body_categories("Improvements on graph capture time.")
    assert PromiseCategory.time not in _body_categories(
        "It lowers the retry limit the first time a request fails."
    )


def test_a_compile_tag_or_a_cudagraph_identifier_is_a_mode_promise():
    assert [p.category for p in extract_promises("[torch.compile] Unwrap the moe op", "")] == [
        PromiseCategory.mode
    ]
    assert [p.category for p in extract_promises("add `_cudagraph_support` for mamba", "")] == [
        PromiseCategory.mode
    ]


def test_a_title_promises_its_code_clauses_beside_a_docs_clause():
    title = "[doc] fix: improve docs clarity, fix the parser and cut peak memory"
    promises = extract_promises(title, "")
    assert [(p.category, p.quote) for p in promises] == [
        (PromiseCategory.memory, "fix the parser, cut peak memory")
    ]


@pytest.mark.parametrize(
    "title",
    [
        "Perf tests",
        "Weekly GPT tests",
        "enforce correct pass thresholds for deterministic and approximate tests",
        "Miscellaneous inference cleanup",
        "limit ruff checks and enable push tests",
        "[Lint] fix: linting errors in all files",
        "Refit miscellaneous",
    ],
)
def test_a_title_about_the_prs_tests_or_tidying_promises_nothing(title):
    assert extract_promises(title, "") == []


def test_a_title_with_a_code_clause_beside_a_tests_clause_promises_the_code():
    title = "Speed up the sampler and add determinism tests"
    assert [p.category for p in extract_promises(title, "")] == [PromiseCategory.time]
    assert [
        p.category for p in extract_promises("Add container class for config dataclasses", "")
    ] == [PromiseCategory.functional]
    assert [p.category for p in extract_promises("Fix the linter's crash on empty files", "")] == [
        PromiseCategory.functional
    ]
    assert [p.category for p in extract_promises("Refit miscellaneous weights in place", "")]
    # a semicolon parts the clauses as a comma does: the code clause still promises
    title = "Skip the all_gather when weights are replicated; rewrite the regression test"
    assert [p.category for p in extract_promises(title, "")] == [PromiseCategory.traffic]


def test_merge_order_notes_and_warning_sections_are_not_promises():
    assert _body_categories("Should be merged after the cache manager change lands.") == []
    assert _body_categories("## Warning\nResuming may lose the in-flight samples on restore.") == []


@pytest.mark.parametrize("heading", ["Next steps", "TODO", "Future work", "Follow-ups", "Roadmap"])
def test_work_left_for_later_prs_is_not_a_promise(heading):
    later = "Cut the decode latency with a fused sampling kernel."
    assert _body_categories(f"## {heading}\n{later}") == []
    # the same sentence under a heading of what this change does promises it
    assert _body_categories(f"## Optimizations\n{later}") == [PromiseCategory.time]


@pytest.mark.parametrize(
    ("body", "promised"),
    [
        ("Fixes #123.", False),
        ("Fixes: #34094", False),
        ("FIX #13058 (*link existing issues this PR will resolve*)", False),
        ("Refactor of #45", False),
        # a reference that goes on to say what the change does promises that
        ("Fixes #40149 by wiring the draft probabilities through the sampler.", True),
        ("FIX #13058 (the crash on empty prompts)", True),
    ],
)
def test_a_line_that_only_links_an_issue_promises_nothing(body, promised):
    assert bool(_body_categories(body)) is promised


def test_the_speed_of_a_state_operation_is_time_and_its_state_is_not_promised():
    assert _body_categories("Speed up the weight sync to the rollout engine by 4x.") == [
        PromiseCategory.time
    ]
    assert _body_categories("Weight sync now resumes after a restart and is 4x faster.") == [
        PromiseCategory.time,
        PromiseCategory.state,
    ]
    assert _body_categories("Add async weight sync to the rollout engine.") == [
        PromiseCategory.state
    ]


def test_an_instruction_to_turn_the_feature_on_is_not_a_promise():
    assert _body_categories("To use the resume option, set the following in your config:") == []


@pytest.mark.parametrize(
    "title",
    [
        "ci: centralize container builds and add cache population workflow",
        "build: Switch the nightly recipe to the new image",
        "Consistent oncall schedule",
        "fully remove legacy tokenizer system",
        # a CI tag after another tag, a title opening with CI, a CI branch's name
        "replay: ci: Bump the base container",
        "CI approve dev",
        "someone/ci/auto reminder bot",
        # a conventional commit scoped to CI, docs or tests
        "fix(ci): keep the merge queue from stalling on stale runs",
        "feat(docs)!: describe the new resume flags",
        "chore(tests): speed up the sharding suite",
    ],
)
def test_ci_build_process_and_legacy_removal_titles_promise_nothing(title):
    assert extract_promises(title, "") == []


@pytest.mark.parametrize(
    "title",
    ["CI-safe checkpoint resume for the data loader", "fix: replay the cached graph per step"],
)
def test_a_title_naming_ci_inside_a_word_or_tagged_otherwise_still_promises(title):
    assert extract_promises(title, "") != []


@pytest.mark.parametrize(
    ("sentence", "category"),
    [
        ("Fix a bug causing more memory than needed to be used by the loader.", "memory"),
        ("Use an iterator so as not to hold all the shards in memory at once.", "memory"),
        ("Cap the workspace memory the sampler needs for large batches.", "memory"),
        ("Support meta device init for the critic.", "memory"),
        ("Fuse the rotary embedding with the cache write.", "time"),
        ("Fuse the bias add into the preceding grouped GEMM.", "time"),
        ("Add a fused norm_quant kernel.", "time"),
        ("Replace the blocking tensor construction with a cached one.", "time"),
        ("Routing decisions are recorded at inference and replayed during the update.", "state"),
        ("The index tensor is built once rather than per forward.", "state"),
        ("Support pausing generation between weight syncs.", "state"),
        ("The trainer can load the adapter and continue training.", "state"),
        ("The runner can run ahead while the GPU finishes the previous step.", "time"),
        ("Support parallel weight load for the critic.", "time"),
        ("Support expert routing replay in the actor.", "state"),
        ("It gives a better decode speed for small batches.", "time"),
        ("Training can continue after an interruption of the trainer.", "state"),
        ("Skip the rollout and reuse previously dumped sequences.", "state"),
        ("Offloaded blocks become loadable as soon as they are stored.", "state"),
    ],
)
def test_cues_found_on_unseen_descriptions(sentence, category):
    wanted = {"memory": PromiseCategory.memory, "time": PromiseCategory.time}.get(
        category, PromiseCategory.state
    )
    assert wanted in _body_categories(sentence)


def test_a_scoped_fix_and_a_model_flops_utilisation_count():
    # a conventional commit scoped to code still promises
    assert extract_promises("fix(trainer): keep the merge queue from stalling", "") != []
    # computing MFU measures time; it promises none
    found = extract_promises("[perf] feat: qwen3 and gemma mfu compute support", "")
    assert PromiseCategory.time not in {p.category for p in found}


def test_a_limit_named_as_a_setting_is_not_memory_capped():
    assert PromiseCategory.memory not in _body_categories(
        "The limit on GPU memory utilization is read from the config."
    )


def test_symmetric_memory_is_a_communication_mechanism_not_a_memory_promise():
    assert PromiseCategory.memory not in _body_categories(
        "Extend NCCL symmetric memory to AllGather and ReduceScatter."
    )
    # nor, named alone, a speed-up: the mechanism is the feature
    for sentence in (
        "Register the reduce-scatter buffers in symmetric memory.",
        "Use a symmetric-memory all-reduce for small inputs.",
    ):
        assert PromiseCategory.time not in _body_categories(sentence)
    # what it is used for still says so
    assert PromiseCategory.time in _body_categories(
        "A symmetric memory all-reduce gives lower latency for small inputs."
    )
    assert PromiseCategory.time not in _body_categories("Save weights with no memory overhead.")


def test_reverts_limits_and_ci_time_are_not_promises():
    assert extract_promises('Revert "Fix stale cache after weight update"', "") == []
    assert PromiseCategory.mode not in _body_categories(
        "The draft model only works with eager mode for now."
    )
    assert PromiseCategory.time not in _body_categories("Also reduce the CI time of the suite.")
    assert PromiseCategory.state not in _body_categories("Cut the CUDA graph replay time.")


@pytest.mark.parametrize(
    "sentence",
    [
        "Every decode step after the warmup only replays the captured CUDA graph.",
        "The buffers stay fixed, so the kernel is safe to replay inside a cudagraph.",
        "Pad the lengths so one graph serves any number of images during replays.",
    ],
)
def test_a_graph_replayed_is_its_mode_not_state_kept_across_calls(sentence):
    assert PromiseCategory.state not in _body_categories(sentence)


@pytest.mark.parametrize(
    "sentence",
    [
        "Latency is slightly higher with the sharded sampler on long prompts.",
        "The decode throughput is somewhat lower than the eager path for now.",
        "The int8 kernels still have performance issues compared with the bf16 throughput.",
        "Throughput is not optimized yet for the new runner; we will improve it later.",
        "We haven't optimized the performance of the new decode path.",
    ],
)
def test_speed_the_change_admits_it_falls_short_of_is_not_a_time_promise(sentence):
    assert PromiseCategory.time not in _body_categories(sentence)


@pytest.mark.parametrize(
    "sentence",
    [
        "The new kernel has lower latency on long prompts.",
        "Fix the higher latency of the sharded sampler on long prompts.",
    ],
)
def test_speed_gained_or_a_shortfall_fixed_still_promises_time(sentence):
    assert PromiseCategory.time in _body_categories(sentence)


def test_a_tested_with_line_reports_how_it_was_tested_not_a_promise():
    assert _body_categories("Tested with a small model at varying GPU memory utilization.") == []


@pytest.mark.parametrize(
    "sentence",
    [
        "This change enables streaming for tool calls.",
        "`abort_all()` method to cancel every running request",
        "Now you can pass any new key on the command line.",
        "Upgraded the engine to version 0.11.",
    ],
)
def test_behaviour_claims_without_a_leading_change_verb_are_functional(sentence):
    assert _body_categories(sentence) == [PromiseCategory.functional]


def test_a_docs_change_told_in_the_first_person_is_not_a_promise():
    assert _body_categories("We add a reminder to the documentation for contributors.") == []


def test_a_resource_the_change_admits_it_spends_is_not_promised():
    assert _body_categories("Enabling this may consume more GPU memory.") == []
    assert _body_categories(
        "Overlap the all-gather with compute to cut step latency, at the cost of extra memory."
    ) == [PromiseCategory.time]
    # the wrong rule, dropping every resource of a sentence with a cost in it, loses this one
    assert _body_categories("Cut peak memory by 30%, at the cost of a slower first step.") == [
        PromiseCategory.memory
    ]


def test_a_sentence_about_tests_keeps_the_change_it_also_names():
    assert _body_categories("This PR adds a fused RMSNorm kernel and updates the docs.") == [
        PromiseCategory.functional
    ]
    assert _body_categories("Add an FP8 KV cache path, and unit tests for it.") != []
    # a sentence of housekeeping alone is still no promise
    assert _body_categories("Add unit tests for the scheduler and the block pool.") == []
    assert _body_categories("Update the docs and the examples.") == []


@pytest.mark.parametrize(
    "title",
    [
        "Refactor the fused ops integration into a mixin",
        "DDP refactoring: Extract the bucket layout into a classmethod",
        "Reduce boilerplate around the storage client checks",
        "Consolidate parser attributes into one class",
        "make the actor config more modular",
    ],
)
def test_a_change_of_the_codes_shape_alone_promises_nothing(title):
    assert extract_promises(title, "") == []


@pytest.mark.parametrize(
    ("title", "category"),
    [
        # a purpose said, or a specific category: a rule dropping every refactor loses these
        ("Refactor the rollout worker to support async generation", PromiseCategory.functional),
        (
            "Refactor the rollout from a single process to one process per GPU",
            PromiseCategory.functional,
        ),
        ("Move the tensor bookkeeping to CPU", PromiseCategory.functional),
        ("Refactor the loss to cut peak memory", PromiseCategory.memory),
        ("Move and register the reward manager", PromiseCategory.functional),
    ],
)
def test_a_restructure_with_a_purpose_still_promises_it(title, category):
    assert [p.category for p in extract_promises(title, "")] == [category]


def test_a_refactor_that_keeps_compatibility_promises_it():
    body = "This refactoring maintains full backward compatibility with the rollout APIs."
    assert _body_categories(body) == [PromiseCategory.functional]


@pytest.mark.parametrize(
    "title",
    [
        "Refresh the GB200 golden values",
        "separate memory tests",
        "Add moe layer perf UT.",
        "Update Docker image version to 26.04-py3",
        "add dockerfile of experimental images",
        "Bump the NCCL pin",
    ],
)
def test_test_maintenance_and_build_image_titles_promise_nothing(title):
    assert extract_promises(title, "") == []


def test_graph_jargon_names_the_cuda_graph_mode():
    assert [p.category for p in extract_promises("Make last_token_logits graphable", "")] == [
        PromiseCategory.mode
    ]


def test_what_a_change_is_only_compatible_with_is_a_limitation():
    body = "The uneven layer split is only compatible with dist_ckpt save and load for now."
    assert PromiseCategory.state not in _body_categories(body)


@pytest.mark.parametrize(
    "title",
    [
        "Fix the loss masking of image tokens in the packed batch",
        "Exclude padding from the loss of the router",
        "Accumulate the main grads in FP32 for the embedding only",
        "Make the param all-gather work under mixed precision",
    ],
)
def test_which_tokens_count_in_the_loss_and_the_precision_sums_run_in_are_numeric(title):
    assert PromiseCategory.numeric in {p.category for p in extract_promises(title, "")}


def test_a_more_compact_serialisation_is_a_traffic_promise():
    categories = {p.category for p in extract_promises("Compact serialization of the events", "")}
    assert PromiseCategory.traffic in categories


def test_questions_lead_ins_and_quoted_log_lines_promise_nothing():
    assert _body_categories("Can we keep the old flag for one more release?") == []
    assert _body_categories("Change details:\n\n- Fix the planner's off-by-one.") == [
        PromiseCategory.functional
    ]
    assert _body_categories("(Triggered internally at ../csrc/fallback.cpp:63.) repeated") == []
    assert _body_categories("Make trivial changes for the new sglang release.") == []


def test_fitting_on_fewer_gpus_is_memory_and_adding_mfu_is_measuring():
    assert _body_categories("Reduce the minimum GPUs to 64 for the 600B model.") == [
        PromiseCategory.memory
    ]
    assert _body_categories("Add MFU computation for the vision tower.") == [
        PromiseCategory.functional
    ]
    # a higher MFU is a speed-up, not a measurement
    assert PromiseCategory.time in _body_categories(
        "Overlap the dispatch with compute, enabling higher MFU on large MoE models."
    )


def test_currently_we_support_lists_what_the_change_does():
    body = "Currently, we support:\n\n- offload the model weights\n- discard the kv cache"
    assert PromiseCategory.memory in _body_categories(body)
    # the old code's account still goes
    assert _body_categories("Currently the weights stay on the GPU and the memory grows.") == []


def test_this_pr_after_a_comma_turns_to_the_change():
    body = (
        "Currently the allocator works on raw pointers.\n\n"
        "Because the allocator is low-level, this PR is also compatible with CUDA graphs."
    )
    assert _body_categories(body) == [PromiseCategory.mode]


def test_serving_latencies_cut_are_time_and_a_discourse_concurrently_is_not():
    assert _body_categories("This cuts median TPOT by 7% on small models.") == [
        PromiseCategory.time
    ]
    assert _body_categories("Concurrently, the scheduler reads the draft tokens.") != [
        PromiseCategory.time
    ]
    assert _body_categories("The copy now runs concurrently with the forward pass.") == [
        PromiseCategory.time
    ]


def test_piecewise_compilation_is_the_compile_mode():
    assert _body_categories("Piece-wise compile now also works with the new backend.") == [
        PromiseCategory.mode
    ]


def test_the_sentences_the_rules_read_are_those_they_extract_from():
    body = (
        "Currently the buffer is copied to the host on every step.\n\n"
        "This PR keeps the buffer on the device, which reduces peak memory by 2 GB.\n\n"
        "## Test\n\nAdded a unit test for the buffer."
    )
    ruled = ruled_sentences("Keep the buffer on the device", body)
    read = {r.sentence.text: (r.candidate, r.categories) for r in ruled}
    assert read["Currently the buffer is copied to the host on every step."] == (False, ())
    assert read["Added a unit test for the buffer."] == (False, ())
    kept = [r for r in ruled if r.candidate]
    extracted = extract_promises("Keep the buffer on the device", body)
    assert {(r.sentence.text, c) for r in kept for c in r.categories} >= {
        (p.quote, p.category) for p in extracted
    }
    assert (
        PromiseCategory.memory
        in read["This PR keeps the buffer on the device, which reduces peak memory by 2 GB."][1]
    )
    assert all(not r.candidate for r in ruled_sentences("docs: fix typos in the README", body))
