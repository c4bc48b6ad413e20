"""An agent asked about a photographed receipt (an image in the user's message) whose tool needs
approval: the shape of MAF's `02-agents/multimodal_input/openai_chat_multimodal.py` (a user's
`Message` of a text and `Content.from_uri(<data URI>, media_type="image/png")`) with
`02-agents/tools/function_tool_with_approval.py`'s `@tool(approval_mode="always_require")`.

Not a MAF sample verbatim: a shape (agent-framework 5eb3eb745), built as those samples build their
agent, on the model Baton is configured with. The run's input holds the image as a data URI, as
an app that uploads a photo would send it; `start_message` makes the user's message of it. On the
scripted model the agent reads the image's bytes and asks to file the expense; its last reply
says what it filed and which image it read (its media type and size), so an output shows
whether the image reached the model.
"""

from __future__ import annotations

import base64
import json
import random
import struct
import zlib
from collections.abc import Sequence
from typing import Annotated, Any

from agent_framework import Agent, Content, Message, tool
from pydantic import BaseModel

from baton.api import RunServices, register, scripted_plays


@tool(approval_mode="always_require")
def file_expense(
    amount: Annotated[float, "The receipt's total"],
    merchant: Annotated[str, "Who was paid"],
) -> str:
    """File an expense claim for a receipt. Requires human approval."""
    return f"Expense of {amount:.2f} at {merchant} filed."


def png(width: int = 260, height: int = 260, seed: int = 7) -> bytes:
    """A noisy RGB PNG (about 200 KB: noise does not compress), the same for the same seed."""
    noise = random.Random(seed)
    rows = b"".join(b"\x00" + noise.randbytes(width * 3) for _ in range(height))

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (
            struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
        )

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows, 9))
        + chunk(b"IEND", b"")
    )


def data_uri(data: bytes, media_type: str = "image/png") -> str:
    return f"data:{media_type};base64,{base64.b64encode(data).decode()}"


class ReceiptInput(BaseModel):
    task: str
    receipt: str  # a data URI of the receipt's photo, or an upload's id: `upload:<seed>`


def receipt_message(given: ReceiptInput) -> Message:
    """The user's message: the task and the photo (an upload the app kept, by its id, is read).

    Baton's API takes no text past 64 K characters: a larger photo is named by its upload.
    """
    uri = given.receipt
    if uri.startswith("upload:"):
        uri = data_uri(png(seed=int(uri.removeprefix("upload:"))))
    return Message(
        role="user",
        contents=[
            Content.from_text(text=given.task),
            Content.from_uri(uri=uri, media_type="image/png"),
        ],
    )


@register("multimodal_approval", input_model=ReceiptInput, start_message=receipt_message)
def build_workflow(services: RunServices) -> Any:
    return Agent(
        client=services.chat_clients.for_persona("multimodal-expenses"),
        name="ExpenseAgent",
        instructions="You file expenses from photographed receipts.",
        tools=[file_expense],
    )


def seen_images(messages: Sequence[Message]) -> list[str]:
    """Each image the model is handed: its media type and its size in bytes."""
    seen = []
    for message in messages:
        for content in [
            *message.contents,
            *(i for c in message.contents for i in (getattr(c, "items", None) or ())),
        ]:
            if content.type in ("data", "uri") and (content.media_type or "").startswith("image/"):
                seen.append(f"{content.media_type} of {size_of(content)} bytes")
    return seen


def size_of(content: Content) -> int:
    """The bytes a data content (a data URI) holds; -1 for a link."""
    uri = content.uri or ""
    if not uri.startswith("data:"):
        return -1
    return len(base64.b64decode(uri.partition(",")[2]))


def expenses_play(messages: Sequence[Message], options: dict[str, Any]) -> list[Content]:
    results = [c for m in messages for c in m.contents if c.type == "function_result"]
    if not results:
        arguments = json.dumps({"amount": 42.5, "merchant": "Cafe Nero"})
        return [Content.from_function_call("call-expense", "file_expense", arguments=arguments)]
    return [Content.from_text(f"{results[-1].result} Read: {', '.join(seen_images(messages))}.")]


scripted_plays({"multimodal-expenses": expenses_play})
