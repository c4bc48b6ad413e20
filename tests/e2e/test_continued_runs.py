"""A run that continues an ended run's conversation (`POST /api/runs` with `continues`).

The subject is `tests.fixtures.chat_agents`' `notetaker`, a MAF agent registered as it is, whose
scripted model answers from the whole conversation it is handed: its reply says what a
continued run carried (every earlier user message once, the earlier tool calls and results, the
agent's replies). Over real HTTP against the app served in this process.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ag_ui.core import MessagesSnapshotEvent, RunFinishedEvent, UserMessage

from executors.platform.chat_clients import PLAYS, ScriptedChatClient
from tests.e2e.test_agui import (
    agui,
    finished,
    interrupted,
    run_input,
    the_interrupt,
)
from tests.fixtures import chat_agents
from tests.harness import Server, baton_server, digest
from tests.pages import PAGE_ENV, signed_in, text_of
from tests.unit.test_workflow_loading import baton as cli

ENV = {"BATON_WORKFLOWS": "tests.fixtures.chat_agents"} | PAGE_ENV


async def turn(server: Server, text: str, after: str | None = None, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"workflow": "notetaker", "input": {"text": text}, **extra}
    if after is not None:
        body["continues"] = after
    run = await server.start_run(body)
    return await server.wait_for_run(run["id"], status=("completed", "failed", "waiting"))


async def test_each_turn_continues_the_one_before_with_the_whole_conversation(
    db_url: str, tokens: dict[str, str], passwords: dict[str, str], server_log: Path
) -> None:
    async with baton_server(db_url, tokens, server_log, ENV) as server:
        first = await turn(server, "remember the milk")
        second = await turn(server, "forget the milk", first["id"])
        approval = await server.wait_for_request(second["id"])
        reply = await server.respond(approval["id"], {"decision": "approve"}, user="lee")
        assert reply.status_code == 200, reply.text
        await server.wait_for_run(second["id"], status="completed")
        third = await turn(server, "what do you know?", second["id"])
        audit = await server.audit(third["id"])
        earlier = await server.run(first["id"])
        async with signed_in(server, "sam", passwords["sam"]) as sam:
            page = text_of((await sam.http.get(f"/runs/{second['id']}")).text)
        async with signed_in(server, "lee", passwords["lee"]) as lee:  # sees the approval's run
            seen_by_lee = text_of((await lee.http.get(f"/runs/{second['id']}")).text)

    assert first["output"]["text"] == "Done: noted #8: the milk"
    assert (first["continues"], second["continues"], third["continues"]) == (
        None,
        first["id"],
        second["id"],
    )
    # the third turn's model was handed both earlier turns: each user message once, the calls
    # and what they returned (one of them approved by a person), and the agent's replies
    assert third["status"] == "completed"
    assert third["output"]["text"] == (
        "You said ['remember the milk', 'forget the milk', 'what do you know?']. "
        "I called ['note(the milk)', 'forget(the milk)'], which returned "
        "['noted #8: the milk', 'forgotten: the milk']. "
        "I replied ['Done: noted #8: the milk', 'Done: forgotten: the milk']."
    )
    # a run's own conversation holds its own turn; the chain is on record in the audit trail
    assert [e.get("input") for e in third["conversation"] if e["type"] == "input"] == [
        {"text": "what do you know?"}
    ]
    [started] = [e for e in audit if e["type"] == "run.started"]
    assert started["data"]["continues"] == second["id"]
    assert earlier["continued_by"] == [second["id"]]
    assert (
        f"This run picks up the conversation where run {first['id']} (“remember the milk”, sam, "
        in page
    )
    assert "ended: its agent was given the whole conversation up to then." in page
    assert f"The conversation goes on in run {third['id']} (“what do you know?”, sam, " in page
    assert f"This run's turn only: the turn before it is in run {first['id']} (“remember" in page
    assert "Continue this conversation" in page  # sam may start runs: the form is there
    assert "picks up" not in seen_by_lee
    assert "goes on" not in seen_by_lee
    assert "turn only" not in seen_by_lee


async def test_a_start_that_cannot_continue_is_refused_precisely_and_stores_nothing(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    async with baton_server(db_url, tokens, server_log, ENV) as server:
        ended = await turn(server, "remember the milk")
        waiting = await turn(server, "forget the milk", ended["id"])
        assert waiting["status"] == "waiting"
        before = digest(db_url)
        refusals = {}
        async with server.client("sam") as sam, server.client("lee") as lee:
            for name, client, body in (
                ("still asking", sam, {"continues": waiting["id"]}),
                ("no such run", sam, {"continues": "run_nope"}),
                ("not theirs to see", lee, {"continues": ended["id"]}),
                ("no conversation", sam, {"workflow": "briefing", "continues": ended["id"]}),
                ("empty", sam, {"continues": ""}),
            ):
                sent = {"workflow": "notetaker", "input": {"text": "and?"}, **body}
                reply = await client.post("/api/runs", json=sent)
                refusals[name] = (reply.status_code, reply.json())
            after = digest(db_url)

    assert after == before
    assert {name: (status, body["error"]) for name, (status, body) in refusals.items()} == {
        "still asking": (409, "run_not_ended"),
        "no such run": (422, "invalid_continues"),
        "not theirs to see": (422, "invalid_continues"),
        "no conversation": (422, "invalid_continues"),
        "empty": (422, "invalid"),
    }
    for name in ("no such run", "not theirs to see", "no conversation"):
        assert refusals[name][1]["errors"][0]["loc"] == ["body", "continues"], name
    assert waiting["id"] in refusals["still asking"][1]["detail"]
    # the same words whether the run is not there or is someone else's: nothing leaks
    assert refusals["not theirs to see"][1]["detail"].replace(ended["id"], "X") == refusals[
        "no such run"
    ][1]["detail"].replace("run_nope", "X")
    assert "starts on its typed input" in refusals["no conversation"][1]["detail"]


async def test_a_retried_continuation_with_its_idempotency_key_starts_one_run(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    async with baton_server(db_url, tokens, server_log, ENV) as server:
        first = await turn(server, "remember the milk")
        other = await turn(server, "remember the eggs")
        body = {"workflow": "notetaker", "input": {"text": "and?"}, "continues": first["id"]}
        async with server.client("sam") as sam:
            headers = {"Idempotency-Key": "next-turn-1"}
            one = await sam.post("/api/runs", json=body, headers=headers)
            again = await sam.post("/api/runs", json=body, headers=headers)
            elsewhere = {**body, "continues": other["id"]}
            conflict = await sam.post("/api/runs", json=elsewhere, headers=headers)

    assert (one.status_code, again.status_code) == (201, 201)
    assert again.json()["id"] == one.json()["id"]
    assert again.headers["Idempotent-Replayed"] == "true"
    assert conflict.status_code == 409, conflict.text


def baton(tmp_path: Path, *args: str) -> Any:
    return cli(tmp_path, *args, workflows="tests.fixtures.chat_agents")


def test_the_cli_continues_a_run_in_a_new_process_and_says_so(tmp_path: Path) -> None:
    """`baton run --continues`: each turn a process of its own, on the same database."""
    first = baton(
        tmp_path, "run", "notetaker", "--input", '{"text": "remember the milk"}', "--json"
    )
    assert first.returncode == 0, first.stderr
    earlier = json.loads(first.stdout)["id"]
    second = baton(
        tmp_path, "run", "notetaker", "--input", '{"text": "and?"}', "--continues", earlier
    )
    missing = baton(
        tmp_path, "run", "notetaker", "--input", '{"text": "and?"}', "--continues", "run_x"
    )

    assert second.returncode == 0, second.stderr
    assert f"continues the conversation of run {earlier}" in second.stdout
    assert "You said ['remember the milk', 'and?']" in second.stdout
    assert missing.returncode != 0
    assert "continues: no run run_x to continue" in missing.stderr


async def test_an_ag_ui_chat_goes_on_once_per_message_and_shows_only_what_its_reader_may_see(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    """A reload (the snapshot's messages sent back), a message sent again, a message while the
    turn still asks, and someone else reading a later turn: each as a chat front end sends it."""
    async with baton_server(db_url, tokens, server_log, ENV) as server:
        thread = "chat-7"
        hello = UserMessage(id="u1", content="remember the secret code 4711")
        async with agui(server, "sam", "notetaker", run_input(thread, messages=[hello])) as one:
            shown = [e for e in await one.until(finished) if isinstance(e, MessagesSnapshotEvent)]
        chat = [*shown[-1].messages]  # the client takes the snapshot's messages, Baton's ids
        runs = await server.run_count()
        async with agui(server, "sam", "notetaker", run_input(thread, messages=chat)) as reload:
            await reload.until(finished)
        reloaded = await server.run_count()

        asking = [*chat, UserMessage(id="u2", content="forget the milk")]
        async with agui(server, "sam", "notetaker", run_input(thread, messages=asking)) as two:
            approval = the_interrupt((await two.until(interrupted))[-1])
        second = approval.metadata["baton"]["run_id"]
        before = digest(db_url)
        early = [*asking, UserMessage(id="u3", content="and?")]
        async with server.client("sam") as sam:
            too_early = await sam.post("/agui/notetaker", json=run_input(thread, messages=early))
        unchanged = digest(db_url) == before
        # lee, who answers the approval, reads that turn, not the turn before (not his to see)
        lee_reads = run_input(second, follow=False)
        async with agui(server, "lee", "notetaker", lee_reads) as lee:
            seen = [e for e in await lee.until(interrupted) if isinstance(e, MessagesSnapshotEvent)]
        reply = await server.respond(approval.id, {"decision": "approve"}, user="lee")
        assert reply.status_code == 200, reply.text
        await server.wait_for_run(second, status="completed")
        # the same chat sent again once that turn ended: no third run
        async with agui(server, "sam", "notetaker", run_input(thread, messages=asking)) as again:
            await again.until(finished)
        final = await server.run_count()

    assert reloaded == runs
    assert (too_early.status_code, too_early.json()["error"]) == (409, "run_not_ended")
    assert second in too_early.json()["detail"]
    assert unchanged
    said = [getattr(m, "content", None) for m in seen[-1].messages]
    assert said[:1] == ["forget the milk"]
    assert not any("4711" in str(text) for text in said)
    assert final == runs + 1


async def test_a_chat_message_s_id_of_any_shape_starts_its_turn_once(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    """An id a client makes up (5,000 characters, any text) starts its turn once; one that is no
    text (a lone surrogate) is refused where it was sent, with nothing stored."""
    async with baton_server(db_url, tokens, server_log, ENV) as server:
        hello = UserMessage(id="a", content="remember the milk")
        async with agui(server, "sam", "notetaker", run_input("chat-8", messages=[hello])) as one:
            await one.until(finished)
        runs = await server.run_count()
        broken = UserMessage(id="\ud800", content="and?")
        before = digest(db_url)
        async with server.client("sam") as sam:  # (escaped: httpx's JSON cannot carry it)
            refused = await sam.post(
                "/agui/notetaker",
                content=json.dumps(run_input("chat-8", messages=[hello, broken])),
                headers={"Content-Type": "application/json"},
            )
        unchanged = digest(db_url) == before
        odd = UserMessage(id="ü " + "x" * 5000, content="and?")
        chat = run_input("chat-8", messages=[hello, odd])
        for _ in range(2):  # the second time: sent again
            async with agui(server, "sam", "notetaker", chat) as two:
                ending = (await two.until(finished))[-1]
        listed = await server.run_count()

    assert refused.status_code == 422, refused.text
    assert refused.json()["errors"][0]["loc"] == ["body", "messages", "1", "id"]
    assert unchanged
    assert isinstance(ending, RunFinishedEvent)
    assert ending.result["text"].startswith("You said ['remember the milk', 'and?']")
    assert listed == runs + 1


async def test_a_person_continues_a_conversation_from_the_run_s_page(
    db_url: str, tokens: dict[str, str], passwords: dict[str, str], server_log: Path
) -> None:
    """The page's form: the next message starts a run continuing this one; a blank message and
    a run still asking are told on the page, with nothing stored; a viewer gets no form."""
    async with baton_server(db_url, tokens, server_log, ENV) as server:
        first = await turn(server, "remember the milk")
        asking = await turn(server, "forget the milk", first["id"])
        async with signed_in(server, "sam", passwords["sam"]) as sam:
            await sam.refresh_token(f"/runs/{first['id']}")
            before = digest(db_url)
            blank = await sam.post(f"/runs/{first['id']}/continue", {"text": "  "})
            early = await sam.post(f"/runs/{asking['id']}/continue", {"text": "and?"})
            nul = await sam.post(f"/runs/{first['id']}/continue", {"text": "and\x00?"})
            unchanged = digest(db_url) == before
            form_while_asking = "Continue this conversation" in text_of(
                (await sam.http.get(f"/runs/{asking['id']}")).text
            )
            sent = await sam.post(f"/runs/{first['id']}/continue", {"text": "what do you know?"})
        later = sent.headers.get("location", "").removeprefix("/runs/")
        done = await server.wait_for_run(later, status="completed")
        async with signed_in(server, "sam", passwords["sam"]) as sam:
            later_page = (await sam.http.get(f"/runs/{later}")).text
        approval = await server.wait_for_request(asking["id"])
        reply = await server.respond(approval["id"], {"decision": "approve"}, user="lee")
        assert reply.status_code == 200, reply.text
        await server.wait_for_run(asking["id"], status="completed")
        async with signed_in(server, "val", passwords["val"]) as val:  # a viewer of its team
            viewed = await val.http.get(f"/runs/{asking['id']}")

    assert (blank.status_code, early.status_code, sent.status_code) == (422, 409, 303)
    assert "Write the next message first." in text_of(blank.text)
    assert nul.status_code == 422, nul.text[:300]
    assert "holds a NUL character" in text_of(nul.text)
    assert f"run {asking['id']} is waiting: a run continues a conversation once" in text_of(
        early.text
    )
    assert unchanged
    assert not form_while_asking
    assert done["continues"] == first["id"]
    assert done["output"]["text"].startswith("You said ['remember the milk', 'what do you know?']")
    assert viewed.status_code == 200
    # the audit trail's `run.started` links the run it continues; the graph says the run ended
    audit = later_page.partition('id="events-heading"')[2]
    assert f'<a href="/runs/{first["id"]}">{first["id"]}</a>' in audit
    assert "The run has ended." in text_of(later_page)
    assert "Continue this conversation" not in text_of(viewed.text)


async def test_an_agent_s_session_state_goes_on_with_the_conversation_as_on_maf_alone(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    """MAF's harness `TodoProvider` keeps its todos in the agent's session: the next turn's model
    sees them, as on MAF alone (one session, two `agent.run`s), each earlier message once, and in
    MAF's order: the history (which MAF's history provider loads first), the provider's list,
    the new message."""
    async with baton_server(db_url, tokens, server_log, ENV) as server:
        first = await server.start_run(
            {"workflow": "planner", "input": {"text": "plan: milk, bread"}}
        )
        await server.wait_for_run(first["id"], status="completed")
        body = {"workflow": "planner", "input": {"text": "what is left?"}, "continues": first["id"]}
        second = await server.start_run(body)
        done = await server.wait_for_run(second["id"], status="completed")
        recorded = await server.run(first["id"])

    agent = chat_agents.planner(ScriptedChatClient(PLAYS["planner"]))
    session = agent.create_session()
    await agent.run("plan: milk, bread", session=session)
    alone = await agent.run("what is left?", session=session)

    assert alone.text == (  # the history first, then the provider's list, then the new message
        "Todos: '- 1 [open] milk\\n- 2 [open] bread'. "
        "You said ['plan: milk, bread', 'what is left?']. "
        "Handed: user assistant tool assistant todos user. "
        """Calls as written: ['{"todos":[{"title":"milk"},{"title":"bread"}]}']."""
    )
    assert done["output"]["text"] == alone.text
    # the todos ride the first run's record, its history provider's messages do not
    [kept] = [e["sessions"] for e in recorded["conversation"] if e["type"] == "sessions"]
    assert set(kept) == {"Planner"}
    assert "in_memory" not in kept["Planner"]


async def test_a_continued_orchestration_starts_on_what_maf_s_workflow_agent_keeps(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    """An orchestration's next turn is handed the user's messages and its replies, as MAF's
    `workflow.as_agent()` keeps a session: not each agent's draft on the way (the writer's);
    each agent loads its own earlier turn first, as on MAF alone, whose `main()` talks to one
    agent (one workflow, whose agent executors keep their sessions) turn after turn."""
    turns = ["Write about kites.", "Make it shorter."]
    chat_agents.HANDED.clear()
    async with baton_server(db_url, tokens, server_log, ENV) as server:
        first = await server.start_run({"workflow": "drafting", "input": {"text": turns[0]}})
        await server.wait_for_run(first["id"], status="completed")
        body = {"workflow": "drafting", "input": {"text": turns[1]}, "continues": first["id"]}
        second = await server.start_run(body)
        done = await server.wait_for_run(second["id"], status="completed")
    on_baton = list(chat_agents.HANDED)

    chat_agents.HANDED.clear()
    agent = chat_agents.drafting(ScriptedChatClient(PLAYS["drafting"])).as_agent()
    session = agent.create_session()
    for said in turns:  # one agent, turn after turn, as MAF's samples' `main()`s talk to it
        alone = await agent.run(said, session=session)
    on_maf = list(chat_agents.HANDED)

    assert on_baton == on_maf
    writer_then = on_maf[2][1]
    assert [(role, text) for role, _, text in writer_then] == [
        ("user", "Write about kites."),  # its own session's turn
        ("assistant", "writer on 'Write about kites.', handed 1"),
        ("user", "Write about kites."),  # the workflow agent's session's
        ("assistant", "editor on 'Write about kites.', handed 2"),
        ("user", "Make it shorter."),
    ]
    assert done["output"] == {"agent": "editor", "text": alone.text}


async def test_a_magentic_manager_s_plan_ledger_and_answer_are_its_lines_and_it_takes_no_turn(
    db_url: str, tokens: dict[str, str], passwords: dict[str, str], server_log: Path
) -> None:
    """MAF's Magentic orchestrator runs its manager's agent itself (not as an executor): its
    plan, its progress ledger and the final answer the run ends with are the manager's lines.
    A turn after it is refused (MAF's Magentic takes one task message), storing nothing."""
    async with baton_server(db_url, tokens, server_log, ENV) as server:
        run = await server.start_run({"workflow": "research_team", "input": {"text": "Kites?"}})
        done = await server.wait_for_run(run["id"], status=("completed", "failed"))
        before = digest(db_url)
        async with server.client("sam") as sam:
            body = {"workflow": "research_team", "input": {"text": "More?"}, "continues": run["id"]}
            refused = await sam.post("/api/runs", json=body)
        after = digest(db_url)
        async with signed_in(server, "sam", passwords["sam"]) as sam_page:
            page = text_of((await sam_page.http.get(f"/runs/{run['id']}")).text)

    assert done["status"] == "completed", done["error"]
    said = [
        (e.get("agent") or e.get("by"), e["text"])
        for e in done["conversation"]
        if e["type"] == "message"
    ]
    answer = "The team's answer, after 2 parts."
    assert done["output"] == {"agent": "manager", "text": answer}
    assert said[:3] == [
        ("user", "Kites?"),
        ("manager", "Facts: none given."),
        ("manager", "Plan: the researcher, then the writer."),
    ]
    assert [who for who, _ in said[3:]] == [
        "manager",
        "researcher",
        "manager",
        "writer",
        "manager",
        "manager",
    ]
    assert said[-1] == ("manager", answer)
    assert json.loads(said[-2][1])["is_request_satisfied"] == {"reason": "2 spoke", "answer": True}
    assert f"Agent · manager {answer}" in page
    assert "Continue this conversation" not in page
    assert (refused.status_code, refused.json()["error"]) == (422, "invalid_continues")
    assert after == before


async def test_the_result_maf_gives_a_call_of_no_tool_is_noted_and_carried_on(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    async with baton_server(db_url, tokens, server_log, ENV) as server:
        first = await turn(server, "summon the cat")
        second = await turn(server, "and?", first["id"])

    missing = 'Error: Requested function "summon" not found.'
    assert first["output"]["text"] == f"Done: {missing}"
    assert [e for e in first["conversation"] if e["type"] == "tool_result"] == [
        {
            "type": "tool_result",
            "agent": "Notetaker",
            "tool": "summon",
            "call_id": "call-summon-1",
            "result": missing,
        }
    ]
    # the next turn's model is handed the call and its result, as MAF alone keeps them
    assert second["output"]["text"] == (
        "You said ['summon the cat', 'and?']. I called ['summon(the cat)'], which returned "
        f"['{missing}']. I replied ['Done: {missing}']."
    )
