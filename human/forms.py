"""Forms from JSON Schema, and form posts back to JSON: answers and run inputs.

One form model serves every place a person types an answer: the web pages render its fields as
HTML, the Teams bot's cards as Adaptive Card inputs (`human.channels.teams`), and both read
what comes back through `answer_from_form`.

A request's `response_schema` (its kind's answer model, with an approval's `arguments` replaced by
the tool's own schema, an input's `answer` by the workflow's answer type) and a workflow's input
schema are turned into `Field`s, one control per property with its type: a number input for
numbers (its limits said in words too), a radio group or select for an enum (its values in words),
a Yes/No radio pair for a boolean (a choice made, never an unticked box read as "no"), a text input
or text area for a string, one-per-line text for a list of plain values, a fieldset for an object
with properties (an optional one may be left empty: none), and a JSON text area for anything
free-form. Labels come from the schema's titles (`human.answer_schema.label`); defaults are the
initial values. Each control carries the schema's limits as HTML hints (`required`, `min`, `max`,
`step`, `minlength`, `maxlength`, `pattern`) so a browser can help; the server stays the judge
(`RequestService.respond`, `Runtime.start`), and its errors come back next to the field they name,
with the values kept.

An `input` request whose answer is an object shows that object's fields as the form's own.

Field names are dotted paths (`arguments.amount`): the same path an error's `loc` names. A value
that does not parse as its type (`"x"` for a number) is passed on as the text it is, so the one
validation that decides reports it; only text meant as JSON that is not JSON is refused here.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final, Literal

from baton.errors import InvalidAnswer, InvalidInput
from human import summary
from human.answer_schema import (
    ECHOED,
    Resolved,
    bounds,
    json_type,
    label,
    option_label,
    resolve,
)
from human.kinds import KINDS
from human.records import HumanRequest
from human.requests import OUTCOMES
from human.text import with_stop

Control = Literal["text", "textarea", "number", "select", "radio", "json", "lines", "fieldset"]

RADIO_MAX: Final = 5  # choices of at most this many options are radio groups, longer ones selects
OTHER: Final = "__other__"
"""A question's "Something else" choice: the answer is then the text typed beside it."""
_FORMATS: Final = {"email": "email", "uri": "url", "date": "date"}
MONEY: Final = "money"
"""A number's `format` that says it is an amount of money: two decimals, its currency beside it."""
CURRENCY: Final = "x-currency"
"""A money field's currency: a code (`EUR`), or `{path}` into the request's context."""

DECISION_LABELS: Final = {
    "approve": "Approve",
    "edit": "Edit",
    "reject": "Reject",
    "answer": "Answer",
    "resolve": "Resolve",
    "return": "Return to the agent",
}
SUBMIT_LABELS: Final = {"edit": "Send edit", "answer": "Send answer"}
INPUT_HELP: Final = ""
"""An input form's help of its own: none, the decision's line says what an answer does ("The
workflow receives your answer and carries on with it"); a fieldset's own description stands."""
DECISION_HELP: Final = {
    "approve": "Let the proposed action run as it is.",
    "edit": "Change the arguments; the policy checks the changed call again.",
    "reject": "Refuse it; the agent is told your reason.",
    "answer": "Reply to the agent's question.",
    "resolve": "You handled the case: say how.",
    "return": "Hand the case back to the agent with guidance.",
}
KIND_HELP: Final = {
    "review": {
        "approve": "Let the {what} be used as it is.",
        "edit": "Change the {what}; your version is used instead of it.",
        "reject": "Refuse the {what}; the agent is told your reason.",
    },
}
"""A kind's own help where Baton's generic sentence (about a proposed action) would not fit
(`{what}`: what a review's draft is, `summary.reviewed`)."""


