"""A repeated question loop: an agent guesses, a person says higher, lower or correct (a `str`)."""

from __future__ import annotations

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
from pydantic import BaseModel

from baton.api import RunServices, register, scripted_plays


@dataclass
class HumanFeedbackRequest:
    """Request sent to the human for feedback on the agent's guess."""

    prompt: str


class GuessOutput(BaseModel):
    guess: int


class TurnManager(Executor):
    """Coordinates turns between the agent and the human."""

    def __init__(self, id: str | None = None):
        super().__init__(id=id or "turn_manager")

    @handler
    async def start(self, _: str, ctx: WorkflowContext[AgentExecutorRequest]) -> None:
        user = Message("user", contents=["Start by making your first guess."])
        await ctx.send_message(AgentExecutorRequest(messages=[user], should_respond=True))

    @handler
    async def on_agent_response(self, result: AgentExecutorResponse, ctx: WorkflowContext) -> None:
        last_guess = GuessOutput.model_validate_json(result.agent_response.text).guess
        prompt = (
            f"The agent guessed: {last_guess}. Type one of: higher (your number is higher than "
            "this guess), lower (your number is lower than this guess), correct, or exit."
        )
        await ctx.request_info(request_data=HumanFeedbackRequest(prompt=prompt), response_type=str)

    @response_handler
    async def on_human_feedback(
        self,
        original_request: HumanFeedbackRequest,
        feedback: str,
        ctx: WorkflowContext[AgentExecutorRequest, str],
    ) -> None:
        reply = feedback.strip().lower()
        if reply == "correct":
            await ctx.yield_output("Guessed correctly!")
            return
        last_guess = original_request.prompt.split(": ")[1].split(".")[0]
        feedback_text = (
            f"Feedback: {reply}. Your last guess was {last_guess}. "
            "Use this feedback to adjust and make your next guess (1-10)."
        )
        user_msg = Message("user", contents=[feedback_text])
        await ctx.send_message(AgentExecutorRequest(messages=[user_msg], should_respond=True))


# --- Baton: the registration, and the scripted model standing in for the real one -------------


class GuessingInput(BaseModel):
    start: str = "start"


@register("guessing", input_model=GuessingInput, start_message=lambda i: i.start)
def build_workflow(services: RunServices) -> Any:
    guessing_agent = Agent(
        client=services.chat_clients.for_persona("guesser"),
        name="GuessingAgent",
        instructions='You guess a number between 1 and 10. Return only {"guess": <int>}.',
    )
    turn_manager = TurnManager(id="turn_manager")
    return (
        WorkflowBuilder(name="guessing", start_executor=turn_manager)
        .add_edge(turn_manager, guessing_agent)
        .add_edge(guessing_agent, turn_manager)
        .build()
    )


def guess_play(messages: Sequence[Message], options: dict[str, Any]) -> list[Content]:
    """Start at 5; one up for each `higher`, one down for each `lower` heard so far."""
    said = " ".join(m.text for m in messages if m.role == "user")
    guess = (
        5 + len(re.findall(r"Feedback: higher", said)) - len(re.findall(r"Feedback: lower", said))
    )
    return [Content.from_text(json.dumps({"guess": guess}))]


scripted_plays({"guesser": guess_play})
