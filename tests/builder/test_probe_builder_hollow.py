"""Hollow patch: interface kept, bodies raise at once, module-level code untouched."""

from __future__ import annotations

import ast
import subprocess
import sys

import pytest

from probe_builder.adversarial.hollow import HollowError, build_hollow_patch, hollow_source
from tests.probe_builder_support import cache_pr, make_pr


def _defs(text: str) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    return {
        n.name: n
        for n in ast.walk(ast.parse(text))
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
    }


SOURCE = '''
import functools

X = compute_at_import = 3


@functools.lru_cache(maxsize=None)
def cached(a: int, *, b: str = "x") -> int:
    """Docstring stays."""
    y = a + 1
    return y


class C:
    attr: int = 4

    @property
    def value(self):
        return self.attr

    def one_liner(self): return 1

    def only_doc(self):
        "Only a docstring."

    async def coro(self, *args, **kwargs):
        @functools.wraps(print)
        def inner():
            return 1
        return inner()


def untouched():
    return 5
'''.lstrip()


def test_changed_functions_keep_decorators_signature_and_docstring_and_raise():
    changed = range(1, 31)  # everything but untouched()
    hollowed, functions = hollow_source("m.py", SOURCE, changed)
    before, after = _defs(SOURCE), _defs(hollowed)
    for name in ("cached", "value", "one_liner", "only_doc", "coro"):
        assert ast.dump(before[name].args) == ast.dump(after[name].args)
        assert [ast.dump(d) for d in before[name].decorator_list] == [
            ast.dump(d) for d in after[name].decorator_list
        ]
        assert ast.get_docstring(before[name]) == ast.get_docstring(after[name])
        body = after[name].body[1:] if ast.get_docstring(after[name]) else after[name].body
        assert len(body) == 1 and isinstance(body[0], ast.Raise)
    assert "inner" not in _defs(hollowed)  # nested functions go with the enclosing body
    assert ast.dump(before["untouched"]) == ast.dump(after["untouched"])
    assert {f.qualname for f in functions} == {
        "cached",
        "C.value",
        "C.one_liner",
        "C.only_doc",
        "C.coro",
    }


def test_module_and_class_level_code_is_unchanged():
    hollowed, _ = hollow_source("m.py", SOURCE, range(1, 31))
    strip = lambda text: [  # noqa: E731
        ast.dump(n)
        for n in ast.parse(text).body
        if not isinstance(n, ast.FunctionDef | ast.ClassDef)
    ]
    assert strip(hollowed) == strip(SOURCE)
    assert "attr: int = 4" in hollowed


def test_a_decorator_dropping_hollow_would_be_caught():
    hollowed, _ = hollow_source("m.py", SOURCE, range(1, 31))
    # The property stays a property: reading it raises instead of returning a bound method.
    namespace: dict = {}
    exec(compile(hollowed, "m.py", "exec"), namespace)
    with pytest.raises(NotImplementedError, match=r"hollow: C\.value"):
        _ = namespace["C"]().value
    with pytest.raises(NotImplementedError, match="hollow: cached"):
        namespace["cached"](1)
    assert namespace["untouched"]() == 5


def test_hollow_patch_applies_compiles_and_raises_on_a_real_repository(tmp_path):
    pr = cache_pr(tmp_path)
    hollow = build_hollow_patch(pr.split.golden_files, base=pr.base_tree, head=pr.head_tree)
    assert hollow.rewritten_files == ("pkg/cache.py", "pkg/grads.py")
    names = {f.qualname for f in hollow.functions}
    assert names == {
        "KVCache.__init__",
        "KVCache.lookup",
        "KVCache.reset",
        "KVCache.__repr__",
        "scale_for",
        "average",
    }
    tree = pr.apply(hollow.patch, tmp_path / "hollowed")
    script = (
        "import pkg.cache as c, pkg.grads as g\n"
        "assert c.DEFAULT_CAPACITY == 64 and c.KVCache.capacity == 64\n"
        "assert c.Store().get('a') is None\n"
        "assert g.untouched(3) == 3\n"
        "try:\n    c.KVCache()\nexcept NotImplementedError as e:\n    print('raised', e)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=tree, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "raised hollow: KVCache.__init__"
    for path in hollow.rewritten_files:
        compile((tree / path).read_text(), path, "exec")


def test_functions_changed_only_by_a_deletion_are_hollowed(tmp_path):
    pr = make_pr(
        tmp_path,
        {"m.py": "def f():\n    a = 1\n    b = 2\n    return a\n\n\ndef g():\n    return 2\n"},
        {"m.py": "def f():\n    a = 1\n    return a\n\n\ndef g():\n    return 2\n"},
    )
    hollow = build_hollow_patch(pr.split.golden_files, base=pr.base_tree, head=pr.head_tree)
    assert [f.qualname for f in hollow.functions] == ["f"]


def test_non_python_files_and_untouched_python_files_pass_through(tmp_path):
    pr = make_pr(
        tmp_path,
        {"conf.yaml": "a: 1\n", "m.py": "X = 1\n"},
        {"conf.yaml": "a: 2\n", "m.py": "X = 2\n"},
    )
    hollow = build_hollow_patch(pr.split.golden_files, base=pr.base_tree, head=pr.head_tree)
    assert hollow.patch == pr.split.golden and hollow.functions == ()


def test_new_file_hollow_keeps_the_new_file_header(tmp_path):
    pr = make_pr(tmp_path, {"a.py": ""}, {"new.py": "def f(x):\n    return x\n"})
    hollow = build_hollow_patch(pr.split.golden_files, base=pr.base_tree, head=pr.head_tree)
    assert "new file mode 100644" in hollow.patch
    pr.apply_check(hollow.patch)


def test_unparsable_post_change_file_is_reported_with_its_path():
    with pytest.raises(ValueError, match=r"broken\.py:1"):
        hollow_source("broken.py", "def f(:\n", [1])
    assert issubclass(HollowError, ValueError)
