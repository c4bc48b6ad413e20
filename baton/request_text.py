"""A request and a run as the CLI prints them, and an answer as typed after `--answer`.

The text says what is asked (title, reason, context field by field), and how to answer: for an
`input` request, what its answer must be in words (`human.answer_schema.describe`) with a value
that fits as an example; for the other kinds, the fields each decision takes.
"""

from __future__ import annotations

import json
import shlex
from typing import Any

import click

from human import summary
from human.answer_schema import answer_schema, describe, example, json_type, resolve
from human.kinds import KINDS
from human.records import OPEN_STATUSES, HumanRequest, Run


def request_text(request: HumanRequest) -> list[str]:
    """The lines `baton requests show` prints for `request`."""
    deadline = request.expires_at.strftime("%Y-%m-%d %H:%M UTC") if request.expires_at else "none"
    lines = [
        request.title,
        f"  id:       {request.id} (run {request.run_id})",
        f"  kind:     {request.kind}, {request.status}",
        f"  team:     {request.team}, {request.priority} priority",
        f"  deadline: {deadline}",
        "",
        f"Why: {request.reason}",
    ]
    if request.proposed_action:
        lines += ["", f"Proposed action: {request.proposed_action.get('tool')} with"]
        lines += _value_lines(request.proposed_action.get("arguments") or {}, "  ")
    if request.payload.get("question"):
        lines += ["", f"Question: {request.payload['question']}"]
        if request.payload.get("options"):
            lines.append("Options: " + ", ".join(map(str, request.payload["options"])))
    if request.context:
        lines += ["", "Context:", *_value_lines(request.context, "  ")]
    if request.attachments:
        lines += ["", "Attached files (save one: baton requests file REQUEST_ID FILE_ID):"]
        lines += [f"  {a.id[:12]}  {a.name}, from {a.source}" for a in request.attachments]
    lines.append("")
    if request.status not in OPEN_STATUSES:
        return [*lines, *_outcome(request)]
    return [*lines, *_how_to_answer(request)]


def _outcome(request: HumanRequest) -> list[str]:
    if request.answered_by and request.answer is not None:
        said = json.dumps(request.answer, ensure_ascii=False)
        return [f"Answered by {request.answered_by}: {said}"]
    return [f"Closed: {request.status}."]


def _how_to_answer(request: HumanRequest) -> list[str]:
    command = f"baton requests answer {request.id} --as NAME"
    if request.kind == "input":
        schema = answer_schema(request)
        must = describe(schema)
        fitting = example(schema)
        if not _is_text(request):
            fits = shlex.quote(json.dumps(fitting, ensure_ascii=False))
        elif "enum" in resolve(schema, schema).schema:  # text goes as typed
            fits = shlex.quote(str(fitting))
        else:
            fits = shlex.quote("your answer")
        return [
            f"The answer must be {must[0]}",
            *must[1:],
            "",
            "Answer it with, for example:",
            f"  {command} --answer {fits}",
        ]
    model = KINDS[request.kind].answer_model
    lines = ["Decisions, and the fields each takes (in --body, as JSON; --answer for an answer):"]
    for decision in request.allowed_decisions:
        needs = [*model.requires.get(decision, ())]
        may = [f"{n} (optional)" for n in model.optional.get(decision, ())]
        lines.append(f"  {decision}: {', '.join(needs + may) or 'nothing more'}")
    first = request.allowed_decisions[0] if request.allowed_decisions else "DECISION"
    return [*lines, "", "Answer it with, for example:", f"  {command} --decision {first}"]


def run_text(run: Run, requests: list[HumanRequest]) -> list[str]:
    """The lines `baton runs show` (and `run`, `requests answer`) print for a run and its asks."""
    started = run.created_at.strftime("%Y-%m-%d %H:%M UTC")
    lines = [f"{run.workflow} run {run.id}: {run.status}"]
    lines.append(f"  started by {run.created_by}, {started}")
    if run.continues:
        lines.append(f"  continues the conversation of run {run.continues}")
    if run.output is not None:
        lines += [f"  {summary.output_said(run)}:", *_value_lines(run.output, "    ")]
    if run.error:
        lines.append(f"  error: {_excerpt(run.error)}")
    lines += [f"  fault: {fault}" for fault in run.faults]
    if requests:
        lines += ["", "Requests:"]
    for request in requests:
        done = f" ({_who(request)})" if request.status not in OPEN_STATUSES else ""
        status = "answered" if request.status == "resumed" else request.status  # run went on
        lines.append(f"  {request.id}  {status:<9} {request.kind:<9} {request.title}{done}")
    waiting = [r for r in requests if r.status in OPEN_STATUSES]
    if waiting:
        lines += ["", "See what is asked with:", f"  baton requests show {waiting[0].id}"]
    return lines


_DONE = {
    "approve": "approved",
    "reject": "rejected",
    "edit": "edited",
    "answer": "answered",
    "resolve": "resolved",
    "return": "handed back",
}


def _who(request: HumanRequest) -> str:
    decision = str((request.answer or {}).get("decision", ""))
    if request.answered_by and decision:
        return f"{_DONE.get(decision, decision)} by {request.answered_by}"
    return request.status


def _excerpt(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _value_lines(value: Any, at: str) -> list[str]:
    """A JSON value as indented `name: value` lines, nested objects one level further in."""
    if isinstance(value, dict):
        lines = []
        for key, item in value.items():
            if isinstance(item, dict) and item:
                lines += [f"{at}{key}:", *_value_lines(item, at + "  ")]
            else:
                lines.append(f"{at}{key}: {_plain(item)}")
        return lines
    return [f"{at}{_plain(value)}"]


def _plain(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def answer_value(request: HumanRequest, text: str) -> Any:
    """The value `--answer` gives: JSON; for an answer that is text, the text as typed too.

    Raises:
        click.BadParameter: It is not JSON, and the answer is not text.
    """
    is_text = _is_text(request)
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        if is_text:
            return text
        raise click.BadParameter(f"not JSON: {exc}", param_hint="--answer") from exc
    return text if is_text and not isinstance(value, str) else value


def _is_text(request: HumanRequest) -> bool:
    """Whether the request's answer is text (a question's; an input's of a str or str enum)."""
    if request.kind != "input":
        return request.kind == "question"
    schema = answer_schema(request)
    return json_type(resolve(schema, schema).schema) == "string"
