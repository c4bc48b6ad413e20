"""The messages a continued run starts on, read from an earlier run's recorded conversation.

A provider refuses a conversation in which a tool result answers no call, or a call goes
unanswered before the next message (OpenAI's Chat Completions: an HTTP 400): whatever a run
recorded, the messages made of it never hold either.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agent_framework import (
    Agent,
    Content,
    FunctionTool,
    HistoryProvider,
    InMemoryHistoryProvider,
    Message,
    tool,
)
from hypothesis import given
from hypothesis import strategies as st

from executors.platform.agents import as_workflow, replies_of, seed_history
from executors.platform.chat_clients import ScriptedChatClient
from executors.platform.transcript import Transcript, as_text, history_of, messages_of


def shape(messages: list[Message]) -> list[tuple[Any, ...]]:
    return [
        (
            m.role,
            m.author_name,
            [(c.type, c.text if c.type == "text" else c.call_id) for c in m.contents],
        )
        for m in messages
    ]


def test_a_run_s_turns_become_the_messages_a_model_reads_next_time() -> None:
    entries = [
        {"type": "input", "input": {"text": "refund order 12"}},
        {"type": "message", "role": "assistant", "agent": "billing", "text": "Looking it up."},
        {
            "type": "tool_call",
            "agent": "billing",
            "tool": "lookup",
            "call_id": "c1",
            "arguments": {"order": "12"},
        },
        {
            "type": "tool_call",
            "agent": "billing",
            "tool": "refund",
            "call_id": "c2",
            "arguments": {"order": "12"},
        },
        {
            "type": "tool_result",
            "agent": "billing",
            "tool": "lookup",
            "call_id": "c1",
            "result": "order 12: $40",
        },
        {"type": "request", "team": "leads", "kind": "approval", "title": "Approve refund"},
        {"type": "answer", "by": "lee", "kind": "approval", "decision": "reject", "text": "no"},
        {
            "type": "tool_result",
            "agent": "billing",
            "tool": "refund",
            "call_id": "c2",
            "result": "Error: rejected by lee: no",
        },
        {"type": "handoff", "from": "billing", "to": "triage"},
        {"type": "message", "role": "user", "by": "lee", "text": "Tell them why."},
        {"type": "message", "role": "assistant", "agent": "triage", "text": "Refund refused."},
        {
            "type": "tool_call",
            "agent": "triage",
            "tool": "close",
            "call_id": "c3",
            "arguments": {},
        },  # the run ended before its result: not shown to a model
    ]

    messages = messages_of(entries)

    assert shape(messages) == [
        ("user", None, [("text", "refund order 12")]),
        (
            "assistant",
            "billing",
            [("text", "Looking it up."), ("function_call", "c1"), ("function_call", "c2")],
        ),
        # (named as MAF names its tool loop's message: after the agent that called)
        ("tool", "billing", [("function_result", "c1"), ("function_result", "c2")]),
        ("user", None, [("text", "Tell them why.")]),
        ("assistant", "triage", [("text", "Refund refused.")]),
    ]
    [call] = [c for c in messages[1].contents if c.call_id == "c2"]
    assert (call.name, call.parse_arguments()) == ("refund", {"order": "12"})
    assert messages[2].contents[1].result == "Error: rejected by lee: no"


@tool(approval_mode="always_require")
def act(x: int) -> str:
    """Act (a person approves each call first)."""
    return f"acted {x}"


async def test_a_turn_s_approved_and_rejected_results_are_one_tool_message_as_on_maf() -> None:
    """A model turn calls a tool twice; a person approves one call and rejects the other. On MAF
    alone (one session: the approval responses, then the next turn) the next turn's model gets
    both results in one tool message, as its tool loop gave them: a continued run's history is
    the same (MAF's Bedrock client sends a second tool message's results nowhere, and Bedrock
    refuses a call left unanswered)."""
    handed: list[list[Message]] = []

    def play(messages: Sequence[Message], options: dict[str, Any]) -> list[Content]:
        handed.append(list(messages))
        if messages[-1].text == "do it":
            return [
                Content.from_function_call("c1", "act", arguments={"x": 1}),
                Content.from_function_call("c2", "act", arguments={"x": 2}),
            ]
        return [Content.from_text("done" if messages[-1].role == "tool" else "ok")]

    agent = Agent(client=ScriptedChatClient(play), name="Two", tools=[act])
    session = agent.create_session()
    asked = (await agent.run("do it", session=session)).user_input_requests
    answers = [asked[0].to_function_approval_response(approved=True)]
    answers.append(asked[1].to_function_approval_response(approved=False))
    await agent.run(Message(role="user", contents=answers), session=session)
    await agent.run("and now?", session=session)
    call = {"type": "tool_call", "agent": "Two", "tool": "act"}
    result = {"type": "tool_result", "agent": "Two", "tool": "act"}
    recorded: list[dict[str, Any]] = [  # as Baton records the run: the rejection noted first
        {"type": "input", "input": {"text": "do it"}},
        call | {"call_id": "c1", "arguments": {"x": 1}},
        call | {"call_id": "c2", "arguments": {"x": 2}},
        {"type": "request", "kind": "approval"},
        {"type": "request", "kind": "approval"},
        {"type": "answer", "kind": "approval", "decision": "approve"},
        {"type": "answer", "kind": "approval", "decision": "reject", "text": "no"},
        result | {"call_id": "c2", "result": "Rejected by lee: no"},
        result | {"call_id": "c1", "result": "acted 1"},
        {"type": "message", "role": "assistant", "agent": "Two", "text": "done"},
    ]

    def contents(messages: Sequence[Message]) -> list[tuple[Any, ...]]:
        return [(m.role, [(c.type, c.text or c.call_id) for c in m.contents]) for m in messages]

    continued = [*messages_of(recorded), Message(role="user", contents=["and now?"])]
    assert contents(continued) == contents(handed[-1])
    results = [("function_result", "c1"), ("function_result", "c2")]
    assert contents(continued)[2] == ("tool", results)


def test_an_input_of_several_fields_is_the_user_s_message_as_json() -> None:
    [message] = messages_of([{"type": "input", "input": {"city": "Oslo", "days": 2}}])

    assert message.text == '{"city":"Oslo","days":2}'


ids = st.sampled_from(["c1", "c2", "c3", None])
entries = st.lists(
    st.one_of(
        st.fixed_dictionaries(
            {
                "type": st.just("message"),
                "role": st.sampled_from(["user", "assistant"]),
                "agent": st.sampled_from(["a", "b", None]),
                "text": st.text(max_size=5),
            }
        ),
        st.fixed_dictionaries(
            {
                "type": st.just("tool_call"),
                "agent": st.sampled_from(["a", "b"]),
                "tool": st.sampled_from(["t", "u"]),
                "call_id": ids,
                "arguments": st.one_of(
                    st.none(),
                    st.dictionaries(st.text(max_size=3), st.integers()),
                    st.text(max_size=5),
                ),
            }
        ),
        st.fixed_dictionaries(
            {
                "type": st.just("tool_result"),
                "tool": st.just("t"),
                "call_id": ids,
                "result": st.text(max_size=5),
            }
        ),
        st.fixed_dictionaries(
            {
                "type": st.sampled_from(["input", "handoff", "request", "answer", "other"]),
                "input": st.one_of(
                    st.none(), st.dictionaries(st.text(max_size=3), st.text(max_size=3), max_size=2)
                ),
            }
        ),
    ),
    max_size=14,
)


@given(entries)
def test_whatever_was_recorded_every_result_answers_a_call_shown_before_it(
    recorded: list[dict[str, Any]],
) -> None:
    messages = messages_of(recorded)

    waiting: list[str] = []  # calls the next messages must answer, before anything else
    for message in messages:
        assert message.contents, "no empty message"
        if waiting:  # one tool message answers them all, in their order (as MAF's tool loop)
            assert message.role == "tool", f"{message.role} before the results of {waiting}"
            assert all(c.type == "function_result" for c in message.contents)
            assert [str(c.call_id) for c in message.contents] == waiting
            waiting = []
            continue
        assert message.role != "tool", "a result that answers no call just made"
        waiting = [str(c.call_id) for c in message.contents if c.type == "function_call"]
        assert not waiting or message.role == "assistant"
    assert waiting == []  # no call left unanswered


def test_a_session_kept_for_the_next_turn_leaves_out_history_and_what_cannot_be_kept() -> None:
    """`kept_sessions`: a session's state less its history provider's, with the session's id;
    one MAF cannot serialize is not kept (logged), and the turn still ends; `carry_sessions`
    gives it back, in a session of the same id."""
    from agent_framework import Agent

    from executors.platform.agents import as_workflow, carry_sessions, kept_sessions
    from executors.platform.chat_clients import ScriptedChatClient

    def build() -> Any:
        agent = Agent(client=ScriptedChatClient(lambda m, o: []), name="Keeper")
        return as_workflow(agent, "keeper")

    workflow = build()
    [executor] = workflow.executors.values()
    executor._session.state.update({"in_memory": {"messages": []}, "todos": {"items": [1, 2]}})
    kept = kept_sessions(workflow)
    executor._session.state["handle"] = object()  # no codec, no to_dict: MAF cannot keep it
    unkept = kept_sessions(workflow)
    later = build()
    carry_sessions(later, kept)

    same = executor._session.session_id  # kept with it: the next turn goes on in that session
    assert kept == {"Keeper": {"todos": {"items": [1, 2]}, "baton_session_id": same}}
    assert unkept == {}
    [carried] = later.executors.values()
    assert carried._session.state == {"todos": {"items": [1, 2]}}
    assert carried._session.session_id == same


class Strict:
    """A state type whose decoder refuses what it did not write (a later version, say)."""


def _strict(payload: Any) -> Strict:
    if payload.get("version") != 2:
        raise ValueError("written by another version")
    return Strict()


def test_a_kept_session_that_cannot_be_restored_starts_the_agent_afresh() -> None:
    from agent_framework import Agent, register_state_type

    from executors.platform.agents import as_workflow, carry_sessions
    from executors.platform.chat_clients import ScriptedChatClient

    register_state_type(
        Strict, type_id="baton-tests.strict", encoder=lambda s: {"version": 2}, decoder=_strict
    )
    workflow = as_workflow(Agent(client=ScriptedChatClient(lambda m, o: []), name="Keeper"), "k")
    carry_sessions(workflow, {"Keeper": {"held": {"type": "baton-tests.strict", "version": 1}}})
    [executor] = workflow.executors.values()
    assert executor._session.state == {}
    carry_sessions(workflow, {"Keeper": {"held": {"type": "baton-tests.strict", "version": 2}}})
    assert isinstance(executor._session.state["held"], Strict)


def test_a_workflow_s_replies_are_what_maf_s_workflow_agent_makes_of_its_outputs() -> None:
    """The caller-facing assistant text of each output: a group chat's conversation less its
    user's messages and tool calls; an agent's response; a plain value by its executor."""
    from agent_framework import AgentResponse, Content, WorkflowEvent

    chat = [
        Message(role="user", contents=["plan a trip"]),
        Message(role="assistant", contents=["Day one: Kew."], author_name="Planner"),
        Message(
            role="assistant",
            contents=[Content.from_function_call("c1", "lookup", arguments={})],
            author_name="Planner",
        ),
        Message(role="tool", contents=[Content.from_function_result("c1", result="ok")]),
        Message(role="assistant", contents=["Done after 2 turns."], author_name="manager"),
    ]
    events = [
        WorkflowEvent("output", executor_id="group", data=chat),
        WorkflowEvent("output", executor_id="desk", data=AgentResponse(messages=[chat[1]])),
        WorkflowEvent("intermediate", executor_id="counter", data=3),
        WorkflowEvent.executor_invoked("desk", None),
    ]

    assert replies_of(events) == [
        {"agent": "Planner", "text": "Day one: Kew."},
        {"agent": "manager", "text": "Done after 2 turns."},
        {"agent": "Planner", "text": "Day one: Kew."},
        {"agent": "counter", "text": "3"},
    ]


def test_a_continued_workflow_starts_on_the_user_s_messages_and_its_replies() -> None:
    entries: list[dict[str, Any]] = [
        {"type": "message", "role": "user", "text": "plan a trip"},
        {"type": "message", "role": "assistant", "agent": "Planner", "text": "a draft"},
        {"type": "replies", "replies": [{"agent": "editor", "text": "the trip"}]},
        {"type": "message", "role": "user", "text": "relayed: shorter"},
        {"type": "replies", "replies": []},
    ]

    assert shape(history_of(entries, turns=False)) == [
        ("user", None, [("text", "plan a trip")]),
        ("assistant", "editor", [("text", "the trip")]),
        ("user", None, [("text", "relayed: shorter")]),
    ]
    # an agent registered as it is carries every turn; so does a run recorded before replies
    assert shape(history_of(entries, turns=True)) == shape(messages_of(entries))
    assert shape(history_of(entries[:2], turns=False)) == shape(messages_of(entries[:2]))


def test_a_session_two_executors_share_stays_one_session_in_the_run_that_continues() -> None:
    """Two agent executors built on one session: carried on, they still share one."""
    from agent_framework import Agent, AgentExecutor, WorkflowBuilder

    from executors.platform.agents import carry_sessions, kept_sessions
    from executors.platform.chat_clients import ScriptedChatClient

    def build() -> Any:
        agent = Agent(client=ScriptedChatClient(lambda m, o: []), name="Keeper")
        shared = agent.create_session()
        first = AgentExecutor(agent, id="first", session=shared)
        second = AgentExecutor(agent, id="second", session=shared)
        return WorkflowBuilder(start_executor=first).add_edge(first, second).build()

    workflow = build()
    workflow.executors["first"]._session.state["notes"] = ["x"]
    kept = kept_sessions(workflow)
    later = build()
    carry_sessions(later, kept)
    first, second = later.executors["first"], later.executors["second"]
    first._session.state["notes"].append("y")

    assert first._session is second._session
    assert first._session.session_id == kept["first"]["baton_session_id"]
    assert second._session.state["notes"] == ["x", "y"]


def test_a_tool_s_empty_result_is_recorded_as_the_empty_text_the_model_was_given() -> None:
    """MAF hands the model `""` for a tool's `None` or `""`: the record says the same, not None."""
    for returned in (None, ""):
        given = FunctionTool.parse_result(returned)
        assert "".join(c.text or "" for c in given) == ""
        assert as_text(given) == ""
    assert as_text(FunctionTool.parse_result(42)) == "42"
    assert as_text(FunctionTool.parse_result({"a": 1})) == '{"a": 1}'


