# mypy: disable-error-code="unused-ignore"
"""MAF's `03-workflows/checkpoint/checkpoint_with_human_in_the_loop.py`, as MAF wrote it.

At agent-framework 5eb3eb745, less its `main()` with the two helpers only it calls
(`prompt_for_responses`, the console prompt, and `run_interactive_session`, its event loop and
printing), the `TEMP_DIR` they keep checkpoint files in (made as the module is imported) and its
Foundry client (`create_workflow` gets the writer's client passed in, on the model Baton is
configured with; the `os`, `datetime` and Azure imports went with them): a brief made a prompt
(kept in the workflow's shared state), a writer agent's release notes and a reviewer gateway
that asks a person about every draft, counting the drafts in its own state
(`on_checkpoint_save`/`on_checkpoint_restore`) and sending the person's guidance back to the
writer until they approve. Its builder calls `create_workflow` as `main()` does, with a
`FileCheckpointStorage` under the temp dir (`STORAGE_DIR`), which Baton leaves unused (it keeps
the checkpoint of each pause in its own store). On the scripted model the writer numbers its
takes by the prompts its session holds, and a revision repeats the draft it revises.

MAF's `max_iterations=6` lets a person approve the first draft, not a revised one: a revision's
approval is the seventh superstep, and MAF fails the run (`WorkflowConvergenceException: Runner
did not converge after 6 iterations`), on MAF alone too, in one process or restored. And on MAF
alone its storage, given no `allowed_checkpoint_types`, saves no checkpoint of a pause (the
`HumanApprovalRequest` it holds is not allow-listed: MAF logs "Failed to create checkpoint"), so
`main()`'s resume from the latest checkpoint after a restart finds no pending request.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_framework import (
    Agent,
    AgentExecutor,
    AgentExecutorRequest,
    AgentExecutorResponse,
    Content,
    Executor,
    FileCheckpointStorage,
    Message,
    Workflow,
    WorkflowBuilder,
    WorkflowContext,
    handler,
    response_handler,
)
from dotenv import load_dotenv
from pydantic import BaseModel

from baton.api import RunServices, register, scripted_plays

if sys.version_info >= (3, 12):
    from typing import override  # type: ignore # pragma: no cover
else:
    from typing_extensions import override  # type: ignore[import] # pragma: no cover

# Load environment variables from .env file
load_dotenv()

"""
Sample: Checkpoint + human-in-the-loop quickstart.

This getting-started sample keeps the moving pieces to a minimum:

1. A brief is turned into a consistent prompt for an AI copywriter.
2. The copywriter (an `AgentExecutor`) drafts release notes.
3. A reviewer gateway sends a request for approval for every draft.
4. The workflow records checkpoints between each superstep so you can stop the
   program, restart later, and optionally pre-supply human answers on resume.

Key concepts demonstrated
-------------------------
- Minimal executor pipeline with checkpoint persistence.
- Human-in-the-loop pause/resume with checkpoint restoration.

Typical pause/resume flow
-------------------------
1. Run the workflow until a human approval request is emitted.
2. If the human is offline, exit the program. A checkpoint with
   ``status=awaiting human response`` now exists.
3. Later, restart the script, select that checkpoint, and provide the stored
   human decision when prompted to pre-supply responses.
   Doing so applies the answer immediately on resume, so the system does **not**
   re-emit the same ``.
