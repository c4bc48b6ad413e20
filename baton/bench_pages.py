"""`baton bench`'s page figure: a request page with a large context, rendered server-side.

- `request_page_200_msgs_ms_p50`: `GET /requests/{id}` of an approval whose context holds a
  200-message conversation (text, tool calls and tool results, as the refund agent records them),
  through the whole app in process (session middleware, the service's reads of the request, its run
  and audit trail, the typed forms, the Jinja2 templates), for a signed-in responder; the median
  of 50 renders after 5 untimed ones, on SQLite. The issue's bar is 100 ms.

Like `baton/bench.py`, this wires the layers together: the app, its store and a demo account.
"""

from __future__ import annotations

import re
import secrets
import statistics
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import httpx
from argon2 import PasswordHasher

from baton.demo import PEOPLE, seed_demo
from baton.settings import Settings
from baton.wiring import Parts
from executors.shipped.tools import RefundArguments
from human.kinds import KINDS, schema_of
from human.records import HumanRequest, NewEvent, Run
from human.store.base import NewCheckpoint, Progress
from web.app import create_app

MESSAGES: Final = 200
RENDERS: Final = 50
WARMUP: Final = 5
_CSRF: Final = re.compile(r'name="csrf_token" value="([^"]+)"')


async def measure_request_page(
    folder: Path, *, messages: int = MESSAGES, renders: int = RENDERS
) -> float:
    """The median time to serve a request page whose context has `messages` messages, in ms.

    Args:
        folder: Where to put the database.
        messages: Conversation messages in the request's context.
        renders: Timed renders (after a few untimed ones).

    Returns:
        The median, in milliseconds.

    Raises:
        RuntimeError: If the page does not show every message of the conversation.
    """
    settings = Settings(
        database_url=f"sqlite:///{folder / 'page.db'}",
        secret_key=secrets.token_urlsafe(32),
        log_level="WARNING",
    )
    app = create_app(settings, worker=False)
    async with app.router.lifespan_context(app):
        parts: Parts = app.state.parts
        request_id = await _store_a_large_request(parts, messages)
        password = secrets.token_urlsafe(12)
        role, teams = PEOPLE["lee"]
        await parts.store.add_user(
            "lee", role=role, teams=teams, password_hash=PasswordHasher().hash(password)
        )
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:
            form = await client.get("/signin")
            token = _CSRF.search(form.text)
            signed = await client.post(
                "/signin",
                data={
                    "csrf_token": token.group(1) if token else "",
                    "name": "lee",
                    "password": password,
                },
            )
            if signed.status_code != 303:
                raise RuntimeError(f"sign-in for the bench failed: {signed.status_code}")
            times = []
            for round_ in range(WARMUP + renders):
                started = time.perf_counter()
                page = await client.get(f"/requests/{request_id}")
                elapsed = (time.perf_counter() - started) * 1000
                if round_ >= WARMUP:
                    times.append(elapsed)
            shown = page.text.count('<li class="msg ')
            if page.status_code != 200 or shown != messages:
                raise RuntimeError(f"the page showed {shown} of {messages} messages")
    return statistics.median(times)


async def _store_a_large_request(parts: Parts, messages: int) -> str:
    """A waiting refund run with one approval whose context carries a long conversation."""
    await seed_demo(parts.store, parts.settings.database_url)
    now = datetime.now(UTC)
    run = Run(
        id=f"run_{secrets.token_urlsafe(12)}",
        workflow="refund",
        input={"order_id": "A-1005", "amount": 120.0, "reason": "damaged"},
        status="running",
        created_by="sam",
        created_at=now,
        updated_at=now,
    )
    await parts.store.create_run(run, [NewEvent(type="run.started", run_id=run.id, actor="sam")])
    arguments = {"order_id": "A-1005", "amount": 120.0}
    arguments_schema = schema_of(RefundArguments)
    request = HumanRequest(
        id=f"req_{secrets.token_urlsafe(16)}",
        run_id=run.id,
        maf_request_id="call_1.1",
        kind="approval",
        title="Refund 120.00 on order A-1005",
        reason="Refunds of this size need approval by support-leads (policy rule refund.medium).",
        context={
            "order_id": "A-1005",
            "customer": "customer-05",
            "order": {
                "id": "A-1005",
                "customer": "customer-05",
                "total": 2375.0,
                "currency": "EUR",
            },
            "conversation": [_message(n) for n in range(messages)],
        },
        proposed_action={
            "tool": "issue_refund",
            "arguments": arguments,
            "arguments_schema": arguments_schema,
        },
        allowed_decisions=list(KINDS["approval"].decisions),
        response_schema=KINDS["approval"].response_schema({"arguments": arguments_schema}),
        team="support-leads",
        status="pending",
        created_at=now,
        policy_rule="refund.medium",
        executor_id="refund_agent",
    )
    await parts.store.record_progress(
        Progress(
            run_id=run.id,
            expected_checkpoint_id=None,
            job_id=None,
            status="waiting",
            checkpoint=NewCheckpoint(id=f"cp-{run.id}", body=b"bench"),
            new_requests=[request],
            events=[NewEvent(type="request.created", run_id=run.id, request_id=request.id)],
        )
    )
    return request.id


def _message(n: int) -> dict[str, Any]:
    """The n-th message of a support conversation: customer, agent, tool call, tool result."""
    if n % 4 == 0:
        return {"role": "user", "text": f"Message {n}: the parcel arrived damaged, " * 3}
    if n % 4 == 1:
        return {
            "role": "assistant",
            "tool_call": "lookup_order",
            "arguments": {"order_id": "A-1005"},
        }
    if n % 4 == 2:
        return {
            "role": "tool",
            "tool_result": '{"id": "A-1005", "customer": "customer-05", "total": 2375.0}',
        }
    return {
        "role": "assistant",
        "text": f"Reply {n}: I looked the order up and will refund it. " * 2,
    }
