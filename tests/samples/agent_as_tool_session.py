# mypy: disable-error-code="no-any-return"
# Copyright (c) Microsoft. All rights reserved.

"""MAF's `02-agents/tools/agent_as_tool_with_session_propagation.py`, as MAF wrote it.

At agent-framework 5eb3eb745, less its `main()` (its printing, and its session: the
coordinator's executor makes the session MAF runs it in; `main()` sets its "findings" to None,
which the tools read as a session without it), its `load_dotenv()` and the imports only they
used (`asyncio`, `OpenAIChatClient`, `load_dotenv`): a coordinator agent whose `research` tool
is a research agent (`as_tool(propagate_session=True)`), both storing findings in the one
session's state and recalling them. Its agents are built as `main()` builds them, on one client
of the model Baton is configured with, the coordinator registered as it is
(`agent_as_tool_session`), and a run's input is `main()`'s query. `agent_as_tool_session_approval`
is the same, its `research` tool asking a person first (MAF's own
`as_tool(approval_mode="always_require")`, the one line changed: `# Baton:`): each approved call
runs the research agent in the coordinator's session as it was when the run paused, in whatever
process resumes it. On the scripted model the coordinator notes the question, researches
quantum computing, then AI, then recalls everything and says it: the findings stored before a
pause are in what it recalls after.
"""

from collections.abc import Awaitable, Callable

from agent_framework import Agent, AgentContext, AgentSession, FunctionInvocationContext, tool

"""
Agent-as-Tool: Session Propagation Example

Demonstrates how to share an AgentSession between a coordinator agent and a
sub-agent invoked as a tool using ``propagate_session=True``.

When session propagation is enabled, both agents share the same session object,
including session_id and the mutable state dict.  This allows correlated
conversation tracking and shared state across the agent hierarchy.
"""


async def log_session(
    context: AgentContext,
    call_next: Callable[[], Awaitable[None]],
) -> None:
    """Agent middleware that logs the session received by each agent."""
    session: AgentSession | None = context.session
    if not session:
        print("No session found.")  # noqa: T201
        await call_next()
        return
    agent_name = context.agent.name or "unknown"
    print(  # noqa: T201
        f"  [{agent_name}] session_id={session.session_id}, "
        f"service_session_id={session.service_session_id} state={session.state}"
    )
    await call_next()


@tool(description="Use this tool to store the findings so that other agents can reason over them.")
def store_findings(findings: str, ctx: FunctionInvocationContext) -> None:
    if ctx.session is None:
        return
    current_findings = ctx.session.state.get("findings")
    if current_findings is None:
        ctx.session.state["findings"] = findings
    else:
        ctx.session.state["findings"] = f"{current_findings}\n{findings}"


@tool(description="Use this tool to gather the current findings from other agents.")
def recall_findings(ctx: FunctionInvocationContext) -> str:
    if ctx.session is None:
        return "No session available"
    current_findings = ctx.session.state.get("findings")
    if current_findings is None:
        return "Nothing yet"
    return current_findings


# --- Baton --------------------------------------------------------------------------------------

import json  # noqa: E402
from collections.abc import Sequence  # noqa: E402
from typing import Any, Literal  # noqa: E402

from agent_framework import Content, Message  # noqa: E402
from pydantic import BaseModel  # noqa: E402

from baton.api import RunServices, register, scripted_plays  # noqa: E402


class Query(BaseModel):
    """The run's input: `main()`'s query, unless another is given."""

    text: str = "What are the latest developments in quantum computing and in AI?"


def _coordinator(
    services: RunServices,
    research_approval: Literal["always_require", "never_require"],
) -> Agent:
    """`main()`'s two agents, on one client; the coordinator, which calls the other as a tool."""
    client = services.chat_clients.for_persona("session-propagation")

    research_agent = Agent(
        client=client,
        name="ResearchAgent",
        instructions="You are a research assistant. Provide concise answers and store your findings.",  # noqa: E501
        middleware=[log_session],
        tools=[store_findings, recall_findings],
    )

    research_tool = research_agent.as_tool(
        name="research",
        description="Research a topic and store your findings.",
        arg_name="query",
        arg_description="The research query",
        propagate_session=True,
        approval_mode=research_approval,  # Baton: MAF's default, or a person's approval
    )

    coordinator = Agent(
        client=client,
        name="CoordinatorAgent",
        instructions=(
            "You coordinate research. Use the 'research' tool to start research "
            "and then use the recall findings tool to gather up everything."
        ),
        tools=[research_tool, store_findings, recall_findings],
        middleware=[log_session],
    )
    return coordinator


@register("agent_as_tool_session", input_model=Query)
def build_agent(services: RunServices) -> Agent:
    """`main()`'s coordinator, its research agent a tool sharing its session."""
    return _coordinator(services, "never_require")


@register("agent_as_tool_session_approval", input_model=Query)
def build_asking_agent(services: RunServices) -> Agent:
    """`main()`'s coordinator, each call of its research agent asking a person first."""
    return _coordinator(services, "always_require")


TOPICS = {
    "quantum computing": "quantum computing: error-corrected logical qubits outlive their parts.",
    "AI": "AI: agents call tools and hand decisions to people.",
}
"""What the research agent finds on each topic the coordinator gives it."""


def _results(messages: Sequence[Message], calls: Sequence[str]) -> list[str]:
    """The results of the calls named `calls`, in order."""
    found = {
        c.call_id: str(c.result)
        for m in messages
        for c in m.contents
        if c.type == "function_result" and c.call_id in calls
    }
    return [found[call] for call in calls if call in found]


COORDINATOR_CALLS = ("call-note", "call-research-1", "call-research-2", "call-recall")
"""The coordinator's calls, in the order it makes them: each made once the one before is done."""


def session_play(messages: Sequence[Message], options: dict[str, Any]) -> list[Content]:
    """Both agents (one client, as `main()` has): each knows itself by the tools it is offered.

    The coordinator notes the question, researches each topic in turn, then recalls and says
    everything stored; the research agent stores what it finds on its query and says so. (Each
    reads only its own calls' results: with `propagate_session=True` MAF hands the coordinator's
    session, its history too, to the research agent, and merges the research agent's back.)
    """
    offered = {t.name for t in options.get("tools") or ()}
    last = max(i for i, m in enumerate(messages) if m.role == "user")
    if "research" not in offered:  # the research agent: its query is the last user message
        query = messages[last].text
        if not _results(messages[last:], ["call-store"]):
            findings = json.dumps({"findings": TOPICS[query]})
            return [Content.from_function_call("call-store", "store_findings", arguments=findings)]
        return [Content.from_text(f"Stored my findings on {query}.")]
    done = _results(messages, COORDINATOR_CALLS)
    if not done:
        findings = json.dumps({"findings": f"Question: {messages[last].text}"})
        return [Content.from_function_call("call-note", "store_findings", arguments=findings)]
    if len(done) <= len(TOPICS):
        query = json.dumps({"query": list(TOPICS)[len(done) - 1]})
        return [
            Content.from_function_call(COORDINATOR_CALLS[len(done)], "research", arguments=query)
        ]
    if len(done) == len(TOPICS) + 1:
        return [Content.from_function_call("call-recall", "recall_findings", arguments="{}")]
    return [Content.from_text(f"Everything gathered:\n{done[-1]}")]


scripted_plays({"session-propagation": session_play})
