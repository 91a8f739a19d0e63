"""Leaderboard page benchmark: ``GET /leaderboard`` from several clients at once, against the
real app (uvicorn) in its own process, on a home that holds the demo's graded runs.

Prints the page's latency (p50/p99) over every request after a warm-up one, and checks the
goal: p50 < 100 ms with 4 concurrent clients. Without ``--home``, the demo is run first into a
fresh home (minutes: it mines, builds, validates and grades).

    python -m bench.service.leaderboard_load [--home HOME] [--clients 4] [--requests 50]
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.args import positive
from bench.service.webhook_load import free_port, percentile, wait_healthy

PAGE = "/leaderboard"
GOAL_P50_MS = 100.0


def serve_web(home: str, port: int) -> None:
    """The web process, as `probewatch serve --no-worker --no-scheduler` runs it."""
    import uvicorn

    from bot.context import AppContext
    from bot.service.app import create_app
    from bot.settings import Settings

    settings = Settings(home=Path(home), webhook_enabled=False)
    uvicorn.run(create_app(AppContext(settings)), host="127.0.0.1", port=port, log_level="warning")


def demo_home() -> str:
    """A fresh home with the demo's tasks, reports and graded reference agents."""
    from bot.context import AppContext
    from bot.demo.run import run_demo
    from bot.settings import Settings
    from task_registry.db import upgrade

    home = tempfile.mkdtemp(prefix="probewatch-bench-")
    context = AppContext(Settings(home=Path(home)))
    upgrade(context.engine)
    run_demo(engine=context.engine, settings=context.settings)
    return home


def client(base: str, requests: int, latencies: list[float], failures: list[int]) -> None:
    import httpx

    with httpx.Client(base_url=base, timeout=30) as http:
        for _ in range(requests):
            started = time.perf_counter()
            answer = http.get(PAGE)
            latencies.append((time.perf_counter() - started) * 1000)
            if answer.status_code != 200 or "<svg" not in answer.text:
                failures.append(answer.status_code)


def load(base: str, clients: int, requests: int) -> tuple[list[float], list[int]]:
    latencies: list[float] = []
    failures: list[int] = []
    threads = [
        threading.Thread(target=client, args=(base, requests, latencies, failures))
        for _ in range(clients)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return latencies, failures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", default=None, help="a home holding the demo; default: run it")
    parser.add_argument("--clients", type=positive, default=4)
    parser.add_argument("--requests", type=positive, default=50, help="per client")
    args = parser.parse_args(argv)

    home = args.home or demo_home()
    port = free_port()
    web = multiprocessing.get_context("spawn").Process(target=serve_web, args=(home, port))
    web.start()
    try:
        base = f"http://127.0.0.1:{port}"
        wait_healthy(base)
        load(base, 1, 1)  # warm-up: imports, templates, the first computation
        latencies, failures = load(base, args.clients, args.requests)
    finally:
        web.terminate()
        web.join(10)
    p50, p99 = percentile(latencies, 0.50), percentile(latencies, 0.99)
    print(
        f"{PAGE}: {len(latencies)} requests from {args.clients} clients on {home}\n"
        f"latency: p50 {p50:.1f} ms, p99 {p99:.1f} ms, max {max(latencies):.1f} ms, "
        f"mean {statistics.mean(latencies):.1f} ms; failed: {len(failures)}\n"
        f"goal (p50 < {GOAL_P50_MS:.0f} ms with 4 clients, no failure): "
        + ("met" if p50 < GOAL_P50_MS and not failures else "NOT met")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
