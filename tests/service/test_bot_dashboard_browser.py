"""Dashboard pages rendered by a real headless Chromium, driven over the DevTools protocol (its
pipe transport: NUL-separated JSON on fds 3/4), against a real uvicorn server on 127.0.0.1."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from sqlalchemy.engine import Engine

from tests.bot_support import NUMBER, REPO, make_bot, merged_event
from tests.github_emulator import GitHubEmulator

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--remote-debugging-pipe",
]
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (Debian: apt-get install -y chromium)"
)


class DevTools:
    """Just enough of the Chrome DevTools protocol: commands with ids, events by name."""

    def __init__(self, profile: Path) -> None:
        to_browser, self._write = os.pipe()
        self._read, from_browser = os.pipe()
        command = f'exec "$0" "$@" 3<&{to_browser} 4>&{from_browser}'
        self.process = subprocess.Popen(
            [
                "bash",
                "-c",
                command,
                CHROMIUM or "",
                *FLAGS,
                f"--user-data-dir={profile}",
                "about:blank",
            ],
            pass_fds=(to_browser, from_browser),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_browser)
        os.close(from_browser)
        self._buffer, self._next_id, self.events = b"", 0, []  # type: list[dict[str, Any]]

    def send(
        self, method: str, params: dict[str, Any] | None = None, session: str | None = None
    ) -> dict[str, Any]:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._write, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._receive()
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]
            self.events.append(reply)

    def wait_event(self, name: str, timeout_s: float = 20) -> dict[str, Any]:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for event in self.events:
                if event.get("method") == name:
                    self.events.remove(event)
                    return event
            self.events.append(self._receive())
        raise TimeoutError(name)

    def _receive(self) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            chunk = os.read(self._read, 65536)
            if not chunk:
                raise RuntimeError("chromium closed the DevTools pipe")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(raw)

    def open(self, url: str) -> str:
        """A new page showing ``url`` once loaded; returns its session id."""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"
        ]
        self.send("Page.enable", session=session)
        self.send("Page.navigate", {"url": url}, session=session)
        self.wait_event("Page.loadEventFired")
        return session

    def evaluate(self, session: str, expression: str) -> Any:
        result = self.send(
            "Runtime.evaluate", {"expression": expression, "returnByValue": True}, session
        )
        return result["result"].get("value")

    def close(self) -> None:
        with contextlib.suppress(RuntimeError, OSError):  # the browser may be gone already
            self.send("Browser.close")
        self.process.wait(timeout=10)
        os.close(self._write)
        os.close(self._read)


class _Server(uvicorn.Server):
    def install_signal_handlers(self) -> None:  # a server in a test thread leaves signals alone
        pass


@pytest.fixture
def dashboard(
    sqlite_engine: Engine, github_emulator: GitHubEmulator, tmp_path: Path
) -> Iterator[str]:
    bot = make_bot(sqlite_engine, github_emulator, tmp_path)
    bot.deliver("pull_request", merged_event(merge_sha=bot.merge_sha))
    bot.worker.run_until_idle()
    server = _Server(
        uvicorn.Config(
            bot.client.app, host="127.0.0.1", port=0, log_level="warning", lifespan="off"
        )
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[DevTools]:
    tools = DevTools(tmp_path / "profile")
    yield tools
    tools.close()


READ_COVERAGE = """JSON.stringify([...document.querySelectorAll('#coverage tbody tr')].map(tr => ({
  category: tr.dataset.category, verdict: tr.dataset.verdict, missed: tr.dataset.missed,
  probes: tr.querySelector('.probes').innerText.trim(),
  survivors: tr.querySelector('.survivors').innerText.trim()})))"""


def test_task_page_shows_the_coverage_table(dashboard: str, browser: DevTools) -> None:
    page = browser.open(f"{dashboard}/tasks/acme__infra-lib-{NUMBER}")

    rows = json.loads(browser.evaluate(page, READ_COVERAGE))

    assert [(r["category"], r["verdict"], r["missed"]) for r in rows] == [
        ("resource.traffic", "unchecked", "yes"),
        ("functional", "checked", "no"),
    ]
    assert (
        "probes/test_probe_sync_traffic.py [accepted]: snapshot, hollow, adversarial #1"
        in rows[0]["probes"]
    )
    assert (
        "force_branch_true pkg/sync.py:4 · caught by probes/test_probe_sync_traffic.py"
        in rows[0]["survivors"]
    )
    assert browser.evaluate(
        page, "document.querySelector('#validation tbody').innerText.trim()"
    ) == ("no validation runs yet")


def test_front_page_funnel_and_report_preview(dashboard: str, browser: DevTools) -> None:
    front = browser.open(dashboard + "/")
    funnel = browser.evaluate(
        front,
        f"[...document.querySelectorAll('#funnel tr[data-repo=\"{REPO}\"] td')].map(td => td.innerText)",
    )
    report = browser.open(f"{dashboard}/reports/{REPO}/{NUMBER}")
    status = browser.evaluate(report, "document.getElementById('report-status').innerText")
    body = browser.evaluate(report, "document.getElementById('report-body').innerText")

    assert funnel == [REPO, "1", "1", "0", "1", "1", "1"]
    assert status == "posted"
    assert body.startswith("<!-- probewatch:report v1 -->") and "force_branch_true" in body
