"""The support workflow over real HTTP on the scripted model: every specialist, every channel."""

from __future__ import annotations

from pathlib import Path

from tests.harness import baton_server, types_of
from tests.supportkit import (
    DELETE_ACCOUNT,
    MANAGER,
    REFUND_120,
    REFUND_NO_ORDER,
    REFUND_SMALL,
    STRANGE,
    SYNC_BROKEN,
    UNCLEAR,
    UPLOAD_CRASH,
    back_office,
    of_type,
    pending_request,
    ticket,
)

# each specialist ----------------------------------------------------------------------------


async def test_billing_refunds_a_small_amount_at_once_and_closes_the_case(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    async with baton_server(db_url, tokens, server_log) as server:
        run = await server.start_run(REFUND_SMALL, user="sue")
        done = await server.wait_for_run(run["id"], status="completed")
        events = await server.audit(run["id"])

    assert done["requests"] == []
    assert done["output"]["resolver"] == "agent"
    assert done["output"]["resolved_by"] == "billing"
    assert done["output"]["resolution"].startswith("Refunded 20.00 on order A-1002")
    [auto] = [e for e in events if e["type"] == "request.auto_decided"]
    assert (auto["data"]["rule"], auto["data"]["tool"]) == ("refund.small", "issue_refund")
    conversation = done["conversation"]
    assert of_type(conversation, "handoff") == [
        {"type": "handoff", "from": "triage", "to": "billing"}
    ]
    assert [e["tool"] for e in of_type(conversation, "tool_call")] == [
        "lookup_order",
        "issue_refund",
        "close_case",
    ]
    [refund_result] = [
        e for e in of_type(conversation, "tool_result") if e["tool"] == "issue_refund"
    ]
    assert "refund_id" in refund_result["result"]
    [refund] = (await back_office(db_url))["refunds"]
    assert (refund["order_id"], refund["amount"]) == ("A-1002", 20.0)


async def test_technical_drafts_an_email_a_person_edits_before_it_is_sent(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    edited = "Hello! Uploads over 20 MB close the app; use smaller photos until Friday."
    async with baton_server(db_url, tokens, server_log) as server:
        run = await server.start_run(UPLOAD_CRASH, user="sue")
        review = await pending_request(server, run["id"], kind="review")
        assert review["team"] == "support-agents"
        assert "20 MB" in review["payload"]["draft"]
        assert review["response_schema"]["properties"]["decision"]["enum"] == [
            "approve",
            "edit",
            "reject",
        ]
        assert any("check_service_status" in line for line in review["context"]["conversation"])
        assert (await back_office(db_url))["messages"] == []  # nothing goes out unreviewed

        reply = await server.respond(
            review["id"], {"decision": "edit", "content": edited}, user="sam"
        )
        assert reply.status_code == 200, reply.text
        done = await server.wait_for_run(run["id"], status="completed")
        events = await server.audit(run["id"])

    assert done["output"]["resolved_by"] == "technical"
    [answered] = [e for e in events if e["type"] == "request.answered"]
    assert answered["data"]["diff"]["content"] == {
        "before": review["payload"]["draft"],
        "after": edited,
    }
    [message] = (await back_office(db_url))["messages"]
    assert (message["customer_id"], message["body"]) == ("customer-02", edited)
    assert types_of(events).count("effect.executed") == 1


async def test_accounts_deletion_is_a_maf_approval_that_a_lead_approves(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    async with baton_server(db_url, tokens, server_log) as server:
        run = await server.start_run(DELETE_ACCOUNT, user="sue")
        approval = await pending_request(server, run["id"], kind="approval")
        assert (approval["team"], approval["policy_rule"]) == ("support-leads", "account.delete")
        assert approval["proposed_action"]["tool"] == "delete_account"
        assert approval["proposed_action"]["arguments"]["customer_id"] == "customer-02"
        assert approval["payload"]["origin"]["adapter"] == "tool_approvals"
        assert approval["context"]["customer"]["email"] == "customer-02@example.com"
        assert (await back_office(db_url))["closures"] == []

        reply = await server.respond(approval["id"], {"decision": "approve"}, user="lee")
        assert reply.status_code == 200, reply.text
        done = await server.wait_for_run(run["id"], status="completed")
        events = await server.audit(run["id"])

    assert done["output"]["resolution"].startswith("Deleted the account of customer-02")
    [closure] = (await back_office(db_url))["closures"]
    assert closure["customer_id"] == "customer-02"
    [effect] = [e for e in events if e["type"] == "effect.executed"]
    assert effect["data"]["tool"] == "delete_account"


# questions ----------------------------------------------------------------------------------


async def test_triage_asks_the_customer_and_the_relayed_reply_routes_the_case(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    async with baton_server(db_url, tokens, server_log) as server:
        run = await server.start_run(UNCLEAR, user="sue")
        question = await pending_request(server, run["id"], kind="question")
        assert question["team"] == "support-agents"
        assert "payment or refund" in question["payload"]["question"]
        assert question["payload"]["origin"]["adapter"] == "user_turns"

        # lee (support-leads) does not talk to customers: the run is not lee's to see
        refused = await server.respond(
            question["id"], {"decision": "answer", "answer": "x"}, user="lee"
        )
        assert refused.status_code == 404, refused.text
        reply = await server.respond(
            question["id"],
            {"decision": "answer", "answer": "I want a refund of 20 on order A-1002"},
            user="sam",
        )
        assert reply.status_code == 200, reply.text
        done = await server.wait_for_run(run["id"], status="completed")

    assert done["output"]["resolution"].startswith("Refunded 20.00 on order A-1002")
    customer_said = [m for m in of_type(done["conversation"], "message") if m.get("from_user")]
    assert customer_said[-1]["text"] == "I want a refund of 20 on order A-1002"
    # the workflow calls its user the customer (register(party=...)), from the first message on
    assert {m["by"] for m in customer_said} == {"customer"}
    assert question["context"]["conversation"][0].startswith("customer: Customer customer-02")


async def test_ask_human_gets_the_answer_back_as_the_tool_result(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    async with baton_server(db_url, tokens, server_log) as server:
        run = await server.start_run(REFUND_NO_ORDER, user="sue")
        question = await pending_request(server, run["id"], kind="question")
        assert question["payload"]["question"].startswith("Which order of customer-02")
        assert question["payload"]["options"] == ["A-1002"]
        assert question["payload"]["origin"]["tool"] == "ask_human"

        reply = await server.respond(
            question["id"], {"decision": "answer", "answer": "A-1002"}, user="sam"
        )
        assert reply.status_code == 200, reply.text
        done = await server.wait_for_run(run["id"], status="completed")

    [asked] = [e for e in of_type(done["conversation"], "tool_result") if e["tool"] == "ask_human"]
    assert asked["result"] == "sam answered: A-1002"
    assert done["output"]["resolution"].startswith("Refunded 30.00 on order A-1002")


# approvals ----------------------------------------------------------------------------------


async def test_refund_approval_approved_runs_the_refund_once(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    async with baton_server(db_url, tokens, server_log) as server:
        run = await server.start_run(REFUND_120, user="sue")
        approval = await pending_request(server, run["id"], kind="approval")
        assert (approval["team"], approval["policy_rule"]) == ("support-leads", "refund.medium")
        assert approval["proposed_action"]["arguments"] == {"order_id": "A-1002", "amount": 120.0}
        assert approval["expires_at"] is not None  # refund.medium: deadline 24h
        lines = approval["context"]["conversation"]
        assert "triage hands the case to billing" in lines
        assert any(line.startswith("billing calls issue_refund") for line in lines)

        reply = await server.respond(approval["id"], {"decision": "approve"}, user="lee")
        assert reply.status_code == 200, reply.text
        done = await server.wait_for_run(run["id"], status="completed")
        events = await server.audit(run["id"])

    assert done["output"]["resolution"].startswith("Refunded 120.00 on order A-1002")
    assert types_of(events).count("effect.executed") == 1
    assert [r["amount"] for r in (await back_office(db_url))["refunds"]] == [120.0]


async def test_an_edit_into_a_stricter_band_asks_that_band_again(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    async with baton_server(db_url, tokens, server_log) as server:
        run = await server.start_run(REFUND_120, user="sue")
        first = await pending_request(server, run["id"], kind="approval")
        edit = {"decision": "edit", "arguments": {"order_id": "A-1002", "amount": 1500}}
        reply = await server.respond(first["id"], edit, user="lee")
        assert reply.status_code == 200, reply.text

        second = await pending_request(server, run["id"], kind="approval", not_ids=(first["id"],))
        assert (second["team"], second["approvals_required"]) == ("finance", 2)
        assert second["policy_rule"] == "refund.large"
        assert second["proposed_action"]["arguments"] == {"order_id": "A-1002", "amount": 1500.0}
        assert second["reason"].startswith("An edit changed the call")
        assert (await back_office(db_url))["refunds"] == []

        assert (await server.respond(second["id"], {"decision": "approve"}, user="fay")).json()[
            "outcome"
        ] == "partial"
        assert (await server.respond(second["id"], {"decision": "approve"}, user="fin")).json()[
            "outcome"
        ] == "closed"
        done = await server.wait_for_run(run["id"], status="completed")
        events = await server.audit(run["id"])

    assert done["output"]["resolution"].startswith("Refunded 1500.00 on order A-1002")
    assert [r["amount"] for r in (await back_office(db_url))["refunds"]] == [1500.0]
    [edited] = [e for e in events if e["type"] == "request.answered" and e["actor"] == "lee"]
    assert edited["data"]["diff"]["arguments"] == {"amount": {"before": 120.0, "after": 1500}}
    assert types_of(events).count("effect.executed") == 1


async def test_an_edit_within_the_band_runs_the_edited_call(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    async with baton_server(db_url, tokens, server_log) as server:
        run = await server.start_run(REFUND_120, user="sue")
        approval = await pending_request(server, run["id"], kind="approval")
        edit = {"decision": "edit", "arguments": {"order_id": "A-1002", "amount": 80}}
        reply = await server.respond(approval["id"], edit, user="lee")
        assert reply.status_code == 200, reply.text
        done = await server.wait_for_run(run["id"], status="completed")

    assert [r["id"] for r in done["requests"]] == [approval["id"]]
    assert [r["amount"] for r in (await back_office(db_url))["refunds"]] == [80.0]


async def test_rejection_reason_reaches_the_agent(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    reason = "the customer already got a replacement"
    async with baton_server(db_url, tokens, server_log) as server:
        run = await server.start_run(REFUND_120, user="sue")
        approval = await pending_request(server, run["id"], kind="approval")
        reply = await server.respond(
            approval["id"], {"decision": "reject", "reason": reason}, user="lee"
        )
        assert reply.status_code == 200, reply.text
        done = await server.wait_for_run(run["id"], status="completed")
        events = await server.audit(run["id"])

    [result] = [
        e for e in of_type(done["conversation"], "tool_result") if e["tool"] == "issue_refund"
    ]
    assert result["result"] == f"Rejected by lee: {reason}"
    assert reason in done["output"]["resolution"]  # the model repeated what it was told
    assert "effect.executed" not in types_of(events)
    assert (await back_office(db_url))["refunds"] == []


async def test_an_invalid_edit_is_422_and_changes_nothing(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    async with baton_server(db_url, tokens, server_log) as server:
        run = await server.start_run(DELETE_ACCOUNT, user="sue")
        approval = await pending_request(server, run["id"], kind="approval")
        before = await server.snapshot(approval["id"])
        reply = await server.respond(
            approval["id"], {"decision": "edit", "arguments": {"reason": "x"}}, user="lee"
        )
        assert reply.status_code == 422, reply.text
        assert ["body", "arguments"] in [e["loc"] for e in reply.json()["errors"]]
        assert await server.snapshot(approval["id"]) == before


# takeovers ----------------------------------------------------------------------------------


async def test_third_failed_attempt_hands_over_and_a_person_resolves(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    async with baton_server(db_url, tokens, server_log) as server:
        run = await server.start_run(SYNC_BROKEN, user="sue")
        takeover = await pending_request(server, run["id"], kind="takeover")
        assert (takeover["team"], takeover["policy_rule"]) == (
            "support-agents",
            "takeover.failed_attempts",
        )
        lines = [c["line"] for c in takeover["payload"]["conversation"]]
        assert sum(line.startswith("technical calls restart_sync") for line in lines) == 3
        resolve = {
            "decision": "resolve",
            "resolution": "Restarted the sync by hand.",
            "outcome": {"action": "fixed", "ticket": "OPS-7"},  # the workflow's CaseOutcome
        }
        reply = await server.respond(takeover["id"], resolve, user="sam")
        assert reply.status_code == 200, reply.text
        done = await server.wait_for_run(run["id"], status="completed")

    assert done["output"] == {
        "resolution": "Restarted the sync by hand.",
        "outcome": {"action": "fixed", "ticket": "OPS-7"},
        "resolved_by": "sam",
        "resolver": "person",
    }


async def test_a_customer_asking_for_a_manager_is_taken_over_and_returned_with_guidance(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    guidance = "Offer a refund of 30 on order A-1002 for the trouble."
    async with baton_server(db_url, tokens, server_log) as server:
        run = await server.start_run(MANAGER, user="sue")
        takeover = await pending_request(server, run["id"], kind="takeover")
        assert takeover["policy_rule"] == "takeover.manager"
        # the rule's `why` first, in words, not its id
        assert takeover["reason"].startswith(
            "The customer asked for a manager. This case goes to a person."
        ), takeover["reason"]
        assert takeover["expires_at"] is not None  # takeover.manager: deadline 4h
        assert takeover["priority"] == "high"
        reply = await server.respond(
            takeover["id"], {"decision": "return", "guidance": guidance}, user="sam"
        )
        assert reply.status_code == 200, reply.text
        done = await server.wait_for_run(run["id"], status="completed")

    assert done["output"]["resolved_by"] == "billing"
    assert done["output"]["resolution"].startswith("Refunded 30.00 on order A-1002")
    assert any(guidance in m["text"] for m in of_type(done["conversation"], "message"))
    assert of_type(done["conversation"], "handoff")[-1]["to"] == "billing"


async def test_low_confidence_hands_the_case_to_a_person(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    async with baton_server(db_url, tokens, server_log) as server:
        run = await server.start_run(STRANGE, user="sue")
        takeover = await pending_request(server, run["id"], kind="takeover")
        assert takeover["policy_rule"] == "takeover.low_confidence"
        assert takeover["reason"].startswith("The agent is unsure what to do next")
        assert takeover["allowed_decisions"] == ["resolve", "return"]


async def test_a_person_takes_a_pending_approval_over_and_resolves_it(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    async with baton_server(db_url, tokens, server_log) as server:
        run = await server.start_run(REFUND_120, user="sue")
        approval = await pending_request(server, run["id"], kind="approval")
        before = await server.snapshot(approval["id"])
        async with server.client("fay") as fay:  # finance: the run is not hers to see
            hidden = await fay.post(f"/api/requests/{approval['id']}/takeover")
        assert hidden.status_code == 404, hidden.text
        async with server.client("sue") as sue:  # started the run, but is not in support-leads
            refused = await sue.post(f"/api/requests/{approval['id']}/takeover")
        assert refused.status_code == 403, refused.text
        assert await server.snapshot(approval["id"]) == before

        async with server.client("lee") as lee:
            taken = await lee.post(f"/api/requests/{approval['id']}/takeover")
            assert taken.status_code == 200, taken.text
            assert taken.json()["outcome"] == "closed"
            again = await lee.post(f"/api/requests/{approval['id']}/takeover")
            assert (again.status_code, again.json()["outcome"]) == (200, "repeated")

        takeover = await pending_request(server, run["id"], kind="takeover")
        assert (takeover["assignee"], takeover["team"]) == ("lee", "support-leads")
        assert takeover["title"].startswith("Taken over by lee")
        assert takeover["payload"]["origin"]["taken_over_request"] == approval["id"]
        async with server.client("lee") as lee:
            conflict = await lee.post(f"/api/requests/{takeover['id']}/takeover")
        assert conflict.status_code == 409, conflict.text
        late = await server.respond(approval["id"], {"decision": "approve"}, user="lee")
        assert late.status_code == 409, late.text

        resolve = {"decision": "resolve", "resolution": "Refunded by bank transfer instead."}
        reply = await server.respond(takeover["id"], resolve, user="lee")
        assert reply.status_code == 200, reply.text
        done = await server.wait_for_run(run["id"], status="completed")
        events = await server.audit(run["id"])

    assert done["output"]["resolution"] == "Refunded by bank transfer instead."
    assert done["output"]["resolved_by"] == "lee"
    [taken_event] = [
        e
        for e in events
        if e["type"] == "request.answered" and e["data"].get("decision") == "takeover"
    ]
    assert (taken_event["actor"], taken_event["data"]["takeover_by"]) == ("lee", "lee")
    created = [e for e in events if e["type"] == "request.created"]
    assert created[-1]["data"]["takeover_of"] == approval["id"]
    assert (await back_office(db_url))["refunds"] == []


async def test_a_taken_over_question_returned_with_guidance_reaches_the_agent(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    async with baton_server(db_url, tokens, server_log) as server:
        run = await server.start_run(UNCLEAR, user="sue")
        question = await pending_request(server, run["id"], kind="question")
        async with server.client("sam") as sam:
            taken = await sam.post(f"/api/requests/{question['id']}/takeover")
        assert taken.status_code == 200, taken.text
        takeover = await pending_request(server, run["id"], kind="takeover")
        guidance = "The customer wants a refund of 20 on order A-1002."
        reply = await server.respond(
            takeover["id"], {"decision": "return", "guidance": guidance}, user="sam"
        )
        assert reply.status_code == 200, reply.text
        done = await server.wait_for_run(run["id"], status="completed")

    assert done["output"]["resolution"].startswith("Refunded 20.00 on order A-1002")


# edges --------------------------------------------------------------------------------------


async def test_support_is_offered_beside_refund_and_bad_input_is_422(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    async with baton_server(db_url, tokens, server_log) as server:
        async with server.client("sam") as sam:
            workflows = (await sam.get("/api/workflows")).json()
            bad = await sam.post("/api/runs", json=ticket("", customer="customer-02"))
        assert {"refund", "support"} <= {w["name"] for w in workflows}
        [support] = [w for w in workflows if w["name"] == "support"]
        assert set(support["input_schema"]["required"]) == {"customer_id", "message"}
        assert bad.status_code == 422, bad.text
        assert bad.json()["errors"][0]["loc"] == ["body", "input", "message"]
        assert await server.run_count() == 0