@dataclass(frozen=True)
class Field:
    """One control (or, for an object, a fieldset of controls) of a form.

    `skippable` marks a fieldset that may be left empty (an optional object: empty means none);
    `if_filled` a field required only once its skippable fieldset is filled in (no browser check,
    which could not tell), the server judging.
    """

    name: str
    label: str
    control: Control
    kind: str
    required: bool = False
    help: str | None = None
    value: str = ""
    options: tuple[tuple[str, str], ...] = ()
    suggestions: tuple[str, ...] = ()
    attrs: tuple[tuple[str, str], ...] = ()
    children: tuple[Field, ...] = ()
    error: str | None = None
    skippable: bool = False
    if_filled: bool = False
    other: str | None = None
    """A choice that also takes free text: the text typed beside "Something else" (else None)."""
    unit: str | None = None
    """Money's currency, shown beside the amount (`{path}`: read from the request's context)."""

    @property
    def dom_id(self) -> str:
        """A fragment of an HTML id for this field (the form adds its own prefix)."""
        return self.name.replace(".", "-")


@dataclass(frozen=True)
class DecisionForm:
    """The form of one decision a person may take on a request."""

    decision: str
    label: str
    help: str
    fields: tuple[Field, ...]
    errors: tuple[str, ...] = ()
    open: bool = False

    @property
    def confirms(self) -> bool:
        """Edits show their before -> after diff before they are sent."""
        return self.decision == "edit"

    @property
    def submit(self) -> str:
        """The words on the form's button."""
        return SUBMIT_LABELS.get(self.decision, self.label)

    @property
    def field_errors(self) -> tuple[Field, ...]:
        """The fields (nested ones too) whose errors a refused post shows beside them."""
        return tuple(f for f in _flat(self.fields) if f.error)


# schema -> fields ---------------------------------------------------------------------------


def fields_of(
    schema: dict[str, Any],
    *,
    names: Sequence[str] | None = None,
    required: Sequence[str] | None = None,
    values: Mapping[str, Any] | None = None,
    raw: FormValues | None = None,
    errors: Mapping[str, str] | None = None,
    prefix: str = "",
    multiline: bool = False,
    root: dict[str, Any] | None = None,
    skippable: bool = False,
) -> tuple[Field, ...]:
    """The fields of an object schema's properties.

    Args:
        schema: An object JSON Schema (`properties`, `required`, maybe `$defs`).
        names: Which properties, in this order (default: all, in the schema's order).
        required: Which are required (default: the schema's `required`).
        values: Values to show, as JSON values keyed by property (nested for objects); a
            property without one shows its schema's default.
        raw: A post to show again exactly as typed (instead of `values`).
        errors: Messages keyed by dotted field path.
        prefix: The dotted path of this object inside the form.
        multiline: Strings get a text area (messages to an agent), not a one-line input.
        root: The schema `$ref`s resolve against (default: `schema`).
        skippable: This object may be left empty as a whole: its required fields are required
            only once it is filled in.

    Returns:
        One field per property.
    """
    root = root if root is not None else schema
    props: dict[str, Any] = schema.get("properties", {})
    if required is None:  # the schema's own: an optional (nullable) property is not required
        needed = {
            n
            for n in schema.get("required", ())
            if n in props and not resolve(props[n], root).nullable
        }
    else:  # the caller knows better (a decision that requires a field the schema lets be null)
        needed = set(required)
    values = values or {}
    errors = errors or {}
    chosen = list(props) if names is None else [n for n in names if n in props]
    fields = []
    for name in chosen:
        prop = resolve(props[name], root)
        fields.append(
            _field(
                name,
                prop,
                path=f"{prefix}{name}",
                label=label(name, props[name].get("title")),
                required=name in needed,
                value=values[name] if name in values else prop.schema.get("default"),
                raw=raw,
                errors=errors,
                multiline=multiline,
                root=root,
                within_skippable=skippable,
            )
        )
    return tuple(fields)


