"""Baton's workloads in LangGraph, for `baton.bench_peers`, each checkpointed by `SqliteSaver`.

One run at a time, each cycle is driven with `invoke` on `SqliteSaver`. With runs in flight at once
(`in_flight` > 1), with `ainvoke` on `AsyncSqliteSaver` (aiosqlite: one connection, its own
thread), LangGraph's way to serve many threads from one event loop. Under `ainvoke` LangGraph
runs a sync node in a worker thread (`run_in_executor`), so there the nodes are `async def`,
run on the event loop as an async service would write them (`_on_the_loop`: the same body; none
of them waits on anything). The tools stay sync, run by `ToolNode` in worker threads, as a
blocking SQLite call should be.

`minimal_graph`: a `StateGraph` whose one node calls `interrupt()`, resumed with
`Command(resume=...)`.

`refund_agent`, the same work as Baton's `refund`: an explicit LangGraph agent, a chat model node
and a `ToolNode` with `lookup_order` and `issue_refund`, looping until the model answers without a
tool call (`tools_condition`), checkpointed by `SqliteSaver` (its defaults). The refund tool calls
`interrupt()` for a person's approval before it writes, as LangGraph's human-in-the-loop guide has
it, and the run is resumed with `Command(resume=...)`. The model is a LangChain chat model that
plays the same three turns as Baton's scripted client (`executors/shipped/plays.py` `refund_play`),
read from the conversation the same way: look the order up, propose the refund, say what was
refunded.

The back office is a SQLite file of its own (`baton.bench_office.OfficeFile`: the shipped
migrations and statements), the refund keyed by the call's idempotency key (thread and tool call,
as Baton keys an approved call by run and call).

Imported only by the child processes that measure them (LangGraph is the optional `bench` extra).
"""

from __future__ import annotations

import contextlib
import functools
import json
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any, Final, TypedDict, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import BaseTool, InjectedToolCallId, tool
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.config import get_config
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Command, interrupt

from baton.bench import APPROVE, REFUND_120
from baton.bench_office import OfficeFile
from baton.bench_peers import paused
from human.effects import idempotency_key

S = TypeVar("S")
R = TypeVar("R")


class ScriptedRefund(BaseChatModel):
    """The refund play of Baton's scripted client: three turns, decided from the conversation."""

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        """The play knows its tools: binding changes nothing."""
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        ask = json.loads(str(messages[0].content))
        seen = {m.name: json.loads(str(m.content)) for m in messages if isinstance(m, ToolMessage)}
        turn = sum(isinstance(m, AIMessage) for m in messages) + 1
        if "lookup_order" not in seen:
            name, arguments = "lookup_order", {"order_id": ask["order_id"]}
        elif "issue_refund" not in seen:
            name, arguments = "issue_refund", {"order_id": ask["order_id"], "amount": ask["amount"]}
        else:
            order, refund = seen["lookup_order"], seen["issue_refund"]
            text = (
                f"Refunded {float(refund['amount']):.2f} {order['currency']} on order "
                f"{refund['order_id']} (refund {refund['refund_id']})."
            )
            return ChatResult(generations=[ChatGeneration(message=AIMessage(text))])
        call = {"name": name, "args": arguments, "id": f"call_{name}_{turn}"}
        return ChatResult(generations=[ChatGeneration(message=AIMessage("", tool_calls=[call]))])


def _tools(office: OfficeFile) -> list[BaseTool]:
    """`lookup_order` and `issue_refund` on `office`, as the refund agent's tools."""

    @tool
    def lookup_order(order_id: str) -> dict[str, Any]:
        """Look up an order by id: customer, total, currency."""
        return office.lookup_order(order_id)

    @tool
    def issue_refund(
        order_id: str, amount: float, call_id: Annotated[str, InjectedToolCallId]
    ) -> dict[str, Any]:
        """Refund part of an order; a person approves first."""
        answer = interrupt({"tool": "issue_refund", "order_id": order_id, "amount": amount})
        if answer.get("decision") != "approve":
            return {"error": "a person rejected the refund"}
        key = idempotency_key(get_config()["configurable"]["thread_id"], "approved", call_id)
        return office.issue_refund(key, order_id, amount)

    return [lookup_order, issue_refund]


@contextlib.asynccontextmanager
async def refund_agent(
    folder: Path, in_flight: int = 1
) -> AsyncIterator[Callable[[], Awaitable[None]]]:
    """One refund cycle to time, on files in `folder`: 120 on order A-1002, asked and approved.

    `in_flight`: how many cycles will run at once (see the module's docstring).
    """
    office = await OfficeFile.made(folder)

    def refunded(done: dict[str, Any]) -> bool:
        return str(done["messages"][-1].content).startswith("Refunded 120.00")

    builder, answer = _refund_graph(office, in_flight), dict(APPROVE)
    try:
        async with _cycles(builder, folder, REFUND_START, answer, refunded, in_flight) as cycle:
            yield cycle
    finally:
        office.close()


REFUND_START: Final = {"messages": [HumanMessage(json.dumps(REFUND_120))]}
"""The refund agent's input: the same ask as Baton's refund run's."""


