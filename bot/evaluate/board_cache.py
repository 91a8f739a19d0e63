"""The leaderboard and its plot, computed once per version of the stored scores.

Building the board reads every scored submission and drawing its plot runs matplotlib; both
cost far more than a page may take, and both change only when scores do. A
:class:`BoardCache` keeps the last board and plot per window and margin together with the
scores' version (``task_registry.evaluation.scores_version``, a few aggregates read on every
request) and recomputes only when that version moved: a grade stored by a worker or the CLI in
another process shows on the next request. One computation at a time, so a burst of requests
right after a grade does not draw the same plot once per request.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

from sqlmodel import Session

from bot.evaluate.leaderboard import Leaderboard, build_leaderboard
from bot.evaluate.plots import inline_svg, leaderboard_svg
from task_registry.evaluation import scores_version
from task_registry.scoring import Window

MAX_VIEWS = 16  # (window, margin) views kept; the least recently shown goes first


@dataclass(frozen=True)
class BoardView:
    """What the page shows: the board, its plot as inline SVG, and the version they are of."""

    board: Leaderboard
    svg: str
    version: str


class BoardCache:
    def __init__(self, max_views: int = MAX_VIEWS) -> None:
        self._views: OrderedDict[tuple[Window, int], BoardView] = OrderedDict()
        self._lock = threading.Lock()
        self.max_views = max_views

    def view(self, *, session: Session, window: Window, margin_days: int) -> BoardView:
        """The board for ``window`` and ``margin_days`` as the stored scores are now."""
        key = (window, margin_days)
        version = scores_version(session=session)
        with self._lock:
            cached = self._views.get(key)
            if cached is None or cached.version != version:
                board = build_leaderboard(session=session, window=window, margin_days=margin_days)
                cached = BoardView(board, inline_svg(leaderboard_svg(board)), version)
                self._views[key] = cached
            self._views.move_to_end(key)
            while len(self._views) > self.max_views:
                self._views.popitem(last=False)
            return cached
