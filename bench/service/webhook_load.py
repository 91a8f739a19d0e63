"""Webhook load benchmark: signed deliveries at a steady rate on loopback, with forged and
duplicated ones mixed in, against the real app (uvicorn) in one process and a worker in another.

Prints the acknowledgement latency (p50/p99), how many deliveries were processed, rejected and
deduplicated, and checks the goals: p99 < 50 ms, no forged delivery accepted, no PR processed
twice. The worker's handler for mined PRs only records that it ran: this measures intake, the
queue and dedupe, not mining.

    python -m bench.service.webhook_load [--rate 100] [--seconds 10] [--database-url URL]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import random
import socket
import statistics
import sys
import tempfile
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

SECRET = "bench-secret"
REPO = "bench/repo"


@dataclass(frozen=True)
class Delivery:
    kind: str  # valid | forged | duplicate
    delivery_id: str
    body: bytes
    signature: str


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _context(database_url: str, home: str):  # type: ignore[no-untyped-def]
    from pydantic import SecretStr

    from bot.context import AppContext
    from bot.settings import Settings

    settings = Settings(
        home=Path(home),
        database_url=database_url,
        webhook_secret=SecretStr(SECRET),
        worker_poll_s=0.05,
        worker_lease_s=30,
    )
    return AppContext(settings)


def serve_web(database_url: str, home: str, port: int) -> None:
    """The web process, as `probewatch serve --no-worker --no-scheduler` runs it."""
    import uvicorn

    from bot.service.app import create_app

    uvicorn.run(
        create_app(_context(database_url, home)), host="127.0.0.1", port=port, log_level="warning"
    )


def serve_worker(database_url: str, home: str) -> None:
    """A worker-only process whose mine_pr handler just records that it ran."""
    from bot.service.jobs.handlers import route
    from bot.service.jobs.kinds import JobKind
    from bot.service.jobs.worker import Worker

    ran = route(JobKind.mine_pr, lambda ctx, payload: {"ran": True})
    Worker(_context(database_url, home), handlers={JobKind.mine_pr: ran}).run_forever()


def make_deliveries(count: int, seed: int = 7) -> list[Delivery]:
    from bot.service.webhook import signature_for

    valid = []
    for number in range(1, count + 1):
        payload = {
            "action": "closed",
            "pull_request": {
                "number": number,
                "merged": True,
                "merge_commit_sha": f"{number:040x}",
            },
            "repository": {"full_name": REPO},
        }
        body = json.dumps(payload).encode()
        valid.append(
            Delivery("valid", str(uuid.uuid4()), body, signature_for(SECRET.encode(), body))
        )
    rng = random.Random(seed)
    forged = [
        Delivery("forged", str(uuid.uuid4()), d.body, signature_for(b"wrong-secret", d.body))
        for d in rng.sample(valid, count // 10)
    ]
    duplicates = [
        Delivery("duplicate", d.delivery_id, d.body, d.signature)
        for d in rng.sample(valid, count // 10)
    ]
    mixed = valid + forged
    rng.shuffle(mixed)
    for duplicate in duplicates:  # a duplicate always comes after its original
        first = next(i for i, d in enumerate(mixed) if d.delivery_id == duplicate.delivery_id)
        mixed.insert(rng.randint(first + 1, len(mixed)), duplicate)
    return mixed


async def send_all(
    base: str, deliveries: list[Delivery], rate: float
) -> list[tuple[Delivery, int, str, float]]:
    import httpx

    results: list[tuple[Delivery, int, str, float]] = []
    async with httpx.AsyncClient(base_url=base, limits=httpx.Limits(max_connections=64)) as client:

        async def one(delivery: Delivery) -> None:
            headers = {
                "X-GitHub-Event": "pull_request",
                "X-GitHub-Delivery": delivery.delivery_id,
                "X-Hub-Signature-256": delivery.signature,
                "Content-Type": "application/json",
            }
            started = time.perf_counter()
            answer = await client.post("/webhook", content=delivery.body, headers=headers)
            elapsed = time.perf_counter() - started
            try:
                status = answer.json().get("status", "")
            except ValueError:
                status = f"error: {answer.text[:80]}"
            results.append((delivery, answer.status_code, status, elapsed))

        start, tasks = time.perf_counter(), []
        for index, delivery in enumerate(deliveries):
            delay = start + index / rate - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(one(delivery)))
        await asyncio.gather(*tasks)
    return results


def wait_healthy(base: str, timeout_s: float = 30) -> None:
    import httpx

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if httpx.get(base + "/healthz").status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise SystemExit("the service did not come up")


def drain(database_url: str, expected: int, timeout_s: float = 120) -> dict[str, Any]:
    from sqlmodel import select

    from task_registry.db import make_engine, session_scope
    from task_registry.models import Job

    engine, deadline = make_engine(database_url), time.monotonic() + timeout_s
    while True:
        with session_scope(engine) as session:
            jobs = session.exec(select(Job).where(Job.kind == "mine_pr")).all()
            done = [j for j in jobs if j.status == "done"]
            numbers = Counter(j.payload["number"] for j in jobs)
            if len(done) >= expected or time.monotonic() > deadline:
                return {
                    "jobs": len(jobs),
                    "done": len(done),
                    "retried": sum(j.attempts > 1 for j in jobs),
                    "same_pr_twice": sum(n - 1 for n in numbers.values() if n > 1),
                }
        time.sleep(0.2)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=100.0, help="signed deliveries per second")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--database-url", default=None, help="default: a fresh SQLite file")
    args = parser.parse_args()

    from task_registry.db import make_engine, upgrade

    home = tempfile.mkdtemp(prefix="probewatch-bench-")
    database_url = args.database_url or f"sqlite:///{home}/bench.db"
    upgrade(make_engine(database_url))
    deliveries = make_deliveries(int(args.rate * args.seconds))
    port = free_port()
    spawn = multiprocessing.get_context("spawn")
    processes = [
        spawn.Process(target=serve_web, args=(database_url, home, port)),
        spawn.Process(target=serve_worker, args=(database_url, home)),
    ]
    for process in processes:
        process.start()
    try:
        base = f"http://127.0.0.1:{port}"
        wait_healthy(base)
        total_rate = args.rate * len(deliveries) / int(args.rate * args.seconds)
        results = asyncio.run(send_all(base, deliveries, total_rate))
        valid = sum(d.kind == "valid" for d in deliveries)
        queue = drain(database_url, valid)
    finally:
        for process in processes:
            process.terminate()
            process.join(10)
    report(results, queue, args)


def report(
    results: list[tuple[Delivery, int, str, float]], queue: dict[str, Any], args: argparse.Namespace
) -> None:
    latencies = [elapsed * 1000 for *_, elapsed in results]
    forged_accepted = sum(1 for d, code, *_ in results if d.kind == "forged" and code < 400)
    rejected = sum(1 for _, code, *_ in results if code == 401)
    deduplicated = sum(1 for _, _, status, _ in results if status == "duplicate")
    errors = Counter(status for _, code, status, _ in results if code >= 500)
    p50, p99 = percentile(latencies, 0.50), percentile(latencies, 0.99)
    twice = queue["retried"] + queue["same_pr_twice"]
    lines = [
        f"sent {len(results)} deliveries in {args.seconds:.0f} s "
        f"({args.rate:.0f}/s signed + 10% forged + 10% duplicated)",
        f"ack latency: p50 {p50:.1f} ms, p99 {p99:.1f} ms, max {max(latencies):.1f} ms, "
        f"mean {statistics.mean(latencies):.1f} ms",
        f"processed: {queue['done']} of {queue['jobs']} jobs; rejected (401): {rejected}; "
        f"deduplicated: {deduplicated}",
        f"forged accepted: {forged_accepted}; processed twice: {twice}; "
        f"server errors: {dict(errors)}",
    ]
    goals = p99 < 50 and forged_accepted == 0 and twice == 0
    lines.append(
        "goals (p99 < 50 ms, 0 forged accepted, 0 processed twice): "
        + ("met" if goals else "NOT met")
    )
    print("\n".join(lines))


if __name__ == "__main__":
    main()
