"""AG-UI front ends (`POST /agui/{workflow}`), driven as an AG-UI client drives them.

Requests are built and the SSE stream is read with the protocol's own Python types
(`ag_ui.core`: `RunAgentInput`, `ResumeEntry`, and every event parsed as the `Event` union), over
real HTTP against the app served in this process. The subjects: the shipped `refund` workflow
(the scripted model), the plain-MAF `typed_review` sample (a typed dataclass answer) and the
shipped `purchase` (two requests pending at once).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from ag_ui.core import (
    AssistantMessage,
    BaseEvent,
    CustomEvent,
    Event,
    MessagesSnapshotEvent,
    ResumeEntry,
    RunAgentInput,
    RunErrorEvent,
    RunFinishedEvent,
    RunStartedEvent,
    TextInputContent,
    UserMessage,
)
from pydantic import TypeAdapter

from tests.harness import REFUND_120, Server, baton_server, digest
from tests.pages import signed_in

EVENTS: TypeAdapter[Any] = TypeAdapter(Event)
REVIEW = {"title": "Spring launch post"}
PURCHASE = {"item": "laptop", "amount": 2400, "vendor": "Contoso", "requester": "sam"}


@pytest.fixture
def server(samples_server: Server) -> Server:
    return samples_server


def run_input(
    thread_id: str,
    *,
    state: dict[str, Any] | None = None,
    resume: list[ResumeEntry] | None = None,
    follow: bool = True,
    messages: list[Any] | None = None,
) -> dict[str, Any]:
    """A RunAgentInput as an AG-UI client sends it (camelCase JSON)."""
    agui = RunAgentInput(
        thread_id=thread_id,
        run_id=f"agui-{uuid.uuid4().hex[:8]}",
        messages=messages or [],
        state=state,
        resume=resume,
        forwarded_props={} if follow else {"baton": {"follow": False}},
    )
    return agui.model_dump(mode="json", by_alias=True)


def answer(request_id: str, body: dict[str, Any]) -> list[ResumeEntry]:
    return [ResumeEntry(interrupt_id=request_id, status="resolved", payload=body)]


class AguiStream:
    """AG-UI events read off an SSE response with the protocol's types, checked in order."""

    def __init__(self, lines: AsyncIterator[str]) -> None:
        self._lines = lines
        self.seen: list[BaseEvent] = []

    async def next(self, timeout: float = 20.0) -> BaseEvent:
        data: list[str] = []
        async with asyncio.timeout(timeout):
            async for line in self._lines:
                if line.startswith("data:"):
                    data.append(line.removeprefix("data:").removeprefix(" "))
                elif not line and data:
                    event: BaseEvent = EVENTS.validate_json("\n".join(data))
                    check_order(self.seen, event)
                    self.seen.append(event)
                    return event
        raise AssertionError(f"the stream ended after {[e.type for e in self.seen]}")

    async def until(self, wanted: Callable[[BaseEvent], bool]) -> list[BaseEvent]:
        """Events up to and including the first `wanted` one."""
        found = []
        while True:
            found.append(await self.next())
            if wanted(found[-1]):
                return found

    async def rest(self) -> list[BaseEvent]:
        """Every event until the server ends the stream."""
        found = []
        with contextlib.suppress(AssertionError):
            while True:
                found.append(await self.next())
        return found


def check_order(before: list[BaseEvent], event: BaseEvent) -> None:
    """AG-UI's lifecycle (as @ag-ui/client's verifier holds it): RUN_STARTED first; after a
    RUN_FINISHED only a new RUN_STARTED (or RUN_ERROR); nothing after a RUN_ERROR."""
    lifecycle = [e for e in before if isinstance(e, RunStartedEvent | RunFinishedEvent)]
    if not before:
        assert isinstance(event, RunStartedEvent | RunErrorEvent), event
        return
    assert not isinstance(before[-1], RunErrorEvent), f"{event.type} after RUN_ERROR"
    closed = isinstance(lifecycle[-1], RunFinishedEvent)
    if closed:
        assert isinstance(event, RunStartedEvent | RunErrorEvent), f"{event.type} after finish"
    else:
        assert not isinstance(event, RunStartedEvent), "RUN_STARTED inside an open run"