def _field(name: str, prop: Resolved, *, value: Any, **how: Any) -> Field:
    """The control of one property, read-only where its schema says so and it holds a value.

    `readOnly` (JSON Schema's): a value the request's data filled in (`echoed`), or one an
    author marked so, which the workflow needs back as it is.
    """
    field = _control(name, prop, value=value, **how)
    fixed = prop.schema.get("readOnly") is True or prop.schema.get("description") == ECHOED
    if not fixed or value is None or field.control not in ("text", "number", "textarea"):
        return field
    return replace(field, attrs=(*field.attrs, ("readonly", "")))


def _control(
    name: str,
    prop: Resolved,
    *,
    path: str,
    label: str,
    required: bool,
    value: Any,
    raw: FormValues | None,
    errors: Mapping[str, str],
    multiline: bool,
    root: dict[str, Any],
    within_skippable: bool,
) -> Field:
    schema = prop.schema
    kind = json_type(schema)
    typed = raw.get(path) if raw is not None else None
    base = Field(
        name=path,
        label=label,
        control="text",
        kind=kind,
        required=required,
        help=_plain_words(schema.get("description")),
        error=errors.get(path),
        if_filled=required and within_skippable,
    )
    if "enum" in schema:
        options = tuple((_text(v), option_label(v)) for v in schema["enum"])
        control: Control = "radio" if len(options) <= RADIO_MAX else "select"
        return replace(base, control=control, options=options, value=_shown(value, raw, typed))
    if kind == "object" and schema.get("properties"):
        skippable = within_skippable or (prop.nullable and not required)
        children = fields_of(
            schema,
            values=value if isinstance(value, dict) else {},
            raw=raw,
            errors=errors,
            prefix=f"{path}.",
            root=root,
            skippable=skippable,
        )
        if skippable and not within_skippable:
            base = replace(base, skippable=True, help=_skippable_help(base, children))
        return replace(base, control="fieldset", children=children)
    if kind == "boolean":  # a choice made, never an unticked box read as "no"
        options = (("true", "Yes"), ("false", "No"))
        return replace(base, control="radio", options=options, value=_shown(value, raw, typed))
    if kind in ("number", "integer"):
        shown = _shown(value, raw, typed)
        limits = bounds(schema)
        told = f"{limits[:1].upper()}{limits[1:]}." if limits else None
        money = schema.get("format") == MONEY
        return replace(
            base,
            control="number",
            value=_money(shown) if money and raw is None else shown,
            attrs=_number_hints(schema),
            help=_sentences(base.help, told),
            unit=str(schema.get(CURRENCY) or "") or None if money else None,
        )
    if kind == "string":
        long = multiline or _long_text(schema)
        return replace(
            base,
            control="textarea" if long else "text",
            value=_shown(value, raw, typed),
            attrs=_string_hints(schema, long=long),
        )
    if kind == "array" and json_type(resolve(schema.get("items", {}), root).schema) in (
        "string",
        "number",
        "integer",
    ):
        lines = "\n".join(_text(v) for v in value) if isinstance(value, list) else _text(value)
        return replace(base, control="lines", value=lines if raw is None else typed or "")
    if kind == "any" and (value is None or isinstance(value, str)):
        return replace(base, control="textarea", value=_shown(value, raw, typed))
    text = "" if value is None else json.dumps(value, indent=2, ensure_ascii=False)
    return replace(base, control="json", value=text if raw is None else typed or "")


def _plain_words(description: Any) -> str | None:
    """A schema's description as help for people: its first paragraph, without code quotes.

    Descriptions are often a class's docstring, written for developers.
    """
    if not isinstance(description, str) or not description.strip():
        return None
    first = description.strip().split("\n\n", 1)[0]
    return " ".join(first.replace("`", "").split())


def _long_text(schema: dict[str, Any]) -> bool:
    """Text that wants a text area: long by its schema."""
    return schema.get("format") == "textarea" or schema.get("maxLength", 0) > 200


def _skippable_help(group: Field, children: Sequence[Field]) -> str:
    """What an optional group's help says: how to leave it out."""
    needed = [c.label for c in children if c.required]
    what = " and ".join(needed) if needed else "it"
    said = f"Leave {what} empty if there is no {group.label.lower()}."
    return f"{group.help} {said}" if group.help else said


