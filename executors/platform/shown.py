"""MAF's objects in request data and tool results, as people read them (`human.typed.as_json`).

A workflow's request may carry MAF's own objects (a draft's conversation as `list[Message]`, a
tool's result as `Content`), for which pydantic has no schema: `as_json` shows the request's
fields one by one and asks `maf_value` for each such object. A message is its role and its text
(its contents, when it has no text: a tool call, say); any other of MAF's serializable objects
its `to_dict()` (`Content` and the rest); anything else what it says of itself.
"""

from __future__ import annotations

from typing import Any

from agent_framework import Message


def maf_value(value: Any) -> Any:
    """`value`, one of MAF's objects, as plain JSON data people can read."""
    if isinstance(value, Message):
        if value.text:
            return {"role": str(value.role), "text": value.text}
        return {"role": str(value.role), "contents": [c.to_dict() for c in value.contents]}
    to_dict = getattr(value, "to_dict", None)  # MAF's serializable objects (`Content`, ...)
    return to_dict() if callable(to_dict) else str(value)
