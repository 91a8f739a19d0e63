"""GitHubEmulator runs the emulator app with uvicorn on 127.0.0.1 in a daemon thread, on a free port
chosen by the OS, so any number of emulators can live in one pytest process. It exposes the base
URL, the shared EmulatorState, the request log, and a factory for PyGithub clients pointed at it.
"""

from __future__ import annotations

import asyncio
import threading
import time
from types import TracebackType
from typing import Any, Self

import github
import uvicorn

from .app import create_app
from .state import EmulatorState, RequestRecord

START_TIMEOUT_S = 5.0


class _Server(uvicorn.Server):
    async def main_loop(self) -> None:
        # uvicorn polls should_exit every 0.1 s; polling faster keeps per-test teardown short.
        counter = 0
        while not await self.on_tick(counter):
            counter = (counter + 1) % 864_000
            await asyncio.sleep(0.01)


class GitHubEmulator:
    """A local GitHub REST API; use as a context manager or call start()/stop()."""

    def __init__(self, state: EmulatorState | None = None, *, host: str = "127.0.0.1") -> None:
        self.state = state or EmulatorState()
        self.host = host
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._base_url: str | None = None

    @property
    def base_url(self) -> str:
        if self._base_url is None:
            raise RuntimeError("GitHubEmulator is not running; call start() first")
        return self._base_url

    def url(self, path: str) -> str:
        """Absolute URL of an API path such as '/repos/o/r'."""
        return self.base_url + path

    def start(self) -> Self:
        if self._server is not None:
            raise RuntimeError("GitHubEmulator already started")
        config = uvicorn.Config(
            create_app(self),
            host=self.host,
            port=0,
            log_level="warning",
            lifespan="off",
            access_log=False,
            timeout_graceful_shutdown=1,
        )
        self._server = _Server(config)
        self._thread = threading.Thread(
            target=self._server.run, name="github-emulator", daemon=True
        )
        self._thread.start()
        self._wait_started()
        port = self._server.servers[0].sockets[0].getsockname()[1]
        self._base_url = f"http://{self.host}:{port}"
        self.state.base_url = self._base_url
        return self

    def _wait_started(self) -> None:
        assert self._server is not None and self._thread is not None
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self._server.should_exit = True
                raise RuntimeError("GitHub emulator failed to start")
            time.sleep(0.002)

    def stop(self) -> None:
        if self._server is None or self._thread is None:
            return
        self._server.should_exit = True
        self._thread.join(timeout=START_TIMEOUT_S)
        self._server = None
        self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def requests(self) -> list[RequestRecord]:
        """Snapshot of every request served so far, oldest first."""
        return self.state.requests

    def reset_log(self) -> None:
        self.state.reset_log()

    def count(
        self,
        method: str | None = None,
        path_contains: str | None = None,
        *,
        route: str | None = None,
        status: int | None = None,
    ) -> int:
        """How many logged requests match every given filter (`route` is the route template)."""
        return sum(
            1
            for r in self.requests
            if method in (None, r.method)
            and (path_contains is None or path_contains in r.path)
            and route in (None, r.route)
            and status in (None, r.status)
        )

    def github(self, token: str = "t", **kwargs: Any) -> github.Github:
        """A PyGithub client on this emulator; request spacing is off unless passed explicitly."""
        kwargs.setdefault("seconds_between_requests", None)
        kwargs.setdefault("seconds_between_writes", None)
        return github.Github(base_url=self.base_url, auth=github.Auth.Token(token), **kwargs)
