"""The request adapters every workflow has: Baton's kind models, and a handoff's user turns.

`Kinds` takes requests a workflow asks as Baton's own kind models (`human.kinds`), answered with
their answer models; it is always a workflow's last adapter. `UserTurns` takes MAF's handoff
orchestration's `HandoffAgentUserRequest`: an agent replied to the user and waits for them.
"""

from __future__ import annotations

from typing import Any, ClassVar

from agent_framework import WorkflowEvent
from agent_framework_orchestrations import HandoffAgentUserRequest
from pydantic import BaseModel

from executors.platform.adapters import (
    KINDS_ADAPTER,
    Ask,
    Finish,
    Outcome,
    Reply,
    Scene,
    resolved,
    returned_text,
    takeover_request,
)
from executors.platform.services import RunServices
from human.kinds import (
    KINDS,
    ApprovalAnswer,
    QuestionAnswer,
    QuestionRequest,
    ReviewAnswer,
    Routing,
    TakeoverAnswer,
    kind_of,
)
from human.records import HumanRequest
from human.requests import origin_of

# a workflow's own kind requests -------------------------------------------------------------


class Kinds:
    """Requests that are already Baton kind models, answered with their answer models."""

    name: ClassVar[str] = KINDS_ADAPTER

    def accepts(self, event: WorkflowEvent[Any]) -> bool:
        """Any of Baton's request models."""
        return kind_of(event.data) is not None

    async def ask(self, event: WorkflowEvent[Any], scene: Scene) -> Outcome:
        """Ask people as the workflow wrote it."""
        data = event.data
        kind = kind_of(data)
        if kind is None or not isinstance(data, Routing):
            raise TypeError(f"not a Baton request model: {type(data).__name__}")
        if event.response_type is not kind.answer_model:
            raise TypeError(
                f"a {kind.name} request must expect {kind.answer_model.__name__}, "
                f"not {getattr(event.response_type, '__name__', event.response_type)}"
            )
        return Ask(data)

    async def deliver(self, request: HumanRequest, answer: BaseModel, scene: Scene) -> Outcome:
        """The typed answer as is; a taken-over request gets its own kind's answer."""
        origin = origin_of(request)
        first_kind = origin.get("taken_over_from")
        if not first_kind or not isinstance(answer, TakeoverAnswer):
            return Reply(answer)
        if answer.decision == "resolve":
            return resolved(request, answer)
        guidance = returned_text(request, answer)
        handed_back: dict[str, BaseModel] = {
            "approval": ApprovalAnswer(decision="reject", reason=guidance),
            "question": QuestionAnswer(decision="answer", answer=guidance),
            "review": ReviewAnswer(decision="reject", reason=guidance),
            "takeover": answer,
        }
        if answer.decision in ("expired", "cancelled"):
            return Reply(
                KINDS[first_kind].answer_model.model_validate({"decision": answer.decision})
            )
        return Reply(handed_back[first_kind])


# the handoff's user turns ---------------------------------------------------------------------


class UserTurns:
    """A handoff agent replied to the user and waits: a `question` to the user-facing team.

    The team relays the user's reply, which reaches the agent as the user's message
    (`HandoffAgentUserRequest.create_response`). If the policy's takeover rules hold for the
    run's state (low confidence, a user asking for a manager, repeated failures), the turn
    becomes a `takeover` instead: `resolve` ends the run, `return` gives the agent the person's
    guidance. It words the user as the workflow calls them (`register(..., party=...)`).
    """

    name: ClassVar[str] = "user_turns"

    def __init__(self, services: RunServices, *, team: str) -> None:
        self._services = services
        self._team = team
        self._party = services.party

    def accepts(self, event: WorkflowEvent[Any]) -> bool:
        """The handoff orchestration's user-input request."""
        return isinstance(event.data, HandoffAgentUserRequest)

    async def ask(self, event: WorkflowEvent[Any], scene: Scene) -> Outcome:
        """A question for the user-facing team, or a takeover when the policy says so."""
        data: HandoffAgentUserRequest = event.data
        agent = str(event.source_executor_id)
        said = data.agent_response.text.strip()
        origin = {"agent": agent}
        context = await scene.case()
        takeover = self._services.policy.takeover(scene.state())
        if takeover is not None:
            return Ask(
                takeover_request(
                    f"Take over the conversation from {agent}",
                    f"Policy rule {takeover.rule_id} hands this case to a person. "
                    f"{agent} last said: {said}",
                    takeover,
                    context,
                    scene,
                ),
                origin,
            )
        party = self._party
        return Ask(
            QuestionRequest(
                title=f"{agent} waits for the {party}'s reply",
                reason=(
                    f"The {agent} agent answered the {party} and waits for their reply. Relay "
                    f"what the {party} says; it reaches the agent as the {party}'s message."
                ),
                context=context,
                team=self._team,
                question=said or f"({agent} is waiting for the {party})",
            ),
            origin,
        )

    async def deliver(self, request: HumanRequest, answer: BaseModel, scene: Scene) -> Outcome:
        """The user's words (or a person's guidance) as the next user message."""
        if isinstance(answer, TakeoverAnswer):
            if answer.decision == "resolve":
                return resolved(request, answer)
            if answer.decision == "return":
                guidance = returned_text(request, answer)
                scene.note(
                    {"type": "message", "role": "user", "by": request.answered_by, "text": guidance}
                )
                return Reply(HandoffAgentUserRequest.create_response(guidance))
        if isinstance(answer, QuestionAnswer) and answer.decision == "answer":
            text = str(answer.answer)
            scene.note(
                {
                    "type": "message",
                    "role": "user",
                    "by": self._party,
                    "from_user": True,
                    "relayed_by": request.answered_by,
                    "text": text,
                }
            )
            return Reply(HandoffAgentUserRequest.create_response(text))
        return Finish(
            {
                "resolution": f"Closed without an answer: the {self._party}'s turn "
                f"{getattr(answer, 'decision', 'ended')} before anyone replied.",
                "outcome": {},
                "resolved_by": "system",
                "resolver": "system",
            }
        )
