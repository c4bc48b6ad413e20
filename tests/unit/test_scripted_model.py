"""The offline scripted model answers as a provider does, through MAF's own layers."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from agent_framework import Agent, Content, Message
from pydantic import BaseModel

from executors.platform import chat_clients
from executors.platform.chat_clients import ScriptedChatClient


class UserInfo(BaseModel):
    name: str | None = None
    age: int | None = None


def extractor(messages: Sequence[Message], options: dict[str, Any]) -> list[Content]:
    """What a model asked for structured output replies: the object, as JSON text."""
    assert options.get("response_format") is UserInfo
    return [Content.from_text('{"name": "Ada", "age": 36}')]


async def test_a_structured_reply_is_parsed_with_or_without_streaming() -> None:
    """MAF's `simple_context_provider.py` reads `.value` of the client's own response."""
    client = ScriptedChatClient(extractor)
    agent = Agent(client=client, name="extractor")
    options: Any = {"response_format": UserInfo}
    said = [Message("user", ["My name is Ada and I am 36."])]

    direct = await client.get_response(said, options=options)
    whole = await agent.run(said, options=options)
    streamed = await agent.run(said, options=options, stream=True)
    final = await streamed.get_final_response()

    assert direct.value == UserInfo(name="Ada", age=36)
    assert whole.value == direct.value
    assert final.value == direct.value


def test_a_persona_another_module_plays_is_refused_naming_both(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Plays are the process's: a second module's play for a persona would silently take the
    first's place in every workflow (two samples' agents both called `writer`, say)."""
    monkeypatch.setattr(chat_clients, "PLAYS", {})

    def play(messages: Sequence[Message], options: dict[str, Any]) -> list[Content]:
        return [Content.from_text("first")]

    def other(messages: Sequence[Message], options: dict[str, Any]) -> list[Content]:
        return [Content.from_text("second")]

    play.__module__, other.__module__ = "samples.first", "samples.second"
    chat_clients.scripted_plays({"writer": play})
    chat_clients.scripted_plays({"writer": play})  # the same module again (a reload): fine

    with pytest.raises(ValueError, match=r"'writer' has a play of samples.first already"):
        chat_clients.scripted_plays({"editor": other, "writer": other})

    kept = chat_clients.PLAYS
    assert kept == {"writer": play}  # nothing of the refused call kept
