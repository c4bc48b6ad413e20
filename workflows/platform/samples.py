"""Values made up from a type or a JSON Schema: the answers and inputs `check` gives a workflow.

`sample_of(schema)` builds a JSON value that a schema accepts where it can: examples and defaults
first, then the first of an enum, `True`, a number within the bounds, `"ok"`, one item of a list,
and an object's required fields one by one. `answer_to(event)` answers a MAF `request_info` event:
MAF's own request types (a tool approval, a host tool call, a handoff's user turn) and Baton's kind
models as a person would, any other response type from its schema (`pydantic.TypeAdapter`);
`given_answer(event, value)` makes a caller's JSON value into the response MAF expects.
"""

from __future__ import annotations

import contextlib
import math
from typing import Any, Final, get_type_hints

from agent_framework import Content, Message, WorkflowEvent
from agent_framework_orchestrations import HandoffAgentUserRequest
from pydantic import ValidationError

from executors.platform.builtin_adapters import hold_of
from executors.platform.shown import maf_value
from human import typed
from human.answer_schema import echoed, with_defaults
from human.kinds import (
    ApprovalAnswer,
    QuestionAnswer,
    ReviewAnswer,
    TakeoverAnswer,
)

TEXT: Final = "ok"
"""The text of every made-up string and reply."""

_KIND_ANSWERS: Final[dict[type, Any]] = {
    ApprovalAnswer: ApprovalAnswer(decision="approve"),
    QuestionAnswer: QuestionAnswer(decision="answer", answer=TEXT),
    ReviewAnswer: ReviewAnswer(decision="approve"),
    TakeoverAnswer: TakeoverAnswer(decision="resolve", resolution=TEXT),
}

_FORMATS: Final = {
    "date-time": "2026-01-01T00:00:00Z",
    "date": "2026-01-01",
    "time": "00:00:00",
    "email": "someone@example.com",
    "uri": "https://example.com/",
    "uuid": "00000000-0000-4000-8000-000000000000",
}

_MAX_DEPTH: Final = 12


def answer_to(event: WorkflowEvent[Any]) -> Any:
    """A made-up response to `event`'s request, as a person would give it.

    A tool approval is approved, a host tool call returns "ok", a handoff's user says "ok", an
    orchestration's hold on an agent's output (a reply held `with_request_info`, a Magentic
    plan) lets it stand, Baton's kinds are approved, answered or resolved; any other response
    type is made up from its schema (`value_of`). `ValueError` when none can be.
    """
    data, response_type = event.data, event.response_type
    if isinstance(data, Content) and data.type == "function_approval_request":
        return data.to_function_approval_response(approved=True)
    if isinstance(data, Content) and data.type == "function_call":
        return Content.from_function_result(call_id=str(data.call_id), result=TEXT)
    if isinstance(data, HandoffAgentUserRequest):
        return HandoffAgentUserRequest.create_response(TEXT)
    if (hold := hold_of(data)) is not None:
        return hold.approve()
    if response_type in _KIND_ANSWERS:
        return _KIND_ANSWERS[response_type]
    return value_of(response_type, repeating=typed.as_json(data, fallback=maf_value))


def given_answer(event: WorkflowEvent[Any], given: Any) -> Any:
    """`given` (JSON) made into a response to `event`'s request; `ValueError` if it does not fit.

    A tool approval takes a bool (approved or not) or the response's dict, a host tool call its
    result, a handoff's user turn text, a hold on an agent's output `true` (it stands) or the
    guidance sent back (a text, or a list of texts); anything else is validated as the response
    type.
    """
    data = event.data
    if (hold := hold_of(data)) is not None:
        if given is True:
            return hold.approve()
        if isinstance(given, str) or (
            isinstance(given, list) and given and all(isinstance(t, str) for t in given)
        ):
            return hold.revise(given)
        raise ValueError(
            f"a hold on an agent's {hold.what} takes true, or the guidance as a text or texts"
        )
    if isinstance(data, Content) and data.type == "function_approval_request":
        if isinstance(given, bool):
            return data.to_function_approval_response(approved=given)
        return Content.from_dict(given)
    if isinstance(data, Content) and data.type == "function_call":
        return Content.from_function_result(call_id=str(data.call_id), result=given)
    if isinstance(data, HandoffAgentUserRequest):
        return HandoffAgentUserRequest.create_response(given)
    if isinstance(given, dict):  # what the answer repeats of its request, as a drive fills it in
        shown = typed.as_json(data, fallback=maf_value)
        with contextlib.suppress(Exception):  # no schema: the type itself judges, as before
            given = with_defaults(echoed(typed.schema_of_type(event.response_type), shown), given)
    return fit(given, event.response_type)


