"""Declarative rules at the tool boundary: which calls run, which need a person, which are refused.

A rule matches a tool and conditions on its typed arguments and on the run's state; the first
matching rule decides. A call no rule matches needs an approval by the policy's default team: the
policy fails closed. Rules come from one YAML file (`BATON_POLICIES`, by default the
shipped workflows' `policies.yaml`), validated when Baton starts; `load_policy` names the line of
every mistake.

A rule also says what a person's edit of the call it asks about may change: `editable` (the only
arguments an approver may change; unset: any), `keep` (arguments no edit may change) and
`invariants` (checks the edited call must pass, by the names workflows register them under:
`baton.api.invariant`). `edit_refusals` and `consequences` are what the request service tells a
person before an edit is recorded.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    field_validator,
    model_validator,
)

from baton.errors import InvalidPolicy
from human.kinds import Escalation, Priority
from human.text import with_stop

Action = Literal["auto", "approval", "deny", "takeover"]

STATE_PREFIX = "state."
"""Conditions on `state.<name>` read the run's state, not the call's arguments."""

DEFAULT_RULE = "default.approval"
"""The rule of a call no rule of the policies file matches: approval by the default team."""

AGENT_REPLY = "agent_reply"
"""The pseudo-tool an agent's reply to the user is checked as (only a takeover applies)."""

_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "==": operator.eq,
    "!=": operator.ne,
}


class Condition(BaseModel):
    """`arguments[arg] <op> value`, or `state[name] <op> value` for `arg="state.<name>"`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    arg: str
    op: Literal["<", "<=", ">", ">=", "==", "!="]
    value: bool | int | float | str

    def holds(self, arguments: Mapping[str, Any], state: Mapping[str, Any] | None = None) -> bool:
        """Whether the condition is true of these arguments and state (missing: false)."""
        if self.arg.startswith(STATE_PREFIX):
            source: Mapping[str, Any] = state or {}
            name = self.arg.removeprefix(STATE_PREFIX)
        else:
            source, name = arguments, self.arg
        if name not in source:
            return False
        try:
            return _OPS[self.op](source[name], self.value)
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
    deadline_s: float | None = Field(None, gt=0)
    escalation: tuple[Escalation, ...] = ()
    editable: tuple[str, ...] | None = Field(
        None, description="The only arguments an edit may change (None: any of them)."
    )
    keep: tuple[str, ...] = Field((), description="Arguments no edit may change.")
    invariants: tuple[str, ...] = Field(
        (), description="Registered checks an edited call must pass (`baton.api.invariant`)."
    )
    standing: bool = Field(
        False,
        description="A person approving a call may let the rest of the run's calls this rule "
        "decides run without asking again (an approval rule of one approver only).",
    )
    why: str | None = Field(
        None,
        description="Why the rule asks a person, in the words of those who answer: the first "
        "words of the reason its requests give (else they name the rule).",
    )
    line: int | None = Field(None, description="Where the rule is written, for messages.")

    def fixed(self, argument: str) -> str | None:
        """Why an edit may not change `argument` under this rule, or None if it may."""
        if argument in self.keep:
            return f"rule {self.id} keeps {argument} as the agent proposed it"
        if self.editable is not None and argument not in self.editable:
            allowed = ", ".join(self.editable) if self.editable else "no argument"
            return f"rule {self.id} lets an approver change only {allowed}"
        return None

    def matches(
        self, tool: str, arguments: Mapping[str, Any], state: Mapping[str, Any] | None = None
    ) -> bool:
        """Whether this rule speaks for this call."""
        return self.tool in (tool, "*") and all(c.holds(arguments, state) for c in self.when)


class Decision(BaseModel):
    """What the policy decided for one call, and by which rule."""

    model_config = ConfigDict(frozen=True)

    action: Action
    rule_id: str
    team: str | None = None
    approvals_required: int = 1
    expires_in_s: float | None = None
    escalation: tuple[Escalation, ...] = ()
    standing: bool = False
    """The rule lets a person's approval stand for the run's later calls it decides (`Rule`)."""
    why: str | None = None
    """Why the rule asks a person, in words (`Rule.why`): None when its file does not say."""

    def said_why(self) -> str | None:
        """The rule's `why` as a sentence (its closing stop added), or None."""
        if not self.why:
            return None
        return with_stop(self.why)

    def handing_over(self, before: str = "") -> str:
        """Why a takeover hands the case to a person (`before` what), for the request's reason.

        `The customer asked for a manager. This case goes to a person before …`, from the rule's
        `why`; else the rule by its id: `Policy rule takeover.manager hands this case to …`.
        """
        until = f" before {before}" if before else ""
        said = self.said_why()
        if said is None:
            return f"Policy rule {self.rule_id} hands this case to a person{until}."
        return f"{said} This case goes to a person{until}."

    @property
    def strictness(self) -> int:
        """An order on decisions: auto < one approval < two approvals < takeover < deny."""
        return {"auto": 0, "approval": self.approvals_required, "takeover": 90, "deny": 100}[
            self.action
        ]