def interrupted(event: BaseEvent) -> bool:
    return (
        isinstance(event, RunFinishedEvent)
        and event.outcome is not None
        and (event.outcome.type == "interrupt")
    )


def finished(event: BaseEvent) -> bool:
    return isinstance(event, RunErrorEvent) or (
        isinstance(event, RunFinishedEvent)
        and (event.outcome is None or event.outcome.type != "interrupt")
    )


@contextlib.asynccontextmanager
async def agui(
    server: Server, user: str, workflow: str, body: dict[str, Any]
) -> AsyncIterator[AguiStream]:
    """`POST /agui/{workflow}` as `user`, its AG-UI stream open until the block ends."""
    async with (
        server.client(user) as client,
        client.stream("POST", f"/agui/{workflow}", json=body) as reply,
    ):
        assert reply.status_code == 200, await reply.aread()
        assert reply.headers["content-type"].startswith("text/event-stream")
        yield AguiStream(reply.aiter_lines())


async def refused(server: Server, user: str | None, workflow: str, body: Any) -> httpx.Response:
    """A call that must be refused before any stream starts (`body` as JSON, or bytes as sent)."""
    client = server.anonymous()
    if user is not None:
        client.headers["Authorization"] = f"Bearer {server.tokens[user]}"
    if isinstance(body, bytes):
        json_type = {"content-type": "application/json"}
        reply = await client.post(f"/agui/{workflow}", content=body, headers=json_type)
    else:
        reply = await client.post(f"/agui/{workflow}", json=body)
    assert reply.headers["content-type"].startswith("application/json"), reply.text
    return reply


def the_interrupt(event: BaseEvent) -> Any:
    assert interrupted(event), event
    assert isinstance(event, RunFinishedEvent)
    assert event.outcome is not None
    [interrupt] = event.outcome.interrupts  # type: ignore[union-attr]
    return interrupt


async def test_a_refund_asks_by_interrupt_and_finishes_on_the_typed_answer_posted_back(
    server: Server, db_url: str
) -> None:
    thread = f"thread-{uuid.uuid4().hex}"
    start = run_input(thread, state=REFUND_120["input"], follow=False)
    async with agui(server, "sam", "refund", start) as stream:
        first = await stream.until(interrupted)
        assert await stream.rest() == []  # not following: the stream ends at the interrupt
    opened = first[0]
    assert isinstance(opened, RunStartedEvent)
    assert (opened.thread_id, opened.run_id) == (thread, start["runId"])
    interrupt = the_interrupt(first[-1])
    baton = interrupt.metadata["baton"]
    pending = await server.request(interrupt.id, user="lee")
    # the agent's conversation up to the pause, as AG-UI messages
    [*_, said] = [e for e in first if isinstance(e, MessagesSnapshotEvent)]
    calls = [c.function for m in said.messages if m.role == "assistant" for c in m.tool_calls or ()]
    assert [c.name for c in calls][-1] == "issue_refund"
    assert json.loads(calls[-1].arguments) == pending["proposed_action"]["arguments"]
    # the interrupt is the request: id, kind, title, reason, proposed action, answer schema
    assert (interrupt.reason, interrupt.message) == ("approval", pending["title"])
    assert interrupt.response_schema == pending["response_schema"]
    assert baton["reason"] == pending["reason"]
    assert baton["proposed_action"] == pending["proposed_action"]
    assert baton["proposed_action"]["tool"] == "issue_refund"
    assert baton["allowed_decisions"] == ["approve", "edit", "reject"]
    run_id = baton["run_id"]
    runs = await server.run_count()

    # a front end that reloads finds the same run and the same interrupt, by its thread
    async with agui(server, "sam", "refund", run_input(thread, follow=False)) as again:
        assert the_interrupt((await again.until(interrupted))[-1]).id == interrupt.id
    # or by the run's id (another person's front end: thread id = run id)
    async with agui(server, "lee", "refund", run_input(run_id, follow=False)) as lee:
        assert the_interrupt((await lee.until(interrupted))[-1]).id == interrupt.id
    assert await server.run_count() == runs

    # an invalid answer: the API's 422, word for word, and nothing stored
    bad = {"decision": "reject"}  # a rejection needs its reason
    before = digest(db_url)
    reply = await refused(
        server, "lee", "refund", run_input(run_id, resume=answer(interrupt.id, bad))
    )
    api = await server.respond(interrupt.id, bad, user="lee")
    assert (reply.status_code, reply.json()) == (422, api.json()), reply.text
    assert api.status_code == 422
    assert digest(db_url) == before

    # the starter may not approve (four-eyes, as in the API); lee may
    four_eyes = await refused(
        server,
        "sam",
        "refund",
        run_input(thread, resume=answer(interrupt.id, {"decision": "approve"})),
    )
    assert four_eyes.status_code == 403, four_eyes.text
    assert digest(db_url) == before
    resume = run_input(run_id, resume=answer(interrupt.id, {"decision": "approve"}))
    async with agui(server, "lee", "refund", resume) as stream:
        rest = await stream.until(finished)
        assert await stream.rest() == []
    assert isinstance(rest[0], RunStartedEvent)
    assert rest[0].run_id == resume["runId"]
    done = await server.wait_for_run(run_id, status="completed")
    assert isinstance(rest[-1], RunFinishedEvent)
    assert rest[-1].outcome is None
    assert rest[-1].result == done["output"]
    assert done["requests"][0]["answers"][0]["actor"] == "lee"
    [*_, said] = [e for e in rest if isinstance(e, MessagesSnapshotEvent)]
    assert said.messages[-1].role == "assistant"
    assert said.messages[-1].content == done["conversation"][-1]["text"]  # the agent's last word
    audit = {e["id"] for e in await server.audit(run_id)}
    customs = [e for e in rest if isinstance(e, CustomEvent)]
    assert all(c.value["id"] in audit and c.value["type"] == c.name for c in customs)


