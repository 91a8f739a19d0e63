"""Statement rendering, its linter (missing contract symbols) and leak checker."""

from __future__ import annotations

import pytest

from probe_builder.material.contract import extract_contract, sources_of_test_patch
from probe_builder.material.statement import StatementInputs, render_statement
from probe_builder.material.statement_checks import (
    LeakKind,
    check_leaks,
    golden_code_tokens,
    lint_statement,
    python_code_tokens,
)
from probe_builder.promises.extract import extract_promises
from runners.types import Hardware
from tests.probe_builder_support import cache_pr

DESCRIPTION = """\
### What does this PR do?

Add a key-value cache that counts hits, and average gradients over ranks.
Calling `reset()` empties the cache so that later lookups recompute.

### Checklist Before Starting

- [ ] Search for similar PRs.
"""
PROBE = """
from pkg.cache import KVCache


def test_hits_survive_reset_and_recount():
    cache = KVCache(capacity=8)
    cache.lookup("k", compute=len)
    cache.reset()
    assert cache.hits == 0
    assert abs(cache.lookup("k", compute=len) - 1.0) < 0.125
"""


@pytest.fixture
def task(tmp_path):
    pr = cache_pr(tmp_path)
    sources = sources_of_test_patch(pr.split.test_files, head=pr.head_tree)
    contract = extract_contract(
        pr.split.golden_files, base=pr.base_tree, head=pr.head_tree, sources=sources
    )
    promises = extract_promises("[trainer] feat: counting KV cache (#1)", DESCRIPTION)
    inputs = StatementInputs(
        "[trainer] feat: counting KV cache (#1)",
        DESCRIPTION,
        contract,
        promises,
        Hardware(gpus=2, gpu_type="H100"),
    )
    golden = golden_code_tokens(pr.split.golden_files, head=pr.head_tree)
    return pr, contract, render_statement(inputs), golden, sources


def test_rendered_statement_names_every_contract_symbol_and_the_hardware(task):
    _, contract, statement, _, _ = task
    assert statement.startswith("# counting KV cache\n")
    assert "Checklist" not in statement and "What does this PR do" not in statement
    assert "`pkg.cache.KVCache.lookup`" in statement
    assert "`lookup(self, key: str, compute=None)`" in statement
    assert "`average(grads, world_size, *, inplace: bool=False)`" in statement
    assert "State across calls" in statement and "Calling `reset()` empties the cache" in statement
    assert "Graded on 2 GPUs (H100) on one node." in statement
    assert lint_statement(statement, contract).ok


def test_linter_fails_a_statement_missing_a_symbol_and_says_which(task):
    _, contract, statement, _, _ = task
    broken = statement.replace("`pkg.grads.average`", "`pkg.grads`").replace(
        "average(grads", "avg(grads"
    )
    report = lint_statement(broken, contract)
    assert not report.ok
    assert [f.message for f in report.findings] == [
        "pkg.grads.average: the statement does not give the import path 'pkg.grads.average'"
    ]


def test_linter_fails_a_missing_parameter(task):
    _, contract, statement, _, _ = task
    report = lint_statement(statement.replace("inplace", "in_place"), contract)
    assert [f.missing for f in report.findings] == ["the parameter 'inplace'"]


def test_clean_statement_has_no_leaks(task):
    _, contract, statement, golden, sources = task
    report = check_leaks(
        statement,
        golden_code=golden,
        contract=contract,
        probes={"probes/test_p.py": PROBE},
        test_sources=sources,
    )
    assert report.ok, [f.message for f in report.findings]


def test_leak_checker_fails_a_statement_quoting_a_golden_line(task):
    _, contract, statement, golden, _ = task
    leaked = statement + "\nHint: `value = compute(key) if compute is not None else None`\n"
    report = check_leaks(leaked, golden_code=golden, contract=contract)
    assert [(f.kind, f.where) for f in report.findings] == [
        (LeakKind.golden_code, "pkg/cache.py:33")
    ]
    assert "compute ( key ) if compute is not None" in report.findings[0].message


def test_signatures_shared_with_the_golden_code_are_not_leaks(task):
    _, contract, statement, golden, _ = task
    assert "def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None" not in statement
    assert check_leaks(
        statement + "\n`KVCache(self, capacity: int=DEFAULT_CAPACITY) -> None`\n",
        golden_code=golden,
        contract=contract,
    ).ok


def test_leak_checker_fails_probe_code_names_constants_and_tolerances(task):
    _, contract, statement, golden, sources = task
    probes = {"probes/test_p.py": PROBE}
    cases = {
        LeakKind.probe_code: "\nThe cache must pass test_hits_survive_reset_and_recount.\n",
        LeakKind.constant: "\nScale by 64 entries.\n",
        LeakKind.tolerance: "\nResults must agree within atol=1e-5.\n",
    }
    for kind, addition in cases.items():
        report = check_leaks(
            statement + addition,
            golden_code=golden,
            contract=contract,
            probes=probes,
            test_sources=sources,
        )
        assert [f.kind for f in report.findings] == [kind], addition
    copied = (
        statement
        + '\n    cache.lookup("k", compute=len)\n    cache.reset()\n    assert cache.hits == 0\n'
    )
    report = check_leaks(copied, golden_code=golden, contract=contract, probes=probes)
    assert LeakKind.probe_code in {f.kind for f in report.findings}
    assert "0.125" in [
        f.text
        for f in check_leaks(
            statement + "\nerror below 0.125\n",
            golden_code=golden,
            contract=contract,
            probes=probes,
        ).findings
    ]


def test_comments_and_docstrings_of_the_golden_patch_are_not_code():
    code = python_code_tokens(
        "m.py",
        'def f():\n    """Return the cached value, computing it."""\n    return 1  # the fast path\n',
    )
    assert [t.text for t in code] == ["def", "f", "(", ")", ":", "return", "1"]
