"""Safe edits over real HTTP: the policy says what an approver may change, on every path.

An edit of an argument the rule keeps, or one breaking an invariant the shipped refund workflow
registers, is refused with a 422 naming the argument and why, on the API, the page, its live
preview and the CLI, and changes nothing stored (before/after snapshots). An edit another rule
decides says so in the check shown before it is confirmed.
"""

from __future__ import annotations

import html
import os
import subprocess
import sys
from pathlib import Path

from tests.e2e.test_pages_http import control, waiting_refund
from tests.harness import Server, baton_server, refunds
from tests.pages import PAGE_ENV, signed_in
from workflows.shipped import POLICIES

ANSWER = [sys.executable, "-m", "baton", "requests", "answer"]
MOVED_JSON = '{"arguments": {"order_id": "A-1005", "amount": 120}}'
MOVED = "order_id may not be changed: rule refund.medium lets an approver change only amount"


def edit_by_cli(
    db_url: str, request_id: str, user: str, body: str
) -> subprocess.CompletedProcess[str]:
    """`baton requests answer` with an edit (`body`: its JSON), in a process of its own."""
    return subprocess.run(
        [*ANSWER, request_id, "--as", user, "--decision", "edit", "--body", body],
        capture_output=True,
        text=True,
        env={**os.environ, "BATON_DATABASE_URL": db_url},
        timeout=120,
        check=False,
    )


def edit_form(order_id: str, amount: str) -> dict[str, str]:
    return {"decision": "edit", "arguments.order_id": order_id, "arguments.amount": amount}


async def test_moving_a_refund_to_another_order_is_refused_everywhere_and_changes_nothing(
    page_server: Server, passwords: dict[str, str], db_url: str
) -> None:
    server = page_server
    pending = await waiting_refund(server)  # A-1002, customer-02's order
    url = f"/requests/{pending['id']}"
    before = await server.snapshot(pending["id"])
    moved = {"decision": "edit", "arguments": {"order_id": "A-1005", "amount": 120}}

    api = await server.respond(pending["id"], moved, user="lee")
    async with signed_in(server, "lee", passwords["lee"]) as lee:
        shown = await lee.http.get(url)
        assert "readonly" in control(shown.text, "a-edit-arguments-order_id")
        assert "readonly" not in control(shown.text, "a-edit-arguments-amount")
        page = await lee.post(url, edit_form("A-1005", "120"))
        confirmed = await lee.post(url, edit_form("A-1005", "120") | {"confirm": "forged"})
        live = await lee.post(f"{url}/preview", edit_form("A-1005", "120"))
    cli = edit_by_cli(db_url, pending["id"], "lee", MOVED_JSON)

    assert api.status_code == 422, api.text
    assert api.json()["error"] == "edit_refused"
    assert api.json()["errors"] == [{"loc": ["body", "arguments", "order_id"], "msg": MOVED}]
    for reply in (page, confirmed):
        assert reply.status_code == 422, reply.text
        shown = html.unescape(reply.text)
        assert f'<p class="field-error" id="a-edit-arguments-order_id-error">{MOVED}</p>' in shown
        assert 'value="A-1005"' in reply.text  # what was typed stays
        assert "Your answer was not sent" in reply.text
    assert live.status_code == 422
    assert f"<li>Order ID: {MOVED}</li>" in html.unescape(live.text)
    assert 'name="confirm"' not in live.text
    assert cli.returncode != 0
    assert MOVED in cli.stderr
    assert await server.snapshot(pending["id"]) == before
    assert (await server.run(pending["run_id"]))["status"] == "waiting"
    assert await refunds(db_url) == []


async def test_an_edit_into_two_finance_approvers_says_so_before_it_is_confirmed(
    page_server: Server, passwords: dict[str, str]
) -> None:
    server = page_server
    pending = await waiting_refund(server)
    url = f"/requests/{pending['id']}"
    before = await server.snapshot(pending["id"])
    async with signed_in(server, "lee", passwords["lee"]) as lee:
        live = await lee.post(f"{url}/preview", edit_form("A-1002", "1500"))
        step = await lee.post(url, edit_form("A-1002", "1500"))
        assert await server.snapshot(pending["id"]) == before  # nothing sent before confirming
        digest = step.text.split('name="confirm" value="')[1].split('"')[0]
        sent = await lee.post(url, edit_form("A-1002", "1500") | {"confirm": digest})

    told = (
        "Rule refund.large applies to the changed call: it now needs 2 different approvers "
        "from finance.",
        "Your edit does not run yet: it goes to finance as a new request.",
    )
    for reply in (live, step):
        assert reply.status_code == 200, reply.text
        assert all(f"<li>{line}</li>" in reply.text for line in told)
        assert "<del>120.00 EUR</del>" in reply.text
        assert "<ins>1500.00 EUR</ins>" in reply.text
    assert "Check your edit, then confirm it" in step.text
    assert sent.status_code == 303, sent.text
    finance = await server.wait_for_request(pending["run_id"])
    assert (finance["approvals_required"], finance["policy_rule"]) == (2, "refund.large")
    assert finance["proposed_action"]["arguments"] == {"order_id": "A-1002", "amount": 1500.0}


async def test_an_edit_that_breaks_the_refund_workflows_invariant_is_refused_by_name(
    db_url: str, tokens: dict[str, str], server_log: Path, tmp_path: Path
) -> None:
    # a policy of one's own lets an approver correct the order, as long as it stays the customer's
    mine = tmp_path / "policies.yaml"
    mine.write_text(
        POLICIES.read_text().replace("editable: [amount]", "editable: [amount, order_id]")
    )
    env = PAGE_ENV | {"BATON_POLICIES": str(mine)}
    async with baton_server(db_url, tokens, server_log, env) as server:
        pending = await waiting_refund(server)
        before = await server.snapshot(pending["id"])
        elsewhere = {"decision": "edit", "arguments": {"order_id": "A-1005", "amount": 120}}
        refused = await server.respond(pending["id"], elsewhere, user="lee")
        assert await server.snapshot(pending["id"]) == before
        same = {"decision": "edit", "arguments": {"order_id": "A-1002", "amount": 100}}
        taken = await server.respond(pending["id"], same, user="lee")
        done = await server.wait_for_run(pending["run_id"], status="completed")

    assert refused.status_code == 422, refused.text
    assert refused.json()["errors"] == [
        {
            "loc": ["body", "arguments"],
            "msg": "the edit breaks refund.same_customer: order A-1005 belongs to customer-05, "
            "not to this case's customer customer-02",
        }
    ]
    assert taken.status_code == 200, taken.text
    assert "Refunded 100.00" in done["output"]["text"]
    assert [r["amount"] for r in await refunds(db_url)] == [100.0]