def _shown(value: Any, raw: FormValues | None, typed: str | None) -> str:
    """What a control shows: the text posted (kept as typed), else the value's text."""
    return _text(value) if raw is None else typed or ""


def _truthy(text: str) -> bool:
    return text.strip().lower() in ("true", "on", "1", "yes")


def _sentences(*parts: str | None) -> str | None:
    """Texts as sentences in a row, a stop added to one that has none (`Amount. More than 0.`)."""
    said = [with_stop(p, ".!?:") for p in parts if p]
    return " ".join(said) or None


def _number_hints(schema: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """The browser's limits of a number: the server's, an exclusive bound made the next step.

    A browser knows only inclusive bounds: `exclusiveMinimum: 0` becomes `min` 1 for an integer,
    0.01 for money (its step), and the least number above 0 a browser keeps apart from it for any
    other number, so that the browser refuses exactly what the server refuses.
    """
    integer = schema.get("type") == "integer"
    step = schema.get("multipleOf") or (
        1 if integer else 0.01 if schema.get("format") == MONEY else None
    )
    hints = [("step", _text(step) if step else "any")]
    nudge = step or 1e-9
    for key, attr, sign in (
        ("minimum", "min", 0),
        ("exclusiveMinimum", "min", 1),
        ("maximum", "max", 0),
        ("exclusiveMaximum", "max", -1),
    ):
        bound = schema.get(key)
        if (
            isinstance(bound, int | float)
            and not isinstance(bound, bool)
            and attr not in dict(hints)
        ):
            edge = round(bound + sign * nudge, 9)
            exact = float(edge).is_integer()
            hints.append((attr, _text(edge) if exact else f"{edge:.9f}".rstrip("0")))
    hints.append(("inputmode", "numeric" if integer else "decimal"))
    return tuple(hints)


def _money(text: str) -> str:
    """An amount as money is written: two decimals (`120` -> `120.00`); other text as it is."""
    try:
        return f"{float(text):.2f}" if text else text
    except ValueError:
        return text


def _string_hints(schema: dict[str, Any], *, long: bool) -> tuple[tuple[str, str], ...]:
    hints: list[tuple[str, str]] = []
    if isinstance(schema.get("minLength"), int):
        hints.append(("minlength", str(schema["minLength"])))
    if isinstance(schema.get("maxLength"), int):
        hints.append(("maxlength", str(schema["maxLength"])))
    if not long:
        if isinstance(schema.get("pattern"), str):
            hints.append(("pattern", schema["pattern"]))
        hints.append(("type", _FORMATS.get(str(schema.get("format")), "text")))
    return tuple(hints)


def control_text(value: Any) -> str:
    """A value as a form's control shows it (`true`, `120`, JSON for an object or a list)."""
    return _text(value)


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


# form -> JSON -------------------------------------------------------------------------------


class FormValues:
    """A form post's values by name (the last one of a name wins)."""

    def __init__(self, items: Sequence[tuple[str, Any]]) -> None:
        self._values: dict[str, str] = {}
        for key, value in items:
            if isinstance(value, str):
                self._values[key] = value

    def get(self, name: str) -> str | None:
        """The value of a control, or None if the form did not send it."""
        return self._values.get(name)

    def names(self) -> list[str]:
        """The names sent."""
        return list(self._values)


def values_of(
    schema: dict[str, Any],
    form: FormValues,
    *,
    names: Sequence[str] | None = None,
    prefix: str = "",
    root: dict[str, Any] | None = None,
    problems: list[tuple[str, str]] | None = None,
) -> dict[str, Any]:
    """The JSON object a form post means for an object schema; blank optional fields left out.

    Args:
        schema: The object schema the form was made from.
        form: The posted values.
        names: Which properties to read (default: all).
        prefix: The dotted path of this object inside the form.
        root: The schema `$ref`s resolve against (default: `schema`).
        problems: Collects `(path, message)` for text that should be JSON and is not.

    Returns:
        Property name to JSON value.
    """
    root = root if root is not None else schema
    problems = problems if problems is not None else []
    props: dict[str, Any] = schema.get("properties", {})
    out: dict[str, Any] = {}
    for name in list(props) if names is None else [n for n in names if n in props]:
        path = f"{prefix}{name}"
        resolved = resolve(props[name], root)
        prop = resolved.schema
        kind = json_type(prop)
        if "enum" not in prop and kind == "object" and prop.get("properties"):
            if not any(n.startswith(f"{path}.") for n in form.names()):
                continue
            if resolved.nullable and _untouched(prop, form, f"{path}.", root):
                out[name] = None  # an optional group left empty: there is none
                continue
            out[name] = values_of(prop, form, prefix=f"{path}.", root=root, problems=problems)
            continue
        raw = form.get(path)
        if raw is None:
            continue
        value = _parse(raw, prop, kind, root, path, problems)
        if value is not None:
            out[name] = value
    return out


def _untouched(schema: dict[str, Any], form: FormValues, prefix: str, root: dict[str, Any]) -> bool:
    """Whether a group's every field was left blank or as its default showed it."""
    for name, sub in schema.get("properties", {}).items():
        prop = resolve(sub, root).schema
        kind = json_type(prop)
        path = f"{prefix}{name}"
        if "enum" not in prop and kind == "object" and prop.get("properties"):
            if not _untouched(prop, form, f"{path}.", root):
                return False
            continue
        raw = form.get(path)
        value = None if raw is None else _parse(raw, prop, kind, root, path, [])
        if value is not None and value != prop.get("default"):
            return False
    return True


def _parse(
    raw: str,
    prop: dict[str, Any],
    kind: str,
    root: dict[str, Any],
    path: str,
    problems: list[tuple[str, str]],
) -> Any:
    text = raw.strip()
    if not text:
        return None
    if kind == "boolean":
        return _truthy(text)
    if "enum" in prop:
        return next((v for v in prop["enum"] if _text(v) == text), text)
    if kind in ("number", "integer"):
        return _number(text)
    if kind == "string":
        return raw
    if kind == "array":
        items = resolve(prop.get("items", {}), root).schema
        if json_type(items) in ("string", "number", "integer"):
            lines = [line.strip() for line in raw.splitlines() if line.strip()]
            return lines if json_type(items) == "string" else [_number(line) for line in lines]
    if kind == "any" and not text.startswith(("{", "[")):
        return raw
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        problems.append((path, f"is not valid JSON: {exc.msg} (line {exc.lineno})"))
        return None


def _number(text: str) -> Any:
    """An int or float for numeric text; other text as it is, for the validator to name."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        return text
    return value if value == value and value not in (float("inf"), float("-inf")) else text


# answers ------------------------------------------------------------------------------------


def answer_forms(
    request: HumanRequest,
    *,
    submitted: str | None = None,
    raw: FormValues | None = None,
    errors: Sequence[dict[str, Any]] = (),
    fixed: Mapping[str, str] | None = None,
) -> tuple[DecisionForm, ...]:
    """A form per decision the request allows, generated from its `response_schema`.

    Args:
        request: The request to answer.
        submitted: The decision of a post being shown again (its form opens with `raw`).
        raw: The post, shown again as typed after a refusal or for a confirm step.
        errors: The refusal's errors (`loc`, `msg`), shown next to the fields they name.
        fixed: The arguments an edit may not change, with why (`RequestService.fixed_arguments`):
            read-only in the edit form, the why as their help (the server refuses them anyway).

    Returns:
        The forms, in the order of `allowed_decisions`.
    """
    kind = KINDS[request.kind]
    schema = request.response_schema
    by_field, rest = errors_by_field(errors)
    forms = []
    for decision in request.allowed_decisions:
        mine = decision == submitted
        fields = fields_of(
            schema,
            names=_names(kind.answer_model, decision),
            required=kind.answer_model.requires.get(decision, ()),
            values=_initial(request, decision),
            raw=raw if mine else None,
            errors=by_field if mine else {},
            multiline=request.kind != "input",
        )
        told = request.payload.get(OUTCOMES)
        # the workflow said what this decision leads to (`summary.choices` shows it beside the
        # decision): Baton's generic help ("Let the proposed action run") could contradict it
        help_text = (
            ""
            if isinstance(told, dict) and told.get(decision)
            else KIND_HELP.get(request.kind, DECISION_HELP)
            .get(decision, "")
            .replace("{what}", summary.reviewed(request))
        )
        if request.kind == "input":
            help_text, fields = _input_fields(request, fields)
        shown = _paths(fields)
        # An error naming no field of the form (the decision itself, say) heads the form.
        unplaced = [
            f"{path}: {msg}" if path != "answer" else msg
            for path, msg in by_field.items()
            if path not in shown
        ]
        forms.append(
            DecisionForm(
                decision=decision,
                label=DECISION_LABELS.get(decision, decision.capitalize()),
                help=help_text,
                fields=fields,
                errors=(*rest, *unplaced) if mine else (),
                open=mine,
            )
        )
    forms = [
        replace(f, fields=_own_words(request, f.decision, _with_units(f.fields, request.context)))
        for f in forms
    ]
    if fixed:
        forms = [
            replace(f, fields=_fixed(f.fields, fixed)) if f.decision == "edit" else f for f in forms
        ]
    options = request.payload.get("options") if request.kind == "question" else None
    if options:  # one of the options (or, where the question takes it, something else typed)
        forms = [
            replace(f, fields=tuple(_choice(x, options, request, raw) for x in f.fields))
            for f in forms
        ]
    return tuple(forms)


def _own_words(
    request: HumanRequest, decision: str, fields: tuple[Field, ...]
) -> tuple[Field, ...]:
    """An approval's or review's fields named for whose words they are and what they change.

    The answer's `reason` is the person's own note, sent with the answer to whoever asked: never
    to be taken for an argument of the proposed call, which may be named `reason` too. What an
    edit changes says it starts as proposed (or drafted), and that what is left stays so.
    """
    if request.kind not in ("approval", "review"):
        return fields
    tool = (request.proposed_action or {}).get("tool")
    what = summary.reviewed(request)
    # A reason for a rejection reaches the agent (or the workflow that asked) with the answer; a
    # note beside an approval or an edit is the answer's, in its record: no adapter hands it on
    sent = (
        "Whoever asked is told it with your answer."
        if decision == "reject"
        else "Kept with your answer in the audit trail"
        + (f"; {tool} does not receive it." if tool else ".")
    )
    named = {
        "reason": (
            "Your reason for rejecting" if decision == "reject" else "Your note",
            sent,
        ),
        "arguments": (
            f"Arguments of {tool}" if tool else "Arguments",
            "They start as proposed: change only what should differ; "
            "whatever you leave is kept as proposed.",
        ),
        "content": (
            f"Your version of the {what}",
            f"It starts as the {what}: change what should differ; whatever you leave is kept "
            f"as it is. Your version replaces the {what} as a whole.",
        ),
    }
    return tuple(
        replace(f, label=named[f.name][0], help=named[f.name][1]) if f.name in named else f
        for f in fields
    )


def decision_form(
    request: HumanRequest,
    decision: str,
    *,
    raw: FormValues | None = None,
    errors: Sequence[dict[str, Any]] = (),
    fixed: Mapping[str, str] | None = None,
) -> DecisionForm | None:
    """The form of one decision of `request`, as `answer_forms` makes it, `raw` shown again.

    None where the request takes no such decision.
    """
    forms = answer_forms(request, submitted=decision, raw=raw, errors=errors, fixed=fixed)
    return next((f for f in forms if f.decision == decision), None)


def kept_arguments(request: HumanRequest, fixed: Mapping[str, str]) -> dict[str, Any]:
    """The proposed values of the arguments an edit may not change, by their form path.

    What a chat's edit form sends as they are: it shows them, it does not ask for them.
    """
    arguments = (request.proposed_action or {}).get("arguments") or {}
    return {f"arguments.{name}": arguments[name] for name in fixed if name in arguments}


def _fixed(fields: Sequence[Field], fixed: Mapping[str, str]) -> tuple[Field, ...]:
    """An edit's fields with the arguments it may not change read-only, saying why."""
    out = []
    for f in fields:
        why = (
            fixed.get(f.name.removeprefix("arguments."))
            if f.name.startswith("arguments.")
            else None
        )
        if why is not None:
            f = replace(f, attrs=(*f.attrs, ("readonly", "")), help=f"Fixed: {why}.")
        out.append(replace(f, children=_fixed(f.children, fixed)))
    return tuple(out)


def _with_units(fields: Sequence[Field], context: Mapping[str, Any]) -> tuple[Field, ...]:
    """Fields with their currency read from `context` where it names a path in it (`{a.b}`)."""
    return tuple(
        replace(f, unit=_unit(f.unit, context), children=_with_units(f.children, context))
        for f in fields
    )


def _unit(unit: str | None, context: Mapping[str, Any]) -> str | None:
    """A currency as given, or read from `context` (`{order.currency}`); None if not found."""
    if not unit or not (unit.startswith("{") and unit.endswith("}")):
        return unit
    found: Any = context
    for part in unit[1:-1].split("."):
        found = found.get(part) if isinstance(found, Mapping) else None
    return str(found) if isinstance(found, str | int) and found != "" else None


def _choice(
    answer: Field, options: Sequence[Any], request: HumanRequest, raw: FormValues | None
) -> Field:
    """A question's answer field as a choice of its options: radios, or a select when many."""
    if answer.name != "answer":
        return answer
    other = request.payload.get("other", True)
    chosen = answer.value
    typed = raw.get(f"{answer.name}_other") if raw is not None else None
    if other and chosen and chosen not in map(str, options):  # an answer typed, shown again
        chosen, typed = OTHER, chosen
    return replace(
        answer,
        control="radio" if len(options) + other <= RADIO_MAX else "select",
        options=tuple((str(o), str(o)) for o in options),
        value=chosen,
        other=(typed or "") if other else None,
        attrs=(),
    )


def _input_fields(
    request: HumanRequest, fields: tuple[Field, ...]
) -> tuple[str, tuple[Field, ...]]:
    """An input's form help and fields.

    An object's own fields are the form's; a single answer field is named by the question asked
    (when the reason is one), rather than "Answer" again.
    """
    if len(fields) != 1:
        return INPUT_HELP, fields
    [answer] = fields
    if answer.control == "fieldset":
        return answer.help or INPUT_HELP, answer.children
    asked = request.reason.strip()
    return INPUT_HELP, (replace(answer, label=asked if asked.endswith("?") else "Your answer"),)


def _flat(fields: Sequence[Field]) -> list[Field]:
    """Fields and the fields inside them, in the order a form shows them."""
    return [x for f in fields for x in (f, *_flat(f.children))]


def _paths(fields: Sequence[Field]) -> set[str]:
    """The dotted paths of fields and of the fields inside them."""
    return {f.name for f in _flat(fields)}


def _names(model: Any, decision: str) -> list[str]:
    """The fields a decision takes: those it requires, then those it allows."""
    return [*model.requires.get(decision, ()), *model.optional.get(decision, ())]


def _initial(request: HumanRequest, decision: str) -> dict[str, Any]:
    """What an edit starts from: the proposed arguments, or the draft under review."""
    if decision != "edit":
        return {}
    if request.kind == "approval" and request.proposed_action:
        return {"arguments": request.proposed_action.get("arguments") or {}}
    if request.kind == "review":
        return {"content": request.payload.get("draft")}
    return {}


def answer_from_form(request: HumanRequest, form: FormValues) -> dict[str, Any]:
    """The answer body a posted decision form means, for `RequestService.respond`.

    Only the fields of the posted decision are read; a decision the request does not allow is
    passed on as posted, for the service to refuse by name.

    Raises:
        InvalidAnswer: A JSON field holds text that is not JSON (naming the field).
    """
    decision = (form.get("decision") or "").strip()
    kind = KINDS[request.kind]
    names = _names(kind.answer_model, decision)
    problems: list[tuple[str, str]] = []
    schema = dict(request.response_schema)
    if decision == "edit" and request.kind == "review":
        draft = request.payload.get("draft")
        content = dict(schema["properties"].get("content", {}))
        # the draft's own type says what the text area holds: text as typed, or JSON
        if isinstance(draft, str):
            content.setdefault("type", "string")
        elif draft is not None:
            content.setdefault("type", "object" if isinstance(draft, dict) else "array")
        schema = {**schema, "properties": {**schema["properties"], "content": content}}
    body = {"decision": decision, **values_of(schema, form, names=names, problems=problems)}
    if request.kind == "question" and body.get("answer") in (OTHER, None):
        typed = (form.get("answer_other") or "").strip()
        body["answer"] = typed or None  # "Something else", and what was typed beside it
        if body["answer"] is None:
            del body["answer"]
    if problems:
        raise InvalidAnswer(
            f"{problems[0][0]} {problems[0][1]}",
            [{"loc": p.split("."), "msg": m} for p, m in problems],
        )
    return body


def confirmation(answer: Mapping[str, Any]) -> str:
    """A digest of an answer: the edit a person saw the diff of, and confirms.

    `30` and `30.0` are one number here, as they are once posted again as text.
    """
    text = json.dumps(_canonical(dict(answer)), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def _canonical(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _canonical(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_canonical(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def errors_by_field(
    errors: Sequence[dict[str, Any]], *, strip: tuple[str, ...] = ()
) -> tuple[dict[str, str], list[str]]:
    """Errors by dotted field path (`loc` less its `strip` prefix), and those naming no field."""
    by_field: dict[str, str] = {}
    rest: list[str] = []
    for error in errors:
        loc = [str(p) for p in error.get("loc", [])]
        if loc[: len(strip)] == list(strip):
            loc = loc[len(strip) :]
        msg = str(error.get("msg", "is invalid"))
        if loc:
            path = ".".join(loc)
            by_field[path] = f"{by_field[path]}; {msg}" if path in by_field else msg
        else:
            rest.append(msg)
    return by_field, rest


# run inputs ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class InputForm:
    """The form that starts a run of one workflow."""

    workflow: str
    description: str
    fields: tuple[Field, ...]
    errors: tuple[str, ...] = field(default=())


def input_form(
    workflow: str,
    description: str,
    schema: dict[str, Any],
    *,
    raw: FormValues | None = None,
    errors: Sequence[dict[str, Any]] = (),
) -> InputForm:
    """The start form of a workflow, generated from its input JSON Schema (`raw`: a post again)."""
    by_field, rest = errors_by_field(errors, strip=("input",))
    return InputForm(
        workflow=workflow,
        description=_plain_words(description) or "",
        fields=_with_units(fields_of(schema, raw=raw, errors=by_field), {}),
        errors=tuple(rest),
    )


def input_from_form(schema: dict[str, Any], form: FormValues) -> dict[str, Any]:
    """The run input a posted start form means, for `Runtime.start`.

    Raises:
        InvalidInput: A JSON field holds text that is not JSON (naming the field).
    """
    problems: list[tuple[str, str]] = []
    values = values_of(schema, form, problems=problems)
    if problems:
        raise InvalidInput(
            f"{problems[0][0]} {problems[0][1]}",
            [{"loc": ["input", *p.split(".")], "msg": m} for p, m in problems],
        )
    return values
