"""Safe edits: a rule's `editable`, `keep` and `invariants`, parsed, enforced and told.

The policy part is pure; the service part runs on each backend (`db_url`): a refused edit is a
422 naming the argument and why, and leaves the stored request and audit trail as they were.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from baton.errors import EditRefused, InvalidPolicy
from human.policy import Decision, EditedCall, Invariant, consequences, load_policy, parse_policy
from human.service import RequestService
from human.store import open_store
from tests.unit.test_policy_file import _check
from tests.unit.test_service import Desk, started_run
from workflows.shipped import POLICIES

RULES = """\
version: 1
rules:
  - id: refund.medium
    tool: issue_refund
    when: amount < 1000
    action: approval(support-leads)
    editable: [amount]
    invariants: [same_customer]
  - id: refund.large
    tool: issue_refund
    action: approval(finance, approvals=2)
    invariants: [within_total]
  - id: email
    tool: send_email
    action: approval(support-agents)
    keep: customer_id
  - id: open
    tool: anything
    action: approval(support-leads)
"""


def test_a_rule_names_what_an_edit_may_change_and_without_editable_any_argument_may() -> None:
    policy = parse_policy(RULES)
    medium, large, email, anything = policy.rules

    assert (medium.editable, medium.keep, medium.invariants) == (
        ("amount",),
        (),
        ("same_customer",),
    )
    assert (large.editable, large.invariants) == (None, ("within_total",))
    assert (email.editable, email.keep) == (None, ("customer_id",))
    assert (anything.editable, anything.keep, anything.invariants) == (None, (), ())
    assert policy.invariant_names() == {"same_customer": (0, 3), "within_total": (1, 9)}


def test_an_edit_of_an_argument_the_rule_does_not_let_change_is_named_with_why() -> None:
    policy = parse_policy(RULES)
    before = {"order_id": "A-1005", "amount": 120}

    moved = policy.edit_refusals(
        "refund.medium", "issue_refund", before, before | {"order_id": "A-1002"}
    )
    kept = policy.edit_refusals(
        "email",
        "send_email",
        {"customer_id": "c1", "body": "x"},
        {"customer_id": "c2", "body": "y"},
    )

    assert moved == [("order_id", "rule refund.medium lets an approver change only amount")]
    assert kept == [("customer_id", "rule email keeps customer_id as the agent proposed it")]
    assert (
        policy.edit_refusals("refund.medium", "issue_refund", before, before | {"amount": 80}) == []
    )
    assert policy.edit_refusals("open", "anything", {"a": 1}, {"a": 2, "b": 3}) == []
    # a request no rule of this policy asked is judged by the rule its proposed call meets now
    assert policy.edit_refusals("gone", "issue_refund", before, before | {"order_id": "B"}) == [
        ("order_id", "rule refund.medium lets an approver change only amount")
    ]


def test_the_invariants_of_an_edit_are_its_asking_rules_and_its_new_rules() -> None:
    policy = parse_policy(RULES)
    before = {"order_id": "A-1", "amount": 120}

    assert policy.invariants_of(
        "refund.medium", "issue_refund", before, before | {"amount": 90}
    ) == ("same_customer",)
    assert policy.invariants_of(
        "refund.medium", "issue_refund", before, before | {"amount": 1500}
    ) == ("same_customer", "within_total")


@pytest.mark.parametrize(
    ("rule", "line", "message"),
    [
        ("editable: [amount]\n    keep: [amount]", 2, "amount cannot be both editable and kept"),
        ("editable: [1 amount]", 5, "String should match pattern"),
        ("invariants: {a: b}", 5, "Input should be a valid list"),
    ],
)
def test_a_bad_edit_rule_is_refused_with_its_line(rule: str, line: int, message: str) -> None:
    text = f"rules:\n  - id: r\n    tool: t\n    action: approval(x)\n    {rule}\n"
    with pytest.raises(InvalidPolicy) as caught:
        parse_policy(text)

    assert message in str(caught.value)
    assert caught.value.errors[0]["line"] == line


def test_edit_rules_on_a_rule_that_asks_nobody_are_refused() -> None:
    with pytest.raises(InvalidPolicy) as caught:
        parse_policy("rules:\n  - id: r\n    tool: t\n    action: auto\n    editable: [amount]\n")

    assert "policies.yaml:2: rules.0: editable, keep and invariants" in str(caught.value)
    assert "only an approval rule has them" in str(caught.value)


def test_an_invariant_no_workflow_registers_is_refused_at_start_with_its_line() -> None:
    policy = parse_policy(RULES)

    policy.check_invariants({"same_customer", "within_total"})
    with pytest.raises(InvalidPolicy) as caught:
        policy.check_invariants({"same_customer"}, "mine.yaml")

    assert str(caught.value).startswith(
        "mine.yaml:9: rules.1.invariants: no workflow registers an invariant 'within_total'"
    )


def test_the_shipped_refund_rules_let_an_approver_change_only_the_amount() -> None:
    policy = load_policy(POLICIES)
    medium = policy.rule("refund.medium")

    assert medium is not None
    assert medium.editable == ("amount",)
    assert medium.invariants == ("refund.same_customer", "refund.within_order")
    assert policy.rule("account.delete").keep == ("customer_id",)  # type: ignore[union-attr]


ASKED = Decision(action="approval", rule_id="refund.medium", team="support-leads")


@pytest.mark.parametrize(
    ("amount", "told"),
    [
        (80, ["Rule refund.medium still applies: your approval is enough; the changed call runs."]),
        (
            30,
            [
                "Rule refund.small applies to the changed call instead of refund.medium: "
                "no further approval is needed; the changed call runs."
            ],
        ),
        (
            1500,
            [
                "Rule refund.large applies to the changed call: it now needs 2 different "
                "approvers from finance.",
                "Your edit does not run yet: it goes to finance as a new request.",
            ],
        ),
    ],
)
def test_an_edits_consequences_are_told_in_words(amount: int, told: list[str]) -> None:
    policy = load_policy(POLICIES)
    after = policy.recheck_edit(ASKED, "issue_refund", {"order_id": "A-1", "amount": amount})

    assert consequences(ASKED, after) == told


def test_a_refusing_or_taking_over_rule_is_told_too() -> None:
    deny = Decision(action="deny", rule_id="never")
    takeover = Decision(action="takeover", rule_id="hand", team="support-agents")

    assert consequences(ASKED, deny) == [
        "Rule never refuses the changed call: it will not run, and the agent is told."
    ]
    assert consequences(ASKED, takeover) == [
        "Rule hand applies to the changed call: it does not run; the case goes to "
        "support-agents for a person to take over."
    ]


# the service, on each backend ---------------------------------------------------------------

SEEN: list[EditedCall] = []


async def same_customer(call: EditedCall) -> str | None:
    SEEN.append(call)
    if call.after.get("order_id") != call.before.get("order_id"):
        return f"order {call.after['order_id']} is not customer-01's"
    return None


async def within_total(call: EditedCall) -> str | None:
    raise RuntimeError("the back office is down")


@pytest.fixture
async def desk(db_url: str) -> AsyncIterator[Desk]:
    store = await open_store(db_url)
    try:
        people = {"lee": await store.add_user("lee", role="responder", teams=["support-leads"])}
        given = {"order_id": "A-1", "amount": 120.0, "customer_id": "customer-01"}
        run = await started_run(store, given)
        checks: dict[str, Invariant] = {
            "same_customer": same_customer,
            "within_total": within_total,
        }
        policy = parse_policy(RULES.replace("editable: [amount]", "editable: [amount, order_id]"))
        service = RequestService(store, policy=policy, invariants=checks)
        yield Desk(store=store, service=service, run=run, people=people)
    finally:
        await store.close()


def edit(**arguments: Any) -> dict[str, Any]:
    return {"decision": "edit", "arguments": {"order_id": "A-1", "amount": 120.0} | arguments}


async def test_an_edit_that_breaks_an_invariant_is_refused_and_changes_nothing(desk: Desk) -> None:
    request = await desk.pending()
    before = await desk.snapshot(request.id)
    SEEN.clear()

    with pytest.raises(EditRefused) as caught:
        await desk.respond(request.id, edit(order_id="A-2"), "lee")

    assert caught.value.errors == [
        {
            "loc": ["arguments"],
            "msg": "the edit breaks same_customer: order A-2 is not customer-01's",
        }
    ]
    [call] = SEEN
    assert (call.tool, call.before["order_id"], call.after["order_id"]) == (
        "issue_refund",
        "A-1",
        "A-2",
    )
    assert call.run_input["customer_id"] == "customer-01"
    assert await desk.snapshot(request.id) == before


async def test_an_invariant_that_cannot_be_checked_refuses_the_edit(desk: Desk) -> None:
    request = await desk.pending()
    before = await desk.snapshot(request.id)

    with pytest.raises(EditRefused) as caught:
        await desk.service.preview(request.id, edit(amount=1500), responder=desk.people["lee"])

    assert caught.value.errors[0]["msg"] == (
        "the edit breaks within_total: it could not be checked (RuntimeError); nothing was changed"
    )
    assert await desk.snapshot(request.id) == before


async def test_an_edit_the_rule_allows_is_previewed_with_its_consequences_then_recorded(
    desk: Desk,
) -> None:
    request = await desk.pending()

    preview = await desk.service.preview(request.id, edit(amount=80), responder=desk.people["lee"])
    result = await desk.respond(request.id, edit(amount=80), "lee")

    assert preview.diff == {"arguments": {"amount": {"before": 120.0, "after": 80}}}
    assert preview.consequences == [
        "Rule refund.medium still applies: your approval is enough; the changed call runs."
    ]
    assert result.outcome == "closed"


async def test_a_rule_without_edit_rules_lets_any_argument_change(desk: Desk) -> None:
    plain = "rules:\n  - {id: r, tool: issue_refund, action: approval(support-leads)}\n"
    service = RequestService(desk.store, policy=parse_policy(plain))
    request = await desk.pending()

    result = await service.respond(request.id, edit(order_id="A-9"), responder=desk.people["lee"])

    assert result.request.answer == edit(order_id="A-9")


def test_policies_check_says_what_each_approval_lets_an_edit_change(tmp_path: Path) -> None:
    unknown = tmp_path / "unknown.yaml"
    unknown.write_text(RULES)

    shipped = _check(POLICIES)
    refused = _check(unknown)

    assert shipped.returncode == 0, shipped.stderr
    assert (
        "    an edit may change only amount; it must keep refund.same_customer, "
        "refund.within_order\n" in shipped.stdout
    )
    assert "    an edit may change any argument, never customer_id\n" in shipped.stdout
    assert refused.returncode == 2
    assert (
        f"{unknown}:3: rules.0.invariants: no workflow registers an invariant 'same_customer'"
        in (refused.stderr)
    )


@pytest.mark.parametrize(
    "action", ["auto", "deny", "takeover(x)", "approval(finance, approvals=2)"]
)
def test_standing_on_a_rule_other_than_one_approver_s_is_refused_with_its_line(
    action: str,
) -> None:
    text = (
        "rules:\n  - id: a\n    tool: t\n    action: auto\n"
        f"  - id: r\n    tool: t\n    action: {action}\n    standing: true\n"
    )
    with pytest.raises(InvalidPolicy) as caught:
        parse_policy(text)

    assert "policies.yaml:5: rules.1: standing lets one person's approval stand" in str(
        caught.value
    )
    assert "only an approval rule of one approver has it" in str(caught.value)


def test_policies_check_names_the_rules_whose_approvals_may_stand(tmp_path: Path) -> None:
    mine = tmp_path / "mine.yaml"
    mine.write_text(
        "rules:\n  - id: s\n    tool: t\n    action: approval(x)\n    standing: true\n"
        "  - id: p\n    tool: u\n    action: approval(x)\n"
    )

    checked = _check(mine)

    assert checked.returncode == 0, checked.stderr
    assert checked.stdout.splitlines()[1:] == [
        "  line 2: s: t when always -> approval(x)",
        "    an edit may change any argument",
        "    an approval may stand for the run's later calls this rule decides",
        "  line 6: p: u when always -> approval(x)",
        "    an edit may change any argument",
    ]


def test_a_standing_rule_s_decisions_say_so_and_other_rules_do_not() -> None:
    policy = parse_policy(
        "rules:\n  - id: s\n    tool: t\n    action: approval(x)\n    standing: true\n"
        "  - id: p\n    tool: u\n    action: approval(x)\n"
    )

    assert policy.evaluate("t", {}).standing is True
    assert policy.evaluate("u", {}).standing is False
    assert policy.evaluate("v", {}).standing is False  # the default: fail closed
