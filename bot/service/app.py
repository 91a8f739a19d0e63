"""The FastAPI application: health, the webhook, the JSON API and the dashboard.

``create_app`` mounts every router on one app. On start-up (the lifespan) it
refuses to run with the webhook enabled and no webhook secret: an unsigned
webhook would let anyone queue work.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from http import HTTPStatus
from urllib.parse import unquote_plus

from fastapi import FastAPI, Request, Response, status
from fastapi.responses import JSONResponse

from bot.context import AppContext
from bot.service.intake import GroupCommitWriter
from bot.settings import Settings

CONTROL_CHARACTER = re.compile(r"[\x00-\x1f\x7f]")


def create_app(context: AppContext) -> FastAPI:
    """The app on ``context``: its settings and registry are what every route depends on
    (``bot.service.deps``)."""
    from bot.service.api import make_api_router
    from bot.service.dashboard import make_dashboard_router
    from bot.service.leaderboard_page import make_leaderboard_router
    from bot.service.webhook import make_webhook_router

    settings = context.settings
    secret = (
        settings.webhook_secret.get_secret_value().encode() if settings.webhook_secret else None
    )
    writer = GroupCommitWriter(context.engine)
    app = FastAPI(title="probewatch", version="0.1.0", lifespan=_lifespan(settings, secret, writer))
    app.state.context = context
    _add_health(app, context)
    _add_error_handlers(app)
    _refuse_control_characters(app)
    if settings.webhook_enabled:
        app.include_router(
            make_webhook_router(
                writer,
                secret,
                settings.webhook_max_body_bytes,
                settings.webhook_max_concurrent_bodies,
            )
        )
    app.include_router(make_api_router())
    app.include_router(make_dashboard_router())
    app.include_router(make_leaderboard_router())
    return app


def _lifespan(settings: Settings, secret: bytes | None, writer: GroupCommitWriter):  # type: ignore[no-untyped-def]
    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        check_webhook_secret(settings, secret)
        yield
        writer.stop()

    return lifespan


def check_webhook_secret(settings: Settings, secret: bytes | None) -> None:
    from bot.service.webhook import NO_SECRET, WebhookConfigError

    if settings.webhook_enabled and not secret:
        raise WebhookConfigError(NO_SECRET)


def _add_health(app: FastAPI, context: AppContext) -> None:
    @app.get("/healthz")
    def healthz(response: Response) -> dict[str, str]:
        """200 when the database answers and its schema is current, else 503."""
        from task_registry.db import SchemaOutOfDate, check_schema

        try:
            revision = check_schema(context.engine)
        except SchemaOutOfDate as exc:
            response.status_code = status.HTTP_503_SERVICE_UNAVAILABLE
            return {"status": "schema out of date", "detail": str(exc)}
        return {"status": "ok", "schema": revision}


def _refuse_control_characters(app: FastAPI) -> None:
    """A URL whose path or query holds a control character (``%00``, a newline) is a 400:
    no route has a use for one, and PostgreSQL refuses a NUL in text with an error."""

    @app.middleware("http")
    async def refuse(request: Request, call_next):  # type: ignore[no-untyped-def]
        query = unquote_plus(request.url.query)
        if CONTROL_CHARACTER.search(request.url.path) or CONTROL_CHARACTER.search(query):
            detail = "the URL holds a control character (such as %00); remove it"
            return JSONResponse({"detail": detail}, status_code=status.HTTP_400_BAD_REQUEST)
        return await call_next(request)


def _add_error_handlers(app: FastAPI) -> None:
    """Domain errors become a 4xx with the message as detail; the most specific class wins."""
    from probewatch.errors import ProbewatchError
    from task_registry.errors import AlreadyExists, InvalidTransition, NotFound

    codes = {
        NotFound: status.HTTP_404_NOT_FOUND,
        AlreadyExists: status.HTTP_409_CONFLICT,
        InvalidTransition: status.HTTP_409_CONFLICT,
        ProbewatchError: HTTPStatus.UNPROCESSABLE_ENTITY,
    }
    for kind, code in codes.items():
        app.add_exception_handler(kind, _answer_with(code))


def _answer_with(code: int):  # type: ignore[no-untyped-def]
    async def answer(_: Request, exc: Exception) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=code)

    return answer