def _refund_graph(office: OfficeFile, in_flight: int) -> StateGraph[Any]:
    """The refund agent's graph on `office` (its nodes for `in_flight`, see `_on_the_loop`)."""
    tools = _tools(office)
    model = ScriptedRefund().bind_tools(tools)

    @_on_the_loop(in_flight)
    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode(tools))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder


async def bytes_per_paused_refund(folder: Path, threads: int) -> float:
    """What a refund thread paused at its approval adds to `SqliteSaver`'s file, in bytes.

    Measured as Baton's `bytes_per_paused_run`: the file's pages in use (page count less free
    pages, after a WAL checkpoint into the file) before and after `threads` threads are started and
    left at their interrupt, over `threads`; after one thread first, which makes the tables.
    """
    office = await OfficeFile.made(folder)
    conn = sqlite3.connect(folder / "langgraph.db", check_same_thread=False)
    try:
        graph = _refund_graph(office, 1).compile(checkpointer=SqliteSaver(conn))

        def pause(n: int) -> None:
            asked = graph.invoke(REFUND_START, {"configurable": {"thread_id": f"paused-{n}"}})
            if "__interrupt__" not in asked:
                raise RuntimeError(f"LangGraph did not interrupt: {asked}")

        def in_use() -> int:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            [[pages]] = conn.execute("PRAGMA page_count").fetchall()
            [[free]] = conn.execute("PRAGMA freelist_count").fetchall()
            [[size]] = conn.execute("PRAGMA page_size").fetchall()
            return int((pages - free) * size)

        pause(0)
        before = in_use()
        for n in range(1, threads + 1):
            pause(n)
        return (in_use() - before) / threads
    finally:
        conn.close()
        office.close()


@contextlib.asynccontextmanager
async def minimal_graph(
    folder: Path, in_flight: int = 1
) -> AsyncIterator[Callable[[], Awaitable[None]]]:
    """One minimal cycle to time: a node asks with `interrupt()`, the answer ends the run.

    `in_flight`: how many cycles will run at once (see the module's docstring).
    """

    class State(TypedDict, total=False):
        amount: float
        decision: str

    @_on_the_loop(in_flight)
    def gate(state: State) -> State:
        answer = interrupt({"amount": state["amount"]})
        return {"decision": f"{answer['decision']} {state['amount']}"}

    builder = StateGraph(State)
    builder.add_node("gate", gate)
    builder.add_edge(START, "gate")
    builder.add_edge("gate", END)

    def approved(done: dict[str, Any]) -> bool:
        return done.get("decision") == "approve 120.0"

    async with _cycles(builder, folder, {"amount": 120.0}, APPROVE, approved, in_flight) as cycle:
        yield cycle


def _on_the_loop(in_flight: int) -> Callable[[Callable[[S], R]], Any]:
    """A node as is, or, with runs in flight, as an `async def` node running the same body.

    Under `ainvoke` LangGraph hands a sync node to a worker thread; the nodes here wait on
    nothing (the scripted model, `interrupt()`), so an async service would run them on its loop.
    """

    def made(node: Callable[[S], R]) -> Any:
        if in_flight == 1:
            return node

        @functools.wraps(node)
        async def on_the_loop(state: S) -> R:
            return node(state)

        return on_the_loop

    return made


@contextlib.asynccontextmanager
async def _cycles(
    builder: StateGraph[Any],
    folder: Path,
    start: dict[str, Any],
    answer: dict[str, Any],
    ended: Callable[[dict[str, Any]], bool],
    in_flight: int,
) -> AsyncIterator[Callable[[], Awaitable[None]]]:
    """Cycles of `builder`'s graph on `SqliteSaver` in `folder` (`AsyncSqliteSaver` if in flight).

    Each cycle is a new thread started with `start`, which must interrupt, then resumed with
    `answer`, which must end as `ended` says.
    """
    path = folder / "langgraph.db"
    count = 0

    def thread() -> Any:
        nonlocal count
        count += 1
        return {"configurable": {"thread_id": f"t{count}"}}

    def interrupted(asked: dict[str, Any]) -> None:
        if "__interrupt__" not in asked:
            raise RuntimeError(f"LangGraph did not interrupt: {asked}")
        paused()

    def finished(done: dict[str, Any]) -> None:
        if not ended(done):
            raise RuntimeError(f"LangGraph ended with {done}")

    if in_flight > 1:
        async with AsyncSqliteSaver.from_conn_string(str(path)) as saver:
            graph = builder.compile(checkpointer=saver)

            async def in_turn() -> None:
                config = thread()
                interrupted(await graph.ainvoke(start, config))
                finished(await graph.ainvoke(Command(resume=dict(answer)), config))

            yield in_turn
        return
    conn = sqlite3.connect(path, check_same_thread=False)
    sync_graph = builder.compile(checkpointer=SqliteSaver(conn))

    async def cycle() -> None:
        config = thread()
        interrupted(sync_graph.invoke(start, config))
        finished(sync_graph.invoke(Command(resume=dict(answer)), config))

    try:
        yield cycle
    finally:
        conn.close()
