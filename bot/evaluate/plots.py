"""The scores-over-time plot: one line per run and suite, with Wilson intervals, as SVG.

The series are plain data taken from the leaderboard (``plot_series``), so what
the plot draws is tested without reading pixels; ``render_svg`` draws them
server-side with matplotlib's Agg backend (imported only when a plot is drawn)
into a self-contained SVG the dashboard inlines: no JavaScript, no build step.
x: the time windows of merge time; y: a rate in %; each point carries its
interval as an error bar; with-probes lines are solid, original-tests lines
dashed in the same colour, so the gap between them is what the probes overturn.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

from bot.evaluate.leaderboard import Leaderboard, RunScores, SuiteScores
from task_registry.types import ScoreSuite

if TYPE_CHECKING:
    from matplotlib.axes import Axes

SVG_HEADER_END = "<svg"


class Metric(StrEnum):
    resolved_set = "resolved_set"
    resolved_count = "resolved_count"
    passed = "passed"


METRIC_LABELS = {
    Metric.resolved_set: "Resolved, set rule (%)",
    Metric.resolved_count: "Resolved, count rule (%)",
    Metric.passed: "Passed (%)",
}
SUITE_STYLES = {ScoreSuite.with_probes: "-", ScoreSuite.original: "--"}
SUITE_NAMES = {ScoreSuite.with_probes: "with probes", ScoreSuite.original: "original tests"}


@dataclass(frozen=True)
class Point:
    window: str
    value: float
    low: float
    high: float
    tasks: int


@dataclass(frozen=True)
class Series:
    run: str
    suite: ScoreSuite
    points: tuple[Point, ...]

    @property
    def label(self) -> str:
        return f"{self.run} ({SUITE_NAMES[self.suite]})"


def plot_series(
    leaderboard: Leaderboard,
    *,
    metric: Metric = Metric.resolved_set,
    suites: tuple[ScoreSuite, ...] = (ScoreSuite.with_probes, ScoreSuite.original),
) -> list[Series]:
    """What the plot draws: per run and suite, the metric in each window that has scored tasks."""
    return [_series(run, suite, metric) for run in leaderboard.runs for suite in suites]


def _series(run: RunScores, suite: ScoreSuite, metric: Metric) -> Series:
    points = []
    for group in run.windows:
        scores: SuiteScores = getattr(group, suite.value)
        if scores.tasks == 0:
            continue  # a window with faults only has no rate to draw
        rate = getattr(scores, metric.value)
        points.append(Point(group.key, rate.value, rate.low, rate.high, scores.tasks))
    return Series(run=run.run, suite=suite, points=tuple(points))


def windows_of(series: list[Series]) -> list[str]:
    """Every window any series has a point in, in time order (labels sort as time)."""
    return sorted({p.window for s in series for p in s.points})


def render_svg(
    series: list[Series], *, metric: Metric = Metric.resolved_set, title: str = ""
) -> str:
    """An SVG document of ``series`` (matplotlib, Agg); deterministic for the same data."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    from matplotlib.figure import Figure

    windows = windows_of(series)
    # Text stays text (searchable, small) and ids do not change between runs.
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "probewatch"}):
        figure = Figure(figsize=(8, 4), dpi=100)
        axes = figure.subplots()
        colours = _colours(series)
        for index, line in enumerate(series):
            _draw(axes, line, windows, colours[line.run], offset=_offset(index, len(series)))
        _decorate(axes, windows, metric, title or "Scores over time (contamination-free)")
        buffer = io.StringIO()
        figure.savefig(buffer, format="svg", metadata={"Date": None}, bbox_inches="tight")
    return buffer.getvalue()


def _colours(series: list[Series]) -> dict[str, str]:
    palette = [f"C{i}" for i in range(10)]
    runs = list(dict.fromkeys(s.run for s in series))
    return {run: palette[i % len(palette)] for i, run in enumerate(runs)}


def _offset(index: int, count: int) -> float:
    """A small sideways shift per line so equal points do not hide each other's error bars."""
    return (index - (count - 1) / 2) * 0.04 if count > 1 else 0.0


def _draw(axes: Axes, line: Series, windows: list[str], colour: str, offset: float) -> None:
    if not line.points:
        return
    xs = [windows.index(p.window) + offset for p in line.points]
    ys = [p.value for p in line.points]
    errors = [[p.value - p.low for p in line.points], [p.high - p.value for p in line.points]]
    axes.errorbar(
        xs,
        ys,
        yerr=errors,
        fmt=SUITE_STYLES[line.suite] + "o",
        color=colour,
        capsize=3,
        markersize=4,
        label=line.label,
    )


def _decorate(axes: Axes, windows: list[str], metric: Metric, title: str) -> None:
    axes.set_xticks(range(len(windows)), windows)
    axes.set_ylim(-5, 105)
    axes.set_ylabel(METRIC_LABELS[metric])
    axes.set_xlabel("merge window of the tasks (bars: 95% Wilson interval)")
    axes.set_title(title)
    axes.grid(True, alpha=0.3)
    if axes.get_legend_handles_labels()[0]:
        axes.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))


def inline_svg(document: str) -> str:
    """The ``<svg>`` element of an SVG document, without its XML prolog, to embed in HTML."""
    start = document.find(SVG_HEADER_END)
    return document[start:] if start >= 0 else document


def leaderboard_svg(leaderboard: Leaderboard, *, metric: Metric = Metric.resolved_set) -> str:
    return render_svg(plot_series(leaderboard, metric=metric), metric=metric)
