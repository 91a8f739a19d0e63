"""Mechanical adversarial patches: diff-scoped, arid-free, limited, deterministic, appliable."""

from __future__ import annotations

import pytest

from probe_builder.adversarial.mutants import generate_mutants
from probe_builder.adversarial.mutation_ops import MutationOperator
from probe_builder.material.diffs import parse_diff
from task_registry.types import PromiseCategory
from tests.probe_builder_support import cache_pr, make_pr


def _mutants(tmp_path, base: str, head: str, **kwargs):
    pr = make_pr(tmp_path, {"m.py": base}, {"m.py": head})
    return pr, generate_mutants(
        pr.split.golden_files, base=pr.base_tree, head=pr.head_tree, **kwargs
    )


def _lines_differing_from_golden(pr, patch: str, where, path: str = "m.py") -> set[int]:
    """Post-change line numbers where the mutant's file differs from the golden file."""
    mutated = (pr.apply(patch, where) / path).read_text().splitlines()
    golden = pr.head_tree.read(path).splitlines()
    return {i for i, (a, b) in enumerate(zip(mutated, golden, strict=False), 1) if a != b}


BASE = "def f(x, n):\n    y = x / n\n    return y\n"


@pytest.mark.parametrize(
    ("added", "operator", "category"),
    [
        ("    cache.clear()\n", MutationOperator.delete_call, PromiseCategory.state),
        # saved, dumped or loaded for a later run: state kept across runs
        ("    model.save_to_disk(x)\n", MutationOperator.delete_call, PromiseCategory.state),
        (
            "    if x.resume_from_checkpoint:\n        z = 1\n",
            MutationOperator.force_branch,
            PromiseCategory.state,
        ),
        (
            "    torch.distributed.all_reduce(x)\n",
            MutationOperator.delete_call,
            PromiseCategory.numeric,
        ),
        ("    model.offload_params()\n", MutationOperator.delete_call, PromiseCategory.memory),
        ("    z = x / world_size\n", MutationOperator.drop_division, PromiseCategory.numeric),
        ("    z = x / y\n", MutationOperator.arith_swap, PromiseCategory.numeric),
        ("    z = x.mean()\n", MutationOperator.mean_sum, PromiseCategory.numeric),
        ("    z = x < y\n", MutationOperator.compare_flip, PromiseCategory.functional),
        ("    z = x and y\n", MutationOperator.bool_flip, PromiseCategory.functional),
        ("    z = 3\n", MutationOperator.constant, PromiseCategory.numeric),
        ("    if x:\n        z = 1\n", MutationOperator.force_branch, PromiseCategory.functional),
        ("    z = x.clone()\n", MutationOperator.drop_clone, PromiseCategory.state),
        (
            "    if x in self._cache:\n        z = 1\n",
            MutationOperator.bypass_cache,
            PromiseCategory.state,
        ),
        ("    z = self.memo.get(x)\n", MutationOperator.bypass_cache, PromiseCategory.state),
        (
            "    if capturing_cuda_graph:\n        z = 1\n",
            MutationOperator.force_branch,
            PromiseCategory.mode,
        ),
        ("    del x\n", MutationOperator.keep_alive, PromiseCategory.memory),
        ("    self._cache = None\n", MutationOperator.keep_alive, PromiseCategory.memory),
        (
            "    torch.distributed.broadcast(x, 0)\n",
            MutationOperator.repeat_collective,
            PromiseCategory.traffic,
        ),
        ("    z = torch.compile(model)\n", MutationOperator.drop_compile, PromiseCategory.mode),
        ("    z = combine_rows(x, y)\n", MutationOperator.repeat_work, PromiseCategory.time),
    ],
)
def test_each_operator_mutates_an_added_line_and_names_its_category(
    tmp_path, added, operator, category
):
    head = (
        "def f(x, y, cache, model, torch, world_size, self, capturing_cuda_graph):\n    z = 0\n"
        + added
        + "    return z\n"
    )
    base = "def f(x, y, cache, model, torch, world_size, self, capturing_cuda_graph):\n    z = 0\n    return z\n"
    _, mutants = _mutants(tmp_path, base, head)
    assert mutants[0].line == 3
    assert mutants[0].operator is operator
    assert mutants[0].promise_category is category


