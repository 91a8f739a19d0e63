"""What a route depends on, obtained one way: the settings, a registry session, the admin.

``create_app`` puts the one :class:`~bot.context.AppContext` on ``app.state``; routes
never read settings or the engine from anywhere else. ``SettingsDep`` and ``Db`` are
the FastAPI template's ``deps`` style: annotate a parameter with them and FastAPI
hands it in.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, HTTPException, Request, status
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlmodel import Session

from bot.context import AppContext
from bot.settings import Settings
from task_registry.db import session_scope

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