@dataclass(frozen=True)
class EditedCall:
    """What an invariant sees of an edit: the tool, its arguments before and after, the case.

    `context` is what the request showed people (the workflow's case: a customer, an order);
    `run_input` the input the run started with.
    """

    tool: str
    before: Mapping[str, Any]
    after: Mapping[str, Any]
    context: Mapping[str, Any] = field(default_factory=dict)
    run_input: Mapping[str, Any] = field(default_factory=dict)


Invariant = Callable[[EditedCall], Awaitable[str | None]]
"""A check an edited call must pass: None when it holds, else why not, in one sentence."""


def consequences(before: Decision, after: Decision) -> list[str]:
    """What an edit leads to, in words: `after` is `Policy.recheck_edit`'s decision.

    Args:
        before: The decision the person answers (the request's rule, team and approvers).
        after: The re-check of the edited call.

    Returns:
        Sentences for the edit's preview, the first one saying what happens to the call.
    """
    rule = after.rule_id
    if after.action == "deny":
        return [f"Rule {rule} refuses the changed call: it will not run, and the agent is told."]
    if after.action == "takeover":
        return [
            f"Rule {rule} applies to the changed call: it does not run; the case goes to "
            f"{after.team} for a person to take over."
        ]
    if after.action == "approval":
        who = (
            f"{after.approvals_required} different approvers from {after.team}"
            if after.approvals_required > 1
            else f"an approver from {after.team}"
        )
        return [
            f"Rule {rule} applies to the changed call: it now needs {who}.",
            f"Your edit does not run yet: it goes to {after.team} as a new request.",
        ]
    if rule == before.rule_id:
        return [f"Rule {rule} still applies: your approval is enough; the changed call runs."]
    return [
        f"Rule {rule} applies to the changed call instead of {before.rule_id}: "
        "no further approval is needed; the changed call runs."
    ]


class Route(BaseModel):
    """Where a workflow's typed request goes and how it reads (an `input` request's routing).

    Any field left unset is taken from the route beneath: a policies file's `requests:` rule over
    the workflow's registration (`register(..., routes=...)`), over the request type's own hints
    (a `__baton__` mapping on its class), over Baton's defaults. `title` and `reason` may name
    the request's fields as `{field}` (`{order.id}` reaches into nested ones) and `{executor}`.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    team: str | None = None
    title: str | None = None
    reason: str | None = None
    priority: Priority | None = None
    deadline_s: float | None = Field(None, gt=0)
    escalation: tuple[Escalation, ...] = ()

    def over(self, base: Route) -> Route:
        """This route, with what it leaves unset taken from `base`."""
        mine = self.model_dump(exclude_unset=True, exclude_defaults=True)
        return base.model_copy(update={k: getattr(self, k) for k in mine if k in _ROUTE_FIELDS})


_ROUTE_FIELDS = frozenset(Route.model_fields)


class RequestRule(Route):
    """A policies file's route for the typed requests it matches (unset matchers match all)."""

    id: str
    workflow: str | None = None
    executor: str | None = None
    request: str | None = Field(
        None, description="The request data's type: its class name or `module:Qualname`."
    )
    line: int | None = None

    def matches(self, workflow: str, executor: str | None, request_type: str) -> bool:
        """Whether this rule speaks for a request of this type, executor and workflow."""
        name = request_type.rpartition(":")[2].rpartition(".")[2]
        return (
            self.workflow in (None, "*", workflow)
            and self.executor in (None, "*", executor)
            and self.request in (None, "*", request_type, name)
        )