def test_early_return_skips_the_rest_of_a_procedure(tmp_path):
    base = "class A:\n    def step(self):\n        self.n = 0\n"
    head = (
        "class A:\n    def step(self):\n        self.n = 0\n        self.version = self.version\n"
    )
    _, mutants = _mutants(tmp_path, base, head)
    assert [(m.operator, m.line, m.after) for m in mutants] == [
        (MutationOperator.early_return, 4, "return")
    ]


def test_a_constructor_returns_early_only_once_its_attributes_are_set(tmp_path):
    # a return before `self.name = ...` leaves a half-built object: any use crashes, so the
    # patch is broken, not evidence of a gap (a real PR's tests kill it at once)
    base = "class A:\n    def __init__(self, hooks):\n        self.hooks = hooks\n"
    head = (
        "class A:\n    def __init__(self, hooks):\n        self.hooks = hooks\n"
        "        self.name = hooks.name\n        hooks.register(self)\n"
    )
    _, mutants = _mutants(tmp_path, base, head)
    returns = [m.line for m in mutants if m.operator is MutationOperator.early_return]
    assert returns == [5]  # before the registration, every attribute set


def test_only_lines_the_golden_patch_added_are_mutated(tmp_path):
    base = "def f(x, n):\n    y = x / n\n    if x:\n        y = y - 1\n    return y\n"
    head = (
        "def f(x, n):\n    y = x / n\n    if x:\n        y = y - 1\n    z = y * 2\n    return z\n"
    )
    pr, mutants = _mutants(tmp_path, base, head)
    (golden,) = pr.split.golden_files
    assert mutants and {m.line for m in mutants} <= golden.added_lines()
    for index, mutant in enumerate(mutants):
        assert _lines_differing_from_golden(pr, mutant.patch, tmp_path / f"m{index}") == {
            mutant.line
        }


@pytest.mark.parametrize(
    "arid",
    [
        '    logger.info("x=%d", x / n)\n',
        "    assert x > 0, x / n\n",
        '    """A docstring line."""\n',
        "    y: float\n",
        "    import math\n",
        '    print(f"{x / n}")\n',
        '    __all__.append("Limited")\n',
        '    __all__ += ["Limited"]\n',
    ],
)
def test_arid_lines_get_no_mutant(tmp_path, arid):
    base = "def f(x, n, logger):\n    return x\n"
    head = "def f(x, n, logger):\n" + arid + "    return x\n"
    _, mutants = _mutants(tmp_path, base, head)
    assert mutants == ()


def test_a_list_that_is_not_the_star_exports_is_mutated(tmp_path):
    base = "def f(x, n, registry):\n    return x\n"
    head = 'def f(x, n, registry):\n    registry.append("Limited")\n    return x\n'
    _, mutants = _mutants(tmp_path, base, head)
    assert [(m.operator, m.line) for m in mutants] == [(MutationOperator.delete_call, 2)]


def test_repr_methods_type_hints_and_reformatted_lines_get_no_mutant(tmp_path):
    base = "class A:\n    def g(self, x):\n        return x+1\n"
    head = (
        "class A:\n    def g(self, x):\n        return x + 1\n\n"
        "    def __repr__(self) -> str:\n        return 'A(%d)' % (self.n + 1)\n\n"
        "    def h(self, x: int = 3) -> float:\n        return 0.0\n"
    )
    _, mutants = _mutants(tmp_path, base, head)
    # x+1 -> x + 1 is formatting; __repr__ is arid; the signature of h is the contract.
    assert [m.line for m in mutants] == [9]