async def test_an_answer_in_the_web_inbox_finishes_the_open_ag_ui_stream(
    server: Server, passwords: dict[str, str]
) -> None:
    start = run_input(f"thread-{uuid.uuid4().hex}", state=REFUND_120["input"])
    async with agui(server, "sam", "refund", start) as stream:
        first = await stream.until(interrupted)
        interrupt = the_interrupt(first[-1])
        async with signed_in(server, "lee", passwords["lee"]) as lee:
            page = await lee.post(f"/requests/{interrupt.id}", {"decision": "approve"})
            assert page.status_code == 303, page.text
        rest = await stream.until(finished)
        assert await stream.rest() == []  # the run ended: so does the stream
    run_id = interrupt.metadata["baton"]["run_id"]
    done = await server.wait_for_run(run_id, status="completed")
    moved_on = rest[0]
    assert isinstance(moved_on, RunStartedEvent)
    assert moved_on.parent_run_id == start["runId"]  # the run the interrupt ended
    assert isinstance(rest[-1], RunFinishedEvent)
    assert rest[-1].result == done["output"]
    assert "refund" in json.dumps(done["output"]).lower()


async def test_a_plain_maf_workflow_asks_its_typed_question_and_takes_the_typed_answer(
    server: Server, db_url: str
) -> None:
    async with agui(server, "sam", "typed_review", run_input("review-1", state=REVIEW)) as stream:
        interrupt = the_interrupt((await stream.until(interrupted))[-1])
        pending = await server.request(interrupt.id, user="lee")
        assert interrupt.reason == "input"
        assert interrupt.response_schema == pending["response_schema"]
        assert interrupt.metadata["baton"]["context"]["author"] == {
            "name": "kim",
            "team": "writers",
        }

        before = digest(db_url)
        bad = {"decision": "answer", "answer": {"verdict": "publish", "score": 9}}
        reply = await refused(
            server, "lee", "typed_review", run_input("x", resume=answer(interrupt.id, bad))
        )
        assert reply.status_code == 404  # lee's own thread "x" names no run: nothing to resume
        run_id = interrupt.metadata["baton"]["run_id"]
        reply = await refused(
            server, "lee", "typed_review", run_input(run_id, resume=answer(interrupt.id, bad))
        )
        api = await server.respond(interrupt.id, bad, user="lee")
        assert (reply.status_code, reply.json()) == (422, api.json())
        assert reply.json()["errors"][0]["loc"] == ["body", "answer", "score"]
        assert digest(db_url) == before

        good = {
            "decision": "answer",
            "answer": {"verdict": "publish", "score": 4, "tags": ["tone"]},
        }
        resume = run_input(run_id, resume=answer(interrupt.id, good))
        async with agui(server, "lee", "typed_review", resume) as answered:
            rest = await answered.until(finished)
        # the first stream, still open, saw the run move on and end too
        theirs = await stream.until(finished)
    expected = {
        "title": "Spring launch post",
        "verdict": "publish",
        "score": 4,
        "tags": ["tone"],
        "followup": None,
        "due_in_days": None,
    }
    for ending in (rest[-1], theirs[-1]):
        assert isinstance(ending, RunFinishedEvent)
        assert ending.result == expected


