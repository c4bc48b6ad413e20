"""Workflows written the plain-MAF way run on Baton with a registration and nothing else.

Ten shapes of MAF's human-in-the-loop samples and twenty-five of MAF's own samples (MAF's code, less
their `main()` and cloud client; `tests.samples`): each pauses, survives a kill -9 of `baton
serve`, takes its typed answers over the API in a new process and ends with the sample's own
output. In this process: a malformed
typed answer is refused naming the field and changes nothing; the policies file decides a plain
`@tool`'s calls and routes typed requests.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import re
import zlib
from collections.abc import Callable
from datetime import datetime
from html import unescape
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from agent_framework._workflows._checkpoint_encoding import decode_checkpoint_value

from executors.platform.services import ChatClientFactory
from human.store import open_store
from tests.harness import Server, baton_server, eventually, stored_run
from tests.pages import PAGE_ENV, signed_in, text_of
from tests.samples import MODULES, chart_review, file_history, served
from tests.samples import compaction_provider as compaction
from tests.samples import sequential_approval as database
from tests.samples import session_behavior as weather
from tests.samples import simple_context_provider as user_info
from tests.samples import todo_provider as todos
from tests.samples import tool_approval_middleware as tickets
from tests.samples.agui_handoff import lookup_order_details, submit_refund
from tests.samples.checkpoint_brief import BRIEF
from workflows.platform import registry

ENV = served()

Answer = dict[str, Any]
Step = tuple[Callable[[dict[str, Any]], bool], Answer]
"""Which open request to answer (a test of it) and the answer."""


def titled(words: str) -> Callable[[dict[str, Any]], bool]:
    return lambda request: words in request["title"]


async def checkpoint_text(db_url: str, checkpoint_id: str) -> str:
    """A stored checkpoint, decoded (its pickled parts too: a sub-workflow's), as text."""
    store = await open_store(db_url)
    try:
        body = await store.load_checkpoint(checkpoint_id)
    finally:
        await store.close()
    assert body is not None, checkpoint_id
    stored = json.loads(zlib.decompress(body))  # as Baton keeps it: compressed JSON
    return f"{json.dumps(stored)} {decode_checkpoint_value(stored)!r}"


class Said(str):
    """A handoff's expected end: a text its conversation holds once (its output is the talk)."""


class Stamped(dict[str, Any]):
    """An output holding the time it was made: its field `stamp` need only hold a time."""

    def __init__(self, stamp: str, **fields: Any) -> None:
        super().__init__(fields)
        self.stamp = stamp

    def __eq__(self, other: object) -> bool:  # (`output == expected` asks a dict subclass first)
        if not isinstance(other, dict):
            return NotImplemented
        try:
            datetime.fromisoformat(other.get(self.stamp))  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return False
        return {k: v for k, v in other.items() if k != self.stamp} == dict(self)

    __hash__ = None  # type: ignore[assignment]


class Matching(str):
    """An expected text holding a time: it need only match its pattern (`text == Matching`)."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, str) and re.fullmatch(self, other) is not None

    __hash__ = str.__hash__


SEATTLE = Matching(
    r"The weather in Seattle is 22 degrees celsius\. "
    r"The current time in UTC is \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?\+00:00"
)
DIVIDED = (
    "Division by zero is undefined in standard arithmetic, so 10 ÷ 0 has no meaning. "
    "(The tool said: Error: Function failed.)"
)
FINDINGS = (
    "Everything gathered:\n"
    "Question: What are the latest developments in quantum computing and in AI?\n"
    "quantum computing: error-corrected logical qubits outlive their parts.\n"
    "AI: agents call tools and hand decisions to people."
)
REFUND_987654 = lookup_order_details.func("987654")["amount"]
LUMENX_DRAFT = (
    "LumenX Desk Lamp: Three-point adjustable arm with 270° rotation. "
    "Custom warm-to-neutral LED spectrum (2700K-4000K)."
)
NURSES = "Aim it at night-shift nurses"
BRIEF_TAKE_1 = f"Take 1: {BRIEF} Pre-order now!"


def reading(address: str) -> Callable[[dict[str, Any]], bool]:
    """The approval of reading `address`'s mail (three wait at once, titled alike)."""
    return lambda request: (
        (request["proposed_action"] or {}).get("arguments", {}).get("email_address") == address
    )


def answer(value: Any) -> Answer:
    return {"decision": "answer", "answer": value}


SAMPLES: dict[str, tuple[dict[str, Any], list[Step], Any]] = {
    # workflow: (input, answers in order, the sample's own output)
    "guessing": (
        {},
        [
            (titled("Feedback request"), answer("higher")),
            (titled("Feedback request"), answer("correct")),
        ],
        # every output of every drive, as MAF gives them run by run: its agent's guesses, the end
        [
            {"agent": "GuessingAgent", "text": '{"guess": 5}'},
            {"agent": "GuessingAgent", "text": '{"guess": 6}'},
            "Guessed correctly!",
        ],
    ),
    "typed_review": (
        {"title": "Q3 plan"},
        [
            (
                titled("Draft review"),
                answer(
                    {
                        "verdict": "revise",
                        "score": 3,
                        "tags": ["tone"],
                        "followup": {"owner": "kim"},
                    }
                ),
            )
        ],
        {
            "title": "Q3 plan",
            "verdict": "revise",
            "score": 3,
            "tags": ["tone"],
            "followup": "kim",
            "due_in_days": 7,
        },
    ),
    "checkpointed": (
        {"release": "v2.1"},
        [(titled("step 1 of 2"), answer(True)), (titled("step 2 of 2"), answer(True))],
        "v2.1 released after 2 sign-offs",
    ),
    "sequential_approval": (
        {"task": "Close stale orders: UPDATE orders SET status = 'closed'"},
        [(titled("execute_database_query"), {"decision": "approve"})],
        {
            "agent": "DatabaseAgent",
            "text": "Done: Query executed successfully. Results: 3 rows affected by "
            "'UPDATE orders SET status = 'closed''",
        },
    ),
    "handoff_input": (
        {"message": "Where is my parcel?"},
        [
            (titled("orders agent waits"), answer("It is order A-1005.")),
            (titled("orders agent waits"), answer("thanks")),
        ],
        Said("Order A-1005 left our warehouse today."),
    ),
    "sub_workflow": (
        {"amount": 4},
        [
            (
                titled("Resource request"),
                answer({"resource_type": "gpu", "allocated": 4, "source": "pool"}),
            ),
            (titled("Policy request"), answer({"approved": True, "reason": "within budget"})),
        ],
        "allocation: 4 gpu from pool; policy approved: within budget",
    ),
    "concurrent_review": (
        {"product": "Baton"},
        [
            (titled("Review analyst"), {"decision": "reject", "reason": "mention the price"}),
            (titled("book_budget"), {"decision": "approve"}),
            (titled("Review analyst"), {"decision": "approve"}),
        ],
        [  # the two agents' replies, each its own
            {
                "agent": "analyst",
                "text": "Market note, revised: ada sent your reply back: mention the price",
            },
            {"agent": "planner", "text": "Budget: booked 1200.00 EUR"},
        ],
    ),
    "declaration_only": (
        {"question": "Will it rain today?"},
        [(titled("needs the result of get_user_location"), answer("Lisbon"))],
        {"agent": "WeatherBot", "text": "It is sunny in Lisbon today."},
    ),
    "parallel_requests": (  # MAF's own sample: its state in plain attributes
        {},
        [
            (
                titled("Resource request from resource allocator"),
                answer({"resource_type": "gpu", "allocated": 1, "source": "external_provider"}),
            ),
            (
                titled("Policy request from policy engine"),
                answer({"approved": True, "reason": "External system approved"}),
            ),
        ],
        "All 7 requests processed.",
    ),
    "agents_hitl": (  # MAF's own sample: a draft's conversation in the request data
        {},
        [
            (titled("Draft feedback request from coordinator"), answer("warmer, please")),
            (titled("Draft feedback request from coordinator"), answer("approve")),
        ],
        [  # the writer's drafts as they came (MAF yields each agent's reply), then the editor's
            {
                "agent": "writer_agent",
                "text": "writer, take 1: LumenX bends to your desk, warm at night.",
            },
            {
                "agent": "writer_agent",
                "text": "writer, take 3: LumenX bends to your desk, warm at night.",
            },
            {
                "agent": "final_editor_agent",
                "text": "editor, take 3: LumenX bends to your desk, warm at night.",
            },
        ],
    ),
    "functional_review": (  # MAF's own functional sample (`@workflow`, `@step`)
        {"topic": "AI Safety"},
        [(titled("review pipeline"), answer("Add more details about alignment research"))],
        "Revised: Draft document about 'AI Safety': Lorem ipsum dolo... "
        "[Applied feedback: Add more details about alignment research]",
    ),
    "functional_rounds": (  # a functional workflow asking in rounds: every answer replayed
        {"topic": "pauses"},
        [
            (titled("Draft review"), answer({"approved": False, "note": "shorter"})),
            (titled("Draft review"), answer({"approved": False, "note": "warmer"})),
            (titled("Draft review"), answer({"approved": True})),
            (titled("functional rounds"), answer("the blog")),
        ],
        "A draft on pauses (revised: shorter) (revised: warmer) approved in round 3 for the blog "
        "after: ['shorter', 'warmer']",
    ),
    "functional_agents": (  # a functional workflow's module agents, a person between them
        {"document": "alpha"},
        [(titled("reviewed summary"), answer("shorter"))],
        "In one sentence: alpha (shorter)",
    ),
    "echoed_review": (  # the answer repeats its request's id: Baton fills it in
        {"task": "sorting files"},
        [(titled("Review request from"), answer({"feedback": "ship it", "approved": True}))],
        "Draft: sorting files approved: ship it",
    ),
    "agui_handoff": (  # MAF's AG-UI demo's workflow: a handoff, a question, an approval
        {"message": "My headphones arrived damaged. I want a refund."},
        [
            (titled("refund agent waits"), answer("It is order 987654.")),
            (titled("submit_refund"), {"decision": "approve"}),
        ],
        Said(f"{submit_refund.func('arrived damaged', REFUND_987654, '987654')}. Case complete."),
    ),
    "tool_approval_middleware": (  # MAF's own: approvals one at a time of a mixed batch
        {"query": "Please process ticket T-123."},
        [
            (titled("close_ticket"), {"decision": "approve"}),
            (titled("notify_customer"), {"decision": "approve"}),
            (titled("delete_attachment"), {"decision": "reject", "reason": "keep the log"}),
        ],
        {  # the model got every call's result: the read-only one that ran beside the approvals too
            "agent": "SupportAgent",
            "text": " | ".join(
                [
                    tickets.lookup_ticket.func("T-123"),
                    tickets.close_ticket.func("T-123", "resolved"),
                    tickets.notify_customer.func("T-123", "Your ticket has been resolved."),
                    tickets.add_internal_note.func("T-123", "closed after the customer confirmed"),
                    "Rejected by ada: keep the log",
                ]
            ),
        },
    ),
    "script_approval": (  # MAF's own: a skill's tools, which a context provider adds
        {"query": "Deploy version 2.5.0 to production"},
        [
            (titled("load_skill"), {"decision": "approve"}),
            (
                titled("run_skill_script"),
                {
                    "decision": "edit",
                    "arguments": {
                        "skill_name": "deployment",
                        "script_name": "deploy",
                        "args": {"version": "2.5.0", "environment": "staging"},
                    },
                },
            ),
        ],
        # the edit ran; the agent has no name: its executor's (the conversation's too)
        {"agent": "script_approval", "text": "Deployed version 2.5.0 to staging"},
    ),
    "workflow_kwargs": (  # MAF's own: the run's kwargs reach the tools, after a restart too
        {"request": "Pull Contoso's Q3 2025 performance data."},
        [(titled("Review researcher"), {"decision": "approve"})],
        {
            "agent": "writer",
            "text": "Formatting rules for 'Q3 summary':\n- Output format: markdown\n"
            "- Language/locale: en-US\n"
            "- Include a footer: 'Generated in markdown for locale en-US'",
        },
    ),
    "workflow_as_agent_hitl": (  # MAF's own sample: the same, its worker on the chat model
        {},
        [
            (
                titled("Review request from"),
                answer({"feedback": "merge with a heap", "approved": False}),
            ),
            (titled("Review request from"), answer({"feedback": "ship it", "approved": True})),
        ],
        {
            "agent": "worker",  # (its reply has no author: the executor that yielded it)
            "text": "Draft 2: read the files in parallel, sort each chunk, merge into one file. "
            "[merge with a heap]",
        },
    ),
    "concurrent_trades": (  # MAF's own sample: four approvals open at once, two per agent
        {"task": "Manage my portfolio. Use a max of 5000 dollars to adjust my position."},
        [
            (titled("execute_trade"), {"decision": "reject", "reason": "no trades today"}),
            (titled("set_stop_loss"), {"decision": "approve"}),
            (titled("execute_trade"), {"decision": "reject", "reason": "no trades today"}),
            (titled("set_stop_loss"), {"decision": "approve"}),
        ],
        [  # each agent's last turn: what its two calls came to
            {
                "agent": "MicrosoftAgent",
                "text": "Rejected by ada: no trades today; Stop-loss set for MSFT at $340.00",
            },
            {
                "agent": "GoogleAgent",
                "text": "Rejected by ada: no trades today; Stop-loss set for GOOGL at $126.00",
            },
        ],
    ),
    "group_chat_deploy": (  # MAF's own sample; its output is MAF's notice of the last round
        {"task": "We need to deploy version 2.4.0 to production. Please coordinate."},
        [(titled("deploy_to_production"), {"decision": "approve"})],
        {
            "agent": "group_chat_orchestrator",
            "text": "The group chat has reached the maximum number of rounds.",
        },
    ),
    "group_chat_steering": (  # MAF's own sample: an agent orchestrator, one speaker steered
        {"topic": "Discuss how our team should approach adopting AI tools for productivity."},
        [
            (titled("Review pragmatist"), {"decision": "reject", "reason": "mention the budget"}),
            (titled("Review pragmatist"), {"decision": "approve"}),
        ],
        {  # the steered plan: the person's reason, as Baton hands a reply sent back
            "agent": "orchestrator",
            "text": "Heard: optimist, pragmatist, creative. The plan: Revised plan: ada sent your "
            "reply back: mention the budget",
        },
    ),
    "magentic_plan_review": (  # MAF's own sample: the manager's plan sent back, then approved
        {"task": "Research sustainable aviation fuel technology and summarize the findings."},
        [
            (titled("plan"), {"decision": "reject", "reason": "Add the cost per litre."}),
            (titled("plan"), {"decision": "approve"}),
        ],
        {  # the answer follows the plan the person's reason revised
            "agent": "MagenticManager",
            "text": "Summary of the team's findings, as planned. Plan, revised: ada sent your plan "
            "back: Add the cost per litre.",
        },
    ),
    "sequential_steering": (  # MAF's own sample: the editor's reply sent back, then approved
        {"topic": "Write a brief introduction to artificial intelligence."},
        [
            (titled("Review editor"), {"decision": "reject", "reason": "mention its history"}),
            (titled("Review editor"), {"decision": "approve"}),
        ],
        {  # the finalizer polishes the edit the person's reason steered
            "agent": "finalizer",
            "text": "Final: Edited, as guided (ada sent your reply back: mention its history): "
            "AI is the craft of making machines that learn, reason and act.",
        },
    ),
    "sequential_tool_approval": (  # MAF's own sample: the update turned down, a narrower one run
        {
            "task": "Check the schema and then update all orders with status 'pending' to "
            "'processing'"
        },
        [
            (titled("execute_database_query"), {"decision": "reject", "reason": "this week only"}),
            (titled("execute_database_query"), {"decision": "approve"}),
        ],
        {  # what each query came to: the person's reason, then the narrower update's result
            "agent": "DatabaseAgent",
            "text": "Rejected by ada: this week only | Query executed successfully. Results: 3 "
            "rows affected by 'UPDATE orders SET status = 'processing' WHERE status = 'pending' "
            "AND created_at >= CURRENT_DATE - INTERVAL '7 days''",
        },
    ),
    "handoff_approval_resume": (  # MAF's own: a handoff's questions, its refund refused
        {"message": "Hi, my order 12345 arrived damaged. I need a refund."},
        [  # main()'s four replies, in order; its approval a rejection
            (
                titled("refund agent waits"),
                answer(
                    "The headphones in order 12345 arrived cracked. "
                    "Please submit the refund for $89.99 and send a replacement to my original "
                    "address."
                ),
            ),
            (titled("submit_refund"), {"decision": "reject", "reason": "a replacement will do"}),
            (
                titled("refund agent waits"),
                answer("Yes, that covers the damage and refund request."),
            ),
            (titled("order agent waits"), answer("That's everything I needed for the refund.")),
            (titled("order agent waits"), answer("Thanks for handling the refund.")),
        ],
        Said("Refund: Rejected by ada: a replacement will do. Does that cover it?"),
    ),
    "magentic_checkpoint": (  # MAF's own: main()'s TASK, the plan sent back, then approved
        {},  # the input's default is main()'s TASK
        [
            (titled("plan"), {"decision": "reject", "reason": "Add the privacy review."}),
            (titled("plan"), {"decision": "approve"}),
        ],
        {  # the answer follows the plan the person's reason revised
            "agent": "MagenticManager",
            "text": "Brief: milestones, risks and a weekly sync. Plan, revised: ada sent your "
            "plan back: Add the privacy review.",
        },
    ),
    "checkpoint_brief": (  # MAF's own: the first draft approved (max_iterations=6 ends a revision)
        {},
        [(titled("Approval request from"), answer("approve"))],
        [{"agent": "writer", "text": BRIEF_TAKE_1}, BRIEF_TAKE_1],  # the reply, the approved draft
    ),
    "sub_workflow_checkpoint": (  # MAF's own: a sub-workflow's request kept in the coordinator
        {},
        [
            (titled("Review request"), answer("add pricing")),
            (lambda r: r["context"].get("iteration") == 2, answer("approve")),
        ],
        Stamped(  # a FinalDraft; approved_at is the time of the approval
            "approved_at",
            topic="Contoso Gadget Launch",
            content="Approved launch narrative for Contoso Gadget Launch (iteration 2).",
            iterations=2,
        ),
    ),
    "concurrent_steering": (  # MAF's own sample: one analyst steered, MAF's aggregator's synthesis
        {"topic": "Analyze the impact of large language models on software development."},
        [
            (
                titled("Review technical analyst"),
                {"decision": "reject", "reason": "weigh the cost of reviewing generated code"},
            ),
            (titled("Review technical analyst"), {"decision": "approve"}),
        ],
        # the synthesis of the three replies, the steered one revised; MAF's aggregator takes the
        # last analyst's prompt for the "human guidance" (on MAF alone too)
        "Synthesis: technical_analyst: Technical, revised: ada sent your reply back: weigh the "
        "cost of reviewing generated code | business_analyst: Business: faster delivery lowers "
        "cost; the return depends on adoption. | ux_analyst: UX: answers arrive in the editor, "
        "but AI tools vary in accessibility. | Human guidance: Analyze the impact of large "
        "language models on software development.",
    ),
    "approval_requests": (  # MAF's own sample: three reads open at once, one refused, then a send
        {
            "sender": "mike@contoso.com",
            "subject": "Important: Project Update",
            "body": "Please provide your team's status update on the project since last week.",
        },
        [
            (reading("bob@contoso.com"), {"decision": "reject", "reason": "Bob's mail is private"}),
            (reading("alice@contoso.com"), {"decision": "approve"}),
            (reading("charlie@contoso.com"), {"decision": "approve"}),
            (titled("send_email"), {"decision": "approve"}),
        ],
        # the update sent: what the reads allowed found, the refused one's reason in its place
        "I've sent the status update to mike@contoso.com: alice@contoso.com: Bug Bash Results, "
        "Code Freeze; bob@contoso.com: not read (Rejected by ada: Bob's mail is private); "
        "charlie@contoso.com: Project Update, Code Review",
    ),
    "guessing_game": (  # MAF's own sample: a person's higher/lower moves the guesses
        {},
        [
            (titled("Feedback request from turn manager"), answer("higher")),
            (titled("Feedback request from turn manager"), answer("lower")),
            (titled("Feedback request from turn manager"), answer("higher")),
            (titled("Feedback request from turn manager"), answer("correct")),
        ],
        [  # each guess halves what the answers so far leave (MAF's `.value` shown), then the end
            {"agent": "GuessingAgent", "text": '{"guess": 5}', "value": {"guess": 5}},
            {"agent": "GuessingAgent", "text": '{"guess": 8}', "value": {"guess": 8}},
            {"agent": "GuessingAgent", "text": '{"guess": 6}', "value": {"guess": 6}},
            {"agent": "GuessingAgent", "text": '{"guess": 7}', "value": {"guess": 7}},
            "Guessed correctly!",
        ],
    ),
    "declaration_only_tools": (  # MAF's own sample: a person gives a declared tool's result
        {"text": "What's the weather like today?"},
        [(titled("needs the result of get_user_location"), answer("Seattle, WA"))],
        {
            "agent": "WeatherBot",
            "text": "Today in Seattle, WA: 14°C, light rain clearing by the evening.",
        },
    ),
    "tool_calls_feedback": (  # MAF's own sample: a person's note revises the tool-fed draft
        {},
        [
            (titled("Draft feedback request from coordinator"), answer(NURSES)),
            (titled("Draft feedback request from coordinator"), answer("approve")),
        ],
        [  # each agent's reply as MAF yields it; the editor's again, as the coordinator yields it
            {"agent": "writer_agent", "text": LUMENX_DRAFT},
            {"agent": "writer_agent", "text": f"{LUMENX_DRAFT} ({NURSES})"},
            {"agent": "final_editor_agent", "text": f"Final: {LUMENX_DRAFT} ({NURSES})"},
            {"agent": "final_editor_agent", "text": f"Final: {LUMENX_DRAFT} ({NURSES})"},
        ],
    ),
    "sub_workflow_kwargs": (  # MAF's own: the run's kwargs reach a sub-workflow's tools on resume
        {},
        [
            (
                titled("Review data agent"),
                {"decision": "reject", "reason": "also call the orders service"},
            ),
            (titled("Review data agent"), {"decision": "approve"}),
        ],
        {  # the orders call was made after the restart, with main()'s service_config
            "agent": "data_agent",
            "text": "Fetched 'profile' for user alice@contoso.com (admin access) | Called service "
            "'users' at https://api.example.com/v1/users | Called service 'orders' at "
            "https://api.example.com/v1/orders",
        },
    ),
    "explicit_schema_approval": (  # MAF's own agent: its explicit schemas offered, a call asked
        {},
        [(titled("get_weather"), {"decision": "approve"})],
        {"agent": "AssistantAgent", "text": SEATTLE},  # the time tool's answer holds the clock
    ),
    "recover_from_failures_approval": (  # MAF's own agent: the approved tool raises; MAF's words
        {},
        [(titled("safe_divide"), {"decision": "approve"})],
        {"agent": "ToolAgent", "text": DIVIDED},
    ),
    "agent_as_tool_session_approval": (  # MAF's own: each research call asked, one session shared
        {},
        [
            (titled("research"), {"decision": "approve"}),
            (titled("research"), {"decision": "approve"}),
        ],
        {"agent": "CoordinatorAgent", "text": FINDINGS},  # what was stored before each pause too
    ),
    "runtime_context_delegation_approval": (  # MAF's own: the run's kwargs reach an approved tool
        {"test": 3},  # through its middleware's container, after a restart
        [(titled("send_email"), {"decision": "approve"})],
        {
            "agent": "communication_agent",
            "text": "Email sent to alice@example.com from user user-11111 (tenant: dev-team). "
            "Subject: 'The new feature launch' | Notification sent to user user-11111 with "
            "priority medium: Reminder: team meeting.",
        },
    ),
    "agent_loop_todos_approval": (  # MAF's own: a todo loop, each completion asked, the todos
        {},  # kept in the session through each pause
        [(titled("todos_complete"), {"decision": "approve"})] * 3,
        {"agent": "planner", "text": "Section 3 drafted. Marking it done."},
    ),
    "file_history_approval": (  # MAF's own: a file history provider's agent, its tool asked
        {},
        [(titled("get_weather"), {"decision": "approve"})],
        {
            "agent": "WeatherHistoryAgent",
            "text": "Seattle is rainy with a high of 13C. (I was handed 3 messages.)",
        },
    ),
    "compaction_provider_approval": (  # MAF's own: history compacted each turn, its tool asked
        {},
        [(titled("get_weather"), {"decision": "approve"})],
        {"agent": "WeatherAssistant", "text": "The weather is cloudy, 12°C."},
    ),
    "multimodal_approval": (  # a shape: a photo in the user's message, a tool needing approval
        {"task": "File this receipt.", "receipt": "upload:7"},
        [(titled("file_expense"), {"decision": "approve"})],
        {
            "agent": "ExpenseAgent",
            "text": "Expense of 42.50 at Cafe Nero filed. Read: image/png of 203188 bytes.",
        },
    ),
    "chart_review": (  # a shape: request data holding a Message with a PNG and a PDF
        {"topic": "sales"},
        [(titled("Message from chart maker"), answer("Looks right; ship it."))],
        "Looks right; ship it. (on image/png 203188 bytes 7c557e20; "
        "application/pdf 60061 bytes a0397ebe)",  # the bytes came back whole
    ),
    "session_behavior_approval": (  # MAF's own: a middleware counting the session's messages
        {},
        [(titled("get_weather"), {"decision": "approve"})],
        {
            "agent": "WeatherAgent",
            "text": Matching(
                r"Here you are: The weather in Tokyo is (sunny|cloudy|rainy|stormy) with a high "
                r"of \d+°C\."
            ),
        },
    ),
}


async def open_request(server: Server, run_id: str, which: Callable[[dict[str, Any]], bool]) -> Any:
    async def probe() -> dict[str, Any] | None:
        run = await server.run(run_id)
        found = [r for r in run["requests"] if r["status"] == "pending" and which(r)]
        return found[0] if found else None

    return await eventually(probe, what=f"a matching pending request of run {run_id}")


@pytest.mark.process
@pytest.mark.backends("sqlite")
async def test_plain_maf_workflows_pause_survive_kill_9_and_end_with_their_own_output(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    await _through_kill_9(list(SAMPLES), db_url, tokens, server_log)


@pytest.mark.process
@pytest.mark.backends("postgres")
async def test_a_typed_answer_survives_kill_9_on_postgres(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    await _through_kill_9(["typed_review"], db_url, tokens, server_log)


async def _through_kill_9(
    workflows: list[str], db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    """Every workflow paused at once, one kill -9, then each answered in the new process."""
    runs: dict[str, dict[str, Any]] = {}
    async with baton_server(db_url, tokens, server_log, ENV) as server:
        for workflow in workflows:
            run_input = SAMPLES[workflow][0]
            run = await server.start_run({"workflow": workflow, "input": run_input})
            runs[workflow] = run
        firsts = {w: await open_request(server, runs[w]["id"], SAMPLES[w][1][0][0]) for w in runs}
        if "workflow_kwargs" in runs:  # MAF keeps a run's kwargs in its state; Baton gives them
            paused = await stored_run(db_url, runs["workflow_kwargs"]["id"])  # again, unstored
            stored = await checkpoint_text(db_url, paused["checkpoint_id"])
            assert "contoso-sql.database.windows.net" not in stored, stored  # the secret
            assert "_workflow_run_kwargs" not in stored
        if "sub_workflow_kwargs" in runs:  # a sub-workflow's kwargs too (its own checkpoint)
            paused = await stored_run(db_url, runs["sub_workflow_kwargs"]["id"])
            stored = await checkpoint_text(db_url, paused["checkpoint_id"])
            assert "sess_12345" not in stored, stored  # main()'s user token
            assert "_workflow_run_kwargs" not in stored
        server.kill()

    done: dict[str, dict[str, Any]] = {}
    async with baton_server(db_url, tokens, server_log, ENV) as server:
        for workflow, run in runs.items():
            for which, body in SAMPLES[workflow][1]:
                pending = await open_request(server, run["id"], which)
                reply = await server.respond(pending["id"], body, user="ada")
                assert reply.status_code == 200, f"{workflow}: {reply.text}"
            done[workflow] = await server.wait_for_run(run["id"], status=("completed", "failed"))

    for workflow, ended in done.items():
        assert firsts[workflow]["status"] == "pending", workflow
        assert ended["status"] == "completed", f"{workflow}: {ended['error']}"
        results = [e["call_id"] for e in ended["conversation"] if e["type"] == "tool_result"]
        assert len(results) == len(set(results)), f"{workflow}: a result noted twice: {results}"
        expected = SAMPLES[workflow][2]
        if isinstance(expected, Said):  # a handoff's output is its conversation
            said = [e.get("text") for e in ended["conversation"]]
            assert said.count(expected) == 1, said
            # its agents' turns that only handed the case on said nothing: no output of theirs
            turns = ended["output"] if isinstance(ended["output"], list) else [ended["output"]]
            assert all(turn["text"] for turn in turns), turns
        else:
            assert ended["output"] == expected, workflow


EMAILS = [  # main()'s six, each Delivered (True) or Blocked (False), as main() prints them
    ({"recipient": recipient, "subject": subject, "body": "This is a test email."}, delivered)
    for recipient, subject, delivered in [
        ("user1@example.com", "Hello User1", True),
        (" user2@invalid", "Hello User2", False),
        ("  user3@company.com  ", "Hello User3", True),
        ("user4@unknown.com", "Hello User4", False),
        ("user1@example.com", "Hello User1", True),
        (" user2@invalid", "Hello User2", False),
    ]
]


@pytest.mark.process
@pytest.mark.backends("sqlite")
async def test_a_sub_workflow_request_its_parent_intercepts_asks_no_one(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    """MAF's `sub_workflow_request_interception.py`: the parent answers its sub-workflow's
    request itself, so no person is asked, and each email ends as on MAF alone."""
    async with baton_server(db_url, tokens, server_log, ENV) as server:
        runs = [
            await server.start_run({"workflow": "request_interception", "input": email})
            for email, _ in EMAILS
        ]
        done = [await server.wait_for_run(r["id"], status=("completed", "failed")) for r in runs]
    for ended, (_, delivered) in zip(done, EMAILS, strict=True):
        assert ended["status"] == "completed", ended["error"]
        assert ended["requests"] == []
        assert ended["output"] is delivered


UNASKED: dict[str, Any] = {  # MAF's 02-agents/tools samples as MAF wrote them: nobody is asked
    "explicit_schema": {"agent": "AssistantAgent", "text": SEATTLE},
    "recover_from_failures": {"agent": "ToolAgent", "text": DIVIDED},
    "agent_as_tool_session": {"agent": "CoordinatorAgent", "text": FINDINGS},
}


@pytest.mark.process
@pytest.mark.backends("sqlite")
async def test_maf_s_tool_samples_asking_no_one_end_as_on_maf_alone(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    """Explicit schemas, a tool that raises, an agent as a tool sharing its session; then
    `recover_from_failures`' second turn of `main()` ("Greet Bob"), continuing the first."""
    async with baton_server(db_url, tokens, server_log, ENV) as server:
        runs = {w: await server.start_run({"workflow": w, "input": {}}) for w in UNASKED}
        done = {
            w: await server.wait_for_run(r["id"], status=("completed", "failed"))
            for w, r in runs.items()
        }
        greet = await server.start_run(
            {
                "workflow": "recover_from_failures",
                "input": {"text": "Greet Bob"},
                "continues": runs["recover_from_failures"]["id"],
            }
        )
        greeted = await server.wait_for_run(greet["id"], status=("completed", "failed"))
    for workflow, ended in done.items():
        assert ended["status"] == "completed", ended["error"]
        assert ended["requests"] == []
        assert ended["output"] == UNASKED[workflow]
    assert greeted["status"] == "completed", greeted["error"]
    assert greeted["output"] == {"agent": "ToolAgent", "text": "Hello, Bob!"}


TODO_END = (
    "Done — I removed catering and added a group hike to the plan:\n"
    "[ ] 1. Pick a date and confirm attendees\n[x] 2. Book a venue\n[x] 4. Send out invites\n"
    "[ ] 5. Plan a group hike\nThe list you had:\n- 1 [open] Pick a date and confirm attendees\n"
    "- 2 [done] Book a venue\n- 3 [open] Arrange catering\n- 4 [done] Send out invites"
)
CHAINS: dict[str, tuple[list[str], Any]] = {  # MAF's context providers: main()'s turns, its end
    "todo_provider": (todos.USER_MESSAGES, {"agent": "PlanningAssistant", "text": TODO_END}),
    "todo_provider_approval": (
        todos.USER_MESSAGES,
        {"agent": "PlanningAssistant", "text": TODO_END},
    ),
    "simple_context_provider": (
        user_info.USER_MESSAGES,
        {
            "agent": "simple_context_provider",
            "text": "Ruaidhrí, you are 20: the square root of 9 is 3. What my instructions "
            "said: The user's name is Ruaidhrí.",
        },
    ),
    "simple_context_provider_approval": (
        user_info.USER_MESSAGES,
        {
            "agent": "simple_context_provider_approval",
            "text": "Ruaidhrí, you are 20: the square root of 9 is 3 (the tool said 3.0). What my "
            "instructions said: The user's name is Ruaidhrí. The user's age is 20.",
        },
    ),
}


@pytest.mark.process
@pytest.mark.backends("sqlite")
async def test_maf_s_context_providers_keep_their_state_through_turns_a_pause_and_kill_9(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    """`main()`'s three turns in one session are runs each continuing the one before; the
    `_approval` variants pause in the third, the server is killed there, and the approved call
    runs in the new process on what the provider kept in the session."""
    runs: dict[str, dict[str, Any]] = {}
    async with baton_server(db_url, tokens, server_log, ENV) as server:
        for workflow, (turns, _) in CHAINS.items():
            before: str | None = None
            for text in turns:
                body: dict[str, Any] = {"workflow": workflow, "input": {"text": text}}
                run = await server.start_run(body | ({"continues": before} if before else {}))
                runs[workflow] = await server.wait_for_run(
                    run["id"], status=("completed", "failed", "waiting")
                )
                before = run["id"]
        waiting = {w: r for w, r in runs.items() if r["status"] == "waiting"}
        assert sorted(waiting) == ["simple_context_provider_approval", "todo_provider_approval"]
        asked = {w: await server.wait_for_request(r["id"]) for w, r in waiting.items()}
        server.kill()

    async with baton_server(db_url, tokens, server_log, ENV) as server:
        for workflow, request in asked.items():
            reply = await server.respond(request["id"], {"decision": "approve"}, user="ada")
            assert reply.status_code == 200, f"{workflow}: {reply.text}"
            runs[workflow] = await server.wait_for_run(
                request["run_id"], status=("completed", "failed")
            )

    for workflow, ended in runs.items():
        assert ended["status"] == "completed", f"{workflow}: {ended['error']}"
        assert ended["output"] == CHAINS[workflow][1], workflow


# in this process: typed answers, policies over plain tools, routes ---------------------------


async def chained(
    server: Server, workflow: str, turns: list[str], env: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """`main()`'s turns in one session: runs each continuing the one before, each request
    approved; each run as it ended."""
    ended: list[dict[str, Any]] = []
    for text in turns:
        body: dict[str, Any] = {"workflow": workflow, "input": {"text": text}}
        run = await server.start_run(body | ({"continues": ended[-1]["id"]} if ended else {}))
        done = await all_approved(server, run["id"])
        assert done["status"] == "completed", done["error"]
        ended.append(done)
    return ended


async def all_approved(server: Server, run_id: str) -> dict[str, Any]:
    """The run once it ended, each request it asked approved (by ada) as it came."""
    answered: set[str] = set()
    going = functools.partial(_moved_on, server, run_id, answered)
    done = await eventually(going, what=f"run {run_id} asking or ended")
    while done["status"] not in ("completed", "failed"):
        for asked in [r for r in done["requests"] if r["status"] == "pending"]:
            if asked["id"] not in answered:
                reply = await server.respond(asked["id"], {"decision": "approve"}, user="ada")
                assert reply.status_code == 200, reply.text
                answered.add(asked["id"])
        done = await eventually(going, what=f"run {run_id} going on")
    return done


async def _moved_on(server: Server, run_id: str, answered: set[str]) -> dict[str, Any] | None:
    """The run once it ended or asks something not yet answered; None before."""
    now = await server.run(run_id)
    fresh = [r for r in now["requests"] if r["status"] == "pending" and r["id"] not in answered]
    return now if now["status"] in ("completed", "failed") or fresh else None


BASE64_RUN = re.compile(r"[A-Za-z0-9+/]{200,}")
"""Bytes as base64, which no page a person reads holds."""


@pytest.mark.backends("sqlite")
async def test_an_image_a_tool_returned_is_handed_to_the_model_again_in_a_continued_run(
    db_url: str, tokens: dict[str, str], passwords: dict[str, str], server_log: Path
) -> None:
    """As MAF's session keeps it: the call's result holds the image (it got the text alone), and
    the run's page names it by kind and size, not its bytes."""
    async with baton_server(db_url, tokens, server_log, ENV | PAGE_ENV) as server:
        turns = [{"question": "Chart our sales."}, {"question": "What does the chart show?"}]
        ended: list[dict[str, Any]] = []
        for given in turns:
            body = {"workflow": "tool_image", "input": given}
            run = await server.start_run(body | ({"continues": ended[-1]["id"]} if ended else {}))
            ended.append(await server.wait_for_run(run["id"], status=("completed", "failed")))
        async with signed_in(server, "ada", passwords["ada"]) as ada:
            page = (await ada.http.get(f"/runs/{ended[0]['id']}")).text

    assert ended[-1]["output"]["text"] == "Turn 2: I see ['image/png of 203188 bytes']."
    assert "an image (PNG, 198 KB)" in text_of(page)
    assert not BASE64_RUN.search(page)


async def test_the_files_a_request_came_with_open_through_it_and_only_through_it(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    """A chart to review (request data holding a PNG and a PDF) and a photographed receipt (in
    the user's message of an agent asking approval): each request lists its files and serves
    their bytes whole, a safe image to be shown, a PDF to be saved, both sandboxed; no other
    request, nor anyone who may not see the request, opens them; a malformed id is a 422."""
    async with baton_server(db_url, tokens, server_log, ENV) as server:
        run = await server.start_run({"workflow": "chart_review", "input": {"topic": "sales"}})
        chart = await server.wait_for_request(run["id"])
        receipt_input = {"task": "File this receipt.", "receipt": "upload:9"}
        run = await server.start_run({"workflow": "multimodal_approval", "input": receipt_input})
        receipt = await server.wait_for_request(run["id"])
        image, document = chart["attachments"]
        [photo] = receipt["attachments"]
        async with server.client("ada") as ada, server.client("fay") as fay:

            async def opened(request: dict[str, Any], file: dict[str, Any]) -> Any:
                return await ada.get(f"/api/requests/{request['id']}/attachments/{file['id']}")

            shown, saved, photo_got = (
                await opened(chart, image),
                await opened(chart, document),
                await opened(receipt, photo),
            )
            elsewhere = await opened(receipt, image)  # the chart's image, through the receipt
            unseen = await fay.get(f"/api/requests/{chart['id']}/attachments/{image['id']}")
            malformed = await ada.get(f"/api/requests/{chart['id']}/attachments/chart.png")
            stored = await ada.get(f"/api/requests/{chart['id']}")
            # taken over, the case comes back to ada with its files
            taken = await ada.post(f"/api/requests/{chart['id']}/takeover")
            assert taken.status_code == 200, taken.text

            async def takeover() -> dict[str, Any] | None:
                run = await server.run(chart["run_id"])
                found = [r for r in run["requests"] if r["kind"] == "takeover"]
                return found[0] if found else None

            taken_over = await eventually(takeover, what="the takeover request")
            kept = await opened(taken_over, image)

    assert [(f["name"], f["source"]) for f in (image, document, photo)] == [
        ("an image (PNG, 198 KB)", "the request"),
        ("a document (PDF, 59 KB)", "the request"),
        ("an image (PNG, 198 KB)", "the user's message"),
    ]
    assert (shown.status_code, shown.content) == (200, chart_review.png())
    assert shown.headers["content-type"] == "image/png"
    assert shown.headers["content-disposition"].startswith("inline;")
    assert (saved.status_code, saved.content) == (200, chart_review.pdf())
    assert saved.headers["content-type"] == "application/octet-stream"
    assert saved.headers["content-disposition"].startswith("attachment;")
    assert saved.headers["content-disposition"].endswith('.pdf"')
    for reply in (shown, saved):
        assert reply.headers["content-security-policy"].startswith("sandbox;")
        assert reply.headers["x-content-type-options"] == "nosniff"
    assert (photo_got.status_code, photo_got.content) == (200, chart_review.png(seed=9))
    assert hashlib.sha256(photo_got.content).hexdigest() == photo["id"]
    assert (elsewhere.status_code, unseen.status_code) == (404, 404)
    assert elsewhere.json()["error"] == "attachment_not_found"
    assert malformed.status_code == 422
    assert stored.json()["attachments"] == chart["attachments"]
    assert taken_over["attachments"] == chart["attachments"]
    assert (kept.status_code, kept.content) == (200, chart_review.png())


@pytest.mark.backends("sqlite")
async def test_a_file_history_agent_continued_sees_each_earlier_turn_once_as_on_maf_alone(
    db_url: str,
    tokens: dict[str, str],
    server_log: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """MAF's `FileHistoryProvider` loads the earlier turn itself, by the session's id, which the
    continued run goes on in: handed as its input too, the model saw it twice (11 messages where
    MAF alone hands 7) and the file kept it twice (12 lines where MAF alone writes 8)."""
    files = tmp_path / "history"
    monkeypatch.setenv("SAMPLE_FILE_HISTORY_DIR", str(files))
    async with baton_server(db_url, tokens, server_log, ENV) as server:
        plain = await chained(server, "file_history", file_history.QUERIES)
        asked = await chained(server, "file_history_approval", file_history.QUERIES)

    said = "Amsterdam is cloudy with a high of 16C. (I was handed 7 messages.)"
    assert plain[-1]["output"] == {"agent": "WeatherHistoryAgent", "text": said}
    assert asked[-1]["output"] == {"agent": "WeatherHistoryAgent", "text": said}
    lines = sorted(len(f.read_text().splitlines()) for f in files.glob("*.jsonl"))
    assert lines == [8, 10]  # as MAF alone's main() writes them (an approval's two more)


@pytest.mark.backends("sqlite")
async def test_a_compacted_history_goes_on_with_the_conversation_as_on_maf_alone(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    """A `CompactionProvider` summarises each turn's tool results after it: the fourth turn's
    model sees London's as a summary, as on MAF alone (it saw the call and result again,
    rebuilt from the record). The sample's own window never reaches back that far."""
    env = ENV | {"BATON_WORKFLOWS": f"{MODULES},tests.fixtures.compaction_wide"}
    async with baton_server(db_url, tokens, server_log, env) as server:
        wide = await chained(server, "compaction_wide", compaction.QUERIES)
        plain = await chained(server, "compaction_provider", compaction.QUERIES)
        asked = await chained(server, "compaction_provider_approval", compaction.QUERIES)

    assert wide[-1]["output"]["text"] == "Tokyo is the warmest at 22°C; I compared Paris, Tokyo."
    for ended in (plain, asked):
        assert ended[-1]["output"] == {
            "agent": "WeatherAssistant",
            "text": "Tokyo is the warmest at 22°C; I compared Tokyo.",
        }


@pytest.mark.backends("sqlite")
async def test_each_conversation_on_a_kept_instance_has_a_session_of_its_own(
    db_url: str,
    tokens: dict[str, str],
    server_log: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A reset restored the session its build made: every conversation on a kept instance went
    on in one session id, and a file history handed one conversation's messages to the next."""
    monkeypatch.setenv("SAMPLE_FILE_HISTORY_DIR", str(tmp_path / "history"))
    kept = dataclasses.replace(registry.get("file_history"), reuse=True)
    monkeypatch.setitem(registry._REGISTRY, "file_history", kept)
    async with baton_server(db_url, tokens, server_log, ENV) as server:
        ended = [await chained(server, "file_history", file_history.QUERIES[:1]) for _ in "ab"]

    said = "Seattle is rainy with a high of 13C. (I was handed 3 messages.)"
    assert [turns[-1]["output"]["text"] for turns in ended] == [said, said]
    assert len(list((tmp_path / "history").glob("*.jsonl"))) == 2


@pytest.mark.backends("sqlite")
async def test_a_middleware_sees_a_continued_turn_s_input_and_history_as_on_maf_alone(
    db_url: str, tokens: dict[str, str], server_log: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`session_behavior_middleware.py` counts the turn's input messages and the session's
    history: at `main()`'s second turn, the new message alone, the first turn in the history."""
    turns = ["What's the weather like in Tokyo?", "How about in London?"]
    async with baton_server(db_url, tokens, server_log, ENV) as server:
        before: str | None = None
        for text in turns:
            body: dict[str, Any] = {"workflow": "session_behavior", "input": {"text": text}}
            run = await server.start_run(body | ({"continues": before} if before else {}))
            await server.wait_for_run(run["id"], status="completed")
            before = run["id"]
    on_baton = [line for line in capsys.readouterr().out.splitlines() if "MiddlewareTypes" in line]

    clients = SimpleNamespace(chat_clients=ChatClientFactory("scripted"))
    agent = weather._agent(clients, weather.get_weather)  # type: ignore[arg-type]
    session = agent.create_session()
    for text in turns:
        await agent.run(text, session=session)
    alone = [line for line in capsys.readouterr().out.splitlines() if "MiddlewareTypes" in line]

    assert [line.rpartition(": ")[2] for line in alone] == ["1", "0", "4", "1", "4", "8"]
    assert on_baton == alone


@pytest.mark.backends("sqlite")
async def test_every_sample_registered_for_reuse_runs_twice_interleaved_on_kept_instances(
    db_url: str, tokens: dict[str, str], server_log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """MAF's executors (agents, orchestrations, a sub-workflow) reset as kept instances: two runs
    of each sample, answered turn about, each end with the sample's own output."""
    async with baton_server(db_url, tokens, server_log, ENV) as server:
        for workflow in SAMPLES:  # registered in this process by the server
            spec = dataclasses.replace(registry.get(workflow), reuse=True)
            monkeypatch.setitem(registry._REGISTRY, workflow, spec)
        done: dict[str, list[dict[str, Any]]] = {}
        for workflow, (run_input, steps, _) in SAMPLES.items():
            pair = [
                await server.start_run({"workflow": workflow, "input": run_input}) for _ in range(2)
            ]
            for which, body in steps:
                for run in pair:
                    pending = await open_request(server, run["id"], which)
                    reply = await server.respond(pending["id"], body, user="ada")
                    assert reply.status_code == 200, f"{workflow}: {reply.text}"
            done[workflow] = [
                await server.wait_for_run(run["id"], status=("completed", "failed")) for run in pair
            ]
        pool = server.parts().runtime.pool
        kept = {workflow: bool(pool.idle(workflow)) for workflow in done}  # (its stop closes them)

    for workflow, pair in done.items():
        for ended in pair:
            assert ended["status"] == "completed", f"{workflow}: {ended['error']}"
            expected = SAMPLES[workflow][2]
            if isinstance(expected, Said):  # a handoff's output is its conversation
                said = [e.get("text") for e in ended["conversation"]]
                assert said.count(expected) == 1, said
            else:
                assert ended["output"] == expected, workflow
        assert kept[workflow], workflow


POLICY = """
version: 1
default_team: support-leads
rules:
  - id: query.reads
    tool: execute_database_query
    when: query == "SELECT 1"
    action: auto
  - id: query.drop
    tool: execute_database_query
    when: query == "DROP TABLE users"
    action: deny
  - id: query.writes
    tool: execute_database_query
    action: approval(finance)
requests:
  - id: release.sign_off
    workflow: checkpointed
    request: SignOffRequest
    team: legal
    priority: high
    deadline: 2h
"""


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    policies = tmp_path / "policies.yaml"
    policies.write_text(POLICY, encoding="utf-8")
    return {**ENV, "BATON_POLICIES": str(policies)}


async def test_a_malformed_typed_answer_is_refused_naming_the_field_and_changes_nothing(
    db_url: str, tokens: dict[str, str], server_log: Path, env: dict[str, str]
) -> None:
    async with baton_server(db_url, tokens, server_log, env) as server:
        run = await server.start_run({"workflow": "typed_review", "input": {"title": "Q3"}})
        pending = await server.wait_for_request(run["id"])
        before = await server.snapshot(pending["id"])
        bad = [
            ({"verdict": "publish", "score": 9}, ["answer", "score"]),
            ({"verdict": "maybe", "score": 3}, ["answer", "verdict"]),
            ({"score": 3}, ["answer", "verdict"]),
            ({"verdict": "drop", "score": 2, "followup": {"due_in_days": 3}}, None),
            ("publish", ["answer"]),
        ]
        for value, loc in bad:
            reply = await server.respond(pending["id"], answer(value), user="ada")
            assert reply.status_code == 422, reply.text
            errors = reply.json()["errors"]
            if loc is not None:
                assert errors[0]["loc"] == ["body", *loc]
            else:
                assert ["body", "answer", "followup", "owner"] in [e["loc"] for e in errors]
        after = await server.snapshot(pending["id"])
        still = await server.run(run["id"])

    assert after == before
    assert still["status"] == "waiting"
    assert pending["kind"] == "input"
    assert pending["context"]["author"] == {"name": "kim", "team": "writers"}
    schema = pending["response_schema"]
    verdict = schema["$defs"]["Verdict"]
    assert verdict["enum"] == ["publish", "revise", "drop"]
    score = schema["properties"]["answer"]["properties"]["score"]
    assert (score["minimum"], score["maximum"]) == (1, 5)


async def test_the_policies_file_routes_a_typed_request_over_its_registration(
    db_url: str, tokens: dict[str, str], server_log: Path, env: dict[str, str]
) -> None:
    async with baton_server(db_url, tokens, server_log, env) as server:
        run = await server.start_run({"workflow": "checkpointed", "input": {"release": "v3"}})
        pending = await server.wait_for_request(run["id"])
        refused = await server.respond(pending["id"], answer(True), user="max")  # managers
        allowed = await server.respond(pending["id"], answer(True), user="lex")  # legal

    # the rule's team, priority and deadline; the registration's title template
    assert (pending["team"], pending["priority"]) == ("legal", "high")
    assert pending["policy_rule"] == "release.sign_off"
    assert pending["expires_at"] is not None
    assert pending["title"] == "Sign off v3 (step 1 of 2)"
    assert refused.status_code == 404  # not their team's: they cannot see it
    assert allowed.status_code == 200


@pytest.mark.parametrize(
    ("task", "asks", "said"),
    [
        ("Check: SELECT 1", False, "Results: 3 rows affected by 'SELECT 1'"),
        ("Clean up: DROP TABLE users", False, "Refused by policy rule query.drop."),
    ],
)
async def test_the_policy_decides_a_plain_tool_without_asking(
    task: str,
    asks: bool,
    said: str,
    db_url: str,
    tokens: dict[str, str],
    server_log: Path,
    env: dict[str, str],
) -> None:
    database.EXECUTED.clear()
    async with baton_server(db_url, tokens, server_log, env) as server:
        run = await server.start_run({"workflow": "sequential_approval", "input": {"task": task}})
        done = await server.wait_for_run(run["id"], status=("completed", "failed"))
        events = await server.audit(run["id"])

    assert done["status"] == "completed", done["error"]
    assert done["requests"] == []
    assert said in done["output"]["text"]
    decided = [e for e in events if e["type"] == "request.auto_decided"]
    assert [e["data"]["tool"] for e in decided] == ["execute_database_query"]
    assert [e["data"]["rule"] for e in decided] == [
        "query.drop" if "DROP" in task else "query.reads"
    ]
    assert ([] if "DROP" in task else ["SELECT 1"]) == database.EXECUTED


async def test_a_plain_tools_approval_is_routed_edited_against_its_schema_and_runs_once(
    db_url: str, tokens: dict[str, str], server_log: Path, env: dict[str, str]
) -> None:
    database.EXECUTED.clear()
    task = {"task": "Fix: UPDATE orders SET status = 'paid' WHERE id = 7"}
    async with baton_server(db_url, tokens, server_log, env) as server:
        run = await server.start_run({"workflow": "sequential_approval", "input": task})
        pending = await server.wait_for_request(run["id"])
        wrong = {"decision": "edit", "arguments": {"query": 42}}
        refused = await server.respond(pending["id"], wrong, user="fay")
        edit = {
            "decision": "edit",
            "arguments": {"query": "UPDATE orders SET status = 'paid' WHERE id = 8"},
        }
        edited = await server.respond(pending["id"], edit, user="fay")
        again = await server.respond(pending["id"], edit, user="fay")  # the same answer: a no-op
        done = await server.wait_for_run(run["id"], status=("completed", "failed"))

    assert (pending["kind"], pending["team"]) == ("approval", "finance")
    assert pending["proposed_action"]["tool"] == "execute_database_query"
    assert pending["proposed_action"]["arguments_schema"]["properties"]["query"]["type"] == "string"
    assert refused.status_code == 422
    assert refused.json()["errors"][0]["loc"] == ["body", "arguments", "query"]
    assert (edited.status_code, again.status_code) == (200, 200)
    assert done["status"] == "completed", done["error"]
    assert database.EXECUTED == ["UPDATE orders SET status = 'paid' WHERE id = 8"]
    assert "WHERE id = 8" in done["output"]["text"]


async def test_a_rejected_plain_tool_call_does_not_run_and_the_model_hears_why(
    db_url: str, tokens: dict[str, str], server_log: Path, env: dict[str, str]
) -> None:
    database.EXECUTED.clear()
    task = {"task": "Fix: DELETE FROM orders"}
    async with baton_server(db_url, tokens, server_log, env) as server:
        run = await server.start_run({"workflow": "sequential_approval", "input": task})
        pending = await server.wait_for_request(run["id"])
        body = {"decision": "reject", "reason": "never delete orders"}
        rejected = await server.respond(pending["id"], body, user="fay")
        done = await server.wait_for_run(run["id"], status=("completed", "failed"))

    assert rejected.status_code == 200
    assert database.EXECUTED == []
    assert done["output"]["text"] == "Done: Rejected by fay: never delete orders"


async def test_every_sample_s_pages_show_its_run_and_its_first_request(
    db_url: str, tokens: dict[str, str], passwords: dict[str, str], server_log: Path
) -> None:
    seen: dict[str, tuple[int, int, str, str]] = {}
    env = {**ENV, **PAGE_ENV}
    async with (
        baton_server(db_url, tokens, server_log, env) as server,
        signed_in(server, "ada", passwords["ada"]) as client,
    ):
        for workflow, (run_input, steps, _) in SAMPLES.items():
            run = await server.start_run({"workflow": workflow, "input": run_input})
            pending = await open_request(server, run["id"], steps[0][0])
            run_page = await client.http.get(f"/runs/{run['id']}")
            request_page = await client.http.get(f"/requests/{pending['id']}")
            seen[workflow] = (
                run_page.status_code,
                request_page.status_code,
                request_page.text,
                pending["title"],
            )

    for workflow, (run_status, request_status, html, title) in seen.items():
        assert (run_status, request_status) == (200, 200), workflow
        assert html.count('method="post"') >= 1, workflow
        assert title in unescape(html), workflow
        assert not BASE64_RUN.search(html), f"{workflow}: bytes on the page"
    # an approver reads the user's words the agent acted on, and that a photo came with them
    assert "File this receipt. [an image (PNG, 198 KB)]" in text_of(seen["multimodal_approval"][2])
    # a person reviewing a chart is told there is one, and a PDF, by kind and size, once: as
    # the files the request came with, not again as the context's list of their names
    chart = text_of(seen["chart_review"][2])
    assert "An image (PNG, 198 KB), from the request · Open full size" in chart
    assert "A document (PDF, 59 KB), from the request · Download" in chart
    assert chart.lower().count("an image (png, 198 kb)") == 1
    assert "Attachments" not in chart
    # a review says what it reviews: a Magentic manager's plan, an agent's reply
    for workflow, what in (("magentic_plan_review", "plan"), ("sequential_steering", "reply")):
        words = text_of(seen[workflow][2])
        assert f"{what.capitalize()} to review" in words, workflow
        assert f"The {what} is used as it is." in words, workflow
        assert "Draft to review" not in words, workflow
        assert "the draft" not in words.lower(), workflow


async def test_a_request_s_page_names_the_other_requests_its_run_waits_on(
    db_url: str, tokens: dict[str, str], passwords: dict[str, str], server_log: Path
) -> None:
    """MAF's agents_with_approval_requests.py asks three approvals at once, titled alike: each
    page says what else the run waits on, each told apart by what differs, and links to it."""
    run_input, _, _ = SAMPLES["approval_requests"]
    async with baton_server(db_url, tokens, server_log, {**ENV, **PAGE_ENV}) as server:
        run = await server.start_run({"workflow": "approval_requests", "input": run_input})

        async def three() -> list[dict[str, Any]] | None:
            found = [
                r for r in (await server.run(run["id"]))["requests"] if r["status"] == "pending"
            ]
            return found if len(found) == 3 else None

        reads = await eventually(three, what="three approvals open at once")
        bob = next(r for r in reads if reading("bob@contoso.com")(r))
        async with signed_in(server, "lee", passwords["lee"]) as lee:
            page = (await lee.http.get(f"/requests/{bob['id']}")).text
            await server.respond(bob["id"], {"decision": "approve"}, user="ada")
            answered = (await lee.http.get(f"/requests/{bob['id']}")).text

    # no rule of the policies file covers the tool: said so, not by the default rule's id
    assert bob["reason"] == (
        "No policy rule covers read_historical_email_data: each call needs approval by "
        "support-leads."
    )
    assert "Policy rule none covers it: approval by default" in text_of(page)  # as its facts
    also = re.search(r'<p class="also-open">(.*?)</p>', page, re.DOTALL)
    assert also is not None
    words = text_of(also.group(1))
    assert words.startswith("Its run also waits on:")
    for other in (r for r in reads if r["id"] != bob["id"]):
        assert f'href="/requests/{other["id"]}"' in also.group(1)
    assert "(email address alice@contoso.com)" in words
    assert "(email address charlie@contoso.com)" in words
    assert "bob@contoso.com" not in words  # not itself
    assert 'class="also-open"' not in answered  # an answered request's page asks nothing more


async def test_request_data_holding_maf_messages_is_shown_field_by_field(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    """MAF's agents_with_HITL.py asks about a draft with its conversation (`list[Message]`)."""
    async with baton_server(db_url, tokens, server_log, ENV) as server:
        run = await server.start_run({"workflow": "agents_hitl", "input": {}})
        asked = await open_request(server, run["id"], titled("Draft feedback request"))

    brief = (
        "Create a short launch blurb for the LumenX desk lamp. "
        "Emphasize adjustability and warm lighting."
    )
    assert asked["reason"].startswith("Review the draft from the writer and provide a short")
    assert asked["context"]["conversation"] == [
        {"role": "user", "text": brief},
        {"role": "assistant", "text": "writer, take 1: LumenX bends to your desk, warm at night."},
    ]
