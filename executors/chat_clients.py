"""Chat clients by `BATON_MODEL`: the offline scripted model, real providers later.

The scripted client composes MAF's own function-invocation, middleware and telemetry layers over a
`BaseChatClient`, so its tool calls run through MAF's real tool loop exactly as a provider's would.
A *play* decides each turn from the conversation: deterministic, offline, reading only messages.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

from agent_framework import (
    BaseChatClient,
    ChatMiddlewareLayer,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    FunctionInvocationLayer,
    Message,
)
from agent_framework.observability import ChatTelemetryLayer

from baton.errors import Invalid

Play = Callable[[Sequence[Message], dict[str, Any]], list[Content]]


class ScriptedChatClient(
    FunctionInvocationLayer[Any],
    ChatMiddlewareLayer[Any],
    ChatTelemetryLayer[Any],
    BaseChatClient[Any],
):
    """A deterministic offline model: each turn is `play(messages, options)`."""

    OTEL_PROVIDER_NAME = "scripted"

    def __init__(self, play: Play, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._play = play

    def _inner_get_response(
        self, *, messages: Sequence[Message], stream: bool, options: Any, **kwargs: Any
    ) -> Any:
        opts = dict(options or {})
        if stream:

            async def updates() -> Any:
                contents = self._play(messages, opts)
                yield ChatResponseUpdate(
                    contents=contents,
                    role="assistant",
                    response_id=f"scripted-{len(messages)}",
                    finish_reason=_finish(contents),
                )

            return self._build_response_stream(
                updates(), response_format=opts.get("response_format")
            )

        async def respond() -> ChatResponse:
            contents = self._play(messages, opts)
            return ChatResponse(
                messages=[Message("assistant", contents)],
                response_id=f"scripted-{len(messages)}",
                finish_reason=_finish(contents),
            )

        return respond()


def _finish(contents: Sequence[Content]) -> Literal["tool_calls", "stop"]:
    return "tool_calls" if any(c.type == "function_call" for c in contents) else "stop"


def make_chat_client(model: str, persona: str) -> BaseChatClient:
    """The chat client `model` names for an agent persona."""
    if model == "scripted":
        from executors.plays import PLAYS

        play = PLAYS.get(persona)
        if play is None:
            raise Invalid(f"the scripted model has no play for agent {persona!r}")
        return ScriptedChatClient(play)
    raise Invalid(
        f"BATON_MODEL={model} is not wired yet in this build; use BATON_MODEL=scripted",
        [{"loc": ["settings", "BATON_MODEL"], "msg": "provider not available"}],
    )
