# Copyright (c) Microsoft. All rights reserved.

"""MAF's `03-workflows/orchestrations/magentic_checkpoint.py`, as MAF wrote it.

At agent-framework 5eb3eb745, less its `main()` (with its three stages and their printing), its
Foundry clients (`build_workflow` takes a function giving each agent its client instead of
making three: `# Baton:`) and its `load_dotenv()`; its `CHECKPOINT_DIR`, which `main()` alone
reads, is under the temp dir rather than beside the sample (Baton does not use a builder's
checkpoint storage: it keeps the checkpoint a pause needs in its own store). A Magentic
orchestration of a researcher and a writer whose manager's plan waits for a person. The
workflow is built as `main()` builds it, `build_workflow(checkpoint_storage)`, on the model
Baton is configured with, and runs `main()`'s `TASK` (the input's default). On the scripted model
the manager's final answer names the plan it followed, so a person who sends the plan back
changes the answer.
"""

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent_framework import (
    Agent,
    FileCheckpointStorage,
)
from agent_framework.orchestrations import MagenticBuilder

"""
Sample: Magentic Orchestration + Checkpointing

The goal of this sample is to show the exact mechanics needed to pause a Magentic
workflow that requires human plan review, persist the outstanding request via a
checkpoint, and later resume the workflow by feeding in the saved response.

Concepts highlighted here:
1. **Deterministic executor IDs** - the orchestrator and plan-review request executor
   must keep stable IDs so the checkpoint state aligns when we rebuild the graph.
2. **Executor snapshotting** - checkpoints capture the pending plan-review request
   map, at superstep boundaries.
3. **Resume with responses** - `Workflow.run(responses=...)` accepts a
   `responses` mapping so we can inject the stored human reply during restoration.

Prerequisites:
- FOUNDRY_PROJECT_ENDPOINT must be your Microsoft Foundry Agent Service (V2) project endpoint.
- FOUNDRY_MODEL must be set to your Azure OpenAI model deployment name.
- Authentication via azure-identity. Use AzureCliCredential and run az login before executing the sample.
"""  # noqa: E501

TASK = (
    "Draft a concise internal brief describing how our research and implementation teams should collaborate "  # noqa: E501
    "to launch a beta feature for data-driven email summarization. Highlight the key milestones, "
    "risks, and communication cadence."
)

# Dedicated folder for captured checkpoints. Keeping it under the sample directory
# makes it easy to inspect the JSON blobs produced by each run.
CHECKPOINT_DIR = Path(tempfile.gettempdir()) / "magentic_checkpoints"  # Baton: the temp dir


# Baton: `client_for` passed in (and mypy told that MAF gave this function no return type)
def build_workflow(checkpoint_storage: FileCheckpointStorage, client_for: Callable[[str], Any]):  # type: ignore[no-untyped-def]
    """Construct the Magentic workflow graph with checkpointing enabled."""

    # Two vanilla ChatAgents act as participants in the orchestration. They do not need
    # extra state handling because their inputs/outputs are fully described by chat messages.
    researcher = Agent(
        name="ResearcherAgent",
        description="Collects background facts and references for the project.",
        instructions=(
            "You are the research lead. Gather crisp bullet points the team should know."
        ),
        client=client_for("ResearcherAgent"),  # Baton: its client
    )

    writer = Agent(
        name="WriterAgent",
        description="Synthesizes the final brief for stakeholders.",
        instructions=(
            "You convert the research notes into a structured brief with milestones and risks."
        ),
        client=client_for("WriterAgent"),  # Baton: its client
    )

    # Create a manager agent for orchestration
    manager_agent = Agent(
        name="MagenticManager",
        description="Orchestrator that coordinates the research and writing workflow",
        instructions="You coordinate a team to complete complex tasks efficiently.",
        client=client_for("MagenticManager"),  # Baton: its client
    )

    # The builder wires in the Magentic orchestrator, sets the plan review path, and
    # stores the checkpoint backend so the runtime knows where to persist snapshots.
    return MagenticBuilder(
        participants=[researcher, writer],
        enable_plan_review=True,
        checkpoint_storage=checkpoint_storage,
        manager_agent=manager_agent,
        max_round_count=10,
        max_stall_count=3,
    ).build()


# --- Baton: the registration (the sample's `main()` is left out, with its Foundry clients: the ---
# --- workflow is built as `main()` builds it, on the model Baton is configured with) ------------

from collections.abc import Sequence  # noqa: E402

from agent_framework import Content, Message, Workflow  # noqa: E402
from pydantic import BaseModel  # noqa: E402

from baton.api import RunServices, register, scripted_plays  # noqa: E402
from tests.plays import magentic_manager  # noqa: E402

PERSONA = "magentic-checkpoint-{}"


class Brief(BaseModel):
    task: str = TASK


@register("magentic_checkpoint", input_model=Brief, start_message=lambda brief: brief.task)
def build_on_baton(services: RunServices) -> Workflow:
    """`main()`'s `build_workflow(checkpoint_storage)`, its storage under the temp dir."""
    CHECKPOINT_DIR.mkdir(parents=True, exist_ok=True)
    checkpoint_storage = FileCheckpointStorage(CHECKPOINT_DIR)
    workflow: Workflow = build_workflow(
        checkpoint_storage,
        client_for=lambda name: services.chat_clients.for_persona(PERSONA.format(name)),
    )
    return workflow


TEAM = ("ResearcherAgent", "WriterAgent")
manager_play = magentic_manager(
    TEAM,
    facts="a beta of email summarization; two teams.",
    plan="the researcher lists the facts; the writer drafts.",
    answer="Brief: milestones, risks and a weekly sync.",
)


def researcher_play(messages: Sequence[Message], options: dict[str, Any]) -> list[Content]:
    return [Content.from_text("- Beta in six weeks\n- Privacy review first\n- Weekly syncs")]


def writer_play(messages: Sequence[Message], options: dict[str, Any]) -> list[Content]:
    return [Content.from_text("Brief: kickoff, model prototype, beta launch; risk: privacy.")]


scripted_plays(
    {
        PERSONA.format("MagenticManager"): manager_play,
        PERSONA.format("ResearcherAgent"): researcher_play,
        PERSONA.format("WriterAgent"): writer_play,
    }
)