def test_at_most_one_mutant_per_line_and_seven_per_file(tmp_path):
    base = "def f(a, b):\n    return a\n"
    body = "".join(f"    v{i} = a / b + {i}\n" for i in range(20))
    _, mutants = _mutants(tmp_path, base, "def f(a, b):\n" + body + "    return a\n")
    assert len(mutants) == 7
    assert len({m.line for m in mutants}) == 7
    _, more = _mutants(
        tmp_path / "x", base, "def f(a, b):\n" + body + "    return a\n", max_per_file=50
    )
    assert len(more) == 20


def test_per_file_limit_spreads_over_operators(tmp_path):
    base = "def f(a, b, c):\n    return a\n"
    body = "".join(f"    v{i} = {i}\n" for i in range(10)) + "    c.reset()\n    w = a.mean()\n"
    _, mutants = _mutants(tmp_path, base, "def f(a, b, c):\n" + body + "    return a\n")
    operators = [m.operator for m in mutants]
    assert MutationOperator.delete_call in operators and MutationOperator.mean_sum in operators


def test_generation_is_deterministic(tmp_path):
    pr = cache_pr(tmp_path)
    first = generate_mutants(pr.split.golden_files, base=pr.base_tree, head=pr.head_tree)
    second = generate_mutants(pr.split.golden_files, base=pr.base_tree, head=pr.head_tree)
    assert first == second and len(first) >= 5
    assert len({m.id for m in first}) == len(first)


def test_every_mutant_is_the_whole_golden_patch_with_one_edit_and_applies_to_the_base(tmp_path):
    pr = cache_pr(tmp_path)
    mutants = generate_mutants(pr.split.golden_files, base=pr.base_tree, head=pr.head_tree)
    golden_paths = {f.path for f in pr.split.golden_files}
    for mutant in mutants:
        assert {f.path for f in parse_diff(mutant.patch)} == golden_paths
        assert mutant.patch != pr.split.golden
        pr.apply_check(mutant.patch)
    by_line = {(m.path, m.line): m for m in mutants}
    assert ("pkg/cache.py", 29) not in by_line  # logger.debug: arid
    assert any(m.operator is MutationOperator.bypass_cache for m in mutants)
    assert any(
        m.operator is MutationOperator.delete_call and "clear" in m.description for m in mutants
    )


# --- mutants set aside as unable to break a promise (equivalence.py) ----------------------


def _operators_on(mutants, text: str, head: str) -> set[MutationOperator]:
    line = head.splitlines().index(text) + 1
    return {m.operator for m in mutants if m.line == line}


@pytest.mark.parametrize(
    ("comparison", "mean_sum_kept"),
    [("> 0", False), ("< 0", False), (">= 0", True), ("== 0", True), ("> 1", True)],
)
def test_a_reductions_sign_against_zero_is_not_a_mean_sum_mutant(
    tmp_path, comparison: str, mean_sum_kept: bool
) -> None:
    """sum and mean agree in sign on every input, empty included, only for a strict
    comparison with 0; on an empty input '>= 0' (0 >= 0 vs nan >= 0) tells them apart."""
    line = f"    keep = mask.sum(dim=-1) {comparison}"
    head = f"def f(mask):\n{line}\n    return keep\n"
    _, mutants = _mutants(tmp_path, "def f(mask):\n    return mask\n", head)
    operators = _operators_on(mutants, line, head)
    assert (MutationOperator.mean_sum in operators) is mean_sum_kept
    assert operators  # another operator takes the line


@pytest.mark.parametrize("checked", [True, False])
def test_zip_strict_is_not_flipped_where_the_function_checks_the_lengths(
    tmp_path, checked: bool
) -> None:
    check = "    if len(a) != len(b):\n        raise ValueError('lengths differ')\n"
    line = "    return list(zip(a, b, strict=True))"
    head = f"def pair(a, b):\n{check if checked else ''}{line}\n"
    _, mutants = _mutants(tmp_path, "def pair(a, b):\n    return []\n", head)
    assert (MutationOperator.bool_flip in _operators_on(mutants, line, head)) is not checked


