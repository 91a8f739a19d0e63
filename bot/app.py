"""The FastAPI application: health now; webhook, JSON API and dashboard join it later."""

from __future__ import annotations

from fastapi import FastAPI, Response, status

from bot.context import AppContext


def create_app(context: AppContext) -> FastAPI:
    app = FastAPI(title="probewatch", version="0.1.0")

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

    return app
