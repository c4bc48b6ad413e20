"""The purchase desks: legal and finance approve at once, then a person reviews the order.

No model: the intake fans the purchase out to two approval desks, each asks its team through
`ctx.request_info` (two requests pending in one run, answerable in any order), and a fan-in hands
both verdicts to the order desk, which drafts the purchase order for a `review`. An approval not
answered in time escalates to `managers` (priority high) at half its deadline, and expires at the
deadline. A rejection or an expiry on either side ends the run at once with an output saying who
and why; the other side's request is cancelled.
"""

from __future__ import annotations

from typing import Any, Never

from agent_framework import Executor, WorkflowContext, handler, response_handler
from pydantic import BaseModel, Field

from baton.api import (
    ApprovalAnswer,
    ApprovalRequest,
    CheckpointedModel,
    Escalation,
    ProposedAction,
    ReviewAnswer,
    ReviewRequest,
    end_run,
    schema_of,
)

APPROVERS = ("legal", "finance")
ESCALATE_TO = "managers"
REVIEWERS = "finance"


class PurchaseInput(BaseModel):
    """Input of the `purchase` workflow."""

    item: str = Field(min_length=1, max_length=200, description="What to buy")
    amount: float = Field(gt=0, description="Total price")
    currency: str = Field("EUR", pattern=r"^[A-Z]{3}$", description="Its currency (ISO 4217)")
    vendor: str = Field(min_length=1, max_length=200, description="Who sells it")
    requester: str = Field(min_length=1, max_length=200, description="Who asks for it")
    approve_within_hours: float = Field(
        48.0,
        gt=0,
        le=24 * 90,
        description="Deadline of each approval; it escalates to managers at half of it.",
    )


class PurchaseTerms(BaseModel):
    """What an approver may change: the arguments of the order to place."""

    item: str = Field(min_length=1, max_length=200)
    amount: float = Field(gt=0)
    vendor: str = Field(min_length=1, max_length=200)


class Verdict(CheckpointedModel):
    """One desk's approval, with the terms it approved (changed, if it edited them).

    A checkpointed model: a verdict a run paused with before `proposed` or `by` were kept (one
    desk's, waiting for the other's) reads them as their defaults.
    """

    team: str
    decision: str
    terms: dict[str, Any]
    proposed: dict[str, Any] = Field(default_factory=dict)
    """The terms as asked."""
    by: list[str] = Field(default_factory=list)
    """Who gave the desk's decision."""
    currency: str = "EUR"
    """The purchase's currency (a verdict kept before it was: the default's)."""

    def signed(self) -> str:
        """The desk's approval as an order names it: who approved, for which team."""
        return f"{' and '.join(self.by)} ({self.team})" if self.by else self.team


class PurchaseIntake(Executor):
    """Starts a purchase: hands it to every approval desk at once."""

    @handler
    async def on_purchase_input(
        self, message: PurchaseInput, ctx: WorkflowContext[PurchaseInput]
    ) -> None:
        """Fan the purchase out."""
        await ctx.send_message(message)


class ApprovalDesk(Executor):
    """Asks one team to approve the purchase, with a deadline that escalates to managers."""

    def __init__(self, team: str) -> None:
        super().__init__(id=f"{team}_approval")
        self.team = team

    @handler
    async def on_purchase_input(
        self, message: PurchaseInput, ctx: WorkflowContext[Verdict, dict[str, Any]]
    ) -> None:
        """Ask this desk's team."""
        terms = PurchaseTerms(item=message.item, amount=message.amount, vendor=message.vendor)
        deadline_s = message.approve_within_hours * 3600
        await ctx.request_info(
            ApprovalRequest(
                title=(
                    f"Purchase of {message.item} from {message.vendor} for "
                    f"{message.amount:.2f} {message.currency}"
                ),
                reason=(
                    f"Every purchase needs the approval of {self.team} (and of "
                    f"{' and '.join(t for t in APPROVERS if t != self.team)}). "
                    f"Requested by {message.requester}."
                ),
                context={
                    "item": message.item,
                    "amount": message.amount,
                    "currency": message.currency,
                    "vendor": message.vendor,
                    "requester": message.requester,
                    "desk": self.team,
                },
                team=self.team,
                expires_in_s=deadline_s,
                escalation=[Escalation(after_s=deadline_s / 2, team=ESCALATE_TO, priority="high")],
                policy_rule="purchase.approval",
                outcomes=desk_outcomes(self.team, message.vendor),
                proposed_action=ProposedAction(
                    tool="place_order",
                    arguments=terms.model_dump(mode="json"),
                    arguments_schema=schema_of(PurchaseTerms),
                ),
            ),
            ApprovalAnswer,
            request_id=f"{self.team}-approval",
        )

    @response_handler
    async def on_approval_answer(
        self,
        request: ApprovalRequest,
        answer: ApprovalAnswer,
        ctx: WorkflowContext[Verdict, dict[str, Any]],
    ) -> None:
        """Pass an approval on; end the purchase on anything else."""
        if answer.decision in ("approve", "edit"):
            asked = request.proposed_action.arguments
            terms = answer.arguments if answer.decision == "edit" else None
            await ctx.send_message(
                Verdict(
                    team=self.team,
                    decision=answer.decision,
                    terms=terms or asked,
                    proposed=asked,
                    by=answer.answered_by,
                    currency=str(request.context.get("currency") or "EUR"),
                )
            )
            return
        reason = {
            "reject": f"{self.team} rejected it: {answer.reason}",
            "expired": f"{self.team} did not approve it in time",
            "cancelled": f"the {self.team} approval was cancelled",
        }[answer.decision]
        await end_run(ctx, not_placed(self.team, answer.decision, reason))