@pytest.mark.parametrize("only_logs", [True, False])
def test_a_branch_that_only_logs_is_not_forced(tmp_path, only_logs: bool) -> None:
    body = "        logger.info('step %s', y)\n" if only_logs else "        y = y + 1\n"
    head = f"def step(x, verbose):\n    y = x * 2\n    if verbose:\n{body}    return y\n"
    _, mutants = _mutants(tmp_path, "def step(x, verbose):\n    return x\n", head)
    forced = _operators_on(mutants, "    if verbose:", head)
    assert (MutationOperator.force_branch in forced) is not only_logs


CONFIG = """from dataclasses import dataclass


@dataclass
class RolloutConfig:
    temperature: float = 1.0
    prefix_cache: bool = True


class Sampler:
    retries = 3
"""


@pytest.mark.parametrize(
    ("quotes", "field_kept"),
    [((), False), (("Prefix cache reuse is now on by default",), True)],
)
def test_a_configuration_default_is_mutated_only_when_a_promise_names_it(
    tmp_path, quotes: tuple[str, ...], field_kept: bool
) -> None:
    _, mutants = _mutants(tmp_path, "X = 1\n", CONFIG, promise_quotes=quotes)
    assert not _operators_on(mutants, "    temperature: float = 1.0", CONFIG)
    assert bool(_operators_on(mutants, "    prefix_cache: bool = True", CONFIG)) is field_kept
    assert _operators_on(mutants, "    retries = 3", CONFIG)  # not a configuration class


METRICS = """def reject(mask, ratio):
    valid = mask.sum(dim=-1) > 0
    keep = ratio < 2.0
    metrics = {}
    share = valid.float()
    if share.sum() > 0:
        masked = ((~keep) * share).sum() / share.sum()
    else:
        masked = 0.0
    metrics["masked_fraction"] = masked
    metrics.update(summary(ratio * 3))
    return mask * keep, metrics
"""


def test_a_value_that_only_feeds_reported_metrics_is_not_mutated(tmp_path) -> None:
    base = "def reject(mask, ratio):\n    return mask, {}\n"
    _, mutants = _mutants(tmp_path, base, METRICS)
    # `valid` reaches only the metrics dict, through `share`, a branch and `masked`.
    assert not _operators_on(mutants, "    valid = mask.sum(dim=-1) > 0", METRICS)
    assert not _operators_on(mutants, '    metrics["masked_fraction"] = masked', METRICS)
    assert not _operators_on(mutants, "    metrics.update(summary(ratio * 3))", METRICS)
    # `keep` is returned as well: a mutant of it can change the result.
    assert _operators_on(mutants, "    keep = ratio < 2.0", METRICS)


@pytest.mark.parametrize(
    "escape",
    [
        "    return valid\n",  # returned
        "    self_log.append(valid)\n",  # kept by a call for its effect
        "    for v in valid:\n        out.append(v)\n",  # carried on by a loop
        "    stored[0] = valid\n",  # stored into something that is not a metric
    ],
)
def test_a_value_that_also_leaves_the_metrics_is_mutated(tmp_path, escape: str) -> None:
    head = (
        "def f(mask, out, stored, self_log):\n"
        "    valid = mask.sum(dim=-1) > 0\n"
        "    metrics = {'valid': valid.float().mean()}\n"
        f"{escape}"
        "    return metrics\n"
    )
    base = "def f(mask, out, stored, self_log):\n    return {}\n"
    _, mutants = _mutants(tmp_path, base, head)
    assert _operators_on(mutants, "    valid = mask.sum(dim=-1) > 0", head)


