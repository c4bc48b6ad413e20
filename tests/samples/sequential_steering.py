"""MAF's `03-workflows/human-in-the-loop/sequential_request_info.py`, as MAF wrote it.

At agent-framework 5eb3eb745, less its `main()`, its event-stream printing and input loop
(`process_event_stream`), its Foundry client (with its `os`, `azure.identity` and `dotenv`
imports and `load_dotenv()` call) and its module docstring (this one in its place): a
`SequentialBuilder` of a drafter, an editor and a finalizer with
`.with_request_info(agents=["editor"])`, so each reply of the editor waits for a person, who
lets it stand or sends it back with guidance the editor then answers. Its agents are built as
`main()` builds them, on the model Baton is configured with. On the scripted model the editor
names the guidance it was given and the finalizer polishes the editor's last reply: a person's
words lost on the way would leave the first edit in the final version.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agent_framework import Agent, Content, Message
from agent_framework.orchestrations import SequentialBuilder
from pydantic import BaseModel

from baton.api import RunServices, register, scripted_plays


class Topic(BaseModel):
    topic: str


@register("sequential_steering", input_model=Topic, start_message=lambda i: i.topic)
def build_workflow(services: RunServices) -> Any:
    # Create agents for a sequential document review workflow
    drafter = Agent(
        client=services.chat_clients.for_persona("steering-drafter"),
        name="drafter",
        instructions=(
            "You are a document drafter. When given a topic, create a brief draft (2-3 sentences)."
        ),
    )

    editor = Agent(
        client=services.chat_clients.for_persona("steering-editor"),
        name="editor",
        instructions=(
            "You are an editor. Review the draft and make improvements. "
            "Incorporate any human feedback that was provided."
        ),
    )

    finalizer = Agent(
        client=services.chat_clients.for_persona("steering-finalizer"),
        name="finalizer",
        instructions=(
            "You are a finalizer. Take the edited content and create a polished final version. "
            "Incorporate any additional feedback provided."
        ),
    )

    # Build workflow with request info enabled (pauses after each agent responds)
    return (
        SequentialBuilder(participants=[drafter, editor, finalizer])
        # Only enable request info for the editor agent
        .with_request_info(agents=["editor"])
        .build()
    )


DRAFT = "AI is the craft of making machines that learn, reason and act."


def _last_by(messages: Sequence[Message], author: str) -> str:
    return next(m.text for m in reversed(messages) if m.author_name == author)


def drafter_play(messages: Sequence[Message], options: dict[str, Any]) -> list[Content]:
    return [Content.from_text(DRAFT)]


def editor_play(messages: Sequence[Message], options: dict[str, Any]) -> list[Content]:
    """The draft, tightened; sent back (a person's guidance the last thing said), with it."""
    draft = _last_by(messages, "drafter")
    last = messages[-1]
    if last.role == "user" and last.author_name is None and last.text != messages[0].text:
        return [Content.from_text(f"Edited, as guided ({last.text}): {draft}")]
    return [Content.from_text(f"Edited: {draft}")]


def finalizer_play(messages: Sequence[Message], options: dict[str, Any]) -> list[Content]:
    return [Content.from_text(f"Final: {_last_by(messages, 'editor')}")]


scripted_plays(
    {
        "steering-drafter": drafter_play,
        "steering-editor": editor_play,
        "steering-finalizer": finalizer_play,
    }
)
