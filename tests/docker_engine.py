"""A local Docker Engine API emulator for tests of the Docker backend's engine path.

The docker SDK talks real HTTP to a uvicorn server on 127.0.0.1 that answers the few endpoints a
detached run uses (create, start, inspect, wait, logs, kill, remove; image pull for a missing
image) in the engine's JSON shapes. Nothing is executed: when a container starts, a test-supplied
``behaviour`` receives the create request (its ``Config`` and ``HostConfig``, with binds resolved
to host folders) and says how the container ends, writing into bound host folders what the real
container would have written. It stands in for the one thing this machine lacks, the engine.
"""

from __future__ import annotations

import asyncio
import struct
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

API_VERSION = "1.43"


@dataclass(frozen=True)
class Exit:
    """How an emulated container ends."""

    code: int = 0
    oom_killed: bool = False
    logs: str = ""
    hang: bool = False  # runs until killed


@dataclass
class Container:
    id: str
    body: dict[str, Any]  # the create request: Config fields plus HostConfig
    name: str | None
    state: str = "created"
    exit: Exit = field(default_factory=Exit)
    done: threading.Event = field(default_factory=threading.Event)
    killed: bool = False
    removed: bool = False

    @property
    def host_config(self) -> dict[str, Any]:
        return dict(self.body.get("HostConfig") or {})

    def host_path(self, container_path: str) -> Path:
        """The host folder bound at ``container_path``."""
        for bind in self.host_config.get("Binds") or []:
            source, target, *_ = bind.split(":")
            if target == container_path:
                return Path(source)
        raise KeyError(f"nothing bound at {container_path}")


Behaviour = Callable[[Container], Exit]


class DockerEngineEmulator:
    """Serves the emulated engine; ``images`` lists the images it has."""

    def __init__(self, behaviour: Behaviour, *, images: tuple[str, ...] = ()) -> None:
        self.behaviour = behaviour
        self.images = set(images)
        self.containers: dict[str, Container] = {}
        self.pulls: list[str] = []
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.base_url = ""

    def __enter__(self) -> DockerEngineEmulator:
        config = uvicorn.Config(
            self._app(),
            host="127.0.0.1",
            port=0,
            log_level="warning",
            lifespan="off",
            access_log=False,
            timeout_graceful_shutdown=1,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 5
        while not self._server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("docker engine emulator did not start")
            time.sleep(0.005)
        port = self._server.servers[0].sockets[0].getsockname()[1]
        self.base_url = f"tcp://127.0.0.1:{port}"
        return self

    def __exit__(self, *exc: object) -> None:
        for container in self.containers.values():
            container.done.set()
        assert self._server is not None and self._thread is not None
        self._server.should_exit = True
        self._thread.join(timeout=5)

    def client(self) -> Any:
        import docker

        return docker.DockerClient(base_url=self.base_url, version=API_VERSION, timeout=10)

    def only(self) -> Container:
        (container,) = self.containers.values()
        return container

    def _app(self) -> FastAPI:
        app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)
        prefix = f"/v{API_VERSION}"

        @app.post(prefix + "/containers/create")
        async def create(request: Request, name: str | None = None) -> Response:
            body = await request.json()
            if body.get("Image") not in self.images:
                return _error(404, f"No such image: {body.get('Image')}")
            container = Container(id=uuid.uuid4().hex, body=body, name=name)
            self.containers[container.id] = container
            return JSONResponse({"Id": container.id, "Warnings": []}, status_code=201)

        @app.post(prefix + "/images/create")
        def pull(fromImage: str, tag: str | None = None) -> Response:
            self.pulls.append(f"{fromImage}:{tag}" if tag else fromImage)
            return _error(404, f"pull access denied for {fromImage}, repository does not exist")

        @app.post(prefix + "/containers/{cid}/start")
        def start(cid: str) -> Response:
            container = self.containers[cid]
            container.state = "running"
            container.exit = self.behaviour(container)
            if not container.exit.hang:
                container.state = "exited"
                container.done.set()
            return Response(status_code=204)

        @app.get(prefix + "/containers/{cid}/json")
        def inspect(cid: str) -> Response:
            if cid not in self.containers or self.containers[cid].removed:
                return _error(404, f"No such container: {cid}")
            return JSONResponse(_inspect(self.containers[cid]))

        @app.post(prefix + "/containers/{cid}/wait")
        async def wait(cid: str) -> Response:
            container = self.containers[cid]
            while not container.done.is_set():
                await asyncio.sleep(0.01)
            return JSONResponse({"StatusCode": container.exit.code, "Error": None})

        @app.get(prefix + "/containers/{cid}/logs")
        def logs(cid: str) -> Response:
            text = self.containers[cid].exit.logs.encode()
            frame = struct.pack(">BxxxL", 1, len(text)) + text if text else b""
            return Response(frame, media_type="application/vnd.docker.raw-stream")

        @app.post(prefix + "/containers/{cid}/kill")
        def kill(cid: str) -> Response:
            container = self.containers[cid]
            container.killed = True
            container.exit = Exit(code=137)
            container.state = "exited"
            container.done.set()
            return Response(status_code=204)

        @app.delete(prefix + "/containers/{cid}")
        def remove(cid: str, force: bool = False) -> Response:
            container = self.containers[cid]
            if container.state == "running" and not force:
                return _error(409, "You cannot remove a running container")
            container.removed = True
            container.done.set()
            return Response(status_code=204)

        return app


def _inspect(container: Container) -> dict[str, Any]:
    config = {k: v for k, v in container.body.items() if k != "HostConfig"}
    return {
        "Id": container.id,
        "Name": f"/{container.name or container.id[:12]}",
        "Config": {**config, "Tty": False},
        "HostConfig": container.host_config,
        "State": {
            "Status": container.state,
            "Running": container.state == "running",
            "OOMKilled": container.exit.oom_killed,
            "ExitCode": container.exit.code,
        },
    }


def _error(status: int, message: str) -> Response:
    return JSONResponse({"message": message}, status_code=status)
