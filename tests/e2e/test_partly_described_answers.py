"""An answer type a form can give only in part: the fields it can, the rest their defaults.

The shape of MAF's declarative agents' external input (`tests.fixtures.external_input`): the
request's form asks for the user's text alone, the workflow gets the answer type with its
message list and results left empty, as on MAF alone; an answer that tries to give those is a
422 naming the field, with nothing stored.
"""

from __future__ import annotations

from pathlib import Path

from tests.fixtures.external_input import AgentAnswer, Ticket, build_support
from tests.harness import baton_server, digest

ENV = {"BATON_WORKFLOWS": "tests.fixtures.external_input"}


async def on_maf_alone() -> list[str]:
    workflow = build_support()
    asked = (await workflow.run(Ticket(issue="printer offline"))).get_request_info_events()
    done = await workflow.run(responses={asked[0].request_id: AgentAnswer(user_input="Yes")})
    return done.get_outputs()


async def test_a_form_asks_what_a_person_can_give_and_the_rest_keep_their_defaults(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    async with baton_server(db_url, tokens, server_log, ENV) as server:
        run = await server.start_run(
            {"workflow": "external_input", "input": {"issue": "printer offline"}}
        )
        asked = await server.wait_for_request(run["id"])
        before = digest(db_url)
        foreign = await server.respond(
            asked["id"],
            {"decision": "answer", "answer": {"user_input": "Yes", "messages": [{"role": "user"}]}},
            user="lee",
        )
        unchanged = digest(db_url) == before
        reply = await server.respond(
            asked["id"], {"decision": "answer", "answer": {"user_input": "Yes"}}, user="lee"
        )
        assert reply.status_code == 200, reply.text
        done = await server.wait_for_run(run["id"], status="completed")

    schema = asked["response_schema"]["properties"]["answer"]
    assert set(schema["properties"]) == {"user_input"}
    assert schema["required"] == ["user_input"]
    assert asked["context"]["agent_response"] == "Have you tried restarting it? (printer offline)"
    assert foreign.status_code == 422, foreign.text
    assert "messages" in foreign.text
    assert unchanged
    [alone] = await on_maf_alone()
    assert alone == "SupportAgent heard 'Yes' (0 messages, 0 results)"
    assert done["output"] == alone
