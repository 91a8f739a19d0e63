from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from bot.settings import Environment, Settings


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in list(__import__("os").environ):
        if name.startswith("PROBEWATCH_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)  # no stray .env from the caller's folder


def test_defaults_put_a_sqlite_file_in_the_home_folder() -> None:
    settings = Settings()
    assert settings.home == Path("~/.probewatch").expanduser()
    assert settings.resolved_database_url == f"sqlite:///{settings.home / 'probewatch.db'}"
    assert settings.environment is Environment.development


def test_environment_variables_use_the_probewatch_prefix(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PROBEWATCH_HOME", str(tmp_path / "h"))
    monkeypatch.setenv("PROBEWATCH_GITHUB_TOKEN", "ghp_secret")
    settings = Settings()
    assert settings.home == tmp_path / "h"
    assert settings.github_token is not None
    assert settings.github_token.get_secret_value() == "ghp_secret"
    assert "ghp_secret" not in repr(settings)


def test_dotenv_file_is_read(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("PROBEWATCH_DATABASE_URL=postgresql+psycopg://u@h/db\n")
    assert Settings().resolved_database_url == "postgresql+psycopg://u@h/db"


def test_github_app_needs_an_id_and_a_key() -> None:
    assert not Settings(github_app_id=12).has_github_app
    assert Settings(github_app_id=12, github_app_private_key="-----BEGIN").has_github_app


def test_production_refuses_sqlite() -> None:
    with pytest.raises(ValidationError, match="PostgreSQL"):
        Settings(environment="production", admin_token="x")


def test_production_refuses_a_missing_admin_token() -> None:
    with pytest.raises(ValidationError, match="ADMIN_TOKEN"):
        Settings(environment="production", database_url="postgresql+psycopg://u@h/db")


def test_production_accepts_postgres_and_a_token() -> None:
    settings = Settings(
        environment="production", database_url="postgresql+psycopg://u@h/db", admin_token="x"
    )
    assert settings.environment is Environment.production


def test_the_openai_author_needs_an_endpoint_and_a_model() -> None:
    assert Settings().author == "mechanical"
    with pytest.raises(ValidationError, match="OPENAI_BASE_URL"):
        Settings(author="openai")
    settings = Settings(
        author="openai", openai_base_url="http://127.0.0.1:8000/v1", openai_model="m"
    )
    assert settings.openai_model == "m"