HOLDER = """import weakref


class Buffers:
    def __init__(self):
        self.staging = None

    def flush(self, data):
        self.staging = [x * 2 for x in data]
        total = sum(self.staging)
        self.staging = None
        return total

    def reset(self):
        self.pending = None  # never set before: the mutant must not fail reading it


def drain(data):
    scratch = [x + 1 for x in data]
    out = sum(scratch)
    del scratch
    return out
"""


def test_keep_alive_holds_what_the_patch_releases_and_computes_the_same(tmp_path) -> None:
    import importlib.util
    import sys

    base = "class Buffers:\n    pass\n\n\ndef drain(data):\n    return 0\n"
    pr, mutants = _mutants(tmp_path, base, HOLDER)
    kept = [m for m in mutants if m.operator is MutationOperator.keep_alive]
    lines = HOLDER.splitlines()
    released = [n for n, t in enumerate(lines, 1) if "= None" in t or "del " in t]
    assert {(m.line, m.promise_category) for m in kept} == {
        (n, PromiseCategory.memory) for n in released[1:]
    }  # not the constructor's first value of the attribute
    for index, mutant in enumerate(kept):
        where = pr.apply(mutant.patch, tmp_path / f"kept{index}")
        spec = importlib.util.spec_from_file_location(f"kept{index}", where / "m.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules.pop(spec.name, None)
        spec.loader.exec_module(module)
        assert module.Buffers().flush([1, 2]) == 6 and module.drain([1, 2]) == 5
        module.Buffers().reset()
        held = vars(module)["_probewatch_kept"]
        assert held in ([[2, 4]], [[2, 3]], [None])  # what was released, still referenced


@pytest.mark.parametrize(
    ("body", "held"),
    [
        ("    y = None\n    if x:\n        y = x\n", None),  # a first value, nothing to hold
        # bound only in the other branch: holding it would read an unbound name
        ("    if x:\n        y = [x]\n    else:\n        y = None\n", None),
        ("    y = [x]\n    if x:\n        y = None\n", 4),  # bound whichever way it gets here
        ("    for y in x:\n        y = None\n", 3),
    ],
)
def test_keep_alive_holds_only_a_name_that_has_a_value_there(tmp_path, body, held) -> None:
    base = "def f(x):\n    return x\n"
    _, mutants = _mutants(tmp_path, base, "def f(x):\n" + body + "    return x\n")
    lines = [m.line for m in mutants if m.operator is MutationOperator.keep_alive]
    assert lines == ([] if held is None else [held])


def test_a_collective_run_twice_leaves_the_result_and_doubles_the_calls(tmp_path) -> None:
    base = "def sync(dist, t):\n    return t\n"
    head = (
        "def sync(dist, t):\n    dist.broadcast(t, src=0)\n    dist.all_reduce(t)\n    return t\n"
    )
    pr, mutants = _mutants(tmp_path, base, head)
    assert [(m.line, m.operator) for m in mutants] == [
        (2, MutationOperator.repeat_collective),
        (3, MutationOperator.delete_call),  # summing twice changes the values: not repeated
    ]
    calls: list[str] = []

    class Dist:
        def broadcast(self, t, src):
            calls.append("broadcast")

        def all_reduce(self, t):
            calls.append("all_reduce")

    namespace: dict[str, object] = {}
    exec((pr.apply(mutants[0].patch, tmp_path / "twice") / "m.py").read_text(), namespace)
    assert namespace["sync"](Dist(), 3) == 3  # type: ignore[operator]
    assert calls == ["broadcast", "broadcast", "all_reduce"]


WEIGHTS = """import math

calls = []


def importance_weights(logp, old_logp):
    calls.append("weights")
    return [math.exp(a - b) for a, b in zip(logp, old_logp)]


def reweight(rewards, logp, old_logp):
    w = importance_weights(logp, old_logp)
    return [r * x for r, x in zip(rewards, w)]
"""


def test_work_done_twice_leaves_the_result_and_doubles_the_calls(tmp_path) -> None:
    base = "def reweight(rewards, logp, old_logp):\n    return rewards\n"
    pr, mutants = _mutants(tmp_path, base, WEIGHTS)
    twice = [m for m in mutants if m.operator is MutationOperator.repeat_work]
    assert [(m.line, m.promise_category) for m in twice] == [(12, PromiseCategory.time)]
    golden: dict[str, object] = {}
    exec(pr.head_tree.read("m.py"), golden)
    mutated: dict[str, object] = {}
    exec((pr.apply(twice[0].patch, tmp_path / "twice") / "m.py").read_text(), mutated)
    args = ([1.0, 2.0], [0.0, -1.0], [0.5, -1.0])
    assert mutated["reweight"](*args) == golden["reweight"](*args)  # type: ignore[operator]
    assert mutated["calls"] == ["weights", "weights"] and golden["calls"] == ["weights"]


@pytest.mark.parametrize(
    "statement",
    [
        "z = model(x)",  # a callable object: a second call may change what it keeps
        "z = self.combine_rows(x)",  # a method may change its object
        "z = Combiner(x)",  # a constructor
        "x = combine_rows(x)",  # reads what it assigns: the second run sees the first's result
        "z = combine_rows(x, torch.ones(3))",  # an argument makes a call of its own
        "z = combine_rows(x, out=y)",  # writes into what it is given
        "z = torch.randn(3)",  # draws random numbers
        "z = next_batch(x)",  # reads an iterator
        "z = append_row(x, y)",  # changes what it is given
        "z = scale_(x)",  # torch's in-place convention
        "z = fully_shard(model)",  # wraps the model it is given in place
        "z = torch.distributed.new_group(x)",  # a process group each time
        "self.z = combine_rows(x)",  # not a plain name
    ],
)
def test_work_that_changes_something_when_done_again_is_not_repeated(tmp_path, statement) -> None:
    head = f"import torch\n\n\ndef f(x, y, model, self):\n    {statement}\n    return x\n"
    _, mutants = _mutants(tmp_path, "def f(x, y, model, self):\n    return x\n", head)
    assert MutationOperator.repeat_work not in {m.operator for m in mutants}


ROWOPS = """calls = []


def clip(xs):
    return [min(max(x, -5.0), 5.0) for x in xs]


def exp_weights(xs):
    calls.append("weights")
    return [2.0**x for x in xs]
"""
HELD = """import rowops


def reweight(rewards, logp):
    w = rowops.exp_weights(rowops.clip(logp))
    return [r * x for r, x in zip(rewards, w)]
"""


def test_a_result_held_across_calls_leaves_the_result_and_keeps_every_one(
    tmp_path, monkeypatch
) -> None:
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "rowops.py").write_text(ROWOPS)
    monkeypatch.syspath_prepend(str(tmp_path / "lib"))
    base = "import rowops\n\n\ndef reweight(rewards, logp):\n    return rewards\n"
    pr, mutants = _mutants(tmp_path, base, HELD)
    held = [m for m in mutants if m.operator is MutationOperator.hold_result]
    assert [(m.line, m.promise_category) for m in held] == [(5, PromiseCategory.memory)]
    mutated_file = pr.apply(held[0].patch, tmp_path / "held") / "m.py"
    golden_lines = pr.head_tree.read("m.py").splitlines()
    held_line = '    globals().setdefault("_probewatch_kept", []).append(w)'
    # a line of its own after the statement: the diff shows one line added, nothing removed
    assert mutated_file.read_text().splitlines() == [
        *golden_lines[:5],
        held_line,
        *golden_lines[5:],
    ]
    golden: dict[str, object] = {}
    exec(pr.head_tree.read("m.py"), golden)
    mutated: dict[str, object] = {}
    exec(mutated_file.read_text(), mutated)
    for step in range(3):
        args = ([1.0, 2.0], [0.5 * step, 9.0])
        assert mutated["reweight"](*args) == golden["reweight"](*args)  # type: ignore[operator]
    assert len(mutated["_probewatch_kept"]) == 3  # type: ignore[arg-type]
    assert "_probewatch_kept" not in golden


