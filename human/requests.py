"""A HumanRequest made from what a workflow asks: a kind model (`human.kinds`) and its origin.

The request is the durable record people answer: its kind, wording and context come from the
kind model; its routing (team, priority, deadline, escalation, approvals) from the model's
`Routing` fields; its `response_schema` from the kind (with the proposed call's argument schema,
for an approval). `origin` is what the adapter that asked keeps for delivering the answer later
(which adapter, which MAF request, the call's arguments); it rides in the payload.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from human.kinds import (
    SYSTEM_OUTCOMES,
    ApprovalRequest,
    InputRequest,
    Routing,
    TakeoverRequest,
    kind_of,
)
from human.records import Attachment, HumanRequest

ORIGIN = "origin"
"""The key of a HumanRequest's payload that says which adapter asked, for which MAF request."""

_ROUTING_FIELDS = set(Routing.model_fields)
OUTCOMES = "outcomes"
"""The request's payload entry of what its decisions lead to, as its workflow says it."""


def deciders(request: HumanRequest) -> list[str]:
    """Who gave the request's decision, in the order they gave it, each once.

    Every person whose recorded answer is that decision (both approvers of a request that needs
    two), else the one who answered; nobody for an outcome no person gave (it expired, or its run
    was cancelled).
    """
    decision = (request.answer or {}).get("decision")
    if decision is None or decision in SYSTEM_OUTCOMES:
        return []
    found = [a.actor for a in request.answers if a.decision == decision]
    if not found and request.answered_by:
        found = [request.answered_by]
    return list(dict.fromkeys(found))


def origin_of(request: HumanRequest) -> dict[str, Any]:
    """What the adapter that asked kept for delivery (`{}` for a workflow's own kind requests)."""
    found = request.payload.get(ORIGIN)
    return dict(found) if isinstance(found, dict) else {}


def new_request(
    data: Routing,
    *,
    run_id: str,
    label: str,
    now: datetime,
    origin: dict[str, Any] | None = None,
    assignee: str | None = None,
    executor_id: str | None = None,
    attachments: Sequence[Attachment] = (),
) -> HumanRequest:
    """A pending HumanRequest for `data`, one of Baton's kind models.

    `label` is unique within the run (the request's `maf_request_id` column): the MAF request's
    id, or that id with a suffix when an answer asks again about the same MAF request.
    """
    kind = kind_of(data)
    if kind is None:
        raise TypeError(f"not a Baton request model: {type(data).__name__}")
    proposed = None
    typed: dict[str, dict[str, Any]] = {}
    if isinstance(data, ApprovalRequest):
        proposed = data.proposed_action.model_dump(mode="json")
        typed["arguments"] = data.proposed_action.arguments_schema
    if isinstance(data, InputRequest):
        typed["answer"] = data.answer_schema
    if isinstance(data, TakeoverRequest):
        typed["outcome"] = data.outcome_schema
    payload = data.model_dump(
        mode="json",
        exclude=_ROUTING_FIELDS | {"proposed_action", "answer_schema", "outcome_schema"},
    )
    if origin:
        payload[ORIGIN] = origin
    if data.outcomes:  # (a decision the kind does not take is no outcome to show)
        payload[OUTCOMES] = {d: t for d, t in data.outcomes.items() if d in kind.decisions}
    return HumanRequest(
        id=f"req_{secrets.token_urlsafe(16)}",
        run_id=run_id,
        maf_request_id=label,
        kind=kind.name,
        title=data.title,
        reason=data.reason,
        # as JSON: a model or date in the context would otherwise be stored as its str()
        context=data.model_dump(mode="json", include={"context"})["context"],
        proposed_action=proposed,
        payload=payload,
        allowed_decisions=list(kind.decisions),
        response_schema=_offered(kind.response_schema(typed), data),
        team=data.team,
        assignee=assignee,
        priority=data.priority,
        status="pending",
        created_at=now,
        expires_at=now + timedelta(seconds=data.expires_in_s) if data.expires_in_s else None,
        approvals_required=data.approvals_required,
        policy_rule=data.policy_rule,
        escalation=[e.model_dump(mode="json", exclude_none=True) for e in data.escalation],
        executor_id=executor_id,
        attachments=list(attachments),
    )


def _offered(schema: dict[str, Any], data: Routing) -> dict[str, Any]:
    """The answer's schema with what this request offers: an approval's `standing`, if it does.

    Worded with the tool and the rule it stands for (`ApprovalAnswer.standing`).
    """
    if isinstance(data, ApprovalRequest) and data.standing:
        tool = data.proposed_action.tool
        schema["properties"]["standing"] = {
            "type": "boolean",
            "default": False,
            "title": f"Also approve this run's later {tool} calls",
            "description": f"They run without asking again, while rule {data.policy_rule} is "
            "the one that decides them.",
        }
    return schema
