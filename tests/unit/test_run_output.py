"""A run's output as JSON (`workflows.platform.drive`): an agent's reply, or several agents'."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agent_framework import AgentResponse, Message

from workflows.platform.drive import _jsonable, _plain


def output_of(outputs: list[Any]) -> Any:
    """The run's `output` for what a workflow yielded (MAF's values)."""
    return _jsonable([_plain(o) for o in outputs])


def said(author: str, text: str) -> Message:
    return Message(role="assistant", contents=[text], author_name=author)


def test_one_agent_s_reply_is_its_name_and_its_text() -> None:
    reply = AgentResponse(messages=[said("writer", "Draft one."), said("writer", " Draft two.")])
    assert output_of([reply]) == {"agent": "writer", "text": "Draft one. Draft two."}


def test_several_agents_replies_stay_apart_each_with_its_author() -> None:
    """MAF's concurrent orchestration yields one response holding each participant's reply."""
    reply = AgentResponse(
        messages=[
            said("researcher", "Market: growing."),
            said("marketer", "Tagline: go."),
            Message(role="assistant", contents=[], author_name="legal"),  # no text: left out
            said("legal", "No claims to check."),
        ]
    )
    assert output_of([reply]) == [
        {"agent": "researcher", "text": "Market: growing."},
        {"agent": "marketer", "text": "Tagline: go."},
        {"agent": "legal", "text": "No claims to check."},
    ]


@dataclass
class Result:
    task_id: str
    words: int


def test_a_dataclass_output_is_its_fields_a_list_of_them_a_list_of_fields() -> None:
    """MAF's `sub_workflow_basics` yields its results as dataclasses: not their repr."""
    assert output_of([[Result("task_1", 3), Result("task_2", 5)]]) == [
        {"task_id": "task_1", "words": 3},
        {"task_id": "task_2", "words": 5},
    ]
    assert output_of(["done", 2]) == ["done", 2]
    assert output_of([[Message(role="assistant", contents=["hi"])]]) == [
        {"role": "assistant", "text": "hi"}
    ]


def test_an_unnamed_agent_s_reply_is_under_the_executor_that_yielded_it() -> None:
    """MAF calls an agent without a name `UnnamedAgent`; the run's conversation names it by its
    executor, and so does its output."""
    unnamed = AgentResponse(messages=[said("UnnamedAgent", "Deployed.")])
    authorless = AgentResponse(messages=[Message(role="assistant", contents=["Draft 2."])])

    assert _plain(unnamed, "deployer") == {"agent": "deployer", "text": "Deployed."}
    assert _plain(authorless, "worker") == {"agent": "worker", "text": "Draft 2."}
    assert _plain(unnamed) == {"agent": "UnnamedAgent", "text": "Deployed."}
