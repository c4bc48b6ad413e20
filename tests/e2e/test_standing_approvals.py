"""An approval a person lets stand: the run's later calls its rule decides run without asking.

Only a rule that says `standing: true` offers it (in the request's answer schema, worded with the
tool and the rule), only an `approve` may ask it, and only for that run, that tool and that rule.
Each call it lets run is audited as `request.auto_decided` naming the approval it stood on and
who gave it. Both of Baton's paths: MAF's own approval requests (`standing_notes`) and Baton's
gate (`standing_desk`). A refused answer changes nothing stored.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_pages_http import waiting_refund
from tests.fixtures import standing_approvals
from tests.harness import Server, baton_server, eventually
from tests.pages import PAGE_ENV, signed_in, text_of
from workflows.shipped import POLICIES

RULE = """
  - id: notes.standing
    tool: send_note
    action: approval(support-leads)
    standing: true
"""
APPROVE = {"decision": "approve"}
STANDING = {"decision": "approve", "standing": True}  # the API's


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """The shipped policy (its refund rules offer no standing) with a standing rule for notes."""
    mine = tmp_path / "policies.yaml"
    mine.write_text(POLICIES.read_text().rstrip() + "\n" + RULE)
    return PAGE_ENV | {
        "BATON_WORKFLOWS": "tests.fixtures.standing_approvals",
        "BATON_POLICIES": str(mine),
    }


async def pending_of(server: Server, run_id: str) -> dict[str, Any]:
    """The run's pending request, once there is one."""

    async def probe() -> dict[str, Any] | None:
        found = (await server.run(run_id))["requests"]
        return next((r for r in found if r["status"] == "pending"), None)

    return await eventually(probe, what=f"a pending request of run {run_id}")


@pytest.mark.parametrize("workflow", ["standing_notes", "standing_desk"])
async def test_an_approval_let_stand_runs_the_rest_of_the_run_s_calls_under_its_rule_audited(
    db_url: str,
    tokens: dict[str, str],
    passwords: dict[str, str],
    server_log: Path,
    env: dict[str, str],
    workflow: str,
) -> None:
    standing_approvals.SENT.clear()
    async with baton_server(db_url, tokens, server_log, env) as server:
        run = await server.start_run({"workflow": workflow, "input": {"text": "Send the notes."}})
        first = await pending_of(server, run["id"])
        offer = first["response_schema"]["properties"]["standing"]

        before = await server.snapshot(first["id"])
        rejected = await server.respond(
            first["id"], {"decision": "reject", "reason": "no", "standing": True}, user="ada"
        )
        assert await server.snapshot(first["id"]) == before

        # a plain approval decides its own call only: the next call asks again
        assert (await server.respond(first["id"], APPROVE, user="ada")).status_code == 200
        second = await pending_of(server, run["id"])
        async with signed_in(server, "lee", passwords["lee"]) as lee:  # on the page, as lee
            form = text_of((await lee.http.get(f"/requests/{second['id']}")).text)
            sent = await lee.post(
                f"/requests/{second['id']}", {"decision": "approve", "standing": "true"}
            )
        assert sent.status_code == 303, sent.text
        # a memo is another tool (another rule): it asks; the note after it, in a later drive,
        # runs on lee's standing approval
        memo = await pending_of(server, run["id"])
        assert (await server.respond(memo["id"], APPROVE, user="ada")).status_code == 200
        done = await server.wait_for_run(run["id"], status=("completed", "failed"))
        audit = await server.audit(run["id"])
        async with signed_in(server, "ada", passwords["ada"]) as ada:
            page = text_of((await ada.http.get(f"/runs/{run['id']}")).text)

    assert (offer["title"], offer["description"]) == (
        "Also approve this run's later send_note calls",
        "They run without asking again, while rule notes.standing is the one that decides them.",
    )
    assert rejected.status_code == 422, rejected.text
    assert rejected.json()["errors"] == [
        {"loc": ["body", "standing"], "msg": "not allowed when decision is 'reject'"}
    ]
    assert done["status"] == "completed", done
    assert sorted(r["id"] for r in done["requests"]) == sorted(
        [first["id"], second["id"], memo["id"]]
    )
    assert second["proposed_action"]["arguments"] == {"to": "person-2"}
    assert memo["proposed_action"]["tool"] == "post_memo"
    assert "standing" not in memo["response_schema"]["properties"]  # no rule offers it there
    assert standing_approvals.SENT == ["person-1", "person-2", "memo to all", "person-3"]
    assert (
        "Also approve this run's later send_note calls (optional) Yes No They run without asking "
        "again, while rule notes.standing is the one that decides them."
    ) in form
    # the run's page: in its conversation, and in its audit trail for the call it let run
    assert "lee approved, and this run's later send_note calls too" in page
    assert "lee's standing approval decided: approve, under policy rule notes.standing" in page
    stood = [e["data"] for e in audit if e["type"] == "request.auto_decided"]
    assert stood == [
        {
            "tool": "send_note",
            "arguments": {"to": "person-3"},
            "decision": "approve",
            "rule": "notes.standing",
            "standing_approval": second["id"],
            "approved_by": "lee",
        }
    ]


async def test_a_request_whose_rule_offers_no_standing_refuses_one_and_changes_nothing(
    db_url: str, tokens: dict[str, str], server_log: Path, env: dict[str, str]
) -> None:
    async with baton_server(db_url, tokens, server_log, env) as server:
        pending = await waiting_refund(server)
        before = await server.snapshot(pending["id"])
        refused = await server.respond(pending["id"], STANDING, user="lee")
        after = await server.snapshot(pending["id"])

    assert "standing" not in pending["response_schema"]["properties"]
    assert refused.status_code == 422, refused.text
    assert refused.json()["errors"] == [
        {
            "loc": ["body", "standing"],
            "msg": "rule refund.medium does not let an approval stand for the run's later calls",
        }
    ]
    assert after == before
