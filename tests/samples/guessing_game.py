"""MAF's `03-workflows/human-in-the-loop/guessing_game_with_human_input.py`, as MAF wrote it.

At agent-framework 5eb3eb745, less its `main()`, its event-stream printing and prompting
(`process_event_stream`), its sample docstring and its Foundry client (with `load_dotenv()` and
the imports only they used): an agent guesses a number, a person answers higher, lower or correct
(a `str` request with a `HumanFeedbackRequest` as its data) until it is right. Its agent is built
as `main()` builds it (its `response_format=GuessOutput`, whose `.value` `TurnManager` reads), on
the model Baton is configured with; on the scripted model each guess halves the range every
`Feedback:` so far leaves, so a person's answer lost on the way changes the next guess.
"""

# ruff: noqa: E501 (MAF's lines, kept as MAF wrote them, run to its 120 columns)

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agent_framework import (
    Agent,
    AgentExecutorRequest,
    AgentExecutorResponse,
    Content,
    Executor,
    Message,
    WorkflowBuilder,
    WorkflowContext,
    handler,
    response_handler,
)
from agent_framework.openai import OpenAIChatOptions
from pydantic import BaseModel

from baton.api import RunServices, register, scripted_plays

# How human-in-the-loop is achieved via `request_info` and `run(responses=..., stream=True)`:
# - An executor (TurnManager) calls `ctx.request_info` with a payload (HumanFeedbackRequest).
# - The workflow run pauses and emits a  with the payload and the request_id.
# - The application captures the event, prompts the user, and collects replies.
# - The application calls `run(stream=True, responses=...)` with a map of request_ids to replies.
# - The workflow resumes, and the response is delivered to the executor method decorated with @response_handler.
# - The executor can then continue the workflow, e.g., by sending a new message to the agent.


@dataclass
class HumanFeedbackRequest:
    """Request sent to the human for feedback on the agent's guess."""

    prompt: str


class GuessOutput(BaseModel):
    """Structured output from the agent. Enforced via response_format for reliable parsing."""

    guess: int


class TurnManager(Executor):
    """Coordinates turns between the agent and the human.

    Responsibilities:
    - Kick off the first agent turn.
    - After each agent reply, request human feedback with a HumanFeedbackRequest.
    - After each human reply, either finish the game or prompt the agent again with feedback.
    """

    def __init__(self, id: str | None = None):
        super().__init__(id=id or "turn_manager")

    @handler
    async def start(self, _: str, ctx: WorkflowContext[AgentExecutorRequest]) -> None:
        """Start the game by asking the agent for an initial guess.

        Contract:
        - Input is a simple starter token (ignored here).
        - Output is an AgentExecutorRequest that triggers the agent to produce a guess.
        """
        user = Message("user", contents=["Start by making your first guess."])
        await ctx.send_message(AgentExecutorRequest(messages=[user], should_respond=True))

    @handler
    async def on_agent_response(
        self,
        result: AgentExecutorResponse,
        ctx: WorkflowContext,
    ) -> None:
        """Handle the agent's guess and request human guidance.

        Steps:
        1) Use .value to access the parsed structured output directly.
        2) Request info with a HumanFeedbackRequest as the payload.
        """
        # Access the parsed structured model output via .value.
        # Since the agent is configured with response_format=GuessOutput,
        # .value returns the parsed GuessOutput instance directly.
        agent_value = result.agent_response.value
        if agent_value is None:
            raise RuntimeError(
                "AgentResponse.value is None. Ensure that the agent is invoked with "
                "options={'response_format': GuessOutput} so structured output is available."
            )
        last_guess = agent_value.guess

        # Craft a precise human prompt that defines higher and lower relative to the agent's guess.
        prompt = (
            f"The agent guessed: {last_guess}. "
            "Type one of: higher (your number is higher than this guess), "
            "lower (your number is lower than this guess), correct, or exit."
        )
        # Send a request with a prompt as the payload and expect a string reply.
        await ctx.request_info(
            request_data=HumanFeedbackRequest(prompt=prompt),
            response_type=str,
        )

    @response_handler
    async def on_human_feedback(
        self,
        original_request: HumanFeedbackRequest,
        feedback: str,
        ctx: WorkflowContext[AgentExecutorRequest, str],
    ) -> None:
        """Continue the game or finish based on human feedback."""
        reply = feedback.strip().lower()

        if reply == "correct":
            await ctx.yield_output("Guessed correctly!")
            return

        # Provide feedback to the agent to try again.
        # response_format=GuessOutput on the agent ensures JSON output, so we just need to guide the logic.
        last_guess = original_request.prompt.split(": ")[1].split(".")[0]
        feedback_text = (
            f"Feedback: {reply}. Your last guess was {last_guess}. "
            f"Use this feedback to adjust and make your next guess (1-10)."
        )
        user_msg = Message("user", contents=[feedback_text])
        await ctx.send_message(AgentExecutorRequest(messages=[user_msg], should_respond=True))


# --- Baton --------------------------------------------------------------------------------------


class GameInput(BaseModel):
    """The run's input: the starter token `main()` runs the workflow with (ignored by it)."""

    start: str = "start"


@register("guessing_game", input_model=GameInput, start_message=lambda i: i.start)
def build_workflow(services: RunServices) -> Any:
    """The sample's `main()`, as far as it builds the workflow."""
    # Create agent and executor
    guessing_agent = Agent(
        client=services.chat_clients.for_persona("guessing_game"),
        name="GuessingAgent",
        instructions=(
            "You guess a number between 1 and 10. "
            "If the user says 'higher' or 'lower', adjust your next guess. "
            'You MUST return ONLY a JSON object exactly matching this schema: {"guess": <integer 1..10>}. '
            "No explanations or additional text."
        ),
        # response_format enforces that the model produces JSON compatible with GuessOutput.
        default_options=OpenAIChatOptions[Any](response_format=GuessOutput),
    )
    turn_manager = TurnManager(id="turn_manager")

    # Build a simple loop: TurnManager <-> AgentExecutor.
    workflow = (
        WorkflowBuilder(start_executor=turn_manager)
        .add_edge(turn_manager, guessing_agent)  # Ask agent to make/adjust a guess
        .add_edge(guessing_agent, turn_manager)  # Agent's response comes back to coordinator
    ).build()
    return workflow


FEEDBACK = re.compile(r"Feedback: (higher|lower)\. Your last guess was (\d+)\.")


def guess_play(messages: Sequence[Message], options: dict[str, Any]) -> list[Content]:
    """Halve the range 1-10 that every `Feedback:` heard so far leaves (5 first).

    The whole conversation decides the guess: an agent that lost its history on the way (or a
    person's answer dropped) guesses differently.
    """
    low, high = 1, 10
    for m in messages:
        for said, guess in FEEDBACK.findall(m.text if m.role == "user" else ""):
            if said == "higher":
                low = max(low, int(guess) + 1)
            else:
                high = min(high, int(guess) - 1)
    return [Content.from_text(json.dumps({"guess": (low + high) // 2}))]


scripted_plays({"guessing_game": guess_play})
