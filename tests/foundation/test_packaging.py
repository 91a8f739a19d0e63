"""The deployable artefacts stay consistent with the code they deploy."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).parents[2]


def test_layout_is_the_design_cards() -> None:
    for name in (
        "bot",
        "pr_miner",
        "probe_builder",
        "runners",
        "task_registry",
        "gh_actions",
        "tests",
    ):
        assert (ROOT / name).is_dir(), name
    for name in ("pyproject.toml", "README.md", "Dockerfile", "docker-compose.yml", ".ci/run"):
        assert (ROOT / name).is_file(), name


def test_torch_is_only_an_extra() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert not any(dep.lower().startswith("torch") for dep in project["dependencies"])
    assert any(dep.startswith("torch") for dep in project["optional-dependencies"]["probes"])
    assert project["scripts"]["probewatch"] == "bot.cli.main:main"


def test_dockerfile_serves_and_checks_health_as_non_root() -> None:
    text = (ROOT / "Dockerfile").read_text()
    assert re.search(r"^USER probewatch$", text, re.M)
    assert "/healthz" in text.split("HEALTHCHECK", 1)[1]
    cmd = json.loads(re.search(r"^CMD (\[.*\])$", text, re.M).group(1))  # type: ignore[union-attr]
    assert cmd[:2] == ["probewatch", "serve"]


def test_compose_migrates_before_serving() -> None:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = compose["services"]
    assert services["migrate"]["command"] == ["probewatch", "db", "upgrade"]
    assert (
        services["probewatch"]["depends_on"]["migrate"]["condition"]
        == "service_completed_successfully"
    )
    assert services["probewatch"]["environment"]["PROBEWATCH_DATABASE_URL"].startswith(
        "postgresql+psycopg://"
    )


def test_readme_opens_with_the_two_commands_ci_runs() -> None:
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```bash\n(.*?)```", readme, re.S)
    assert [b.strip() for b in blocks[:2]] == ["make demo", "make test"]
    assert "make test" in (ROOT / ".ci/run").read_text()