class Policy:
    """An ordered list of rules, evaluated first match wins."""

    def __init__(
        self,
        rules: Sequence[Rule],
        *,
        default_team: str = "support-leads",
        requests: Sequence[RequestRule] = (),
    ) -> None:
        self.rules = tuple(rules)
        self.default_team = default_team
        self.requests = tuple(requests)
        self.standing = any(r.standing for r in self.rules)
        """Whether a rule lets an approval stand for a run's later calls (a drive then reads
        the run's conversation, where the approvals let stand are recorded)."""

    def rule(self, rule_id: str | None) -> Rule | None:
        """The rule of this id, if the policy has one."""
        return next((r for r in self.rules if r.id == rule_id), None)

    def invariant_names(self) -> dict[str, tuple[int, int | None]]:
        """Every invariant the rules name, with the index and line of the first rule naming it."""
        named: dict[str, tuple[int, int | None]] = {}
        for i, rule in enumerate(self.rules):
            for name in rule.invariants:
                named.setdefault(name, (i, rule.line))
        return named

    def check_invariants(self, known: Collection[str], name: str = "policies file") -> None:
        """Raise `InvalidPolicy` naming the line of each invariant no workflow registered."""
        errors = [
            {
                "loc": ["rules", str(i), "invariants"],
                "line": line,
                "msg": f"no workflow registers an invariant {missing!r} "
                f"(registered: {', '.join(sorted(known)) or 'none'})",
            }
            for missing, (i, line) in self.invariant_names().items()
            if missing not in known
        ]
        if errors:
            raise InvalidPolicy(_message(name, errors), errors)

    def edit_refusals(
        self,
        rule_id: str | None,
        tool: str,
        before: Mapping[str, Any],
        after: Mapping[str, Any],
    ) -> list[tuple[str, str]]:
        """`(argument, why)` for each argument an edit changed that its rule does not let it.

        The rule is the one that asked for the approval (`rule_id`); a request no rule of this
        policy asked (the default, a rule since removed) is judged by the rule the proposed call
        meets now.
        """
        rule = self.asking_rule(rule_id, tool, before)
        if rule is None:
            return []
        changed = sorted(k for k in {*before, *after} if before.get(k) != after.get(k))
        return [(arg, why) for arg in changed if (why := rule.fixed(arg)) is not None]

    def invariants_of(
        self, rule_id: str | None, tool: str, before: Mapping[str, Any], after: Mapping[str, Any]
    ) -> tuple[str, ...]:
        """The invariants an edited call must keep: its asking rule's, then its new rule's."""
        asking = self.asking_rule(rule_id, tool, before)
        now = self._rule_for(tool, after)
        names = [*(asking.invariants if asking else ()), *(now.invariants if now else ())]
        return tuple(dict.fromkeys(names))

    def asking_rule(
        self, rule_id: str | None, tool: str, arguments: Mapping[str, Any]
    ) -> Rule | None:
        """The rule a request was asked by: by its id, else the one its proposed call meets."""
        return self.rule(rule_id) or self._rule_for(tool, arguments)

    def _rule_for(self, tool: str, arguments: Mapping[str, Any]) -> Rule | None:
        """The first rule for this tool (by name, not `*`) whose argument conditions hold."""
        return next(
            (
                r
                for r in self.rules
                if r.tool == tool
                and all(c.holds(arguments) for c in r.when if not c.arg.startswith(STATE_PREFIX))
            ),
            None,
        )

    def route(self, workflow: str, executor: str | None, request_type: str) -> RequestRule | None:
        """The first `requests:` rule that matches a typed request, if any."""
        return next((r for r in self.requests if r.matches(workflow, executor, request_type)), None)

    def evaluate(
        self, tool: str, arguments: Mapping[str, Any], state: Mapping[str, Any] | None = None
    ) -> Decision:
        """Decide one call, given the run's state (confidence, failed attempts, ...)."""
        for rule in self.rules:
            if rule.matches(tool, arguments, state):
                team = rule.team or (None if rule.action == "auto" else self.default_team)
                return Decision(
                    action=rule.action,
                    rule_id=rule.id,
                    team=team,
                    approvals_required=rule.approvals,
                    expires_in_s=rule.deadline_s,
                    escalation=rule.escalation,
                    standing=rule.standing,
                    why=rule.why,
                )
        return Decision(action="approval", rule_id=DEFAULT_RULE, team=self.default_team)

    def takeover(self, state: Mapping[str, Any]) -> Decision | None:
        """The takeover an agent's reply to the user triggers in this state, if any.

        The reply is evaluated as the pseudo-tool `agent_reply` (rules for `*` match it); only
        a takeover applies, since a reply is not a call anyone approves.
        """
        decision = self.evaluate(AGENT_REPLY, {}, state)
        return decision if decision.action == "takeover" else None

    def recheck_edit(
        self,
        before: Decision,
        tool: str,
        arguments: Mapping[str, Any],
        state: Mapping[str, Any] | None = None,
    ) -> Decision:
        """Decide edited arguments: the edit stands if it needs no more than the responder gave.

        Returns `auto` (rule of the edit) when the edit may run now; otherwise the stricter decision
        the edited call needs. One person's edit cannot satisfy a rule that needs two approvers.
        """
        after = self.evaluate(tool, arguments, state)
        if after.action in ("deny", "takeover"):
            return after
        if after.action == "approval" and (
            after.strictness > before.strictness or after.approvals_required > 1
        ):
            return after
        return Decision(action="auto", rule_id=after.rule_id, team=after.team)

    def summary(self) -> str:
        """One line: how many rules, for which tools."""
        tools = sorted({r.tool for r in self.rules})
        routes = f"; {len(self.requests)} request routes" if self.requests else ""
        return (
            f"{len(self.rules)} rules for {', '.join(tools)}{routes}; "
            f"default team {self.default_team}"
        )