def test_a_tool_s_several_texts_are_recorded_as_the_one_result_maf_hands_the_model() -> None:
    """A tool returning several text contents (MAF's `fetch_emails`, each email labelled apart)
    is one result to the model: MAF joins the texts a line each, the empty ones left out
    (`Content.from_function_result`). A continued run hands the model the same text again."""
    given = [Content.from_text('{"id": 1}'), Content.from_text(""), Content.from_text('{"id": 2}')]
    maf = Content.from_function_result(call_id="c1", result=given).result

    assert maf == '{"id": 1}\n{"id": 2}'
    assert as_text(given) == maf


def _history_kept(agent: Agent) -> tuple[bool, Any]:
    """Whether `seed_history` put a turn in `agent`'s session, and what the session then holds."""
    workflow = as_workflow(agent, "talker")
    seeded = seed_history(workflow, [Message("user", ["earlier"])])
    return seeded, workflow.get_start_executor()._session.state  # type: ignore[attr-defined]


def test_earlier_turns_go_where_maf_s_in_memory_history_provider_loads_them() -> None:
    """MAF's own provider (put in by MAF, or given) loads them; elsewhere they stay the input."""

    class Kept(HistoryProvider):
        async def get_messages(self, session_id: str | None, **kwargs: Any) -> list[Message]:
            return []

        async def save_messages(
            self, session_id: str | None, messages: Sequence[Message], **kwargs: Any
        ) -> None:
            return None

    class Remembering(ScriptedChatClient):
        STORES_BY_DEFAULT = True  # the service keeps the conversation

    def agent(client: Any = None, **extra: Any) -> Agent:
        return Agent(client=client or ScriptedChatClient(lambda m, o: []), name="Talker", **extra)

    seeded, state = _history_kept(agent())
    assert seeded
    assert [m.text for m in state["in_memory"]["messages"]] == ["earlier"]
    given = InMemoryHistoryProvider(source_id="chat")
    seeded, state = _history_kept(agent(context_providers=[given]))
    assert seeded
    assert [m.text for m in state["chat"]["messages"]] == ["earlier"]
    for elsewhere in (
        agent(context_providers=[Kept("db")]),
        agent(Remembering(lambda m, o: [])),
        agent(default_options={"store": True}),
        agent(default_options={"conversation_id": "conv_1"}),
    ):
        seeded, state = _history_kept(elsewhere)
        assert not seeded
        assert "in_memory" not in state
    assert seed_history(as_workflow(agent(), "talker"), []) is False