async def test_a_chat_s_message_starts_a_workflow_whose_input_is_one_text_field(
    server: Server,
) -> None:
    # as a chat front end sends it: what the person typed, no state
    chat = [
        UserMessage(id="m1", content="Hello"),
        AssistantMessage(id="m2", content="Hi! Ask me about the weather."),
        UserMessage(id="m3", content=[TextInputContent(text="Will it rain today?")]),
    ]
    start = run_input("chat-1", messages=chat)
    async with agui(server, "sam", "declaration_only", start) as stream:
        interrupt = the_interrupt((await stream.until(interrupted))[-1])
        run_id = interrupt.metadata["baton"]["run_id"]
        resume = run_input(
            run_id, resume=answer(interrupt.id, {"decision": "answer", "answer": "Lisbon"})
        )
        async with agui(server, "lee", "declaration_only", resume) as answered:
            rest = await answered.until(finished)
    run = await server.run(run_id)

    assert run["input"] == {"question": "Will it rain today?"}  # the last message of the person's
    ending = rest[-1]
    assert isinstance(ending, RunFinishedEvent)
    assert ending.result == {"agent": "WeatherBot", "text": "It is sunny in Lisbon today."}
    # a workflow whose input is not one text field still takes it from `state` alone
    reply = await refused(server, "sam", "typed_review", run_input("chat-2", messages=chat))
    assert reply.status_code == 422, reply.text
    assert reply.json()["errors"] == [{"loc": ["body", "state", "title"], "msg": "Field required"}]
    # a message that cannot be an input is refused where it was sent, and starts nothing
    runs = await server.run_count()
    nul = [UserMessage(id="m1", content="Will it\x00 rain?")]
    reply = await refused(server, "sam", "declaration_only", run_input("chat-3", messages=nul))
    assert reply.status_code == 422, reply.text
    assert [e["loc"] for e in reply.json()["errors"]] == [["body", "messages", "0", "content"]]
    assert await server.run_count() == runs


