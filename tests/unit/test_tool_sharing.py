"""What a drive need not build again: MAF works out a tool's argument schema once per tool object
(a pydantic model created or rebuilt, its JSON schema generated), every agent run asks for it, and
Baton builds the workflow, its agents and tools for every drive. A tool that reaches only the
process's systems is built once per process (`Resources.shared`), and the arguments model of a
tool declared by a JSON schema alone is made once per tool name."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent_framework import Agent, FunctionInvocationContext, FunctionTool, tool

from executors.platform.chat_clients import ScriptedChatClient
from executors.platform.services import ChatClientFactory, Resources, RunServices
from executors.platform.tool_gate import GatedTool, perform_call
from executors.shipped.support_desk import refund_gate
from executors.shipped.tools import (
    delete_account_tool,
    describe_refund,
    issue_refund_tool,
    lookup_customer_tool,
    lookup_order_tool,
    send_email_tool,
)
from human.effects import EffectLedger
from human.policy import Policy
from human.store.base import EffectLookup, NewEffect


def services(run_id: str, resources: Resources) -> RunServices:
    return RunServices(
        run_id=run_id,
        ledger=EffectLedger(store=None),  # type: ignore[arg-type]  (no effect runs here)
        policy=Policy([], default_team="support-leads"),
        chat_clients=ChatClientFactory("scripted"),
        resources=resources,
    )


def test_a_tool_that_reaches_only_the_process_is_built_once_per_process() -> None:
    here = Resources("sqlite:///unused.db")
    first, second = services("run_1", here), services("run_2", here)

    assert lookup_order_tool(first) is lookup_order_tool(second)
    assert lookup_customer_tool(first) is lookup_customer_tool(second)
    elsewhere = services("run_3", Resources("sqlite:///unused.db"))
    assert lookup_order_tool(elsewhere) is not lookup_order_tool(first)


async def test_the_shared_tool_calls_the_processs_back_office(tmp_path: Path) -> None:
    resources = Resources(f"sqlite:///{tmp_path / 'office.db'}")
    try:
        tool = lookup_order_tool(services("run_1", resources))
        again = lookup_order_tool(services("run_2", resources))
        found = await again.invoke(arguments={"order_id": "A-404"})
    finally:
        await resources.close()

    assert tool is again
    assert [c.text for c in found] == ['{"error": "no order A-404"}']


def test_tools_declared_by_a_schema_alone_share_one_arguments_model_per_name() -> None:
    schema = {"type": "object", "properties": {"question": {"type": "string"}}}

    def declared() -> FunctionTool:
        return FunctionTool(name="ask_human", description="Ask.", func=None, input_model=schema)

    first, second = GatedTool.of(declared()), GatedTool.of(declared())

    assert first.arguments is second.arguments
    typed = first.arguments.model_validate({"question": "Refund?", "order_id": "A-1"})
    assert typed.model_dump() == {"question": "Refund?", "order_id": "A-1"}


def test_gated_tools_and_their_declarations_are_built_once_per_process() -> None:
    here = Resources("sqlite:///unused.db")
    first, second = services("run_1", here), services("run_2", here)

    for make in (issue_refund_tool, delete_account_tool, send_email_tool, refund_gate):
        gated = make(first)
        assert make(second) is gated
        assert gated.declaration() is make(second).declaration()
    assert refund_gate(first).describe is describe_refund  # the support desk's own wording
    assert refund_gate(first).perform is issue_refund_tool(first).perform


class _NoEffectYet:
    """A ledger's store that has recorded nothing: the call runs."""

    async def effect_in_run(self, key: str, run_id: str) -> EffectLookup:
        return EffectLookup(recorded=None, run_status="running")

    async def start_effect(self, effect: NewEffect) -> bool:
        return True

    async def record_effect(
        self, effect: NewEffect, *, uncertain: bool = False, replaces: Any = None
    ) -> None:
        return None


@tool(approval_mode="always_require")
def query_metrics(query: str, ctx: FunctionInvocationContext) -> str:
    """A plain tool reading the run's kwargs, as MAF's loop gives them."""
    return f"{query} from {ctx.kwargs.get('db', 'nowhere')}"


async def test_a_plain_tool_baton_runs_after_an_approval_gets_the_run_s_kwargs() -> None:
    """`register(run_kwargs=...)`'s `function_invocation_kwargs` reach a call Baton runs itself,
    the calling agent's own entry where the mapping has one."""
    run = RunServices(
        run_id="run_1",
        ledger=EffectLedger(store=_NoEffectYet()),  # type: ignore[arg-type]
        policy=Policy([], default_team="support-leads"),
        chat_clients=ChatClientFactory("scripted"),
    )
    run.using(invocation_kwargs={"db": "metrics", "writer": {"db": "drafts"}})
    gated = GatedTool.of(query_metrics)
    typed = gated.arguments.model_validate({"query": "Q3"})

    by_researcher = await perform_call(run, gated, typed, "call-1", "approved", agent="researcher")
    by_writer = await perform_call(run, gated, typed, "call-2", "approved", agent="writer")

    assert (by_researcher, by_writer) == ("Q3 from metrics", "Q3 from drafts")
    assert len(run.effects) == 2  # each through the ledger


@tool(approval_mode="always_require")
def flaky_export(query: str) -> str:
    """A plain tool that fails."""
    raise TimeoutError(f"the export of {query} timed out")


async def test_a_plain_tool_baton_runs_that_raises_tells_the_model_as_its_agent_s_loop_would() -> (
    None
):
    """MAF's words for a failed call, and what it raised where the calling agent's client sets
    `include_detailed_errors` (MAF's `function_invocation_configuration.py`)."""
    run = RunServices(
        run_id="run_1",
        ledger=EffectLedger(store=_NoEffectYet()),  # type: ignore[arg-type]
        policy=Policy([], default_team="support-leads"),
        chat_clients=ChatClientFactory("scripted"),
    )
    clients = {
        name: ScriptedChatClient(lambda messages, options: []) for name in ("terse", "detailed")
    }
    clients["detailed"].function_invocation_configuration["include_detailed_errors"] = True
    agents = [Agent(client=client, name=name) for name, client in clients.items()]
    run.transcript.follow(agents)
    gated = GatedTool.of(flaky_export)
    typed = gated.arguments.model_validate({"query": "Q3"})

    terse = await perform_call(run, gated, typed, "call-1", "approved", agent="terse")
    detailed = await perform_call(run, gated, typed, "call-2", "approved", agent="detailed")
    unknown = await perform_call(run, gated, typed, "call-3", "approved", agent="nobody")

    assert terse == unknown == "Error: Function failed."
    assert detailed == "Error: Function failed. Exception: the export of Q3 timed out"
