"""MAF's objects in request data and tool results, as people read them (`human.typed.as_json`).

A workflow's request may carry MAF's own objects (a draft's conversation as `list[Message]`, a
tool's result as `Content`), for which pydantic has no schema: `as_json` shows the request's
fields one by one and asks `maf_value` for each such object. A message is its role and its text
(its contents, when it has no text: a tool call, say), with its attachments (an image, a PDF)
named in words, never as their bytes; any other of MAF's serializable objects its `to_dict()`
(`Content` and the rest, a data content in words); anything else what it says of itself.
"""

from __future__ import annotations

import logging
from typing import Any, Final

from agent_framework import Content, Message

from human.attachments import Kept, content_words, found_in
from human.summary import without_data_uris
from human.typed import as_json

logger = logging.getLogger(__name__)

ATTACHED: Final = frozenset({"data", "uri", "hosted_file"})
"""The contents of a message that are something attached to it: a file's bytes, a link, a file
a provider hosts."""


def maf_value(value: Any) -> Any:
    """`value`, one of MAF's objects, as plain JSON data people can read."""
    if isinstance(value, Message):
        if value.text:
            shown: dict[str, Any] = {"role": str(value.role), "text": value.text}
            attached = [attachment(c) for c in value.contents if c.type in ATTACHED]
            return shown | ({"attachments": attached} if attached else {})
        return {"role": str(value.role), "contents": [maf_value(c) for c in value.contents]}
    if isinstance(value, Content) and value.type in ATTACHED:
        return attachment(value)
    to_dict = getattr(value, "to_dict", None)  # MAF's serializable objects (`Content`, ...)
    return without_data_uris(to_dict()) if callable(to_dict) else str(value)


def files_in(value: Any) -> list[Kept]:
    """The files (data URIs) `value` holds, MAF's objects too (a `Message`'s data contents).

    None found where `value` cannot be read as JSON: a file not kept is named in words all the
    same, and the run goes on.
    """
    try:
        return found_in(as_json(value, fallback=_as_data))
    except Exception:  # an object whose own serialization fails: nothing to keep of it
        logger.warning("the files of a value could not be read", exc_info=True)
        return []


def _as_data(value: Any) -> Any:
    to_dict = getattr(value, "to_dict", None)
    return to_dict() if callable(to_dict) else str(value)


def attachment(content: Content) -> str:
    """An attached content in words: `an image (PNG, 198 KB)`, a link, a hosted file's id."""
    return content_words(content.to_dict()) or f"a file ({content.type})"
