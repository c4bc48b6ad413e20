"""Webhook: a JSON POST per notice to `BATON_WEBHOOK_URL`, signed with `BATON_WEBHOOK_SECRET`.

Headers (the README has a verification snippet):

- `X-Baton-Event`: `request.created` or `request.escalated`
- `X-Baton-Delivery`: the delivery id, the same on every retry of one notice (dedupe on it)
- `X-Baton-Timestamp`: Unix seconds when this attempt was sent
- `X-Baton-Signature`: `v1=` + hex HMAC-SHA256 of `<timestamp>.<raw body>` keyed with the secret

A 2xx answer is a delivery; anything else, or no complete answer within the delivery deadline
(`BATON_NOTIFY_TIMEOUT_SECONDS`, for the whole attempt: a receiver that answers one byte at a time
is cut off too), is retried with backoff by the dispatcher. Deliveries are at least once: a
receiver dedupes on the delivery id and should refuse timestamps far from its own clock.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import time
from typing import Any

import httpx

from baton.errors import NotificationFailed
from human.channels import Notice, http

logger = logging.getLogger(__name__)

SIGNATURE_VERSION = "v1"


def sign(secret: str, timestamp: str, body: bytes) -> str:
    """The `X-Baton-Signature` value of a body sent at `timestamp`."""
    digest = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return f"{SIGNATURE_VERSION}={digest.hexdigest()}"


def payload_of(notice: Notice) -> dict[str, Any]:
    """The JSON a webhook receives."""
    r = notice.request
    return {
        "event": f"request.{notice.event}",
        "delivery_id": notice.delivery_id,
        "request": {
            "id": r.id,
            "run_id": r.run_id,
            "kind": r.kind,
            "title": r.title,
            "reason": r.reason,
            "team": r.team,
            "assignee": r.assignee,
            "priority": r.priority,
            "status": r.status,
            "created_at": r.created_at.isoformat(),
            "expires_at": r.expires_at.isoformat() if r.expires_at else None,
            "approvals_required": r.approvals_required,
            "allowed_decisions": r.allowed_decisions,
            "context": r.context,
            "proposed_action": r.proposed_action,
            "url": notice.url,
        },
    }


class WebhookChannel:
    """POSTs signed JSON to one URL."""

    name = "webhook"
    follows_answers = False

    def __init__(self, url: str, secret: str | None, *, timeout_s: float = 10.0) -> None:
        self._url = url
        self._secret = secret
        self._timeout_s = timeout_s
        if not secret:
            logger.warning("BATON_WEBHOOK_SECRET is not set: webhooks go out unsigned")

    async def send(self, notice: Notice) -> str | None:
        """POST the notice; `NotificationFailed` for a non-2xx answer or no answer."""
        body = json.dumps(payload_of(notice), separators=(",", ":"), default=str).encode()
        timestamp = str(int(time.time()))
        headers = {
            "Content-Type": "application/json",
            "User-Agent": "Baton",
            "X-Baton-Event": f"request.{notice.event}",
            "X-Baton-Delivery": notice.delivery_id,
            "X-Baton-Timestamp": timestamp,
        }
        if self._secret:
            headers["X-Baton-Signature"] = sign(self._secret, timestamp, body)
        try:
            async with http.client(self._timeout_s) as client:
                reply = await client.post(self._url, content=body, headers=headers)
        except httpx.HTTPError as exc:
            raise NotificationFailed(f"webhook: {type(exc).__name__}: {exc}") from exc
        if not reply.is_success:
            raise NotificationFailed(f"webhook: HTTP {reply.status_code} {reply.text[:200]}")
        return None