@pytest.mark.parametrize(
    "statement",
    [
        "z = len(rowops.clip(x))",  # a builtin: nothing imported computes it
        "z = math.exp(math.log(x))",  # the standard library's: a number, not a buffer
        "z = Rows(rowops.clip(x))",  # a class
        "z = OmegaConf.create(rowops.clip(x))",  # a class's factory: a config, not a computation
        "z = rowops.get_group(rowops.clip(x))",  # a lookup: held elsewhere already
        "z = rowops.create_client(rowops.clip(x))",  # opens something: holding it keeps a connection
        "z = rowops.remote_actor.remote(rowops.clip(x))",  # starts a remote actor
        "self.z = rowops.exp_weights(rowops.clip(x))",  # not a plain name
        "a, b = rowops.split(rowops.clip(x))",  # several names
        "z = x",  # no call
        "z = rowops.exp_weights(rowops.clip(x)); return z",  # a line after it would never run
    ],
)
def test_a_result_that_is_no_new_computation_is_not_held(tmp_path, statement) -> None:
    # each call has a call in its arguments, so repeat_work (ranked first) cannot take the line
    imports = (
        "import math\n\nimport rowops\nfrom omegaconf import OmegaConf\nfrom rows import Rows\n"
    )
    head = f"{imports}\n\ndef f(x, self):\n    {statement}\n    return x\n"
    _, mutants = _mutants(tmp_path, f"{imports}\n\ndef f(x, self):\n    return x\n", head)
    assert MutationOperator.hold_result not in {m.operator for m in mutants}