"""


class BriefPreparer(Executor):
    """Normalises the user brief and sends a single AgentExecutorRequest."""

    # The first executor in the workflow. By keeping it tiny we make it easier
    # to reason about the state that will later be captured in the checkpoint.
    # It is responsible for tidying the human-provided brief and kicking off the
    # agent run with a deterministic prompt structure.

    def __init__(self, id: str, agent_id: str) -> None:
        super().__init__(id=id)
        self._agent_id = agent_id

    @handler
    async def prepare(self, brief: str, ctx: WorkflowContext[AgentExecutorRequest, str]) -> None:
        # Collapse errant whitespace so the prompt is stable between runs.
        normalized = " ".join(brief.split()).strip()
        if not normalized.endswith("."):
            normalized += "."
        # Persist the cleaned brief in workflow state so downstream executors and
        # future checkpoints can recover the original intent.
        ctx.set_state("brief", normalized)
        prompt = (
            "You are drafting product release notes. Summarise the brief below in two sentences. "
            "Keep it positive and end with a call to action.\n\n"
            f"BRIEF: {normalized}"
        )
        # Hand the prompt to the writer agent. We always route through the
        # workflow context so the runtime can capture messages for checkpointing.
        await ctx.send_message(
            AgentExecutorRequest(
                messages=[Message("user", contents=[prompt])], should_respond=True
            ),
            target_id=self._agent_id,
        )


@dataclass
class HumanApprovalRequest:
    """Request sent to the human reviewer."""

    # These fields are intentionally simple because they are serialised into
    # checkpoints. Keeping them primitive types guarantees the new
    # `pending_requests_from_checkpoint` helper can reconstruct them on resume.
    prompt: str = ""
    draft: str = ""
    iteration: int = 0


class ReviewGateway(Executor):
    """Routes agent drafts to humans and optionally back for revisions."""

    def __init__(self, id: str, writer_id: str) -> None:
        super().__init__(id=id)
        self._writer_id = writer_id
        self._iteration = 0

    @handler
    async def on_agent_response(
        self, response: AgentExecutorResponse, ctx: WorkflowContext
    ) -> None:
        # Capture the agent output so we can surface it to the reviewer and persist iterations.
        self._iteration += 1

        # Emit a human approval request.
        await ctx.request_info(
            request_data=HumanApprovalRequest(
                prompt="Review the draft. Reply 'approve' or provide edit instructions.",
                draft=response.agent_response.text,
                iteration=self._iteration,
            ),
            response_type=str,
        )

    @response_handler
    async def on_human_feedback(
        self,
        original_request: HumanApprovalRequest,
        feedback: str,
        ctx: WorkflowContext[AgentExecutorRequest | str, str],
    ) -> None:
        # The `original_request` is the request we sent earlier that is now being answered.
        reply = feedback.strip()

        if len(reply) == 0 or reply.lower() == "approve":
            # Workflow is completed when the human approves.
            await ctx.yield_output(original_request.draft)
            return

        # Any other response loops us back to the writer with fresh guidance.
        prompt = (
            "Revise the launch note. Respond with the new copy only.\n\n"
            f"Previous draft:\n{original_request.draft}\n\n"
            f"Human guidance: {reply}"
        )
        await ctx.send_message(
            AgentExecutorRequest(
                messages=[Message("user", contents=[prompt])], should_respond=True
            ),
            target_id=self._writer_id,
        )

    @override
    async def on_checkpoint_save(self) -> dict[str, Any]:
        # Save the current iteration count in executor state for checkpointing.
        return {"iteration": self._iteration}

    @override
    async def on_checkpoint_restore(self, state: dict[str, Any]) -> None:
        # Restore the iteration count from executor state during checkpoint recovery.
        self._iteration = state.get("iteration", 0)


# Baton: the writer's `client` passed in (MAF makes a Foundry client where it is used)
def create_workflow(checkpoint_storage: FileCheckpointStorage, client: Any) -> Workflow:
    """Assemble the workflow graph used by both the initial run and resume."""
    # Wire the workflow DAG. Edges mirror the numbered steps described in the
    # module docstring. Because `WorkflowBuilder` is declarative, reading these
    # edges is often the quickest way to understand execution order.
    writer_agent = Agent(
        client=client,
        instructions="Write concise, warm release notes that sound human and helpful.",
        name="writer",
    )
    writer = AgentExecutor(writer_agent)
    review_gateway = ReviewGateway(id="review_gateway", writer_id="writer")
    prepare_brief = BriefPreparer(id="prepare_brief", agent_id="writer")

    workflow_builder = (
        WorkflowBuilder(
            max_iterations=6, start_executor=prepare_brief, checkpoint_storage=checkpoint_storage
        )
        .add_edge(prepare_brief, writer)
        .add_edge(writer, review_gateway)
        .add_edge(review_gateway, writer)  # revisions loop
    )

    return workflow_builder.build()


# --- Baton --------------------------------------------------------------------------------------

STORAGE_DIR = Path(tempfile.gettempdir()) / "baton-samples" / "checkpoints_hitl"
"""The sample's checkpoint storage, as `main()` makes one: Baton writes no file there."""

BRIEF = (
    "Introduce our limited edition smart coffee grinder. Mention the $249 price, highlight the "
    "sensor that auto-adjusts the grind, and invite customers to pre-order on the website."
)
"""`main()`'s brief."""


class Brief(BaseModel):
    brief: str = BRIEF


@register("checkpoint_brief", input_model=Brief, start_message=lambda i: i.brief)
def build_workflow(services: RunServices) -> Workflow:
    """`main()`'s workflow, with its storage."""
    storage = FileCheckpointStorage(storage_path=STORAGE_DIR)
    return create_workflow(
        checkpoint_storage=storage, client=services.chat_clients.for_persona("release-notes-writer")
    )


def writer_play(messages: Sequence[Message], options: dict[str, Any]) -> list[Content]:
    """Take N (the prompts the writer's session holds): the brief's notes, or a revision."""
    prompts = [m.text for m in messages if m.role == "user"]
    last = prompts[-1]
    if "Human guidance: " in last:
        previous = last.split("Previous draft:\n", 1)[1].split("\n\nHuman guidance: ", 1)[0]
        guidance = last.split("Human guidance: ", 1)[1]
        return [
            Content.from_text(f"Take {len(prompts)}: {previous.split(': ', 1)[1]} ({guidance})")
        ]
    brief = last.split("BRIEF: ", 1)[1]
    return [Content.from_text(f"Take {len(prompts)}: {brief} Pre-order now!")]


scripted_plays({"release-notes-writer": writer_play})
