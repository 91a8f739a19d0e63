"""Reading declared requirements at a commit: requirement files, pyproject, a static setup.py."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from bot.repos import runner_pins
from bot.settings import load_settings
from bot.watchfile import RunnerPins, WatchFile
from runners.env.config import EnvConfigError, RepoEnvConfig, known_repo_config
from runners.env.lock import NoInterpreterError, choose_interpreter
from runners.env.setup_py import static_setup_requirements
from runners.env.sources import RequirementsUnreadable, read_requirements
from tests.runners_env_support import git, make_repo

PYPROJECT = """
[project]
name = "demo-pkg"
dependencies = ["attrs>=21", "demo_pkg[extra]"]
[project.optional-dependencies]
test = ["pytest-timeout"]
gpu = ["flash-attn"]
"""
SETUP_PY = """
from setuptools import setup
REQUIRES = ["idna", "packaging>=20"]
EXTRAS = ["six"]
setup(name="demo", install_requires=REQUIRES, extras_require={"math": EXTRAS, "other": ["x"]})
"""


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, str]:
    return make_repo(
        tmp_path / "repo",
        {
            "requirements.txt": "six  # comment\n-r requirements-extra.txt\n-e .\n"
            "git+https://example.org/x.git\n--extra-index-url https://x\nvllm>=0.8\n",
            "requirements-extra.txt": "idna==3.4\n",
            "requirements/cuda.txt": "flash-attn\n",
            "docs/requirements.txt": "sphinx\n",
            "pyproject.toml": PYPROJECT,
            "setup.py": SETUP_PY,
        },
    )


def test_requirement_files_follow_includes_and_list_what_was_dropped(
    repo: tuple[Path, str],
) -> None:
    config = RepoEnvConfig(exclude=("vllm",), use_pyproject=False, use_setup_py=False)
    inputs = read_requirements(*repo, config)
    assert sorted(inputs.requirements) == ["idna==3.4", "six"]
    reasons = {d.line: d.reason for d in inputs.dropped}
    assert reasons["-e ."].startswith("editable install")
    assert reasons["git+https://example.org/x.git"].startswith("VCS URL")
    assert reasons["--extra-index-url https://x"].startswith("pip option")
    assert reasons["vllm>=0.8"].startswith("excluded")
    assert inputs.commit == repo[1]


def test_requirement_globs_match_at_the_root_only(repo: tuple[Path, str]) -> None:
    inputs = read_requirements(*repo, RepoEnvConfig(use_pyproject=False, use_setup_py=False))
    assert "sphinx" not in inputs.requirements
    assert "flash-attn" not in inputs.requirements
    assert inputs.sources == ("requirements-extra.txt", "requirements.txt")


def test_pyproject_dependencies_and_chosen_extras_without_the_project_itself(
    repo: tuple[Path, str],
) -> None:
    config = RepoEnvConfig(requirement_files=(), use_setup_py=False, extras=("test",))
    inputs = read_requirements(*repo, config)
    assert inputs.requirements == ("attrs>=21", "pytest-timeout")
    assert inputs.project_name == "demo-pkg"
    assert [d.line for d in inputs.dropped] == ["demo_pkg[extra]"]


def test_static_setup_py_install_requires_and_extras(repo: tuple[Path, str]) -> None:
    config = RepoEnvConfig(requirement_files=(), use_pyproject=False, extras=("math",))
    inputs = read_requirements(*repo, config)
    assert inputs.requirements[:3] == ("idna", "packaging>=20", "six")
    # no [build-system]: what pip builds a setup.py with, there for a run without network
    assert inputs.requirements[3:] == ("setuptools>=40.8.0", "wheel")


def test_the_build_systems_requirements_are_part_of_the_environment(tmp_path: Path) -> None:
    declared = '[build-system]\nrequires = ["setuptools>=61", "setuptools-scm>=8"]\n'
    repo = make_repo(tmp_path / "repo", {"pyproject.toml": declared, "setup.py": SETUP_PY})
    config = RepoEnvConfig(requirement_files=(), use_setup_py=False)
    inputs = read_requirements(*repo, config)
    assert inputs.requirements == ("setuptools>=61", "setuptools-scm>=8", "wheel")
    assert "pyproject.toml [build-system]" in inputs.sources
    hatch = make_repo(
        tmp_path / "hatch",
        {
            "pyproject.toml": declared.replace(
                '"setuptools>=61", "setuptools-scm>=8"', '"hatchling"'
            )
        },
    )
    assert read_requirements(*hatch, config).requirements == ("hatchling",)


def test_requirements_are_read_at_the_given_commit_not_the_tip(repo: tuple[Path, str]) -> None:
    path, first = repo
    (path / "requirements-extra.txt").write_text("idna==3.6\n")
    git(path, "commit", "-qam", "bump")
    config = RepoEnvConfig(use_pyproject=False, use_setup_py=False)
    assert "idna==3.4" in read_requirements(path, first, config).requirements
    assert "idna==3.6" in read_requirements(path, "HEAD", config).requirements


def test_an_unknown_commit_is_a_source_error(repo: tuple[Path, str]) -> None:
    with pytest.raises(RequirementsUnreadable, match="deadbeef"):
        read_requirements(repo[0], "deadbeef", RepoEnvConfig())


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ('from setuptools import setup\nsetup(install_requires=["a", "b>1"])', ["a", "b>1"]),
        ('import setuptools\nR = ("a",)\nsetuptools.setup(install_requires=R)', ["a"]),
        ('from setuptools import setup\nsetup(install_requires=open("r").read().split())', None),
        ('from setuptools import setup\nX = "a"\nsetup(install_requires=[X, "b"])', ["a", "b"]),
        ('from setuptools import setup\nsetup(install_requires=["a", f"{1}"])', None),
        ("def broken(:\n", None),
        ("print('no setup call')", None),
    ],
)
def test_setup_py_is_read_only_when_static(source: str, expected: list[str] | None) -> None:
    assert static_setup_requirements(source) == expected


def test_repo_config_from_a_table_checks_its_keys() -> None:
    config = RepoEnvConfig.from_mapping({"exclude": ["vllm"], "use_setup_py": False})
    assert config.excluded_names == frozenset({"vllm"}) and config.use_setup_py is False
    with pytest.raises(EnvConfigError, match="unknown environment key 'excludes'"):
        RepoEnvConfig.from_mapping({"excludes": ["vllm"]})
    with pytest.raises(EnvConfigError, match="must be a list of strings"):
        RepoEnvConfig.from_mapping({"exclude": "vllm"})


def test_the_shipped_verl_config_leaves_gpu_only_packages_out() -> None:
    config = known_repo_config("volcengine/verl")
    assert {"vllm", "sglang", "flash-attn"} <= config.excluded_names
    assert known_repo_config("someone/unknown") == RepoEnvConfig()


def fake_python(folder: Path, version: str) -> Path:
    """An executable that answers as an interpreter of ``version`` does when asked."""
    path = folder / f"python{version}"
    path.write_text(f"#!/bin/sh\necho {version} linux-x86_64\n")
    path.chmod(0o755)
    return path


def test_the_interpreter_is_the_runners_own_unless_requires_python_rules_it_out(
    tmp_path: Path,
) -> None:
    own = Path(sys.executable)
    newer = [fake_python(tmp_path, "3.14.0"), fake_python(tmp_path, "3.99.1")]
    assert choose_interpreter(None, own, newer) == own
    assert choose_interpreter(">=3.8", own, newer) == own
    # the oldest offered interpreter that fits, not the newest
    assert choose_interpreter(">=3.14", own, list(reversed(newer))) == newer[0]
    with pytest.raises(
        NoInterpreterError, match=r"needs Python >=4\.1 .*PROBEWATCH_RUNNER_PYTHONS"
    ):
        choose_interpreter(">=4.1", own, [*newer, tmp_path / "missing"])


def test_requires_python_is_read_from_the_pyproject_at_the_commit(tmp_path: Path) -> None:
    declared = '[project]\nname = "x"\nrequires-python = ">=3.12"\n'
    repo = make_repo(tmp_path / "repo", {"pyproject.toml": declared})
    assert read_requirements(*repo, RepoEnvConfig()).requires_python == ">=3.12"


def test_the_runner_names_its_interpreters_in_the_settings_or_the_watch_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    watch = WatchFile(runner=RunnerPins(pythons=[Path("/opt/py312/bin/python")]))
    settings = load_settings(home=tmp_path / "home")
    assert runner_pins(settings, watch).pythons == (Path("/opt/py312/bin/python"),)
    monkeypatch.setenv("PROBEWATCH_RUNNER_PYTHONS", "/a/python3.12:/b/python3.13")
    named = runner_pins(load_settings(home=tmp_path / "home"), watch).pythons
    assert named == (Path("/a/python3.12"), Path("/b/python3.13"))


def test_the_test_dependency_group_is_part_of_the_environment(tmp_path: Path) -> None:
    declared = (
        '[project]\nname = "x"\ndependencies = ["numpy"]\n[dependency-groups]\n'
        'base = ["pyyaml"]\ntest = ["pytest", "pydantic", {include-group = "base"}]\n'
        'docs = ["sphinx"]\n'
    )
    repo = make_repo(tmp_path / "repo", {"pyproject.toml": declared})
    config = RepoEnvConfig(requirement_files=(), use_setup_py=False)
    assert read_requirements(*repo, config).requirements == (
        "numpy",
        "pytest",
        "pydantic",
        "pyyaml",
    )
    none = RepoEnvConfig(requirement_files=(), use_setup_py=False, groups=())
    assert read_requirements(*repo, none).requirements == ("numpy",)