# the rules file -----------------------------------------------------------------------------

_CONDITION = re.compile(r"^\s*([A-Za-z_][\w.]*)\s*(<=|>=|==|!=|<|>)\s*([^<>=!\s].*?)\s*$")
_ACTION = re.compile(
    r"^\s*(?:(auto|deny)|(approval|takeover)\s*(?:\(\s*([\w.-]+)\s*"
    r"(?:,\s*approvals\s*=\s*(\d+)\s*)?\))?)\s*$"
)
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$")
_UNIT_S = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


_Name = Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][\w.-]*$", max_length=100)]
"""An argument's or an invariant's name in a rule."""


def parse_duration(value: Any) -> float:
    """Seconds of `90`, `"90s"`, `"15m"`, `"4h"` or `"2d"`."""
    if isinstance(value, bool):
        raise ValueError("a duration is a number of seconds or like 90s, 15m, 4h, 2d")
    if isinstance(value, int | float):
        seconds = float(value)
    else:
        found = _DURATION.match(str(value))
        if not found:
            raise ValueError(f"{value!r} is not a duration (like 90s, 15m, 4h, 2d)")
        seconds = float(found[1]) * _UNIT_S[found[2]]
    if seconds <= 0:
        raise ValueError("a duration must be more than zero")
    return seconds


