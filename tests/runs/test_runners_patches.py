"""Strict patches: hostile diffs refused before touching disk; a bad diff gives git's reason."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from probewatch.testfiles import DEFAULT_TEST_GLOBS, TestFiles
from runners.patches import (
    PatchRefused,
    PatchUnappliable,
    apply_patch,
    apply_patches,
    check_patch,
    git_paths,
    unsafe_path_reason,
)
from runners.types import PatchSpec
from runners.workspace import workspace
from tests.runner_repos import FixtureRepo, Symlink, git, tree_listing

BASE_FILES = {
    "pkg/mod.py": "def f():\n    return 1\n",
    "pkg/data.bin": b"\x00\x01\x02 binary",
    "tests/test_mod.py": "from pkg.mod import f\n\ndef test_f():\n    assert f() == 1\n",
    "outside_link": Symlink("/tmp"),
    "inside_link": Symlink("pkg"),
}


@pytest.fixture
def fixture_repo(tmp_path: Path) -> tuple[FixtureRepo, str]:
    return FixtureRepo.create(tmp_path / "upstream", BASE_FILES)


@pytest.fixture
def tree(tmp_path: Path, fixture_repo: tuple[FixtureRepo, str]):
    repo, base = fixture_repo
    with workspace(repo.path, base, root=tmp_path / "runs") as ws:
        yield ws.tree


def made_diff(repo: FixtureRepo, base: str, files: dict) -> str:
    """A real `git diff` from the base to a commit with ``files`` changed."""
    head = repo.commit(files, "candidate")
    return repo.diff(base, head)


def new_file(path: str, body: str = "x = 1", mode: str = "100644") -> str:
    return (
        f"diff --git a/{path} b/{path}\nnew file mode {mode}\nindex 0000000..1111111\n"
        f"--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+{body}\n\\ No newline at end of file\n"
    )


def refused(tree: Path, diff: str, match: str, **policy: object) -> None:
    """The diff is refused with ``match`` in the reason, and nothing on disk changed."""
    before = tree_listing(tree)
    spec = PatchSpec(name="submission", diff=diff, **policy)  # type: ignore[arg-type]
    with pytest.raises(PatchRefused, match=match) as caught:
        apply_patch(tree, spec)
    assert str(caught.value).startswith("submission: ")
    assert tree_listing(tree) == before


def test_a_golden_diff_applies_and_the_index_follows(
    tree: Path, fixture_repo: tuple[FixtureRepo, str]
) -> None:
    repo, base = fixture_repo
    diff = made_diff(
        repo, base, {"pkg/mod.py": "def f():\n    return 2\n", "pkg/new.py": "N = 1\n"}
    )
    apply_patch(tree, PatchSpec(name="golden", diff=diff))
    assert (tree / "pkg/mod.py").read_text() == "def f():\n    return 2\n"
    assert (tree / "pkg/new.py").read_text() == "N = 1\n"
    assert git(tree, "diff", "--cached", "--name-only").split() == ["pkg/mod.py", "pkg/new.py"]


def test_stacked_patches_apply_in_order(tree: Path, fixture_repo: tuple[FixtureRepo, str]) -> None:
    repo, base = fixture_repo
    first = repo.commit({"pkg/new.py": "N = 1\n"}, "one")
    second = repo.commit({"pkg/new.py": "N = 2\n"}, "two")
    apply_patches(
        tree,
        [
            PatchSpec(name="one", diff=repo.diff(base, first)),
            PatchSpec(name="two", diff=repo.diff(first, second)),
        ],
    )
    assert (tree / "pkg/new.py").read_text() == "N = 2\n"


def test_a_diff_that_does_not_apply_gives_gits_reason(tree: Path) -> None:
    diff = (
        "diff --git a/pkg/mod.py b/pkg/mod.py\n--- a/pkg/mod.py\n+++ b/pkg/mod.py\n"
        "@@ -1,2 +1,2 @@\n def f():\n-    return 41\n+    return 42\n"
    )
    before = tree_listing(tree)
    with pytest.raises(PatchUnappliable) as caught:
        apply_patch(tree, PatchSpec(name="adversarial-3", diff=diff))
    assert str(caught.value).startswith("adversarial-3: ")
    assert "patch does not apply" in str(caught.value)
    assert "pkg/mod.py" in str(caught.value)
    assert "CRLF" not in str(caught.value)
    assert tree_listing(tree) == before


def test_an_empty_patch_is_unappliable(tree: Path) -> None:
    with pytest.raises(PatchUnappliable, match="empty"):
        apply_patch(tree, PatchSpec(name="submission", diff="  \n"))


def test_text_that_is_not_a_diff_is_unappliable(tree: Path) -> None:
    with pytest.raises(PatchUnappliable, match="names no file"):
        apply_patch(tree, PatchSpec(name="submission", diff="I fixed it, trust me\n"))


def test_a_path_leaving_the_tree_is_refused(tree: Path) -> None:
    refused(tree, new_file("../escaped.py"), "leaves the tree")
    assert not (tree.parent / "escaped.py").exists()


@pytest.mark.parametrize("header", ["+++ /tmp/{name}", "--- /tmp/{name}\n+++ b/{name}"])
def test_an_absolute_header_path_is_refused_not_re_rooted(tree: Path, header: str) -> None:
    """Regression (issue 16): git reads ``+++ /tmp/x`` as ``tmp/x`` inside the tree; a diff
    that names an absolute path is refused instead of written somewhere it did not say."""
    name = f"probewatch-abs-{tree.parent.name}.py"
    head = header.format(name=name)
    diff = (head if head.startswith("---") else f"--- /dev/null\n{head}") + "\n"
    refused(tree, diff + "@@ -0,0 +1 @@\n+x = 1\n", "is absolute")
    assert not (tree / "tmp").exists() and not (Path("/tmp") / name).exists()


def test_a_file_name_with_a_newline_is_refused(tree: Path) -> None:
    quoted = '"b/pkg/evil\\nname.py"'  # git's quoting of a name holding a newline
    diff = (
        f'diff --git "a/pkg/evil\\nname.py" {quoted}\nnew file mode 100644\n'
        f"--- /dev/null\n+++ {quoted}\n@@ -0,0 +1 @@\n+x = 1\n"
    )
    refused(tree, diff, "control character")


def test_a_patch_over_the_size_cap_is_refused_before_it_is_parsed(tree: Path) -> None:
    huge = new_file("pkg/huge.py", "x = '" + "a" * (47 * 2**20) + "'")
    started = time.monotonic()
    refused(tree, huge, "47.0 MiB, over the 8.0 MiB limit")
    assert time.monotonic() - started < 5  # unidiff needs far longer to read 47 MB


def test_the_size_cap_is_the_callers_to_set(tree: Path) -> None:
    small = PatchSpec(name="golden", diff=new_file("pkg/small.py", "x = '" + "a" * 4096 + "'"))
    with pytest.raises(PatchRefused, match=r"over the 0\.0 MiB limit"):
        apply_patch(tree, small, max_bytes=1024)
    apply_patch(tree, small)
    assert (tree / "pkg/small.py").is_file()


def test_a_crlf_patch_that_does_not_apply_says_its_line_endings_are_crlf(
    tree: Path, fixture_repo: tuple[FixtureRepo, str]
) -> None:
    repo, base = fixture_repo
    diff = made_diff(repo, base, {"pkg/mod.py": "def f():\n    return 2\n"})
    with pytest.raises(PatchUnappliable, match="CRLF") as caught:
        apply_patch(tree, PatchSpec(name="submission", diff=diff.replace("\n", "\r\n")))
    assert "\n" not in str(caught.value)  # one line
    apply_patch(tree, PatchSpec(name="golden", diff=diff))  # the same diff in LF applies


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("/etc/passwd", "not a plain relative path"),
        ("", "not a plain relative path"),
        ("a/../../b", "leaves the tree"),
        ("pkg/.Git/x", "writes into .git"),
        ("outside_link/x", "through the symlink outside_link"),
        ("pkg/mod.py", None),
    ],
)
def test_unsafe_path_reasons(tree: Path, path: str, reason: str | None) -> None:
    found = unsafe_path_reason(tree, path)
    assert (found is None) if reason is None else (reason in (found or ""))


@pytest.mark.parametrize("path", [".git/hooks/post-checkout", "pkg/.git/config", ".GIT/config"])
def test_writes_into_git_are_refused(tree: Path, path: str) -> None:
    refused(tree, new_file(path, "#!/bin/sh"), "writes into .git")


def test_a_rename_into_git_is_refused(tree: Path) -> None:
    diff = (
        "diff --git a/pkg/mod.py b/.git/hooks/pre-commit\nsimilarity index 100%\n"
        "rename from pkg/mod.py\nrename to .git/hooks/pre-commit\n"
    )
    refused(tree, diff, "writes into .git")


def test_a_c_quoted_path_spelling_git_is_refused(tree: Path) -> None:
    diff = (
        'diff --git "a/\\056git/config" "b/\\056git/config"\nnew file mode 100644\n'
        'index 0000000..1111111\n--- /dev/null\n+++ "b/\\056git/config"\n@@ -0,0 +1 @@\n+x\n'
    )
    refused(tree, diff, "writes into .git")


def test_writing_through_a_symlink_in_the_tree_is_refused(tree: Path) -> None:
    refused(tree, new_file("outside_link/pwned.py"), "through the symlink outside_link")
    assert not Path("/tmp/pwned.py").exists()
    refused(tree, new_file("inside_link/x.py"), "through the symlink inside_link")


def test_overwriting_a_symlink_with_a_file_is_refused(tree: Path) -> None:
    diff = (
        "diff --git a/outside_link b/outside_link\ndeleted file mode 120000\n"
        "--- a/outside_link\n+++ /dev/null\n@@ -1 +0,0 @@\n-/tmp\n\\ No newline at end of file\n"
        + new_file("outside_link", "print('x')")
    )
    refused(tree, diff, "outside_link is a symlink in the tree")


@pytest.mark.parametrize(
    "target", ["/etc", "../../etc", "../../../x", "../.git/config", "../outside_link/../x"]
)
def test_a_new_symlink_pointing_outside_is_refused(tree: Path, target: str) -> None:
    refused(tree, new_file("pkg/link", target, mode="120000"), "symlink pkg/link")


@pytest.mark.parametrize("target", ["mod.py", "../pkg/mod.py", "./mod.py"])
def test_a_new_symlink_inside_the_tree_applies(tree: Path, target: str) -> None:
    apply_patch(tree, PatchSpec(name="golden", diff=new_file("pkg/link", target, mode="120000")))
    assert (tree / "pkg/link").is_symlink()
    assert (tree / "pkg/link").read_text().startswith("def f")


def test_writing_through_a_symlink_the_same_diff_creates_is_refused(tree: Path) -> None:
    diff = new_file("lnk", "pkg", mode="120000") + new_file("lnk/evil.py")
    refused(tree, diff, "symlink lnk created by the same diff")


def test_binary_changes_need_permission(tree: Path, fixture_repo: tuple[FixtureRepo, str]) -> None:
    repo, base = fixture_repo
    diff = made_diff(repo, base, {"pkg/data.bin": b"\x00\x01\x02 changed"})
    assert "GIT binary patch" in diff
    refused(tree, diff, "binary change to pkg/data.bin")
    apply_patch(tree, PatchSpec(name="golden", diff=diff, allow_binary=True))
    assert (tree / "pkg/data.bin").read_bytes() == b"\x00\x01\x02 changed"


def test_binary_without_content_is_refused_too(tree: Path) -> None:
    diff = "diff --git a/pkg/data.bin b/pkg/data.bin\nBinary files a/pkg/data.bin and b/pkg/data.bin differ\n"
    refused(tree, diff, "binary change")


def test_test_changes_are_refused_only_when_forbidden(
    tree: Path, fixture_repo: tuple[FixtureRepo, str]
) -> None:
    repo, base = fixture_repo
    diff = made_diff(repo, base, {"tests/test_mod.py": "def test_f():\n    assert True\n"})
    refused(tree, diff, "changes the test file tests/test_mod.py", forbid_test_changes=True)
    apply_patch(tree, PatchSpec(name="golden", diff=diff))
    assert "assert True" in (tree / "tests/test_mod.py").read_text()


def test_the_repositorys_own_test_globs_decide_what_a_test_is(tree: Path) -> None:
    diff = new_file("checks/unit_check.py")
    refused(
        tree,
        diff,
        "test file checks/unit_check.py",
        forbid_test_changes=True,
        test_globs=("checks/**",),
    )
    apply_patch(tree, PatchSpec(name="s", diff=diff, forbid_test_changes=True))


def test_check_patch_reports_every_change_and_writes_nothing(
    tree: Path, fixture_repo: tuple[FixtureRepo, str]
) -> None:
    repo, base = fixture_repo
    head = repo.commit({"pkg/mod.py": None, "pkg/moved.py": "def f():\n    return 1\n"}, "mv")
    diff = git(repo.path, "diff", "-M", base, head)
    before = tree_listing(tree)
    changes = check_patch(tree, PatchSpec(name="golden", diff=diff))
    assert [(c.source, c.target) for c in changes] == [("pkg/mod.py", "pkg/moved.py")]
    assert git_paths(tree, PatchSpec(name="golden", diff=diff)) == ("pkg/moved.py",)
    assert tree_listing(tree) == before


def test_git_paths_are_what_git_apply_would_write(tree: Path) -> None:
    # A header without the usual a/ b/ prefixes: git drops the first component (-p1).
    diff = (
        "diff --git x/pkg/other.py y/pkg/other.py\nnew file mode 100644\nindex 0000000..1111111\n"
        "--- /dev/null\n+++ y/pkg/other.py\n@@ -0,0 +1 @@\n+x = 1\n"
    )
    assert git_paths(tree, PatchSpec(name="p", diff=diff)) == ("pkg/other.py",)
    apply_patch(tree, PatchSpec(name="p", diff=diff))
    assert (tree / "pkg/other.py").read_text() == "x = 1\n"


@pytest.mark.parametrize(
    ("path", "globs", "expected"),
    [
        ("tests/test_mod.py", DEFAULT_TEST_GLOBS, True),
        ("pkg/sub/tests/helper.py", DEFAULT_TEST_GLOBS, True),
        ("pkg/test_utils.py", DEFAULT_TEST_GLOBS, True),
        ("pkg/mod_test.py", DEFAULT_TEST_GLOBS, True),
        ("conftest.py", DEFAULT_TEST_GLOBS, True),
        ("pkg/contest.py", DEFAULT_TEST_GLOBS, False),
        ("pkg/testing.py", DEFAULT_TEST_GLOBS, False),
        ("latest/mod.py", DEFAULT_TEST_GLOBS, False),
        ("tests/unit_tests/a/b.py", ("tests/unit_tests/**",), True),
        ("other/tests/unit_tests/a.py", ("tests/unit_tests/**",), False),
        ("tests/x_on_cpu.py", ("*_on_cpu.py",), True),
    ],
)
def test_glob_matching(path: str, globs: tuple[str, ...], expected: bool) -> None:
    assert TestFiles(globs).matches(path) is expected


def test_a_single_star_stays_inside_one_folder() -> None:
    assert TestFiles(["tests/*.py"]).matches("tests/a.py")
    assert not TestFiles(["tests/*.py"]).matches("tests/sub/a.py")
    assert TestFiles(["tests/**/*.py"]).matches("tests/a.py")
    assert TestFiles(["tests/**/*.py"]).matches("tests/sub/deeper/a.py")


def test_the_services_patch_cap_setting_is_what_its_test_runs_apply(
    tmp_path: Path, fixture_repo: tuple[FixtureRepo, str]
) -> None:
    """PROBEWATCH_PATCH_MAX_BYTES reaches the runs of the service's backend: a diff of
    exactly the cap is applied, one byte more is refused before the tree is touched."""
    from bot.repos import validation_backend
    from bot.settings import load_settings
    from bot.watchfile import WatchFile
    from runners.execute import execute
    from runners.types import Hardware, Outcome, RunRequest

    repo, base = fixture_repo
    head = new_file("pkg/capped.py", "x = '")
    filler = "a" * (64 * 1024 - len(head.encode()) - len("'"))
    at_cap = PatchSpec("submission", new_file("pkg/capped.py", "x = '" + filler + "'"))
    cap = len(at_cap.diff.encode())
    over = PatchSpec("submission", new_file("pkg/capped.py", "x = '" + filler + "a'"))
    settings = load_settings(home=tmp_path / "home", patch_max_bytes=cap)
    backend = validation_backend(settings, WatchFile(), "o/r", Hardware(), cpu_slots=1)
    results = {}
    for name, spec in (("at_cap", at_cap), ("over", over)):
        request = RunRequest(repo=repo.path, base_commit=base, patches=(spec,), label=name)
        results[name] = execute(request, backend, workspace_root=tmp_path / "runs", retries=0)
    assert results["at_cap"].outcome is not Outcome.refused, results["at_cap"].detail
    assert results["over"].outcome is Outcome.refused
    assert "limit on a patch" in results["over"].detail
