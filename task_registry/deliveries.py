"""Webhook deliveries, stored once each by GitHub's ``X-GitHub-Delivery`` id."""

from __future__ import annotations

import hashlib

from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, select

from task_registry.models import WebhookDelivery
from task_registry.types import DeliveryStatus


def record_delivery(
    *,
    session: Session,
    delivery_id: str,
    event: str,
    payload: bytes,
    action: str | None = None,
    repo: str | None = None,
) -> tuple[WebhookDelivery, bool]:
    """Store a delivery; a delivery id seen before returns the stored row and False."""
    existing = find_delivery(session=session, delivery_id=delivery_id)
    if existing is not None:
        return existing, False
    delivery = WebhookDelivery(
        delivery_id=delivery_id,
        event=event,
        action=action,
        repo=repo,
        payload_sha256=hashlib.sha256(payload).hexdigest(),
        payload=payload.decode("utf-8", errors="replace"),
    )
    try:
        with session.begin_nested():  # a concurrent receiver may insert the same id first
            session.add(delivery)
    except IntegrityError:
        stored = find_delivery(session=session, delivery_id=delivery_id)
        assert stored is not None
        return stored, False
    return delivery, True


def find_delivery(*, session: Session, delivery_id: str) -> WebhookDelivery | None:
    query = select(WebhookDelivery).where(WebhookDelivery.delivery_id == delivery_id)
    return session.exec(query).first()


def set_delivery_status(
    *, session: Session, delivery: WebhookDelivery, status: DeliveryStatus, error: str | None = None
) -> WebhookDelivery:
    delivery.status, delivery.error = status, error
    session.add(delivery)
    session.flush()
    return delivery
