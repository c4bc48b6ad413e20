# Copyright (c) Microsoft. All rights reserved.

"""
Sample: Workflow as Agent with Checkpointing

Purpose:
This sample demonstrates how to use checkpointing with a workflow wrapped as an agent.
It shows how to enable checkpoint storage when calling agent.run(),
allowing workflow execution state to be persisted and potentially resumed.
"""

from agent_framework import (
    Agent,
)
from agent_framework.orchestrations import SequentialBuilder
from dotenv import load_dotenv

# Load environment variables from .env file
load_dotenv()


# --- Baton: MAF's `03-workflows/checkpoint/workflow_as_agent_checkpoint.py`'s ---------------------
# --- `checkpointing_with_thread()`, less its Foundry client and printing: its agent, workflow -----
# --- and `.as_agent()` built as it builds them (its `InMemoryCheckpointStorage` is Baton's own ----
# --- store), the assistant's reply held for a person (`with_request_info`); each turn a run -------

from collections.abc import Sequence  # noqa: E402
from typing import Any  # noqa: E402

from agent_framework import Content, Message, SupportsChatGetResponse  # noqa: E402
from pydantic import BaseModel  # noqa: E402

from baton.api import RunServices, register, scripted_plays  # noqa: E402
from tests.samples.model_trace import traced  # noqa: E402


class Prompt(BaseModel):
    text: str


def build_agent(client: SupportsChatGetResponse, ask: bool = True) -> Any:
    """`main()`'s agents, workflow and agent, on `client` (a person asked where `ask`)."""
    assistant = Agent(
        client=client,
        name="memory_assistant",
        instructions="You are a helpful assistant with good memory. Reference previous conversation when relevant.",
    )

    builder = SequentialBuilder(participants=[assistant])
    workflow = (builder.with_request_info(agents=[assistant]) if ask else builder).build()
    return workflow.as_agent()


@register("workflow_agent_checkpoint", input_model=Prompt)
def build(services: RunServices) -> Any:
    return build_agent(services.chat_clients.for_persona("workflow-agent-checkpoint"))


QUERIES = ["My favorite color is blue. Remember that.", "What's my favorite color?"]


def _play(messages: Sequence[Message], options: dict[str, Any]) -> list[Content]:
    said = " ".join(m.text for m in messages if m.role == "user")
    color = "blue" if "blue" in said else "unknown"
    handed = ",".join(f"{m.role}:{m.author_name or '-'}" for m in messages)
    return [Content.from_text(f"Noted: {color}. Handed [{handed}]")]


scripted_plays({"workflow-agent-checkpoint": traced(_play)})
