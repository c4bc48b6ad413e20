# mypy: disable-error-code="unused-ignore"
# Copyright (c) Microsoft. All rights reserved.

"""MAF's `03-workflows/agents/azure_chat_agents_tool_calls_with_feedback.py`, as MAF wrote it.

At agent-framework 5eb3eb745, less its `main()`, its two printing helpers
(`display_agent_run_update`, `consume_stream`, with its `input()` loop), its `load_dotenv()`, its
Foundry client (`create_writer_agent` and `create_final_editor_agent` take the client instead of
making one: `# Baton:`) and the imports only those used (`asyncio`, `json`, `os`,
`AsyncIterable`, `WorkflowEvent`, `FoundryChatClient`, `AzureCliCredential`, `load_dotenv`).
A writer agent that calls its two tools before drafting, a `Coordinator` that asks a person
about each draft (`DraftFeedbackRequest`, answered with a `str`) and sends the writer back with
the person's guidance until they answer "approve", and a final editor whose reply the coordinator
yields. Its workflow is built as `main()` builds it, on the model Baton is configured with, and
its input is `main()`'s brief. On the scripted model each draft is made of the tools' results and
the guidance so far, and the editor polishes the approved one: a person's note shows in the
output.
"""

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any

from agent_framework import (
    Agent,
    AgentExecutor,
    AgentExecutorRequest,
    AgentExecutorResponse,
    AgentResponse,
    Content,
    Executor,
    Message,
    Workflow,
    WorkflowBuilder,
    WorkflowContext,
    handler,
    response_handler,
    tool,
)
from pydantic import BaseModel, Field
from typing_extensions import Never  # noqa: UP035

from baton.api import Route, RunServices, register, scripted_plays

"""
Sample: Tool-enabled agents with human feedback

Pipeline layout:
writer_agent (uses Azure OpenAI tools) -> Coordinator -> writer_agent
-> Coordinator -> final_editor_agent -> Coordinator -> output

The writer agent calls tools to gather product facts before drafting copy. A custom executor
packages the draft and emits a request_info event (type='request_info') so a human can comment, then replays the human
guidance back into the conversation before the final editor agent produces the polished output.

Demonstrates:
- Attaching Python function tools to an agent inside a workflow.
- Capturing the writer's output for human review.
- Streaming AgentRunUpdateEvent updates alongside human-in-the-loop pauses.

Prerequisites:
- FOUNDRY_PROJECT_ENDPOINT must be your Microsoft Foundry Agent Service (V2) project endpoint.
- FOUNDRY_MODEL must be set to your Azure OpenAI model deployment name.
- Authentication via azure-identity. Run `az login` before executing.
"""  # noqa: E501


# NOTE: approval_mode="never_require" is for sample brevity. Use "always_require" in production;
# see samples/02-agents/tools/function_tool_with_approval.py and
# samples/02-agents/tools/function_tool_with_approval_and_sessions.py.
@tool(approval_mode="never_require")
def fetch_product_brief(
    product_name: Annotated[str, Field(description="Product name to look up.")],
) -> str:
    """Return a marketing brief for a product."""
    briefs = {
        "lumenx desk lamp": (
            "Product: LumenX Desk Lamp\n"
            "- Three-point adjustable arm with 270° rotation.\n"
            "- Custom warm-to-neutral LED spectrum (2700K-4000K).\n"
            "- USB-C charging pad integrated in the base.\n"
            "- Designed for home offices and late-night study sessions."
        )
    }
    return briefs.get(product_name.lower(), f"No stored brief for '{product_name}'.")


@tool(approval_mode="never_require")
def get_brand_voice_profile(
    voice_name: Annotated[str, Field(description="Brand or campaign voice to emulate.")],
) -> str:
    """Return guidance for the requested brand voice."""
    voices = {
        "lumenx launch": (
            "Voice guidelines:\n"
            "- Friendly and modern with concise sentences.\n"
            "- Highlight practical benefits before aesthetics.\n"
            "- End with an invitation to imagine the product in daily use."
        )
    }
    return voices.get(voice_name.lower(), f"No stored voice profile for '{voice_name}'.")


@dataclass
class DraftFeedbackRequest:
    """Payload sent for human review."""

    prompt: str = ""
    draft_text: str = ""
    conversation: list[Message] = field(default_factory=list)  # type: ignore[reportUnknownVariableType]