def parse_condition(text: str) -> Condition:
    """`"amount < 50"`, `"state.confidence < 0.65"`, `"state.asked_for_manager == true"`."""
    found = _CONDITION.match(text)
    if not found:
        raise ValueError(
            f"{text!r} is not a condition: write `<argument> <op> <value>` (or `state.<name>`), "
            "op one of < <= > >= == !="
        )
    literal = yaml.safe_load(found[3])
    if not isinstance(literal, bool | int | float | str):
        raise ValueError(f"{found[3]!r} is not a number, true/false or a string")
    return Condition.model_validate({"arg": found[1], "op": found[2], "value": literal})


class _EscalationSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    after: float
    team: str | None = None
    priority: Priority | None = None
    deadline: float | None = None

    @field_validator("after", "deadline", mode="before")
    @classmethod
    def _durations(cls, value: Any) -> float | None:
        return None if value is None else parse_duration(value)


class _RuleSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    tool: str = Field(min_length=1)
    when: list[Condition] = Field(default_factory=list)
    action: str
    deadline: float | None = None
    escalation: list[_EscalationSpec] = Field(default_factory=list)
    editable: list[_Name] | None = None
    keep: list[_Name] = Field(default_factory=list)
    invariants: list[_Name] = Field(default_factory=list)
    standing: bool = False
    why: str | None = Field(None, min_length=1, max_length=500)

    @field_validator("editable", "keep", "invariants", mode="before")
    @classmethod
    def _names(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    @model_validator(mode="after")
    def _edit_rules(self) -> _RuleSpec:
        both = sorted(set(self.editable or ()) & set(self.keep))
        if both:
            raise ValueError(f"{', '.join(both)} cannot be both editable and kept")
        found = _ACTION.match(self.action)
        edits = self.editable is not None or self.keep or self.invariants
        if edits and (found is None or found[2] != "approval"):
            raise ValueError(
                "editable, keep and invariants say what an approver's edit may change: "
                "only an approval rule has them"
            )
        if self.standing and (found is None or found[2] != "approval" or int(found[4] or 1) > 1):
            raise ValueError(
                "standing lets one person's approval stand for the run's later calls: only an "
                "approval rule of one approver has it"
            )
        return self

    @field_validator("when", mode="before")
    @classmethod
    def _conditions(cls, value: Any) -> Any:
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list):
            raise ValueError("when is a condition or a list of conditions")
        return [parse_condition(v) if isinstance(v, str) else v for v in items]

    @field_validator("action")
    @classmethod
    def _action(cls, value: str) -> str:
        if not _ACTION.match(value):
            raise ValueError(
                f"{value!r} is not an action: auto | deny | approval(team) | "
                "approval(team, approvals=n) | takeover(team)"
            )
        return value

    @field_validator("deadline", mode="before")
    @classmethod
    def _deadline(cls, value: Any) -> float | None:
        return None if value is None else parse_duration(value)

    def rule(self, line: int) -> Rule:
        found = _ACTION.match(self.action)
        assert found is not None
        action = found[1] or found[2]
        return Rule(
            id=self.id,
            tool=self.tool,
            when=tuple(self.when),
            action=action,
            team=found[3],
            approvals=int(found[4] or 1),
            deadline_s=self.deadline,
            escalation=_ladder(self.escalation),
            editable=None if self.editable is None else tuple(self.editable),
            keep=tuple(self.keep),
            invariants=tuple(self.invariants),
            standing=self.standing,
            why=(self.why or "").strip() or None,
            line=line,
        )


class _RequestSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    workflow: str | None = None
    executor: str | None = None
    request: str | None = None
    team: str | None = Field(None, min_length=1)
    title: str | None = Field(None, min_length=1)
    reason: str | None = Field(None, min_length=1)
    priority: Priority | None = None
    deadline: float | None = None
    escalation: list[_EscalationSpec] = Field(default_factory=list)

    @field_validator("deadline", mode="before")
    @classmethod
    def _deadline(cls, value: Any) -> float | None:
        return None if value is None else parse_duration(value)

    def rule(self, line: int) -> RequestRule:
        return RequestRule.model_validate(
            {
                **self.model_dump(exclude={"deadline", "escalation"}, exclude_none=True),
                **({"deadline_s": self.deadline} if self.deadline else {}),
                **({"escalation": _ladder(self.escalation)} if self.escalation else {}),
                "line": line,
            }
        )


