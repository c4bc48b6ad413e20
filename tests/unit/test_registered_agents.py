"""A MAF agent registered as it is, and a builder that builds another graph every time.

A builder may return an `Agent`: Baton runs it as a workflow of that one agent, started on the
run's input, its tool approvals Baton's requests, each resume in a new instance. A graph whose
agent has no name is another graph at every build (MAF gives such an agent a new random id), so
a paused run of it could never resume: its runs fail as they start, saying why.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from baton.api import check_workflow
from baton.wiring import Parts
from human.store.base import RequestFilter
from workflows.platform import registry

registry.load("tests.fixtures.agent_workflows")

QUESTION = "What is the weather like in Amsterdam, in detail?"


async def _decide(parts: Parts, run_id: str, answer: dict[str, Any]) -> Any:
    page = await parts.requests.list(RequestFilter(run_id=run_id, status="pending"))
    [request] = page.items
    lee = await parts.store.get_user("lee")
    assert lee is not None
    await parts.requests.respond(request.id, answer, responder=lee)
    await parts.worker.drain()
    return request


@pytest.mark.parametrize(
    ("workflow", "run_input", "executor", "author", "asked"),
    [
        (
            "bare_agent",
            {},
            "WeatherAgent",
            "WeatherAgent",
            QUESTION,
        ),
        (
            "bare_unnamed_agent",
            {"city": "Amsterdam", "days": 2},
            "bare_unnamed_agent",  # MAF's own id would be a new UUID at every build
            "bare_unnamed_agent",  # its replies' author: its executor, not MAF's "UnnamedAgent"
            None,
        ),
    ],
)
async def test_an_agent_registered_as_it_is_asks_approval_and_resumes_in_a_new_instance(
    parts: Parts,
    workflow: str,
    run_input: dict[str, Any],
    executor: str,
    author: str,
    asked: str | None,
) -> None:
    run = await parts.runtime.start(workflow, run_input, actor="sam")
    await parts.worker.drain()
    request = await _decide(parts, run.id, {"decision": "approve"})
    done = await parts.runtime.get(run.id)

    assert (request.kind, request.executor_id) == ("approval", executor)
    assert request.proposed_action is not None
    assert request.proposed_action["tool"] == "get_weather_detail"
    assert request.proposed_action["arguments"] == {"location": "Amsterdam"}
    assert done.status == "completed", done.error
    # the input's one text field is the user's message; else the input as JSON
    message = asked or '{"city":"Amsterdam","days":2}'
    assert done.output["agent"] == author
    assert done.output["text"].startswith(f"You asked {message!r}. The weather in Amsterdam is "), (
        done.output
    )
    # the conversation names the agent alike before the pause and after (an unnamed agent: by
    # its executor, not the random id MAF gives it at each build)
    said = await parts.runtime.conversation(run.id)
    assert {e["agent"] for e in said if e["type"] in ("message", "tool_call")} == {executor}


async def test_an_agent_told_no_hears_it_from_its_tool(parts: Parts) -> None:
    run = await parts.runtime.start("bare_agent", {}, actor="sam")
    await parts.worker.drain()
    await _decide(parts, run.id, {"decision": "reject", "reason": "not today"})
    done = await parts.runtime.get(run.id)

    assert done.status == "completed", done.error
    assert done.output["text"] == (f"You asked {QUESTION!r}. Rejected by lee: not today")


@pytest.mark.parametrize(
    ("workflow", "answer", "said"),
    [
        (
            "graph_as_agent",
            {"decision": "approve"},
            f"You asked {QUESTION!r}. The weather in Amsterdam is ",
        ),
        (
            "orchestration_as_agent",
            {"decision": "approve"},
            f"You asked {QUESTION!r}. The weather in Amsterdam is ",
        ),
        (
            "functional_as_agent",
            {"decision": "answer", "answer": "shorter"},
            "Revised: Draft document about 'What is the weather like in ... "
            "[Applied feedback: shorter]",
        ),
    ],
)
async def test_a_workflow_made_an_agent_is_driven_as_the_workflow_it_runs(
    parts: Parts, workflow: str, answer: dict[str, Any], said: str
) -> None:
    # As an agent, its requests would be calls of a tool no executor pauses on: the run would
    # end with nobody asked.
    run = await parts.runtime.start(workflow, {}, actor="sam")
    await parts.worker.drain()
    request = await _decide(parts, run.id, answer)
    done = await parts.runtime.get(run.id)

    assert request.kind == ("approval" if answer["decision"] == "approve" else "input")
    assert done.status == "completed", done.error
    output = done.output if isinstance(done.output, str) else done.output["text"]
    assert output.startswith(said), output


async def test_a_graph_whose_agent_has_no_name_fails_its_runs_as_they_start(
    parts: Parts,
) -> None:
    run = await parts.runtime.start("unnamed_agent", {}, actor="sam")
    await parts.worker.drain()
    failed = await parts.runtime.get(run.id)
    page = await parts.requests.list(RequestFilter(run_id=run.id))

    assert failed.status == "failed"
    assert failed.error is not None
    assert failed.error.startswith(
        "UnstableGraph: workflow 'unnamed_agent' builds another graph every time, so a run that "
        "paused could never resume: executors "
    )
    assert failed.error.endswith(
        "(MAF gives an agent without a name a new random id at each build: give each agent its "
        "name=..., the agents an orchestration's builder takes too, such as GroupChatBuilder's "
        "orchestrator_agent or MagenticBuilder's manager_agent)"
    )
    assert page.items == []  # nobody was asked anything


async def test_baton_check_names_a_graph_built_anew_every_time() -> None:
    report = await check_workflow("unnamed_agent")

    assert not report.clean
    assert report.final_state == "FAILED"
    [failure] = report.failures
    assert "builds another graph every time" in failure
    assert report.lines()[-1] == "1 finding(s)"


async def test_a_named_agent_checks_clean_its_approval_shown_as_data() -> None:
    report = await check_workflow("bare_agent")

    assert report.clean, report.lines()
    assert report.pauses == 1
    [answered] = report.answered
    assert (answered.request_type, answered.given) == ("Content", False)
    # MAF's response as its data, not `<agent_framework._types.Content object at 0x...>`
    assert answered.answer.startswith("{"), answered.answer
    assert "'approved': True" in answered.answer
    assert "'type': 'function_approval_response'" in answered.answer


def test_an_unnamed_orchestrator_agent_is_named_by_the_executor_that_runs_it() -> None:
    """SK's group chat sample names its participants, not its `orchestrator_agent`: the message
    says which executor's id changes, by its type."""
    from agent_framework import Agent
    from agent_framework.orchestrations import GroupChatBuilder

    from executors.platform.chat_clients import ScriptedChatClient
    from workflows.platform.engine import graph_changes

    def chat(name: str | None = None) -> Agent:
        return Agent(client=ScriptedChatClient(lambda m, o: []), name=name)

    def build() -> Any:
        return GroupChatBuilder(
            participants=[chat("Researcher"), chat("Planner")], orchestrator_agent=chat()
        ).build()

    changed = graph_changes(build(), build())

    assert changed is not None
    assert re.fullmatch(
        r"executors [0-9a-f-]{36} \(AgentBasedGroupChatOrchestrator\) of one build are "
        r"[0-9a-f-]{36} \(AgentBasedGroupChatOrchestrator\) in the next \(.*\)",
        changed,
    ), changed


async def test_a_structured_reply_s_value_is_in_the_output_beside_its_text(parts: Parts) -> None:
    """An agent with a `response_format`: MAF's response's `value` is the parsed model; the run's
    output carries it as JSON, beside the text it was parsed from."""
    run = await parts.runtime.start("structured_agent", {"question": "Kites"}, actor="sam")
    await parts.worker.drain()
    done = await parts.runtime.get(run.id)

    assert done.status == "completed", done.error
    assert done.output == {
        "agent": "BriefAgent",
        "text": '{"title": "Kites", "points": ["light", "cheap"]}',
        "value": {"title": "Kites", "points": ["light", "cheap"]},
    }
