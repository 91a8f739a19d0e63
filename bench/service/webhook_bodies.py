"""Webhook bodies under attack: what large posts cost the web process before authentication.

Starts the real app (uvicorn, as `probewatch serve --no-worker` runs it) in a process of its
own and samples its resident memory while N clients at once each announce a body of the
webhook's size cap and stream it: unsigned posts (refused on their headers, before the body),
then posts with a wrong signature (read while the HMAC is computed, at most the concurrency
cap at once, the rest answered 503). Prints the answers and the RSS before, at peak and
after, and checks the goal: the peak stays within 100 MiB of the idle process.

    python -m bench.service.webhook_bodies [--clients 12] [--megabytes 25]
"""

from __future__ import annotations

import argparse
import multiprocessing
import socket
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.args import positive
from bench.service.webhook_load import free_port, serve_web, wait_healthy

CHUNK = 1 << 20
GOAL_MIB = 100


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def post(port: int, size: int, headers: dict[str, str], answers: Counter[str]) -> None:
    """Announce ``size`` bytes and stream them until the server answers or closes."""
    head = [
        "POST /webhook HTTP/1.1",
        "Host: 127.0.0.1",
        f"Content-Length: {size}",
        *(f"{k}: {v}" for k, v in headers.items()),
    ]
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
            sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
            sent, chunk = 0, b"x" * CHUNK
            sock.settimeout(0.0)
            while sent < size:
                try:
                    reply = sock.recv(4096)
                    if reply:
                        answers[reply.split(b" ", 2)[1].decode()] += 1
                        return
                except BlockingIOError:
                    pass
                sock.settimeout(60)
                sock.sendall(chunk[: size - sent])
                sent += min(CHUNK, size - sent)
                sock.settimeout(0.0)
            sock.settimeout(60)
            answers[sock.recv(4096).split(b" ", 2)[1].decode()] += 1
    except OSError as exc:
        answers[f"closed ({type(exc).__name__})"] += 1


def wave(port: int, pid: int, clients: int, size: int, headers: dict[str, str]) -> dict:
    answers: Counter[str] = Counter()
    threads = [
        threading.Thread(target=post, args=(port, size, headers, answers)) for _ in range(clients)
    ]
    peak, started = rss_mib(pid), time.monotonic()
    for thread in threads:
        thread.start()
    while any(t.is_alive() for t in threads):
        peak = max(peak, rss_mib(pid))
        time.sleep(0.02)
    return {"answers": dict(answers), "peak": peak, "seconds": time.monotonic() - started}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=positive, default=12)
    parser.add_argument("--megabytes", type=positive, default=25)
    args = parser.parse_args(argv)

    from task_registry.db import make_engine, upgrade

    home = tempfile.mkdtemp(prefix="probewatch-bench-")
    database_url = f"sqlite:///{home}/bench.db"
    upgrade(make_engine(database_url))
    port = free_port()
    web = multiprocessing.get_context("spawn").Process(
        target=serve_web, args=(database_url, home, port)
    )
    web.start()
    try:
        wait_healthy(f"http://127.0.0.1:{port}")
        assert web.pid is not None
        idle = rss_mib(web.pid)
        size = args.megabytes * 1024 * 1024 - 1024  # within the cap: read, then refused
        unsigned = {"X-GitHub-Event": "pull_request", "X-GitHub-Delivery": "u"}
        forged = {**unsigned, "X-Hub-Signature-256": "sha256=" + "0" * 64}
        first = wave(port, web.pid, args.clients, size, unsigned)
        second = wave(port, web.pid, args.clients, size, forged)
        after = rss_mib(web.pid)
    finally:
        web.terminate()
        web.join(10)
    peak = max(first["peak"], second["peak"])
    print(f"{args.clients} clients at once, {args.megabytes} MB each")
    print(f"  unsigned:      {first['answers']} in {first['seconds']:.1f}s")
    print(f"  bad signature: {second['answers']} in {second['seconds']:.1f}s")
    print(
        f"RSS of the web process: idle {idle:.0f} MiB, peak {peak:.0f} MiB, after {after:.0f} MiB"
    )
    ok = peak - idle <= GOAL_MIB
    print(f"goal: peak within {GOAL_MIB} MiB of idle: {'met' if ok else 'NOT met'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