def test_a_call_s_arguments_go_back_to_the_model_as_it_wrote_them() -> None:
    """A model's compact text is kept where MAF would write the parsed arguments otherwise."""
    call = {"type": "tool_call", "agent": "A", "tool": "act", "call_id": "c1"}
    result = {"type": "tool_result", "agent": "A", "tool": "act", "call_id": "c1", "result": "ok"}
    for written, kept in (('{"x":1}', True), ('{"x": 1}', False)):
        entry = call | {"arguments": {"x": 1}} | ({"raw_arguments": written} if kept else {})
        [_, turn, _] = messages_of([{"type": "input", "input": {"text": "go"}}, entry, result])
        [content] = turn.contents
        assert content.arguments == (written if kept else {"x": 1})


@tool
def act_freely(x: int) -> str:
    """Act at once."""
    return f"acted {x}"


async def test_an_unnamed_agent_s_earlier_replies_go_back_named_as_maf_names_them() -> None:
    """MAF names an unnamed agent's replies `UnnamedAgent` in its session, and its OpenAI client
    hands the model that name with each: a continued run's history named them after the step
    that ran the agent, so the model read another name (and a prompt cache matched nothing)."""

    def play(messages: Sequence[Message], options: dict[str, Any]) -> list[Content]:
        if messages[-1].role == "user" and messages[-1].text == "Hi":
            return [Content.from_function_call("c1", "act", arguments={"x": 1})]
        return [Content.from_text("Hello.")]

    alone = Agent(client=ScriptedChatClient(play), tools=[act_freely])
    session = alone.create_session()
    await alone.run("Hi", session=session)
    on_maf = session.state[InMemoryHistoryProvider.DEFAULT_SOURCE_ID]["messages"]

    noted = Transcript()
    agent = Agent(client=ScriptedChatClient(play), tools=[act_freely])
    noted.follow([agent], {id(agent): "assistant_step"})
    await agent.run("Hi")
    said = {"type": "message", "role": "user", "text": "Hi"}
    on_baton = messages_of([said, *noted.entries])

    assert shape(on_baton) == shape(on_maf)
    assert {m.author_name for m in on_baton if m.role == "assistant"} == {"UnnamedAgent"}
    # the page still says which step spoke
    assert {e["agent"] for e in noted.entries} == {"assistant_step"}