async def test_a_front_end_written_for_maf_s_ag_ui_endpoint_reads_and_answers_unchanged(
    server: Server, db_url: str
) -> None:
    """MAF's AG-UI demo's workflow (`tests.samples.agui_handoff`), driven with the bodies its
    front end (`ag_ui_workflow_handoff/frontend/src/App.tsx`) and MAF's README send: snake_case
    keys, messages without ids, MAF's resume envelope, MAF's own answers."""
    thread = f"case-{uuid.uuid4().hex[:8]}"
    start = {  # App.tsx's startNewTurn
        "thread_id": thread,
        "run_id": str(uuid.uuid4()),
        "messages": [{"role": "user", "content": "My headphones arrived damaged. Refund, please."}],
    }
    async with agui(server, "sam", "agui_handoff", start) as stream:
        question = the_interrupt((await stream.until(interrupted))[-1])
    assert question.reason == "question"
    assert question.tool_call_id is None
    maf = question.metadata["agent_framework"]
    assert maf["type"] == "workflow_request_info"
    assert maf["source_executor_id"] == "refund_agent"
    assert maf["request_type"] == "HandoffAgentUserRequest"
    [said] = maf["data"]["agent_response"]["messages"]  # what App.tsx shows of the agent's turn
    assert said["author_name"] == "refund_agent"
    assert said["contents"] == [
        {"type": "text", "text": "Sorry about that. Which order is it? Please give its number."}
    ]

    reply = {  # App.tsx's resumeHandoffInput: MAF's envelope, the reply as MAF's list[Message]
        "thread_id": thread,
        "run_id": str(uuid.uuid4()),
        "messages": [],
        "resume": {
            "interrupts": [
                {
                    "id": question.id,
                    "value": [{"role": "user", "contents": [{"type": "text", "text": "987654"}]}],
                }
            ]
        },
    }
    async with agui(server, "sam", "agui_handoff", reply) as stream:
        approval = the_interrupt((await stream.until(interrupted))[-1])
    answered = await server.request(question.id)
    [relayed] = answered["answers"]
    assert (relayed["actor"], relayed["decision"], relayed["body"]) == (
        "sam",
        "answer",
        {"answer": "987654"},
    )
    assert approval.reason == "approval"
    assert approval.tool_call_id == "call-refund"
    maf = approval.metadata["agent_framework"]  # MAF's function_approval_request, as MAF has it
    assert maf["type"] == "function_approval_request"
    assert maf["function_call"]["name"] == "submit_refund"
    assert json.loads(maf["function_call"]["arguments"]) == {
        "refund_description": "arrived damaged",
        "amount": "$210.78",
        "order_id": "987654",
    }

    run_id = approval.metadata["baton"]["run_id"]
    before = digest(db_url)
    unreadable = answer(approval.id, {"approved": "yes"})  # neither MAF's answer nor Baton's
    refusal = await refused(server, "lee", "agui_handoff", run_input(run_id, resume=unreadable))
    assert refusal.status_code == 422, refusal.text
    # an edit of no argument of the call (MAF's by-name form), a lone surrogate's too: named,
    # never dropped into a plain approval
    for stray, said in (
        ("amount_usd", "the call has no argument 'amount_usd'"),
        ("\ud800", "field name is not valid Unicode text (a lone surrogate)"),
    ):
        body = run_input(run_id, resume=answer(approval.id, {}))
        body["resume"][0]["payload"] = {"approved": True, stray: "$1.00"}
        sent = json.dumps(body).encode()  # (escaped as `\ud800`, as a client's JSON may be)
        refusal = await refused(server, "lee", "agui_handoff", sent)
        assert refusal.status_code == 422, refusal.text
        assert said in refusal.text, refusal.text
    assert digest(db_url) == before

    approve = {  # App.tsx's resumeApproval: MAF's function_approval_response
        "type": "function_approval_response",
        "approved": True,
        "id": maf["id"],
        "function_call": maf["function_call"],
    }
    resume = run_input(run_id, resume=answer(approval.id, approve))
    async with agui(server, "lee", "agui_handoff", resume) as stream:
        rest = await stream.until(finished)
    assert isinstance(rest[-1], RunFinishedEvent)
    done = await server.wait_for_run(run_id, status="completed")
    [decided] = [r for r in done["requests"] if r["id"] == approval.id]
    assert [(a["actor"], a["decision"]) for a in decided["answers"]] == [("lee", "approve")]
    said = [e.get("text") for e in done["conversation"]]
    assert (
        "refund recorded for order 987654 (amount: $210.78) with details: arrived damaged. "
        "Case complete." in said
    )

    # the case is closed: a page that reloads sees its end; a new message is told, not answered
    async with agui(server, "sam", "agui_handoff", start) as stream:
        again = await stream.until(finished)
    assert isinstance(again[-1], RunFinishedEvent)
    runs = await server.run_count()
    later = {**start, "messages": [*start["messages"], {"role": "user", "content": "Thanks!"}]}
    refusal = await refused(server, "sam", "agui_handoff", later)
    assert refusal.status_code == 409, refusal.text
    assert refusal.json()["error"] == "thread_ended"
    assert run_id in refusal.json()["detail"]
    assert await server.run_count() == runs


async def test_every_answer_of_a_resume_is_checked_before_any_is_recorded(
    server: Server, db_url: str
) -> None:
    async with agui(server, "sam", "purchase", run_input("buy-1", state=PURCHASE)) as stream:
        interrupts = (await stream.until(interrupted))[-1].outcome.interrupts  # type: ignore[union-attr]
    assert sorted(i.metadata["baton"]["team"] for i in interrupts) == ["finance", "legal"]
    run_id = interrupts[0].metadata["baton"]["run_id"]
    good, bad = {"decision": "approve"}, {"decision": "reject"}
    both = [
        ResumeEntry(interrupt_id=interrupts[0].id, status="resolved", payload=good),
        ResumeEntry(interrupt_id=interrupts[1].id, status="resolved", payload=bad),
    ]
    before = digest(db_url)
    reply = await refused(server, "ada", "purchase", run_input(run_id, resume=both))
    assert reply.status_code == 422, reply.text
    assert digest(db_url) == before  # the good one was not recorded either

    # `cancelled`: this front end leaves that request to the inbox; the other is answered
    one = [
        ResumeEntry(interrupt_id=interrupts[0].id, status="resolved", payload=good),
        ResumeEntry(interrupt_id=interrupts[1].id, status="cancelled"),
    ]
    async with agui(server, "ada", "purchase", run_input(run_id, resume=one)) as stream:
        left = the_interrupt((await stream.until(interrupted))[-1])
    assert left.id == interrupts[1].id
    assert (await server.request(interrupts[0].id))["status"] in ("answered", "resumed")


