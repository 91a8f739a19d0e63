"""The leaderboard on the web: ``GET /leaderboard`` (the table and the plot, server-rendered)
and ``GET /api/leaderboard`` (the same data as JSON). Both read ``bot.evaluate.leaderboard``
through one :class:`~bot.evaluate.board_cache.BoardCache`, recomputed only when the stored
scores change; the plot is an inline SVG drawn on the server, so the page needs no JavaScript."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from bot.evaluate.board_cache import BoardCache
from bot.evaluate.leaderboard import UNSANDBOXED_FOOTNOTE, Leaderboard, RateOut
from bot.service.deps import Db
from bot.service.pages import TEMPLATES
from task_registry.scoring import Window

MAX_MARGIN_DAYS = 3650
WindowQuery = Annotated[Window, Query(description="time window of the series: month or quarter")]
MarginQuery = Annotated[
    int, Query(ge=0, le=MAX_MARGIN_DAYS, description="days after the cutoff a task must wait")
]


def format_rate(rate: RateOut) -> str:
    """``67% [21-94]``: the rate and its 95% Wilson interval, short enough for one line."""
    return rate.label()


def make_leaderboard_router() -> APIRouter:
    router = APIRouter()
    cache = BoardCache()

    @router.get("/api/leaderboard", response_model=Leaderboard, tags=["api"])
    def leaderboard_json(
        db: Db, window: WindowQuery = Window.month, margin_days: MarginQuery = 0
    ) -> Leaderboard:
        return cache.view(session=db, window=window, margin_days=margin_days).board

    @router.get("/leaderboard", response_class=HTMLResponse, include_in_schema=False)
    def leaderboard_page(
        request: Request, db: Db, window: WindowQuery = Window.month, margin_days: MarginQuery = 0
    ) -> HTMLResponse:
        view = cache.view(session=db, window=window, margin_days=margin_days)
        context = {
            "board": view.board,
            "svg": view.svg,
            "rate": format_rate,
            "unsandboxed_footnote": UNSANDBOXED_FOOTNOTE,
        }
        return TEMPLATES.TemplateResponse(request, "leaderboard.html", context)

    return router
