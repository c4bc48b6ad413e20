"""What MAF gets for a person's answer to a tool approval Baton's `BatonCalls` will not see.

Baton's result for a call rides MAF's approval response as an approval only into an agent's tool
loop that carries `BatonCalls`; an executor that asks for an approval itself (or a hosted tool's
provider) reads `approved` alone, so a rejection must reach it as MAF's rejection and an edit
Baton cannot carry out must not become an approval of the model's arguments.
"""

from __future__ import annotations

from pathlib import Path

from tests.harness import baton_server, eventually

ENV = {"BATON_WORKFLOWS": "tests.fixtures.self_approval"}
REJECT = {"decision": "reject", "reason": "no refund for this order"}
EDIT = {"decision": "edit", "arguments": {"order_id": "12345", "amount": "$9.99"}}


async def test_an_executor_asking_its_own_approval_gets_maf_s_answer_never_an_approval_by_mistake(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    ended = {}
    async with baton_server(db_url, tokens, server_log, ENV) as server:
        for name, answer in (
            ("approve", {"decision": "approve"}),
            ("reject", REJECT),
            ("edit", EDIT),
        ):
            run = await server.start_run({"workflow": "self_approval", "input": {"order": "12345"}})

            async def pending(run_id: str = run["id"]) -> dict | None:
                found = (await server.run(run_id))["requests"]
                return next((r for r in found if r["status"] == "pending"), None)

            request = await eventually(pending, what="the approval")
            reply = await server.respond(request["id"], answer, user="ada")
            assert reply.status_code == 200, reply.text
            ended[name] = await server.wait_for_run(run["id"], status=("completed", "failed"))

    assert request["kind"] == "approval"
    assert {name: run["output"] for name, run in ended.items()} == {
        "approve": "Refund approved.",
        "reject": "Refund rejected.",
        "edit": "Refund rejected.",  # other arguments than those it asked about: not approved
    }