async def test_no_credential_is_401_a_viewer_may_neither_start_nor_answer(server: Server) -> None:
    start = run_input("t-1", state=REFUND_120["input"])
    nobody = await refused(server, None, "refund", start)
    assert nobody.status_code == 401
    viewer = await refused(server, "val", "refund", start)
    assert viewer.status_code == 403
    assert "viewer" in viewer.json()["detail"]

    async with agui(
        server, "sam", "refund", run_input("t-2", state=REFUND_120["input"], follow=False)
    ) as s:
        interrupt = the_interrupt((await s.until(interrupted))[-1])
    run_id = interrupt.metadata["baton"]["run_id"]
    # val sees the run (a viewer of the owning team): she may follow it, not answer it
    async with agui(server, "val", "refund", run_input(run_id, follow=False)) as watching:
        assert the_interrupt((await watching.until(interrupted))[-1]).id == interrupt.id
    approve = run_input(run_id, resume=answer(interrupt.id, {"decision": "approve"}))
    assert (await refused(server, "val", "refund", approve)).status_code == 403
    assert (await refused(server, "fay", "refund", approve)).status_code == 404  # finance: unseen
    assert (
        await refused(server, "lee", "purchase", approve)
    ).status_code == 404  # not its workflow
    assert (await refused(server, "lee", "nothing", approve)).status_code == 404
    assert (await refused(server, "lee", "refund", {"threadId": 3})).status_code == 422
    assert (await server.request(interrupt.id))["status"] == "pending"


async def test_a_signed_in_page_answers_with_its_session_and_csrf_token(
    server: Server, db_url: str, passwords: dict[str, str]
) -> None:
    start = run_input("t-3", state=REFUND_120["input"], follow=False)
    async with agui(server, "sam", "refund", start) as stream:
        interrupt = the_interrupt((await stream.until(interrupted))[-1])
    run_id = interrupt.metadata["baton"]["run_id"]
    approve = run_input(run_id, resume=answer(interrupt.id, {"decision": "approve"}))
    async with signed_in(server, "lee", passwords["lee"]) as page:
        before = digest(db_url)
        forged = await page.api_post("/agui/refund", approve, csrf=False)  # another site's page
        assert forged.status_code == 403, forged.text
        assert digest(db_url) == before
        answered = await page.api_post("/agui/refund", approve, csrf=True)
    assert answered.status_code == 200, answered.text
    done = await server.wait_for_run(run_id, status="completed")
    assert done["requests"][0]["answers"][0]["actor"] == "lee"
    ending = EVENTS.validate_json(answered.text.strip().split("\n")[-1].removeprefix("data: "))
    assert isinstance(ending, RunFinishedEvent)
    assert ending.result == done["output"]