class OrderDesk(Executor):
    """Drafts the purchase order once both desks approved, and asks for its review."""

    def __init__(self) -> None:
        super().__init__(id="order_desk")

    @handler
    async def on_verdicts(
        self, verdicts: list[Verdict], ctx: WorkflowContext[Never, dict[str, Any]]
    ) -> None:
        """Both desks approved: draft the order from the terms they approved."""
        terms, changes = approved_terms(verdicts)
        signed = [v.signed() for v in sorted(verdicts, key=lambda v: v.team)]
        currency = verdicts[0].currency
        draft = draft_order(terms, signed, changes, currency)
        await ctx.request_info(
            ReviewRequest(
                title=f"Review the purchase order for {terms['item']}",
                reason="Legal and finance approved; check the order before it goes to the vendor.",
                context={"terms": terms, "currency": currency, "approved_by": signed},
                team=REVIEWERS,
                policy_rule="purchase.review",
                outcomes={
                    "approve": f"The order goes to {terms['vendor']} as drafted.",
                    "edit": f"Your edited order goes to {terms['vendor']} instead of the draft.",
                    "reject": "No order is placed; the purchase ends with your reason.",
                },
                draft=draft,
            ),
            ReviewAnswer,
            request_id="order-review",
        )

    @response_handler
    async def on_review_answer(
        self,
        request: ReviewRequest,
        answer: ReviewAnswer,
        ctx: WorkflowContext[Never, dict[str, Any]],
    ) -> None:
        """Place the reviewed order, or say why not."""
        if answer.decision in ("approve", "edit"):
            order = answer.content if answer.decision == "edit" else request.draft
            await ctx.yield_output(
                {
                    "status": "ordered",
                    "purchase_order": order,
                    "text": "Purchase order approved and placed.",
                }
            )
            return
        reason = (
            f"the review rejected it: {answer.reason}"
            if answer.decision == "reject"
            else f"the review was {answer.decision}"
        )
        await ctx.yield_output(not_placed(REVIEWERS, answer.decision, reason))


def desk_outcomes(team: str, vendor: str) -> dict[str, str]:
    """What a desk's decision leads to, in words: no order is placed by an approval alone."""
    others = " and ".join(t for t in APPROVERS if t != team)
    after = (
        f"Once {others} approves too, an order to {vendor} is drafted for {REVIEWERS} to review "
        "before it goes out."
    )
    return {
        "approve": f"Records {team}'s approval; nothing is ordered yet. {after}",
        "edit": f"Records {team}'s approval of the terms as you change them. {after}",
        "reject": "The purchase ends: no order is placed, and the other desk's request closes.",
    }


def not_placed(by: str, decision: str, reason: str) -> dict[str, Any]:
    """The output of a purchase that ends unplaced: rejected, expired or cancelled, by whom, why."""
    return {
        "status": "rejected" if decision == "reject" else decision,
        "by": by,
        "reason": reason,
        "text": f"Purchase not placed: {reason}.",
    }


def approved_terms(verdicts: list[Verdict]) -> tuple[dict[str, Any], list[str]]:
    """The terms as asked with every desk's edits applied, and a line per change.

    An approval as asked changes nothing, whichever order the desks answered in. Two desks that
    set one term to different values are both named, the later edit standing, so the review
    sees the disagreement.
    """
    asked = next((v.proposed for v in verdicts if v.proposed), None) or next(
        (v.terms for v in verdicts if v.decision != "edit"), verdicts[0].terms
    )
    terms = dict(asked)
    set_by: dict[str, tuple[str, Any]] = {}
    changes: list[str] = []
    for verdict in verdicts:
        if verdict.decision != "edit":
            continue
        for key, value in verdict.terms.items():
            if value == asked.get(key):
                continue
            earlier = set_by.get(key)
            if earlier is not None and earlier[1] != value:
                changes.append(
                    f"{earlier[0]} and {verdict.team} disagree on {key} ({earlier[1]} vs "
                    f"{value}); the order says {value}: check it"
                )
            else:
                changes.append(f"{verdict.team} changed {key} from {asked.get(key)} to {value}")
            set_by[key] = (verdict.team, value)
            terms[key] = value
    return terms, changes


def draft_order(
    terms: dict[str, Any], approved_by: list[str], changes: list[str], currency: str
) -> str:
    """The purchase order text a person reviews."""
    lines = [
        "PURCHASE ORDER",
        f"Vendor: {terms['vendor']}",
        f"Item:   {terms['item']}",
        f"Amount: {float(terms['amount']):,.2f} {currency}",
        f"Approved by: {'; '.join(approved_by)}",
    ]
    if changes:
        lines.append("Changes on approval: " + "; ".join(changes))
    return "\n".join(lines)
