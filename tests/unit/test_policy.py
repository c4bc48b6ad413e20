"""The demo policy's bands (SPEC §3) and the re-check of a person's edit."""

from __future__ import annotations

from typing import Any

import pytest

from human.policy import Condition, Decision, Policy, Rule, load_policy
from workflows.shipped import POLICIES

POLICY = load_policy(POLICIES)


def refund(amount: Any) -> dict[str, Any]:
    return {"order_id": "A-1", "amount": amount}


@pytest.mark.parametrize(
    ("amount", "action", "rule", "team", "approvals"),
    [
        (0.01, "auto", "refund.small", None, 1),
        (49.99, "auto", "refund.small", None, 1),
        (50, "approval", "refund.medium", "support-leads", 1),
        (120, "approval", "refund.medium", "support-leads", 1),
        (999.99, "approval", "refund.medium", "support-leads", 1),
        (1000, "approval", "refund.large", "finance", 2),
        (25_000, "approval", "refund.large", "finance", 2),
    ],
)
def test_refund_bands(
    amount: float, action: str, rule: str, team: str | None, approvals: int
) -> None:
    decision = POLICY.evaluate("issue_refund", refund(amount))

    assert (decision.action, decision.rule_id, decision.team, decision.approvals_required) == (
        action,
        rule,
        team,
        approvals,
    )


@pytest.mark.parametrize("arguments", [{}, {"customer_id": "C-1"}, {"amount": 1}])
def test_delete_account_always_needs_approval(arguments: dict[str, Any]) -> None:
    decision = POLICY.evaluate("delete_account", arguments)

    assert (decision.action, decision.rule_id, decision.team) == (
        "approval",
        "account.delete",
        "support-leads",
    )


def test_a_tool_no_rule_names_needs_approval_by_the_default_team() -> None:
    decision = POLICY.evaluate("wire_money", {"amount": 1})

    assert (decision.action, decision.rule_id, decision.team, decision.approvals_required) == (
        "approval",
        "default.approval",
        "support-leads",
        1,
    )


@pytest.mark.parametrize("arguments", [{"order_id": "A-1"}, refund("10"), refund(None)])
def test_a_refund_whose_amount_cannot_be_compared_never_runs_unasked(
    arguments: dict[str, Any],
) -> None:
    decision = POLICY.evaluate("issue_refund", arguments)

    assert (decision.action, decision.rule_id, decision.approvals_required) == (
        "approval",
        "refund.large",
        2,
    )


def test_the_first_matching_rule_decides_and_wildcards_match_every_tool() -> None:
    policy = Policy(
        [
            Rule(
                id="freeze",
                tool="*",
                when=(Condition(arg="frozen", op="==", value=True),),
                action="deny",
            ),
            Rule(id="lookups", tool="lookup_order", action="auto"),
        ],
        default_team="ops",
    )

    assert policy.evaluate("lookup_order", {"frozen": True}).rule_id == "freeze"
    assert policy.evaluate("lookup_order", {}).action == "auto"
    assert policy.evaluate("anything", {}).team == "ops"


# re-checking an edit ------------------------------------------------------------------------


def recheck(before_amount: float, after_amount: float) -> Decision:
    before = POLICY.evaluate("issue_refund", refund(before_amount))
    return POLICY.recheck_edit(before, "issue_refund", refund(after_amount))


def test_an_edit_down_into_the_auto_band_runs() -> None:
    decision = recheck(120, 30)

    assert (decision.action, decision.rule_id) == ("auto", "refund.small")


def test_an_edit_within_the_band_the_approver_owns_stands() -> None:
    decision = recheck(120, 400)

    assert (decision.action, decision.rule_id) == ("auto", "refund.medium")


def test_an_edit_up_into_the_two_person_band_needs_finance_twice() -> None:
    decision = recheck(120, 1500)

    assert (decision.action, decision.rule_id, decision.team, decision.approvals_required) == (
        "approval",
        "refund.large",
        "finance",
        2,
    )


def test_an_edit_down_from_the_two_person_band_stands() -> None:
    decision = recheck(1500, 120)

    assert (decision.action, decision.rule_id) == ("auto", "refund.medium")


def test_an_edit_within_the_two_person_band_asks_again() -> None:
    # one person's edit cannot satisfy a rule that needs two approvers
    decision = recheck(1500, 1200)

    assert (decision.action, decision.rule_id, decision.team, decision.approvals_required) == (
        "approval",
        "refund.large",
        "finance",
        2,
    )


def test_an_edit_into_a_deny_or_takeover_rule_is_not_waved_through() -> None:
    policy = Policy(
        [
            Rule(
                id="too.much",
                tool="issue_refund",
                when=(Condition(arg="amount", op=">", value=5000),),
                action="deny",
            ),
            Rule(
                id="odd",
                tool="issue_refund",
                when=(Condition(arg="amount", op="==", value=13),),
                action="takeover",
                team="support-agents",
            ),
            Rule(id="rest", tool="issue_refund", action="approval", team="support-leads"),
        ]
    )
    before = policy.evaluate("issue_refund", refund(100))

    assert policy.recheck_edit(before, "issue_refund", refund(9000)).action == "deny"
    assert policy.recheck_edit(before, "issue_refund", refund(13)).action == "takeover"
    assert policy.recheck_edit(before, "issue_refund", refund(200)).action == "auto"