@pytest.mark.process
async def test_a_thread_outlives_a_kill_9_of_its_server_and_is_answered_after(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    thread = "page-that-outlives"
    start = run_input(thread, state=REFUND_120["input"])
    async with (
        baton_server(db_url, tokens, server_log) as server,
        agui(server, "sam", "refund", start) as stream,
    ):
        interrupt = the_interrupt((await stream.until(interrupted))[-1])
        server.kill()  # SIGKILL while the stream is open
    async with baton_server(db_url, tokens, server_log) as server:  # a new process, same database
        async with agui(server, "sam", "refund", run_input(thread, follow=False)) as again:
            assert the_interrupt((await again.until(interrupted))[-1]).id == interrupt.id
        run_id = interrupt.metadata["baton"]["run_id"]
        approve = run_input(run_id, resume=answer(interrupt.id, {"decision": "approve"}))
        async with agui(server, "lee", "refund", approve) as stream:
            rest = await stream.until(finished)
        done = await server.wait_for_run(run_id, status="completed")
        assert await server.run_count() == 1
    ending = rest[-1]
    assert isinstance(ending, RunFinishedEvent)
    assert ending.result == done["output"]


async def test_a_chat_s_next_message_is_the_next_turn_on_the_whole_conversation(
    server: Server,
) -> None:
    """MAF's `workflow_as_agent_with_session.py` (`tests.samples.workflow_session`) in a chat:
    each message once the last turn ended is a run that continues it, and every snapshot holds
    the whole conversation, as an AG-UI client replaces its messages with it."""
    first = "My name is Alex and I'm learning about machine learning."
    second = "What was my name again, and what am I learning about?"
    thread = f"talk-{uuid.uuid4().hex[:8]}"
    chat: list[Any] = [UserMessage(id="u1", content=first)]
    async with agui(server, "sam", "workflow_session", run_input(thread, messages=chat)) as stream:
        one = await stream.until(finished)
    [shown] = [e for e in one if isinstance(e, MessagesSnapshotEvent)][-1:]
    chat = [*shown.messages, UserMessage(id="u2", content=second)]
    runs = await server.run_count()
    async with agui(server, "sam", "workflow_session", run_input(thread, messages=chat)) as stream:
        two = await stream.until(finished)
    assert await server.run_count() == runs + 1
    # the same chat sent again (a reload, a retry) follows that turn: no third run
    async with agui(server, "sam", "workflow_session", run_input(thread, messages=chat)) as stream:
        again = await stream.until(finished)
    assert await server.run_count() == runs + 1

    ending, replayed = two[-1], again[-1]
    assert isinstance(ending, RunFinishedEvent)
    assert isinstance(replayed, RunFinishedEvent)
    assert ending.result == {
        "agent": "summarizer",  # as on MAF alone: its own earlier turn, then the chat
        "text": "After 3 questions: Your name is Alex and you are learning about machine learning.",
    }
    assert replayed.result == ending.result
    snapshot = [e for e in two if isinstance(e, MessagesSnapshotEvent)][-1]
    assert [(m.role, getattr(m, "name", None), m.content) for m in snapshot.messages] == [
        ("user", None, first),
        ("assistant", "assistant", "Nice to meet you, Alex! Machine learning is a great field."),
        (
            "assistant",
            "summarizer",
            "After 1 questions: Nice to meet you, Alex! Machine learning is a great field.",
        ),
        ("user", None, second),
        (
            "assistant",
            "assistant",
            "Your name is Alex and you are learning about machine learning.",
        ),
        ("assistant", "summarizer", ending.result["text"]),
    ]
    [started] = [e for e in two if isinstance(e, CustomEvent) and e.name == "run.started"]
    later = await server.run(started.value["run_id"])
    assert later["continues"] is not None
    assert (await server.run(later["continues"]))["continued_by"] == [later["id"]]


async def test_the_same_words_sent_alone_again_are_the_next_turn_and_a_retry_is_not(
    server: Server,
) -> None:
    """A front end that sends each turn's new message alone and without an id (MAF's AG-UI
    demos): "continue" twice is two turns, as on MAF; the same request sent again (its `run_id`
    kept: a retry) is not a third."""
    thread = f"alone-{uuid.uuid4().hex[:8]}"

    def said(text: str, request: str) -> dict[str, Any]:
        return {
            "thread_id": thread,
            "run_id": request,
            "messages": [{"role": "user", "content": text}],
        }

    first = "My name is Alex and I'm learning about machine learning."
    again = "What was my name again, and what am I learning about?"
    before = await server.run_count()
    results = []
    for text, request in ((first, "r1"), (again, "r2"), (again, "r3"), (again, "r3")):
        async with agui(server, "sam", "workflow_session", said(text, request)) as stream:
            ending = (await stream.until(finished))[-1]
        assert isinstance(ending, RunFinishedEvent)
        results.append((ending.result or {}).get("text"))
    runs = await server.run_count() - before

    assert results[1].startswith("After 3 questions:")
    assert results[2].startswith("After 6 questions:")  # a turn of its own, on the whole chat
    assert results[3] == results[2]  # the retry follows that turn
    assert runs == 3