def test_a_result_is_not_held_in_a_constructor(tmp_path) -> None:
    head = "import rowops\n\n\nclass C:\n    def __init__(self, x):\n        w = rowops.exp_weights(rowops.clip(x))\n        self.w = w\n"
    base = "import rowops\n\n\nclass C:\n    def __init__(self, x):\n        self.w = x\n"
    _, mutants = _mutants(tmp_path, base, head)
    assert MutationOperator.hold_result not in {m.operator for m in mutants}


STAND_IN_TORCH = """class torch:  # stands in for torch: records what it compiles
    compiled = []

    @staticmethod
    def compile(fn=None, **options):
        if fn is None:
            return lambda f: torch.compile(f, **options)
        torch.compiled.append(fn.__name__)
        return fn
"""
COMPILED = """

@torch.compile
def square(x):
    return x * x


@torch.compile(dynamic=True)
def cube(x):
    return x * x * x


def build(step):
    return torch.compile(step, fullgraph=True)
"""


def test_drop_compile_runs_the_function_eagerly_and_computes_the_same(tmp_path) -> None:
    head = STAND_IN_TORCH + COMPILED
    pr, mutants = _mutants(tmp_path, STAND_IN_TORCH, head)
    dropped = [m for m in mutants if m.operator is MutationOperator.drop_compile]
    old = len(STAND_IN_TORCH.splitlines())  # the stand-in's own call is not the PR's
    compiling = [n for n, t in enumerate(head.splitlines(), 1) if n > old and "compile" in t]
    assert [(m.line, m.promise_category) for m in dropped] == [
        (line, PromiseCategory.mode) for line in compiling
    ]
    assert len(dropped) == 3
    for index, mutant in enumerate(dropped):
        namespace: dict[str, object] = {}
        text = (pr.apply(mutant.patch, tmp_path / f"eager{index}") / "m.py").read_text()
        exec(text, namespace)
        build = namespace["build"]
        assert build(len)("ab") == 2  # type: ignore[operator]
        assert (namespace["square"](3), namespace["cube"](2)) == (9, 8)  # type: ignore[operator]
        compiled = namespace["torch"].compiled  # type: ignore[attr-defined]
        assert len(compiled) == 2  # the golden code compiles three: one is left eager


