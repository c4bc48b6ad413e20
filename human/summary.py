"""A request and a run in plain words, derived from their records and nothing else.

What a person decides on (the key arguments of a proposed call, money with its currency), what
each choice does, who approved so far, and what a run's output says happened to the business
(`outcome_of`). Generic over workflows: it reads a request's kind, proposed action, context and
answers, and a run's output; it names no workflow's business.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from human.attachments import attachment_text
from human.records import AuditEvent, HumanRequest, Run
from human.requests import OUTCOMES
from human.routing import NextEscalation

MONEY_KEYS: Final = frozenset({"amount", "total", "price", "cost", "sum", "value"})
"""Argument names whose numbers are money, shown with two decimals and the currency found (a
whole number without a currency is left as it is: `money_text`)."""

GOOD_OUTCOMES: Final = frozenset(
    {"approved", "completed", "done", "ordered", "paid", "refunded", "resolved", "sent", "shipped"}
)
BAD_OUTCOMES: Final = frozenset(
    {"cancelled", "declined", "denied", "expired", "failed", "refused", "rejected", "returned"}
)


def reviewed(request: HumanRequest) -> str:
    """What a review's draft is, in a word: `draft`, an agent's `reply`, a `plan`."""
    what = request.payload.get("what") if request.kind == "review" else None
    return what if isinstance(what, str) and what.strip() else "draft"


def humanize(key: str) -> str:
    """A field name as words: `order_id` -> `order id`."""
    return str(key).replace("_", " ").replace(".", " ").strip()


def currency_of(request: HumanRequest) -> str | None:
    """The one currency a request's arguments or context name (a record's too), if just one."""
    found: set[str] = set()
    arguments = (request.proposed_action or {}).get("arguments") or {}
    for source in (arguments, request.context, *request.context.values()):
        if isinstance(source, dict) and isinstance(source.get("currency"), str):
            found.add(source["currency"])
    return found.pop() if len(found) == 1 else None


def one_currency(requests: Iterable[HumanRequest]) -> str | None:
    """The one currency the requests name (`currency_of`; a run's), if just one."""
    found = {currency_of(r) for r in requests} - {None}
    return found.pop() if len(found) == 1 else None


def money_text(key: Any, value: Any, currency: str | None = None) -> str | None:
    """A number under a money name (`MONEY_KEYS`) as money: `300.00 EUR`; anything else None.

    A whole number (an `int`) with no currency known is left alone: nothing says it is money (an
    `amount: int` of GPUs is four, not 4.00), as a workflow that types a price a `float` says.
    """
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    if str(key).lower() not in MONEY_KEYS or not math.isfinite(value):
        return None
    if isinstance(value, int) and not currency:
        return None
    return f"{value:.2f}" + (f" {currency}" if currency else "")


def with_attachments(text: str, attached: Sequence[str]) -> str:
    """Words, then what came with them, each named in brackets: `Chart: [an image (PNG, 9 KB)]`."""
    return " ".join([text.strip(), *(f"[{words}]" for words in attached)]).strip()


def without_data_uris(value: Any) -> Any:
    """`value` (JSON) with each data URI in it as words (`attachment_text`), for reading."""
    if isinstance(value, dict):
        return {k: without_data_uris(v) for k, v in value.items()}
    if isinstance(value, list):
        return [without_data_uris(v) for v in value]
    return attachment_text(value) or value


def shown_value(key: str, value: Any, currency: str | None = None) -> str:
    """One value as words: money with two decimals and its currency, lists joined."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if (money := money_text(key, value, currency)) is not None:
        return money
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, list):
        return ", ".join(shown_value(key, v, currency) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{humanize(k)} {shown_value(k, v, currency)}" for k, v in value.items())
    return attachment_text(value) or str(value)


def key_arguments(
    request: HumanRequest, *, most: int = 4, first: Collection[str] = ()
) -> list[tuple[str, str]]:
    """What the decision is about: the proposed call's arguments, else short facts of the context.

    Money comes with the currency the request names (`currency_of`). The facts named in `first`
    (what tells the request apart from others like it: `telling_apart`) come first, a fact of
    the context among them even beside a proposed call's arguments.
    """
    shown = _facts(request, context=bool(first))
    key = _facts(request)
    return sorted(
        (fact for fact in shown if fact in key or fact[0] in first),
        key=lambda fact: fact[0] not in first,
    )[:most]


def _facts(request: HumanRequest, *, context: bool = False) -> list[tuple[str, str]]:
    """A request's key facts, named in words, their values as shown.

    Its proposed call's arguments; else (or with `context`, after them) the short facts of its
    context that the arguments do not name.
    """
    currency = currency_of(request)
    arguments = (request.proposed_action or {}).get("arguments")
    items: list[tuple[str, Any]] = list(arguments.items()) if isinstance(arguments, dict) else []
    if context or not items:
        items += [
            (k, v)
            for k, v in request.context.items()
            if isinstance(v, int | float | str)
            and not isinstance(v, bool)
            and len(str(v)) <= 40
            and str(v).strip() != request.reason.strip()
            and k not in dict(items)
        ]
    return [(humanize(k), shown_value(k, v, currency)) for k, v in items if k != "currency"]


@dataclass(frozen=True)
class Apart:
    """What tells a request apart from the others of its title in a list (`telling_apart`).

    `facts`: the names of its key facts (in words, as `key_arguments` names them) whose values
    differ among them; `step`: the executor that asked, in words, when the executors differ;
    `twin`: another of them has the same key facts and was asked by the same executor, so only
    its run tells it apart.
    """

    facts: frozenset[str] = frozenset()
    step: str | None = None
    twin: bool = False

    def told(self, request: HumanRequest) -> list[tuple[str, str]]:
        """The step, the facts and, of a twin, the run that tell `request` apart, in words."""
        step = [("step", self.step)] if self.step else []
        run = [("run", request.run_id)] if self.twin else []
        facts = key_arguments(request, most=99, first=self.facts)
        return step + [f for f in facts if f[0] in self.facts] + run


def telling_apart(requests: Sequence[HumanRequest]) -> dict[str, Apart]:
    """For each request that shares its title with another of `requests`, what differs.

    A request whose title is its own in the list is not in the result.
    """
    by_title: dict[str, list[HumanRequest]] = {}
    for request in requests:
        by_title.setdefault(request.title, []).append(request)
    apart: dict[str, Apart] = {}
    for alike in by_title.values():
        if len(alike) < 2:
            continue
        facts = {r.id: dict(_facts(r, context=True)) for r in alike}
        names = {name for fact in facts.values() for name in fact}
        differ = frozenset(n for n in names if len({f.get(n) for f in facts.values()}) > 1)
        steps = len({r.executor_id for r in alike}) > 1
        for r in alike:
            twin = any(
                o.id != r.id and o.executor_id == r.executor_id and facts[o.id] == facts[r.id]
                for o in alike
            )
            step = humanize(r.executor_id) if steps and r.executor_id else None
            apart[r.id] = Apart(facts=differ, step=step, twin=twin)
    return apart


def approvers(request: HumanRequest) -> list[str]:
    """The different people who approved so far, in the order they did."""
    names: list[str] = []
    for answer in request.answers:
        if answer.decision == "approve" and answer.actor not in names:
            names.append(answer.actor)
    return names


def words(names: list[str]) -> str:
    """`a`, `a and b`, `a, b and c`."""
    if len(names) <= 1:
        return "".join(names)
    return f"{', '.join(names[:-1])} and {names[-1]}"


TAKEOVER_CHOICES: Final = {
    "resolve": "You have handled the case: your resolution and outcome are recorded "
    "and the agent stops working on it.",
    "return": "The agent takes the case back, with your guidance.",
}
"""What a takeover request's two choices do: the takeover a person gets by taking one over too."""


def taking_over(request: HumanRequest) -> dict[str, Any]:
    """What taking `request` over does, from its kind and proposed call, for whoever may do it.

    `does`: a line beside the choice; `steps`: what happens now and next, in order. Taken over,
    the request closes; the runtime asks its run a takeover assigned to that person, with the
    conversation (`executors.platform.adapters.take_over`), which they resolve or hand back: an
    approval or a review handed back is refused with their guidance, a question answered with it.
    """
    tool = (request.proposed_action or {}).get("tool")
    held, back = {
        "approval": (
            (f"{tool} is not run for it", f"; {tool} still does not run")
            if tool
            else ("the agent does not go ahead as it proposed", "; it does not go ahead")
        ),
        "review": (
            f"the {reviewed(request)} is not used as it is",
            f"; the {reviewed(request)} is not used",
        ),
        "question": ("nobody else can answer it", " as the answer to its question"),
    }.get(request.kind, ("nobody else can answer it", ""))
    resolve = TAKEOVER_CHOICES["resolve"].removeprefix("You have handled the case: ")
    return {
        "does": f"Deal with the case yourself instead of answering here: {held}, and it "
        "comes back to you alone, with the conversation so far.",
        "steps": [
            f"This request closes now: nobody of {request.team} can answer it any more"
            + ("." if held.startswith("nobody") else f", and {held}."),
            "A new request comes to you alone, with the conversation so far.",
            f"There you either resolve it, saying what you did ({resolve[:-1]}), or return it "
            f"to the agent with guidance, which it is told{back}.",
        ],
    }


def choices(request: HumanRequest) -> dict[str, str]:
    """What each decision the request allows does, in one sentence each, from its record."""
    action = request.proposed_action or {}
    tool = action.get("tool")
    arguments = key_arguments(request, most=8) if tool else []
    call = (
        f"{tool} runs with {', '.join(f'{k} {v}' for k, v in arguments)}"
        if arguments
        else f"{tool} runs"
    )
    left = request.approvals_required - len(approvers(request))
    more = (
        f" once {left} more {'person' if left == 1 else 'people'} of {request.team} approved "
        f"({request.approvals_required} different people must)"
        if tool and request.approvals_required > 1 and left > 1
        else ""
    )
    by_kind: dict[str, dict[str, str]] = {
        "approval": {
            "approve": f"{call}{more}." if tool else "The agent goes ahead as it proposes.",
            "edit": (
                f"{tool} runs with the arguments as you change them, once the policy allows them."
                if tool
                else "The agent goes ahead with your changes."
            ),
            "reject": (
                f"{tool} does not run; the agent is told your reason."
                if tool
                else "The agent does not go ahead; it is told your reason."
            ),
        },
        "question": {"answer": "The agent receives your answer and carries on with it."},
        "review": {
            "approve": f"The {reviewed(request)} is used as it is.",
            "edit": f"Your edited version is used instead of the {reviewed(request)}.",
            "reject": f"The {reviewed(request)} is not used; the agent is told your reason.",
        },
        "takeover": dict(TAKEOVER_CHOICES),
        "input": {"answer": "The workflow receives your answer and carries on with it."},
    }
    said = by_kind.get(request.kind, {})
    told = request.payload.get(OUTCOMES)  # the workflow's own words, where it gave them
    if isinstance(told, dict):
        said = said | {d: t for d, t in told.items() if isinstance(t, str) and t.strip()}
    return {d: said.get(d, f"The workflow receives your {d}.") for d in request.allowed_decisions}


def edit_diff(request: HumanRequest, answer: dict[str, Any]) -> dict[str, Any] | None:
    """For an edit, `{"diff": {field: {"before": ..., "after": ...}}}` of what it changed."""
    if answer.get("decision") != "edit":
        return None
    if request.kind == "approval" and request.proposed_action:
        before = request.proposed_action.get("arguments") or {}
        after = answer.get("arguments") or {}
        keys = sorted(set(before) | set(after))
        changed = {
            k: {"before": before.get(k), "after": after.get(k)}
            for k in keys
            if before.get(k) != after.get(k)
        }
        return {"diff": {"arguments": changed}}
    if request.kind == "review":
        draft = request.payload.get("draft")
        return {"diff": {"content": {"before": draft, "after": answer.get("content")}}}
    return None


DEEDS: Final = {
    "approve": "Approved",
    "edit": "Approved with changes",
    "reject": "Rejected",
    "answer": "Answered",
    "resolve": "Resolved",
    "return": "Handed back to the agent",
    "takeover": "Taken over",
}
"""Each decision as what a person did, as the audit trail says it ("lee approved with changes")."""


def deed(decision: str | None) -> str:
    """A decision in words (`edit` is `Approved with changes`); an unknown one as `Answered`."""
    return DEEDS.get(str(decision), "Answered")


def changed_arguments(request: HumanRequest) -> list[str]:
    """What an edit changed in the proposed call: `amount 300.00 EUR → 250.00 EUR` each.

    From the recorded answer against the proposed action (`edit_diff`, as the audit event of
    the answer records it); nothing for any other answer.
    """
    diff = edit_diff(request, request.answer or {}) or {}
    changed = diff.get("diff", {}).get("arguments") or {}
    currency = currency_of(request)
    return [
        f"{humanize(key)} {shown_value(key, change['before'], currency)} → "
        f"{shown_value(key, change['after'], currency)}"
        for key, change in changed.items()
    ]


def decided_by(request: HumanRequest, at: str = "") -> str | None:
    """Who decided a closed request and what, from its answers; None when no person did.

    `Approved by fay and fin`, `Approved with changes by lee: amount 300.00 → 250.00`, as the
    audit trail says it; None for a request that expired, was cancelled or is still open.
    `at` follows the names (` at 10:02 CET`).
    """
    if request.status not in ("answered", "resumed"):
        return None
    decision = (request.answer or {}).get("decision")
    names = approvers(request) if decision == "approve" else []
    who = words(names) if len(names) > 1 else str(request.answered_by)
    changes = changed_arguments(request)
    return f"{deed(decision)} by {who}{at}" + (f": {'; '.join(changes)}" if changes else "")


def unsure_after(request: HumanRequest, run_events: Iterable[AuditEvent]) -> list[AuditEvent]:
    """The uncertain calls of its run that `request`'s approval let run.

    Those of its proposed tool, with the arguments it approved (an edit's own), said uncertain
    after it was answered: the call the approver allowed, which may or may not have acted.
    """
    answer = request.answer or {}
    action = request.proposed_action or {}
    decision = answer.get("decision")
    if decision not in ("approve", "edit") or request.answered_at is None:
        return []
    approved = answer.get("arguments") if decision == "edit" else action.get("arguments")
    return [
        e
        for e in uncertain_calls(run_events)
        if e.data.get("tool") == action.get("tool")
        and e.data.get("arguments") == approved
        and e.at >= request.answered_at
    ]


def snippet(text: str, length: int = 110) -> str:
    """The first line of `text`, cut at a word to about `length` characters."""
    line = " ".join(text.split())
    if len(line) <= length:
        return line
    return line[:length].rsplit(" ", 1)[0].rstrip(",;:.") + "…"


def _said(output: Any) -> str | None:
    """The `status` (or `outcome`) word of an output object, or of the last object of a list."""
    if isinstance(output, list):
        return next((w for w in map(_said, reversed(output)) if w), None)
    if not isinstance(output, dict):
        return None
    for key in ("status", "outcome"):
        said = output.get(key)
        if isinstance(said, str) and said.strip() and len(said) <= 40:
            return said.strip()
    return None


OUTPUT_SAID: Final = {
    "completed": "output",
    "failed": "output before it failed",
    "cancelled": "output before it was cancelled",
}
"""What a run's recorded `output` is, by its status: only a completed run's is its result."""


def output_said(run: Run) -> str:
    """What `run.output` is, in words: its output, what it output before it stopped, or so far.

    A waiting or running run keeps what its drives output up to its last pause; a failed or
    cancelled one keeps what it had output when it stopped, which is no result of the run.
    """
    return OUTPUT_SAID.get(run.status, "output so far")


def run_about(run: Run, first_request: HumanRequest | None = None, *, most: int = 3) -> str:
    """What a run is about, in a line: its input's first short values, else its first request.

    `order id A-1008 · amount 450.00 EUR · reason never arrived`: the input's values that are
    text, numbers or yes/no (a long text cut at a word), as the run was started with them (money
    with the input's own `currency`, said there and not again, else the one its first request
    names), a lone one without its name; a run started
    without any says its first request's title; else nothing.
    """
    values = run.input.items() if isinstance(run.input, dict) else [("", run.input)]
    own = dict(values).get("currency")
    currency = own if isinstance(own, str) else None
    if currency is None and first_request is not None:
        currency = currency_of(first_request)
    said = [
        (humanize(k), shown)
        for k, v in values
        if isinstance(v, str | int | float)
        and not (k == "currency" and v == currency)  # said with the money
        and (shown := snippet(shown_value(k, v, currency), 40))
    ]
    if len(said) == 1:  # a lone value needs no name
        return said[0][1]
    if said:
        return " · ".join(f"{k} {v}" for k, v in said[:most])
    return first_request.title if first_request is not None else ""


def uncertain_calls(events: Iterable[AuditEvent]) -> list[AuditEvent]:
    """A run's calls that may or may not have acted, from its audit events.

    Each `effect.uncertain` event (a call cut off while it ran, not run again), but for those of
    a call a later record says ran after all (`effect.executed`, same key).
    """
    events = list(events)
    ran = {e.data.get("idempotency_key") for e in events if e.type == "effect.executed"}
    return [
        e
        for e in events
        if e.type == "effect.uncertain" and e.data.get("idempotency_key") not in ran
    ]


def effects_of(events: Iterable[AuditEvent]) -> tuple[list[str], list[str], list[str]]:
    """The tools of a run's calls recorded as carried out, cut off, and failed.

    From its audit events, in order: `effect.executed`, `uncertain_calls`, and `effect.failed`
    (a plain tool that raised: it may have acted before it did).
    """
    events = list(events)
    executed = [str(e.data.get("tool")) for e in events if e.type == "effect.executed"]
    failed = [str(e.data.get("tool")) for e in events if e.type == "effect.failed"]
    return executed, [str(e.data.get("tool")) for e in uncertain_calls(events)], failed


def effects_said(
    executed: Sequence[str], uncertain: Sequence[str], failed: Sequence[str] = ()
) -> str:
    """What a run's calls did, as recorded (`effects_of`), in a sentence or two.

    "No tool call was carried out." only when none was recorded, carried out, cut off or failed.
    """
    if not executed and not uncertain and not failed:
        return "No tool call was carried out."
    said = []
    if executed:
        counts = Counter(executed)
        done = [f"{t} ({n} calls)" if n > 1 else t for t, n in counts.items()]
        said.append(f"Recorded as carried out: {words(done)}.")
    if uncertain:
        unsure = list(dict.fromkeys(uncertain))
        verb, which = ("was", "it") if len(unsure) == 1 else ("were", "each")
        said.append(
            f"{words(unsure)} {verb} cut off while running: {which} may or may not have acted."
        )
    if failed:
        raised = list(dict.fromkeys(failed))
        which = "it" if len(raised) == 1 else "each"
        said.append(
            f"{words(raised)} raised an error: {which} may have acted before it did, and was not "
            "run again."
        )
    return " ".join(said)


def outcome_of(
    run: Run,
    requests: Iterable[HumanRequest],
    effects: Iterable[str] = (),
    uncertain: Iterable[str] = (),
    failed: Iterable[str] = (),
) -> str | None:
    """What happened to the business when the run completed, from what was recorded.

    A call that may or may not have acted (`uncertain`, or `failed`: it raised, from
    `effects_of`) first, with the calls that ran (`send_note uncertain`, `send_note failed`):
    nothing else the run says settles it. Else the output's own
    `status` word when it has one (`ordered`, `rejected`, ...); else the last request's end when
    it stopped the work (`rejected`, `expired`); else the effects that ran (`issue_refund done`);
    else nothing. A run that has not completed has no outcome.
    """
    if run.status != "completed":
        return None
    done = list(dict.fromkeys(effects))
    unsure = list(dict.fromkeys(uncertain))
    raised = list(dict.fromkeys(failed))
    if unsure or raised:
        return ", ".join(
            [
                *(f"{tool} done" for tool in done),
                *(f"{t} uncertain" for t in unsure),
                *(f"{t} failed" for t in raised),
            ]
        )
    said = _said(run.output)
    if said:
        return said
    closed = sorted(
        (r for r in requests if r.answered_at or r.status == "expired"),
        key=lambda r: r.answered_at or r.expires_at or r.created_at,
    )
    if closed and not done:
        last = closed[-1]
        if last.status == "expired":
            return "expired"
        if (last.answer or {}).get("decision") == "reject":
            return "rejected"
    if done:
        return ", ".join(f"{tool} done" for tool in done)
    return None


def outcome_tone(outcome: str | None) -> str:
    """`good`, `bad` or `neutral`: how an outcome word reads (a rejection is not a success)."""
    if outcome is None:
        return "neutral"
    word = outcome.lower()
    if word.endswith((" uncertain", " failed")):
        return "bad"
    if word.endswith(" done"):
        return "good"
    if word in GOOD_OUTCOMES:
        return "good"
    if word in BAD_OUTCOMES:
        return "bad"
    return "neutral"


def escalation_target(step: NextEscalation) -> str:
    """Where an escalation takes a request, in a word or two: `managers`, `high priority`."""
    if step.team is not None:
        return step.team
    return f"{step.priority} priority" if step.priority else "escalation"


def escalation_text(step: NextEscalation) -> str:
    """What an escalation does to a request, in words.

    `goes to managers` (`at high priority`), or `becomes high priority` where the team stays.
    """
    if step.team is None:
        return f"becomes {step.priority} priority" if step.priority else "is escalated"
    return f"goes to {step.team}" + (f" at {step.priority} priority" if step.priority else "")
