"""Support workflow test inputs and readers, shared by its HTTP, restart and provider tests."""

from __future__ import annotations

from typing import Any

from executors.shipped.back_office import BackOffice
from tests.harness import Server, eventually


def ticket(message: str, customer: str = "customer-02") -> dict[str, Any]:
    """A `POST /api/runs` body for a support run."""
    return {"workflow": "support", "input": {"customer_id": customer, "message": message}}


REFUND_SMALL = ticket("Please refund 20 on order A-1002, it arrived late.")
REFUND_120 = ticket("Please refund 120 on order A-1002, it arrived broken.")
REFUND_NO_ORDER = ticket("I was charged twice, please refund 30.")
UNCLEAR = ticket("Hello, I have a question.")
UPLOAD_CRASH = ticket("The app crashes when I upload a photo.")
SYNC_BROKEN = ticket("My sync is broken since yesterday.")
DELETE_ACCOUNT = ticket("Please delete my account.")
MANAGER = ticket("This is the third time I write! I want to talk to a manager.")
STRANGE = ticket("Something strange happened with my thing.")


async def pending_request(
    server: Server, run_id: str, *, kind: str, not_ids: tuple[str, ...] = ()
) -> dict[str, Any]:
    """The run's pending request of `kind` (other than `not_ids`), once there is one."""

    async def probe() -> dict[str, Any] | None:
        run = await server.run(run_id)
        if run["status"] in ("completed", "failed", "cancelled"):
            raise AssertionError(f"run ended {run['status']} while waiting for a {kind}: {run}")
        found = [
            r
            for r in run["requests"]
            if r["status"] == "pending" and r["kind"] == kind and r["id"] not in not_ids
        ]
        return found[0] if found else None

    return await eventually(probe, what=f"a pending {kind} of run {run_id}")


async def back_office(db_url: str) -> dict[str, list[dict[str, Any]]]:
    """Refunds, account closures and customer messages, read straight from the database."""
    office = await BackOffice.open(db_url)
    try:
        return {
            "refunds": await office.list_refunds(),
            "closures": await office.list_closures(),
            "messages": await office.list_messages(),
        }
    finally:
        await office.close()


def of_type(conversation: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    """The conversation entries of one type."""
    return [e for e in conversation if e["type"] == kind]
