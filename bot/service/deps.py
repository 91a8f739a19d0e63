"""What a route depends on, obtained one way: the settings, a registry session, the admin.

``create_app`` puts the one :class:`~bot.context.AppContext` on ``app.state``; routes
never read settings or the engine from anywhere else. ``SettingsDep`` and ``Db`` are
the FastAPI template's ``deps`` style: annotate a parameter with them and FastAPI
hands it in. The bounded parameter types (``RowId``, ``Offset``, ``RepoFilter`` …) are
how every route reads ids, offsets and repository names from a URL.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, HTTPException, Path, Query, Request, status
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlmodel import Session

from bot.context import AppContext
from bot.settings import Settings
from probewatch.names import NAME_MAX, OWNER_MAX, REPO_NAME_MAX, REPO_NAME_PATTERN
from task_registry.db import session_scope
from task_registry.types import MAX_PR_NUMBER, MAX_ROW_ID

_bearer = HTTPBearer(auto_error=False)


def get_context(request: Request) -> AppContext:
    context: AppContext = request.app.state.context
    return context


def get_settings(request: Request) -> Settings:
    return get_context(request).settings


def get_session(request: Request) -> Iterator[Session]:
    """A session on the app's registry, committed after the request."""
    with session_scope(get_context(request).engine) as db:
        yield db


def require_admin(
    settings: Annotated[Settings, Depends(get_settings)],
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> str:
    if settings.admin_token is None:
        raise HTTPException(
            status.HTTP_403_FORBIDDEN, "writes are disabled: no admin token is configured"
        )
    token = settings.admin_token.get_secret_value()
    if credentials is None or not hmac.compare_digest(credentials.credentials, token):
        raise HTTPException(
            status.HTTP_401_UNAUTHORIZED,
            "a write needs Authorization: Bearer <admin token>",
            headers={"WWW-Authenticate": "Bearer"},
        )
    return "admin"


SettingsDep = Annotated[Settings, Depends(get_settings)]
Db = Annotated[Session, Depends(get_session)]
Admin = Annotated[str, Depends(require_admin)]

# Input as the registry can hold it: an id, an offset or a number beyond what its column
# holds, or a repository that is not owner/name, is a 422 with the reason, not a 500.
RowId = Annotated[int, Path(ge=1, le=MAX_ROW_ID)]
PullNumber = Annotated[int, Path(ge=1, le=MAX_PR_NUMBER)]
Offset = Annotated[int, Query(ge=0, le=MAX_ROW_ID)]
RepoFilter = Annotated[str | None, Query(max_length=REPO_NAME_MAX, pattern=REPO_NAME_PATTERN)]
Owner = Annotated[str, Path(max_length=OWNER_MAX, pattern=r"^[A-Za-z0-9_.-]+$")]
RepoShortName = Annotated[str, Path(max_length=NAME_MAX, pattern=r"^[A-Za-z0-9_.-]+$")]
InstanceId = Annotated[str, Path(max_length=300)]