def _walked(monkeypatch, source_text: str) -> int:
    """How many syntax-tree nodes choosing one mutant per line of the file looks into."""
    import ast

    from probe_builder.adversarial.mutants import best_per_line
    from probe_builder.material.pysource import Source

    source = Source("m.py", source_text)
    looked = 0
    children = ast.iter_child_nodes

    def counted(node):
        nonlocal looked
        looked += 1
        return children(node)

    monkeypatch.setattr(ast, "iter_child_nodes", counted)
    best_per_line(source, range(1, source_text.count("\n") + 1))
    return looked


def _methods(count: int) -> str:
    body = "".join(
        f"    def m{i}(self, x):\n        y = x * {i} + 1\n        self.log(y)\n"
        for i in range(count)
    )
    return f"class Big:\n{body}"


def test_each_line_of_a_long_class_is_mutated_without_reading_the_whole_class_again(
    monkeypatch,
):
    # a class of a thousand lines: each line's mutants read that line's statements, not the
    # class around them (which made choosing them grow with the square of the file)
    small, large = _walked(monkeypatch, _methods(100)), _walked(monkeypatch, _methods(200))
    assert large < 2.5 * small


def test_a_thousand_branch_elif_chain_is_mutated_and_profiled():
    from probe_builder.adversarial.mutants import best_per_line
    from probe_builder.material.pysource import Source
    from probe_builder.promises.assertions import profile_source

    branches = "".join(
        f"    elif x == {i}:\n        assert pick({i}) == {i}\n" for i in range(1, 1500)
    )
    text = f"def test_pick(x):\n    if x == 0:\n        assert pick(0) == 0\n{branches}"
    # each elif nests in the one before: reading it by recursion overflowed the stack
    assert len(profile_source("tests/test_pick.py", text).assertions) == 1500
    chosen = best_per_line(Source("m.py", text), range(2990, 3002))
    assert {c.line for c in chosen} == set(range(2990, 3002))  # each elif and each assert


def test_an_expression_too_deep_for_the_parser_is_unparsable_not_a_crash():
    from probe_builder.material.pysource import Source, UnparsableSource

    text = "def test_sum():\n    assert total() == " + " + ".join(["1"] * 20000) + "\n"
    with pytest.raises(UnparsableSource, match="nested too deeply"):
        Source("tests/test_sum.py", text)


def test_an_unparsable_source_says_where_and_why_and_survives_a_copy_to_another_process():
    import pickle

    from probe_builder.material.pysource import Source, UnparsableSource

    with pytest.raises(UnparsableSource) as raised:
        Source("tests/test_typo.py", "x = 1\n\ndef test_typo(:\n    pass\n")
    error = raised.value
    assert (error.where, error.why) == ("tests/test_typo.py:3", "invalid syntax")
    assert str(error) == "tests/test_typo.py:3: does not parse: invalid syntax"
    copy = pickle.loads(pickle.dumps(error))  # how a reading comes back from a worker
    assert (copy.where, copy.why, str(copy)) == (error.where, error.why, str(error))


def test_the_node_an_edit_lies_in_is_found_in_a_methods_decorator_too():
    import ast

    from probe_builder.adversarial.equivalence import promise_scope
    from probe_builder.adversarial.mutation_ops import Candidate
    from probe_builder.material.pysource import Source

    text = "class A:\n    @cached(size=8)\n    def f(self):\n        return 1\n"
    source = Source("m.py", text)
    at = text.index("8")
    edit = Candidate(MutationOperator.constant, 2, at, at + 1, "9", "8 -> 9")
    # the decorator lies before the method's own span: the search must still look into it
    found = promise_scope(source, ()).node_at(edit, (ast.Call,))
    assert found is not None and source.segment(found) == "cached(size=8)"
