"""The conversation a run page shows: each recorded entry in words a person reads."""

from __future__ import annotations

import json

from web.views import context_view, messages_of, party_of
from workflows.platform import registry


def test_a_typed_answer_shows_its_fields_not_python_s_spelling_of_them() -> None:
    """A person's answer reads as what they did, and a typed one shows its fields."""
    typed = {"approved": False, "note": "shorter"}
    entries = [
        {"type": "answer", "by": "lee", "decision": "answer", "text": typed},
        {"type": "answer", "by": "lee", "decision": "reject", "text": "not this quarter"},
        {"type": "answer", "by": "ada", "decision": "approve", "text": None},
    ]

    shown = messages_of(entries)

    assert shown[0] == {
        "role": "person",
        "speaker": "lee",
        "text": "lee answered",
        "data": typed,
        "raw": '{\n  "approved": false,\n  "note": "shorter"\n}',
    }
    assert [m["text"] for m in shown[1:]] == [
        "lee rejected: not this quarter",
        "ada approved",
    ]


def test_an_agent_s_run_shows_the_text_it_started_on_as_the_user_s_message() -> None:
    """An agent registered as it is starts on its input's one text field: the user said it. An
    input of other fields is the run's input, shown as such on the page, not as a message."""
    entries = [
        {"type": "input", "input": {"text": "What do you know?"}},
        {"type": "input", "input": {"city": "Oslo", "days": 2}},
    ]

    assert messages_of(entries) == [
        {"role": "user", "speaker": "User", "text": "What do you know?"}
    ]


def test_a_request_s_conversation_line_ending_in_json_shows_its_fields() -> None:
    """A request's context keeps its conversation as lines ("who: text"); an agent's structured
    reply (a group chat orchestrator's choice of speaker) reads field by field there too, as the
    run page shows the same reply."""
    choice = {"terminate": False, "reason": "rotating through the team", "next_speaker": "optimist"}
    lines = [
        "orchestrator: " + json.dumps(choice),
        "optimist: We should try it.",
        "lookup returned: {not json",
    ]

    shown = messages_of(lines)

    assert shown[0]["speaker"] == "Orchestrator"
    assert (shown[0]["text"], shown[0]["data"]) == ("", choice)
    assert shown[1] == {"role": "optimist", "speaker": "Optimist", "text": "We should try it."}
    assert shown[2] == {"role": "note", "speaker": "Note", "text": "lookup returned: {not json"}


def test_a_speaker_named_by_an_agent_s_name_reads_as_the_page_s_title_says_the_step() -> None:
    """`memory_assistant` heads its words "Memory assistant" (its request's title says "memory
    assistant"; Python's `capitalize` gave "Memory_assistant"), and a name's own capitals stay
    ("WeatherBot", not "Weatherbot")."""
    entries = [
        {"agent": "memory_assistant", "text": "Noted."},
        "WeatherBot: It is sunny.",
    ]

    assert [m["speaker"] for m in messages_of(entries)] == ["Memory assistant", "WeatherBot"]


def test_the_user_is_named_as_the_workflow_calls_them() -> None:
    """A workflow registered with `party="customer"` hears its user's words as the customer's, on
    the run's page as in its requests' conversations ("customer: …" lines)."""
    entries = [
        {"type": "input", "input": {"text": "Where is my parcel?"}},
        {"type": "message", "role": "user", "name": "customer-02", "text": "Still waiting."},
        {"type": "message", "role": "assistant", "name": "triage", "text": "Let me look."},
        "customer: It is order A-1002.",
    ]

    speakers = [m["speaker"] for m in messages_of(entries, party="customer")]

    assert speakers == ["Customer", "Customer · customer-02", "Agent · triage", "Customer"]
    assert messages_of(entries[:1])[0]["speaker"] == "User"  # a workflow that names no party
    # a request's own conversation (an agent's, as its tool gate keeps it) names them alike
    carried = {"conversation": [{"role": "user", "text": "Refund order A-1002, please."}]}
    [said] = context_view(carried, party="customer").conversation
    assert said["speaker"] == "Customer"
    # and the shipped support workflow names its party so, as a run's page asks it
    registry.load("workflows.shipped.support")
    assert party_of("support") == "customer"
    assert party_of("no_such_workflow") == "user"
