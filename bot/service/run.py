"""``probewatch serve``: the web app, a worker and the scheduler in one process.

Each part can be switched off, so a deployment can run several worker-only
processes beside one web process, all on one PostgreSQL registry. Without the
web part the process waits for SIGTERM or SIGINT. The webhook needs a secret:
production refuses to start without one, development serves without the webhook.
"""

from __future__ import annotations

import logging
import signal
import threading
from dataclasses import dataclass, replace

from bot.context import AppContext
from bot.settings import Environment

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Parts:
    web: bool = True
    worker: bool = True
    scheduler: bool = True


def run_service(context: AppContext, parts: Parts, host: str, port: int) -> None:
    if parts.web:
        context = web_context(context)
    context.checked_engine()
    stoppers = []
    try:
        if parts.scheduler:
            stoppers.append(_start_scheduler(context))
        if parts.worker:
            stoppers.append(_start_worker(context))
        if parts.web:
            _serve_web(context, host, port)
        else:
            _wait_for_signal()
    finally:
        for stop in reversed(stoppers):
            stop()


def web_context(context: AppContext) -> AppContext:
    """The context the web part serves. Without a webhook secret, production refuses to
    start (an unsigned webhook would let anyone queue work); development serves the API
    and the dashboard without the webhook, and says so in one line."""
    from bot.service.webhook import NO_SECRET, WebhookConfigError

    settings = context.settings
    secret = settings.webhook_secret
    if not settings.webhook_enabled or (secret is not None and secret.get_secret_value()):
        return context
    if settings.environment is Environment.production:
        raise WebhookConfigError(NO_SECRET)
    log.warning(
        "webhook off: PROBEWATCH_WEBHOOK_SECRET is not set, so GitHub's events are not "
        "received (the API and dashboard are served); set it to turn the webhook on"
    )
    return replace(context, settings=settings.model_copy(update={"webhook_enabled": False}))


def _start_scheduler(context: AppContext):  # type: ignore[no-untyped-def]
    from bot.service.jobs.scheduler import (
        make_scheduler,
        schedule_redelivery,
        stop_scheduler,
        sync_poll_jobs,
    )

    scheduler = make_scheduler(context.engine)
    scheduler.start(paused=True)
    polled = sync_poll_jobs(scheduler, context.watch_file().repos)
    if context.settings.has_github_app:  # the delivery log needs the App's JWT
        schedule_redelivery(scheduler)
    scheduler.resume()
    log.info("scheduler: %d poll job(s)", len(polled))
    return lambda: stop_scheduler(scheduler)


def _start_worker(context: AppContext):  # type: ignore[no-untyped-def]
    from bot.service.jobs.worker import Worker

    worker = Worker(context)
    worker.start()
    log.info("worker %s started", worker.name)
    return worker.stop


def _serve_web(context: AppContext, host: str, port: int) -> None:
    import uvicorn

    from bot.service.app import create_app

    uvicorn.run(create_app(context), host=host, port=port, log_level="info")


def _wait_for_signal() -> None:
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    while not stop.wait(1.0):
        pass
