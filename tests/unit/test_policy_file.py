"""The policies file: the shipped rules, line-numbered errors, run state, `baton policies check`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from baton.errors import InvalidPolicy
from executors.platform.tool_gate import approval_reason
from human.policy import load_policy, parse_duration, parse_policy
from workflows.shipped import POLICIES

GOOD = """\
version: 1
default_team: ops
rules:
  - id: big.refund
    tool: issue_refund
    when: ["amount >= 100", "state.confidence < 0.9"]
    action: approval(finance, approvals=2)
    deadline: 2h
    escalation:
      - {after: 30m, team: managers, priority: urgent, deadline: 1d}
  - id: frozen
    tool: "*"
    why: The customer asked for a manager
    when: state.asked_for_manager == true
    action: takeover(support-agents)
  - id: never
    tool: wire_money
    action: deny
"""


def test_the_shipped_file_holds_the_spec_defaults() -> None:
    policy = load_policy(POLICIES)

    assert [r.id for r in policy.rules] == [
        "takeover.manager",
        "takeover.low_confidence",
        "takeover.failed_attempts",
        "refund.small",
        "refund.medium",
        "refund.large",
        "account.delete",
    ]
    assert policy.evaluate("issue_refund", {"amount": 20}).action == "auto"
    medium = policy.evaluate("issue_refund", {"amount": 120})
    assert (medium.team, medium.expires_in_s) == ("support-leads", 24 * 3600)
    assert [(e.after_s, e.team) for e in medium.escalation] == [(4 * 3600, "managers")]
    assert policy.evaluate("delete_account", {}).team == "support-leads"
    assert POLICIES.name == "policies.yaml"


def test_a_valid_file_maps_actions_conditions_deadlines_and_escalations() -> None:
    policy = parse_policy(GOOD)

    big = policy.evaluate("issue_refund", {"amount": 150}, {"confidence": 0.5})
    assert (big.action, big.rule_id, big.team, big.approvals_required) == (
        "approval",
        "big.refund",
        "finance",
        2,
    )
    assert big.expires_in_s == 7200
    [rung] = big.escalation
    assert (rung.after_s, rung.team, rung.priority, rung.expires_in_s) == (
        1800,
        "managers",
        "urgent",
        86400,
    )
    # the run state decides as much as the arguments do
    sure = policy.evaluate("issue_refund", {"amount": 150}, {"confidence": 0.95})
    assert (sure.rule_id, sure.team) == ("default.approval", "ops")
    assert policy.evaluate("wire_money", {}).action == "deny"
    manager = policy.takeover({"asked_for_manager": True})
    assert manager is not None
    assert (manager.rule_id, manager.team) == ("frozen", "support-agents")
    assert policy.takeover({"asked_for_manager": False}) is None
    assert [r.line for r in policy.rules] == [4, 11, 16]


def test_a_rule_s_why_opens_the_reason_its_requests_give() -> None:
    policy = parse_policy(GOOD)

    manager = policy.takeover({"asked_for_manager": True})
    assert manager is not None
    assert manager.why == "The customer asked for a manager"  # as written, its stop added below
    assert manager.handing_over(before="the refund agent may call issue_refund") == (
        "The customer asked for a manager. This case goes to a person before the refund agent "
        "may call issue_refund."
    )
    # a rule that does not say why is named by its id, as before
    big = policy.evaluate("issue_refund", {"amount": 150}, {"confidence": 0.5})
    assert big.why is None
    assert approval_reason("issue_refund", big) == (
        "Policy rule big.refund needs approval by 2 approvers from finance."
    )
    said = big.model_copy(update={"why": "Large refunds are checked twice!"})
    assert approval_reason("issue_refund", said) == (
        "Large refunds are checked twice! It needs approval by 2 approvers from finance."
    )
    takeover = manager.model_copy(update={"why": None})
    assert takeover.handing_over() == "Policy rule frozen hands this case to a person."
    # every takeover rule of the shipped file says why in words
    shipped = load_policy(POLICIES)
    assert all(r.why for r in shipped.rules if r.action == "takeover")
    # and a why of nothing but blanks is none
    blank = GOOD.replace("why: The customer asked for a manager", 'why: "   "')
    assert parse_policy(blank).rules[1].why is None


@pytest.mark.parametrize(
    ("text", "line", "loc", "words"),
    [
        (
            "rules:\n  - id: a\n    tool: t\n    action: aprove\n",
            4,
            ["rules", "0", "action"],
            "not an action",
        ),
        (
            "rules:\n  - id: a\n    tool: t\n    when: amount <<< 3\n    action: auto\n",
            4,
            ["rules", "0", "when"],
            "not a condition",
        ),
        (
            "rules:\n  - id: a\n    tool: t\n    action: auto\n    deadline: soon\n",
            5,
            ["rules", "0", "deadline"],
            "not a duration",
        ),
        (
            "rules:\n  - id: a\n    tool: t\n    action: auto\n    colour: red\n",
            5,
            ["rules", "0", "colour"],
            "Extra inputs",
        ),
        ("rules:\n  - id: a\n    action: auto\n", 2, ["rules", "0", "tool"], "Field required"),
        (
            "rules:\n  - id: a\n    tool: t\n    action: auto\n"
            "  - id: a\n    tool: u\n    action: deny\n",
            5,
            ["rules", "1", "id"],
            "already used by the rule on line 2",
        ),
        ("rules: [\n  - id\n", 2, [], "not YAML"),
        ("- just\n- a list\n", 1, [], "a mapping with"),
        ("version: 2\nrules: []\n", 1, ["version"], "Input should be 1"),
    ],
)
def test_an_invalid_file_names_the_line_of_each_mistake(
    text: str, line: int, loc: list[str], words: str
) -> None:
    with pytest.raises(InvalidPolicy) as caught:
        parse_policy(text, "p.yaml")

    first = caught.value.errors[0]
    assert (first["line"], first["loc"]) == (line, loc)
    assert words in first["msg"] or words in str(caught.value)
    assert str(caught.value).startswith(f"p.yaml:{line}:")


def test_every_mistake_is_reported_not_only_the_first() -> None:
    text = (
        "rules:\n  - id: a\n    tool: t\n    action: nope\n"
        "  - id: b\n    tool: t\n    when: x ~ 1\n    action: auto\n"
    )

    with pytest.raises(InvalidPolicy) as caught:
        parse_policy(text)

    assert [e["line"] for e in caught.value.errors] == [4, 7]


@pytest.mark.parametrize(
    ("value", "seconds"),
    [(90, 90.0), ("90s", 90.0), ("15m", 900.0), ("4h", 14400.0), ("2d", 172800.0)],
)
def test_durations(value: object, seconds: float) -> None:
    assert parse_duration(value) == seconds


@pytest.mark.parametrize("value", ["soon", "-1h", 0, True, "4w"])
def test_bad_durations(value: object) -> None:
    with pytest.raises(ValueError, match="duration"):
        parse_duration(value)


def _check(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "baton", "policies", "check", str(path)],
        capture_output=True,
        text=True,
        env={**os.environ, "BATON_DATABASE_URL": "sqlite:///unused.db"},
        timeout=60,
        check=False,
    )


def test_policies_check_exits_0_with_a_summary(tmp_path: Path) -> None:
    good = tmp_path / "good.yaml"
    good.write_text(GOOD)

    done = _check(good)

    assert done.returncode == 0, done.stderr
    assert "ok, 3 rules for *, issue_refund, wire_money; default team ops" in done.stdout
    assert (
        "line 4: big.refund: issue_refund when amount >= 100 and state.confidence < 0.9"
        in done.stdout
    )
    assert (
        "line 11: frozen: * when state.asked_for_manager == True -> takeover(support-agents)\n"
        "    why: The customer asked for a manager\n" in done.stdout
    )


def test_policies_check_exits_2_with_line_numbered_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("rules:\n  - id: a\n    tool: t\n    action: aprove(team)\n")

    done = _check(bad)

    assert done.returncode == 2
    assert f"{bad}:4: rules.0.action" in done.stderr
    assert "line 4: rules.0.action: 'aprove(team)' is not an action" in done.stderr
    missing = _check(tmp_path / "missing.yaml")
    assert missing.returncode == 2
    assert "cannot read policies file" in missing.stderr
