"""Interface contract: changed symbols the tests use, with signatures, fields and flags."""

from __future__ import annotations

from probe_builder.material.config_flags import FlagKind, yaml_keys
from probe_builder.material.contract import (
    SymbolKind,
    SymbolStatus,
    extract_contract,
    sources_of_test_patch,
)
from probe_builder.material.signatures import ParameterKind
from tests.probe_builder_support import cache_pr, make_pr


def _contract(pr, extra_sources=None):
    sources = {
        **sources_of_test_patch(pr.split.test_files, head=pr.head_tree),
        **(extra_sources or {}),
    }
    return extract_contract(
        pr.split.golden_files, base=pr.base_tree, head=pr.head_tree, sources=sources
    )


def test_contract_lists_changed_symbols_the_tests_use_with_signatures(tmp_path):
    pr = cache_pr(tmp_path)
    contract = _contract(pr)
    by_name = {s.dotted: s for s in contract.symbols}
    assert set(by_name) == {"pkg.cache.KVCache", "pkg.cache.KVCache.lookup", "pkg.grads.average"}
    kv = by_name["pkg.cache.KVCache"]
    assert kv.kind is SymbolKind.klass and kv.status is SymbolStatus.added
    assert kv.signature == "(self, capacity: int=DEFAULT_CAPACITY) -> None"
    assert [(a.name, a.annotation, a.default) for a in kv.attributes] == [
        ("capacity", "int", "DEFAULT_CAPACITY")
    ]
    lookup = by_name["pkg.cache.KVCache.lookup"]
    assert lookup.kind is SymbolKind.method and lookup.signature == "(self, key: str, compute=None)"
    average = by_name["pkg.grads.average"]
    assert average.status is SymbolStatus.changed
    assert [(p.name, p.kind, p.annotation, p.default) for p in average.parameters] == [
        ("grads", ParameterKind.positional_or_keyword, None, None),
        ("world_size", ParameterKind.positional_or_keyword, None, None),
        ("inplace", ParameterKind.keyword_only, "bool", "False"),
    ]
    assert average.used_by == ["tests/test_cache.py"]


def test_unchanged_or_unused_symbols_stay_out(tmp_path):
    pr = cache_pr(tmp_path)
    names = {s.dotted for s in _contract(pr).symbols}
    assert "pkg.cache.Store" not in names  # used by a test, but not changed
    assert "pkg.cache.KVCache.reset" not in names  # changed, but no test calls it
    assert "pkg.cache.scale_for" not in names


def test_probes_add_what_they_use(tmp_path):
    pr = cache_pr(tmp_path)
    probe = "from pkg import cache\n\n\ndef test_reset():\n    c = cache.KVCache()\n    c.reset()\n    assert cache.scale_for(2) == 0.5\n"
    names = {s.dotted for s in _contract(pr, {"probes/test_probe.py": probe}).symbols}
    assert {"pkg.cache.KVCache.reset", "pkg.cache.scale_for"} <= names


def test_re_exports_and_src_layout_are_resolved(tmp_path):
    base = {"src/lib/__init__.py": "", "src/lib/core/impl.py": "def old():\n    return 0\n"}
    change = {
        "src/lib/__init__.py": "from lib.core.impl import fresh\n",
        "src/lib/core/impl.py": "def old():\n    return 0\n\n\ndef fresh(a, /, b=2, *rest, c, **kw):\n    return a\n",
        "tests/test_lib.py": "import lib as L\n\n\ndef test_fresh():\n    assert L.fresh(1, c=3) == 1\n",
    }
    pr = make_pr(tmp_path, base, change)
    (symbol,) = _contract(pr).symbols
    assert symbol.dotted == "src.lib.core.impl.fresh" and symbol.status is SymbolStatus.added
    assert symbol.signature == "(a, /, b=2, *rest, c, **kw)"
    assert [p.kind for p in symbol.parameters] == [
        ParameterKind.positional_only,
        ParameterKind.positional_or_keyword,
        ParameterKind.var_positional,
        ParameterKind.keyword_only,
        ParameterKind.var_keyword,
    ]


def test_new_configuration_flags_are_listed(tmp_path):
    base = {
        "pkg/args.py": "def add(parser):\n    parser.add_argument('--old', type=int, default=1)\n",
        "pkg/config.py": "from dataclasses import dataclass\n\n\n@dataclass\nclass ActorConfig:\n    lr: float = 1e-3\n",
        "conf/trainer.yaml": "actor:\n  lr: 0.001\n",
    }
    change = {
        "pkg/args.py": "def add(parser):\n    parser.add_argument('--old', type=int, default=1)\n    parser.add_argument('-p', '--use-prefix-grouper', action='store_true', help='group')\n",
        "pkg/config.py": "from dataclasses import dataclass\n\n\n@dataclass\nclass ActorConfig:\n    lr: float = 1e-3\n    use_prefix_grouper: bool = False\n",
        "conf/trainer.yaml": "actor:\n  lr: 0.001\n  tiled_mlp:\n    enabled: false  # off by default\n    num_shards: 4\n",
    }
    contract = _contract(make_pr(tmp_path, base, change))
    assert [(f.kind, f.name, f.default) for f in contract.flags] == [
        (FlagKind.yaml, "actor.tiled_mlp", None),
        (FlagKind.yaml, "actor.tiled_mlp.enabled", "false"),
        (FlagKind.yaml, "actor.tiled_mlp.num_shards", "4"),
        (FlagKind.argparse, "--use-prefix-grouper", None),
        (FlagKind.config_field, "ActorConfig.use_prefix_grouper", "False"),
    ]


def test_yaml_keys_follow_indentation_and_ignore_comments():
    keys = yaml_keys("a:\n  b: 1\n  # c: 2\n  d:\n    e: x # note\nf: 3\n")
    assert {k: v[1] for k, v in keys.items()} == {
        "a": None,
        "a.b": "1",
        "a.d": None,
        "a.d.e": "x",
        "f": "3",
    }
