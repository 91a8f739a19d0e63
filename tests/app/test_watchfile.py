from __future__ import annotations

from pathlib import Path

import pytest

from bot.watchfile import WatchFileError, example_watch_file, load_watch_file
from probewatch.testfiles import DEFAULT_TEST_GLOBS


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "watch.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_example_configures_the_three_upstream_repos() -> None:
    watch = load_watch_file(example_watch_file())
    assert [r.name for r in watch.repos] == [
        "NVIDIA/Megatron-LM",
        "volcengine/verl",
        "vllm-project/vllm",
    ]
    megatron, verl, vllm = watch.repos
    assert "megatron/core/" in megatron.core_paths
    assert megatron.tests.gpu_paths == ["tests/unit_tests/"]
    assert megatron.tests.default_gpus == 8
    assert verl.core_paths == ["verl/"]
    assert verl.tests.cpu_globs == ["tests/**/*_on_cpu.py"]
    assert vllm.tests.cpu_marker == "cpu_test"
    assert all(r.dry_run and r.size_threshold == 1000 for r in watch.repos)


def test_defaults_apply_and_entries_override(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
[defaults]
size_threshold = 500
dry_run = false
[defaults.tests]
default_gpus = 2

[[repo]]
name = "a/one"

[[repo]]
name = "b/two"
size_threshold = 50
git = "mirrors/two.git"
[repo.tests]
cpu_marker = "cpu"
""",
    )
    one, two = load_watch_file(path).repos
    assert (one.size_threshold, one.dry_run, one.tests.default_gpus) == (500, False, 2)
    assert one.tests.globs == list(DEFAULT_TEST_GLOBS)
    assert (two.size_threshold, two.tests.cpu_marker, two.tests.default_gpus) == (50, "cpu", 2)
    assert two.git == tmp_path / "mirrors/two.git"
    assert two.slug == "b__two"


def test_dry_run_is_on_unless_told_otherwise(tmp_path: Path) -> None:
    (repo,) = load_watch_file(write(tmp_path, '[[repo]]\nname = "a/b"\n')).repos
    assert repo.dry_run is True
    assert repo.size_threshold == 1000


@pytest.mark.parametrize(
    ("text", "key", "reason"),
    [
        (
            '[[repo]]\nname = "a/b"\nsize_treshold = 5\n',
            'repo[0] ("a/b").size_treshold',
            "Extra inputs",
        ),
        (
            '[[repo]]\nname = "a/b"\nsize_threshold = 0\n',
            'repo[0] ("a/b").size_threshold',
            "greater than",
        ),
        ('[[repo]]\nname = "a/b"\ndry_run = "maybe"\n', 'repo[0] ("a/b").dry_run', "boolean"),
        ('[[repo]]\nname = "not-a-repo"\n', 'repo[0] ("not-a-repo").name', "is not owner/name"),
        ("[[repo]]\nsize_threshold = 3\n", "repo[0].name", "Field required"),
        (
            '[[repo]]\nname = "a/b"\n[repo.tests]\ncpu_globz = []\n',
            'repo[0] ("a/b").tests.cpu_globz',
            "Extra",
        ),
        ('[[repo]]\nname = "a/b"\n[[repo]]\nname = "A/B"\n', "repo[1].name", "listed twice"),
        ('[repos]\nname = "a/b"\n', "repos", "unknown top-level key"),
        ('[[repo]]\nname = "a/b\n', "(syntax)", "line 2"),
    ],
)
def test_bad_watch_file_names_file_key_and_reason(
    tmp_path: Path, text: str, key: str, reason: str
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(WatchFileError) as caught:
        load_watch_file(path)
    assert caught.value.key == key
    assert reason in caught.value.reason
    assert str(caught.value).startswith(f"watch file {path}: {key}: ")


def test_missing_watch_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(WatchFileError, match="no such file"):
        load_watch_file(tmp_path / "absent.toml")
