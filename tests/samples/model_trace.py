"""What a scripted model is handed, turn by turn (for comparing Baton with MAF alone).

`traced(play)` notes each call's messages and options, as plain JSON, to the file the
`SAMPLE_MODEL_TRACE` environment variable names (nothing when it is unset), then plays.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agent_framework import Content, Message

from baton.api import Play
from tests.plays import recorded


def seen(messages: Sequence[Message], options: dict[str, Any]) -> dict[str, Any]:
    """One model call as its model is handed it."""

    def content(c: Content) -> Any:
        if c.type == "text":
            return c.text
        if c.type == "function_call":
            return {
                "call": c.name,
                "args": c.arguments if isinstance(c.arguments, str) else "<object>",
            }
        if c.type == "function_result":
            return {"result": str(c.result)}
        return {"type": c.type}

    tools = options.get("tools") or []
    return {
        "instructions": str(options.get("instructions") or "")[:40],
        "tools": sorted(getattr(t, "name", str(t)) for t in tools),
        "messages": [[m.role, m.author_name, [content(c) for c in m.contents]] for m in messages],
    }


def traced(play: Play) -> Play:
    """`play`, noting each call (`seen`) to the file `SAMPLE_MODEL_TRACE` names."""
    return recorded(play, env="SAMPLE_MODEL_TRACE", described=seen)
