from __future__ import annotations

from pathlib import Path

from tests.harness import REFUND_20, REFUND_120, baton_server, refunds


async def test_refund_120_waits_for_support_leads_then_refunds_once(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    async with baton_server(db_url, tokens, server_log) as server:
        run = await server.start_run(REFUND_120)
        waiting = await server.wait_for_run(run["id"], status="waiting")
        [pending] = [r for r in waiting["requests"] if r["status"] == "pending"]
        assert pending["kind"] == "approval"
        assert pending["team"] == "support-leads"
        assert pending["proposed_action"]["arguments"] == {"order_id": "A-1002", "amount": 120.0}

        reply = await server.respond(pending["id"], {"decision": "approve"}, user="lee")
        assert reply.status_code == 200, reply.text
        done = await server.wait_for_run(run["id"], status="completed")
        events = [e["type"] for e in await server.audit(run["id"])]

    assert "Refunded 120.00" in done["output"]["text"]
    assert events.count("effect.executed") == 1
    assert [r["amount"] for r in await refunds(db_url)] == [120.0]


async def test_refund_20_is_auto_decided_by_rule(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    async with baton_server(db_url, tokens, server_log) as server:
        run = await server.start_run(REFUND_20)
        done = await server.wait_for_run(run["id"], status="completed")
        events = await server.audit(run["id"])

    assert done["requests"] == []
    [auto] = [e for e in events if e["type"] == "request.auto_decided"]
    assert auto["data"]["rule"] == "refund.small"