def _ladder(specs: Sequence[_EscalationSpec]) -> tuple[Escalation, ...]:
    return tuple(
        Escalation(after_s=e.after, team=e.team, priority=e.priority, expires_in_s=e.deadline)
        for e in specs
    )


class _PolicyFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: Literal[1] = 1
    default_team: str = Field("support-leads", min_length=1)
    rules: list[_RuleSpec] = Field(default_factory=list)
    requests: list[_RequestSpec] = Field(default_factory=list)


def load_policy(path: str | Path) -> Policy:
    """The policy in the file at `path`, or `InvalidPolicy` naming the lines of its mistakes."""
    where = Path(path)
    try:
        text = where.read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidPolicy(
            f"cannot read policies file {where}: {exc.strerror}",
            [{"loc": [str(where)], "line": None, "msg": str(exc.strerror)}],
        ) from exc
    return parse_policy(text, str(where))


def parse_policy(text: str, name: str = "policies.yaml") -> Policy:
    """Parse and validate a rules file's text; errors carry `line` (1-based) and `loc`."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc)
        raise InvalidPolicy(
            f"{name}:{line}: not YAML: {problem}", [{"loc": [], "line": line, "msg": problem}]
        ) from exc
    if not isinstance(data, dict) or root is None:
        raise InvalidPolicy(
            f"{name}:1: a policies file is a mapping with `rules:`",
            [{"loc": [], "line": 1, "msg": "expected a mapping with rules"}],
        )
    try:
        spec = _PolicyFile.model_validate(data)
    except ValidationError as exc:
        errors = [
            {
                "loc": [str(p) for p in e["loc"]],
                "line": _line_of(root, e["loc"]),
                "msg": e["msg"].removeprefix("Value error, "),
            }
            for e in exc.errors(include_url=False)
        ]
        raise InvalidPolicy(_message(name, errors), errors) from exc
    rules = [r.rule(_line_of(root, ("rules", i))) for i, r in enumerate(spec.rules)]
    routes = [r.rule(_line_of(root, ("requests", i))) for i, r in enumerate(spec.requests)]
    seen: dict[str, int] = {}
    errors = []
    sections: tuple[tuple[str, Sequence[Rule | RequestRule]], ...] = (
        ("rules", rules),
        ("requests", routes),
    )
    for section, found in sections:
        for i, rule in enumerate(found):
            if rule.id in seen:
                errors.append(
                    {
                        "loc": [section, str(i), "id"],
                        "line": _line_of(root, (section, i, "id")),
                        "msg": f"rule id {rule.id!r} is already used by the rule on line "
                        f"{seen[rule.id]}",
                    }
                )
            seen.setdefault(rule.id, rule.line or 0)
    if errors:
        raise InvalidPolicy(_message(name, errors), errors)
    return Policy(rules, default_team=spec.default_team, requests=routes)


def _message(name: str, errors: list[dict[str, Any]]) -> str:
    first = errors[0]
    where = ".".join(first["loc"]) or "file"
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{name}:{first['line']}: {where}: {first['msg']}{more}"


def _line_of(node: yaml.Node, loc: Sequence[int | str]) -> int:
    """The 1-based line of the YAML node at `loc`, or of its nearest ancestor that exists."""
    for part in loc:
        child: yaml.Node | None = None
        if isinstance(node, yaml.MappingNode):
            child = next((v for k, v in node.value if k.value == str(part)), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            child = node.value[part] if part < len(node.value) else None
        if child is None:
            continue  # pydantic's own loc parts (a union's member name) are not in the file
        node = child
    return int(node.start_mark.line) + 1