def value_of(declared: Any, *, repeating: Any = None) -> Any:
    """A value of the type `declared`, made up from its JSON Schema; `ValueError` if none fits.

    A field that repeats one of `repeating` (the request's data as JSON) is given its value, as a
    person's answer is (`human.answer_schema.echoed`).
    """
    if declared is Message:
        return Message("user", [TEXT])
    if declared == list[Message]:
        return [Message("user", [TEXT])]
    if declared is Content:
        return Content.from_text(TEXT)
    if _is_typeddict(declared):  # pydantic takes only typing_extensions' before 3.12
        hints = get_type_hints(declared)
        return {name: value_of(hints[name]) for name in sorted(declared.__required_keys__)}
    try:
        schema = typed.answer_adapter(declared).json_schema()
    except Exception as exc:  # pydantic has no schema for it (an arbitrary class)
        raise ValueError(f"cannot make up a {_name(declared)}: {exc}") from exc
    return fit(sample_of(echoed(schema, repeating)), declared)


def fit(value: Any, declared: Any) -> Any:
    """`value` (JSON) validated as the type `declared`; `ValueError` naming the type if not."""
    if _is_typeddict(declared):
        if isinstance(value, dict):
            return value  # a TypedDict is a dict at run time
    elif isinstance(declared, type) and isinstance(value, declared):
        return value
    try:
        return typed.answer_adapter(declared).validate_python(value)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = "".join(f"{part}: " for part in first["loc"])
        raise ValueError(f"{value!r} is not a {_name(declared)}: {where}{first['msg']}") from exc
    except Exception as exc:  # pydantic cannot validate the type at all
        raise ValueError(f"{value!r} is not a {_name(declared)}: {exc}") from exc


def sample_of(schema: dict[str, Any]) -> Any:
    """A JSON value `schema` accepts, where the schema alone tells (patterns are not followed)."""
    return _sample(schema, schema.get("$defs", {}), 0)


def _sample(schema: dict[str, Any], defs: dict[str, Any], depth: int) -> Any:
    if depth > _MAX_DEPTH:
        return None
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return _sample(defs[ref.removeprefix("#/$defs/")], defs, depth + 1)
    for given in ("const", "examples", "default", "enum"):
        if given in schema:
            value = schema[given]
            return value[0] if given in ("examples", "enum") and value else value
    for choice in ("anyOf", "oneOf", "allOf"):
        if choice in schema:
            options = [s for s in schema[choice] if s.get("type") != "null"] or schema[choice]
            return _sample(options[0], defs, depth + 1)
    kind = schema.get("type", "string")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        properties = schema.get("properties", {})
        required = schema.get("required", [])
        return {name: _sample(properties.get(name, {}), defs, depth + 1) for name in required}
    if kind == "array":
        if "prefixItems" in schema:
            return [_sample(s, defs, depth + 1) for s in schema["prefixItems"]]
        return [_sample(schema.get("items", {}), defs, depth + 1)] * max(
            1, schema.get("minItems", 1)
        )
    return _scalar(kind, schema)


def _scalar(kind: str, schema: dict[str, Any]) -> Any:
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    if kind in ("integer", "number"):
        return _number(schema, integer=kind == "integer")
    if schema.get("format") in _FORMATS:
        return _FORMATS[schema["format"]]
    length = max(len(TEXT), schema.get("minLength", 0))
    return (TEXT * length)[: min(length, schema.get("maxLength", length))]


def _number(schema: dict[str, Any], *, integer: bool) -> float:
    """1 if the bounds allow it, else the middle of the bounds, else next to the one bound."""
    low = max((schema[k] for k in ("minimum", "exclusiveMinimum") if k in schema), default=None)
    high = min((schema[k] for k in ("maximum", "exclusiveMaximum") if k in schema), default=None)
    candidates = [1.0]
    if low is not None and high is not None:
        candidates.append((low + high) / 2)
    candidates += [low, low + 1] if low is not None else []
    candidates += [high, high - 1] if high is not None else []
    for candidate in candidates:
        value = math.ceil(candidate) if integer else float(candidate)
        if _within(schema, value):
            return value
    return 1  # nothing inside: the validation that follows says why


def _within(schema: dict[str, Any], value: float) -> bool:
    return bool(
        value >= schema.get("minimum", -math.inf)
        and value > schema.get("exclusiveMinimum", -math.inf)
        and value <= schema.get("maximum", math.inf)
        and value < schema.get("exclusiveMaximum", math.inf)
    )


def _is_typeddict(declared: Any) -> bool:
    """Whether `declared` is a TypedDict class, of `typing` or of `typing_extensions`."""
    return (
        isinstance(declared, type)
        and issubclass(declared, dict)
        and (hasattr(declared, "__required_keys__"))
    )


def _name(declared: Any) -> str:
    return getattr(declared, "__name__", None) or repr(declared)