class Coordinator(Executor):
    """Bridge between the writer agent, human feedback, and final editor."""

    def __init__(self, id: str, writer_id: str, final_editor_id: str) -> None:
        super().__init__(id)
        self.writer_id = writer_id
        self.final_editor_id = final_editor_id

    @handler
    async def on_writer_response(
        self,
        draft: AgentExecutorResponse,
        ctx: WorkflowContext[Never, AgentResponse],
    ) -> None:
        """Handle responses from the other two agents in the workflow."""
        if draft.executor_id == self.final_editor_id:
            # Final editor response; yield output directly.
            await ctx.yield_output(draft.agent_response)
            return

        # Writer agent response; request human feedback.
        # Preserve the full conversation so the final editor
        # can see tool traces and the initial prompt.
        conversation = list(draft.full_conversation)
        draft_text = draft.agent_response.text.strip()
        if not draft_text:
            draft_text = "No draft text was produced."

        prompt = (
            "Review the draft from the writer and provide a short directional note "
            "(tone tweaks, must-have detail, target audience, etc.). "
            "Keep it under 30 words."
        )
        await ctx.request_info(
            request_data=DraftFeedbackRequest(
                prompt=prompt, draft_text=draft_text, conversation=conversation
            ),
            response_type=str,
        )

    @response_handler
    async def on_human_feedback(
        self,
        original_request: DraftFeedbackRequest,
        feedback: str,
        ctx: WorkflowContext[AgentExecutorRequest],
    ) -> None:
        note = feedback.strip()
        if note.lower() == "approve":
            # Human approved the draft as-is; forward it unchanged.
            await ctx.send_message(
                AgentExecutorRequest(
                    messages=[
                        *original_request.conversation,
                        *[Message("user", contents=["The draft is approved as-is."])],
                    ],
                    should_respond=True,
                ),
                target_id=self.final_editor_id,
            )
            return

        # Human provided feedback; prompt the writer to revise.
        instruction = (
            "A human reviewer shared the following guidance:\n"
            f"{note or 'No specific guidance provided.'}\n\n"
            "Rewrite the draft from the previous assistant message into a polished final version. "
            "Keep the response under 120 words and reflect any requested tone adjustments."
        )
        await ctx.send_message(
            AgentExecutorRequest(
                messages=[Message("user", contents=[instruction])], should_respond=True
            ),
            target_id=self.writer_id,
        )


def create_writer_agent(client: Any) -> Agent:  # Baton: `client` of any model
    """Creates a writer agent with tools."""
    return Agent(
        client=client,  # Baton: passed in
        name="writer_agent",
        instructions=(
            "You are a marketing writer. Call the available tools before drafting copy so you are precise. "  # noqa: E501
            "Always call both tools once before drafting. Summarize tool outputs as bullet points, then "  # noqa: E501
            "produce a 3-sentence draft."
        ),
        tools=[fetch_product_brief, get_brand_voice_profile],
        default_options={
            "tool_choice": "required",
        },
    )


def create_final_editor_agent(client: Any) -> Agent:  # Baton: `client` of any model
    """Creates a final editor agent."""
    return Agent(
        client=client,  # Baton: passed in
        name="final_editor_agent",
        instructions=(
            "You are an editor who polishes marketing copy after human approval. "
            "Correct any legal or factual issues. Return the final version even if no changes are made. "  # noqa: E501
        ),
    )


# --- Baton --------------------------------------------------------------------------------------


class Brief(BaseModel):
    """The run's input: the brief `main()` gives the writer, unless another is given."""

    text: str = (
        "Create a short launch blurb for the LumenX desk lamp. "
        "Emphasize adjustability and warm lighting."
    )


@register(
    "tool_calls_feedback",
    input_model=Brief,
    start_message=lambda brief: brief.text,
    # what `main()` printed beside the prompt: only the exact word ends the loop
    routes={
        DraftFeedbackRequest: Route(
            reason="{prompt} Answer approve (the word alone) to accept the draft as it is."
        )
    },
)
def build_workflow(services: RunServices) -> Workflow:
    """`main()`'s workflow, its agents on the model Baton is configured with."""
    # Build the workflow.
    writer_agent = AgentExecutor(
        create_writer_agent(services.chat_clients.for_persona("tool-feedback-writer"))
    )
    final_editor_agent = AgentExecutor(
        create_final_editor_agent(services.chat_clients.for_persona("tool-feedback-editor"))
    )
    coordinator = Coordinator(
        id="coordinator",
        writer_id="writer_agent",
        final_editor_id="final_editor_agent",
    )

    workflow = (
        WorkflowBuilder(start_executor=writer_agent)
        .add_edge(writer_agent, coordinator)
        .add_edge(coordinator, writer_agent)
        .add_edge(final_editor_agent, coordinator)
        .add_edge(coordinator, final_editor_agent)
        .build()
    )
    return workflow


GUIDANCE = "A human reviewer shared the following guidance:\n"


def _results(messages: Sequence[Message]) -> list[str]:
    return [str(c.result) for m in messages for c in m.contents if c.type == "function_result"]


def writer_play(messages: Sequence[Message], options: dict[str, Any]) -> list[Content]:
    """Both tools at once, then a draft of what they returned, revised by each note given."""
    results = _results(messages)
    if not results:
        return [
            Content.from_function_call(
                "call-brief",
                "fetch_product_brief",
                arguments=json.dumps({"product_name": "LumenX Desk Lamp"}),
            ),
            Content.from_function_call(
                "call-voice",
                "get_brand_voice_profile",
                arguments=json.dumps({"voice_name": "LumenX launch"}),
            ),
        ]
    facts = [line[2:] for line in results[0].splitlines() if line.startswith("- ")]
    notes = [
        m.text[len(GUIDANCE) :].split("\n\n")[0]
        for m in messages
        if m.role == "user" and m.text.startswith(GUIDANCE)
    ]
    draft = f"LumenX Desk Lamp: {facts[0]} {facts[1]}"
    return [Content.from_text(draft + "".join(f" ({note})" for note in notes))]


def editor_play(messages: Sequence[Message], options: dict[str, Any]) -> list[Content]:
    """The last draft, polished."""
    drafts = [m.text for m in messages if m.role == "assistant" and m.text]
    return [Content.from_text(f"Final: {drafts[-1]}")]


scripted_plays({"tool-feedback-writer": writer_play, "tool-feedback-editor": editor_play})
