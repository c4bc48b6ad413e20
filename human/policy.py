"""Declarative rules at the tool boundary: which calls run, which need a person, which are refused.

A rule matches a tool and conditions on its typed arguments; the first matching rule decides. A call
no rule matches needs an approval by the policy's default team: the policy fails closed.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Action = Literal["auto", "approval", "deny", "takeover"]

_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "==": operator.eq,
    "!=": operator.ne,
}


class Condition(BaseModel):
    """`arguments[arg] <op> value`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    arg: str
    op: Literal["<", "<=", ">", ">=", "==", "!="]
    value: float | int | str | bool

    def holds(self, arguments: Mapping[str, Any]) -> bool:
        """Whether the condition is true of these arguments (a missing argument: false)."""
        if self.arg not in arguments:
            return False
        try:
            return _OPS[self.op](arguments[self.arg], self.value)
        except TypeError:
            return False


class Rule(BaseModel):
    """One line of policy."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    tool: str
    when: tuple[Condition, ...] = ()
    action: Action
    team: str | None = None
    approvals: int = Field(1, ge=1, le=5)

    def matches(self, tool: str, arguments: Mapping[str, Any]) -> bool:
        """Whether this rule speaks for this call."""
        return self.tool in (tool, "*") and all(c.holds(arguments) for c in self.when)


class Decision(BaseModel):
    """What the policy decided for one call, and by which rule."""

    model_config = ConfigDict(frozen=True)

    action: Action
    rule_id: str
    team: str | None = None
    approvals_required: int = 1

    @property
    def strictness(self) -> int:
        """An order on decisions: auto < one approval < two approvals < takeover < deny."""
        return {"auto": 0, "approval": self.approvals_required, "takeover": 90, "deny": 100}[
            self.action
        ]


class Policy:
    """An ordered list of rules, evaluated first match wins."""

    def __init__(self, rules: Sequence[Rule], *, default_team: str = "support-leads") -> None:
        self.rules = tuple(rules)
        self.default_team = default_team

    def evaluate(self, tool: str, arguments: Mapping[str, Any]) -> Decision:
        """Decide one call."""
        for rule in self.rules:
            if rule.matches(tool, arguments):
                team = rule.team or (None if rule.action == "auto" else self.default_team)
                return Decision(
                    action=rule.action,
                    rule_id=rule.id,
                    team=team,
                    approvals_required=rule.approvals,
                )
        return Decision(action="approval", rule_id="default.approval", team=self.default_team)

    def recheck_edit(self, before: Decision, tool: str, arguments: Mapping[str, Any]) -> Decision:
        """Decide edited arguments: the edit stands if it needs no more than the responder gave.

        Returns `auto` (rule of the edit) when the edit may run now; otherwise the stricter decision
        the edited call needs. One person's edit cannot satisfy a rule that needs two approvers.
        """
        after = self.evaluate(tool, arguments)
        if after.action in ("deny", "takeover"):
            return after
        if after.action == "approval" and (
            after.strictness > before.strictness or after.approvals_required > 1
        ):
            return after
        return Decision(action="auto", rule_id=after.rule_id, team=after.team)


DEFAULT_RULES: tuple[Rule, ...] = (
    Rule(
        id="refund.small",
        tool="issue_refund",
        when=(Condition(arg="amount", op="<", value=50),),
        action="auto",
    ),
    Rule(
        id="refund.medium",
        tool="issue_refund",
        when=(Condition(arg="amount", op="<", value=1000),),
        action="approval",
        team="support-leads",
    ),
    Rule(id="refund.large", tool="issue_refund", action="approval", team="finance", approvals=2),
    Rule(id="account.delete", tool="delete_account", action="approval", team="support-leads"),
)


def default_policy() -> Policy:
    """The demo's shipped rules (SPEC §3)."""
    return Policy(DEFAULT_RULES)
