"""HTML forms from JSON Schema, and form posts back to JSON: answers and run inputs.

A request's `response_schema` (its kind's answer model, with an approval's `arguments` replaced by
the tool's own schema) and a workflow's input schema are turned into `Field`s, one control per
property with its type: a number input for numbers, a select or radio group for an enum, a checkbox
for a boolean, a text input or text area for a string, a fieldset for an object with properties
(an approval edit's `arguments`), and a JSON text area for anything free-form. Each control carries
the schema's limits as HTML hints (`required`, `min`, `max`, `step`, `minlength`, `maxlength`,
`pattern`) so a browser can help; the server stays the judge (`RequestService.respond`,
`Runtime.start`), and its errors come back next to the field they name, with the values kept.

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
from human.kinds import KINDS
from human.records import HumanRequest

Control = Literal[
    "text", "textarea", "number", "select", "radio", "checkbox", "json", "lines", "fieldset"
]

RADIO_MAX: Final = 4  # enums with at most this many options are radio groups, longer ones selects
_FORMATS: Final = {"email": "email", "uri": "url", "date": "date"}

DECISION_LABELS: Final = {
    "approve": "Approve",
    "edit": "Edit",
    "reject": "Reject",
    "answer": "Answer",
    "resolve": "Resolve",
    "return": "Return to the agent",
}
DECISION_HELP: Final = {
    "approve": "Let the proposed action run as it is.",
    "edit": "Change the arguments; the policy checks the changed call again.",
    "reject": "Refuse it; the agent is told your reason.",
    "answer": "Reply to the agent's question.",
    "resolve": "You handled the case: say how.",
    "return": "Hand the case back to the agent with guidance.",
}


@dataclass(frozen=True)
class Field:
    """One control (or, for an object, a fieldset of controls) of a form."""

    name: str
    label: str
    control: Control
    kind: str
    required: bool = False
    help: str | None = None
    value: str = ""
    checked: bool = False
    options: tuple[tuple[str, str], ...] = ()
    suggestions: tuple[str, ...] = ()
    attrs: tuple[tuple[str, str], ...] = ()
    children: tuple[Field, ...] = ()
    error: str | None = None

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


@dataclass(frozen=True)
class _Prop:
    schema: dict[str, Any]
    nullable: bool


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
) -> tuple[Field, ...]:
    """The fields of an object schema's properties.

    Args:
        schema: An object JSON Schema (`properties`, `required`, maybe `$defs`).
        names: Which properties, in this order (default: all, in the schema's order).
        required: Which are required (default: the schema's `required`).
        values: Values to show, as JSON values keyed by property (nested for objects).
        raw: A post to show again exactly as typed (instead of `values`).
        errors: Messages keyed by dotted field path.
        prefix: The dotted path of this object inside the form.
        multiline: Strings get a text area (messages to an agent), not a one-line input.
        root: The schema `$ref`s resolve against (default: `schema`).

    Returns:
        One field per property.
    """
    root = root if root is not None else schema
    props: dict[str, Any] = schema.get("properties", {})
    if required is None:  # the schema's own: an optional (nullable) property is not required
        needed = {
            n
            for n in schema.get("required", ())
            if n in props and not _resolve(props[n], root).nullable
        }
    else:  # the caller knows better (a decision that requires a field the schema lets be null)
        needed = set(required)
    values = values or {}
    errors = errors or {}
    chosen = list(props) if names is None else [n for n in names if n in props]
    return tuple(
        _field(
            name,
            _resolve(props[name], root),
            path=f"{prefix}{name}",
            required=name in needed,
            value=values.get(name),
            raw=raw,
            errors=errors,
            multiline=multiline,
            root=root,
        )
        for name in chosen
    )


def _field(
    name: str,
    prop: _Prop,
    *,
    path: str,
    required: bool,
    value: Any,
    raw: FormValues | None,
    errors: Mapping[str, str],
    multiline: bool,
    root: dict[str, Any],
) -> Field:
    schema = prop.schema
    kind = _kind(schema)
    typed = raw.get(path) if raw is not None else None
    base = Field(
        name=path,
        label=str(schema.get("title") or name.replace("_", " ").capitalize()),
        control="text",
        kind=kind,
        required=required,
        help=schema.get("description"),
        error=errors.get(path),
    )
    if "enum" in schema:
        options = tuple((_text(v), _text(v)) for v in schema["enum"])
        control: Control = "radio" if len(options) <= RADIO_MAX else "select"
        return replace(base, control=control, options=options, value=_shown(value, raw, typed))
    if kind == "object" and schema.get("properties"):
        children = fields_of(
            schema,
            values=value if isinstance(value, dict) else {},
            raw=raw,
            errors=errors,
            prefix=f"{path}.",
            root=root,
        )
        return replace(base, control="fieldset", children=children)
    if kind == "boolean":
        checked = value is True if raw is None else _truthy(typed or "")
        return replace(base, control="checkbox", checked=checked)
    if kind in ("number", "integer"):
        shown = _shown(value, raw, typed)
        return replace(base, control="number", value=shown, attrs=_number_hints(schema))
    if kind == "string":
        long = multiline or schema.get("format") == "textarea" or schema.get("maxLength", 0) > 200
        return replace(
            base,
            control="textarea" if long else "text",
            value=_shown(value, raw, typed),
            attrs=_string_hints(schema, long=long),
        )
    if kind == "array" and _kind(_resolve(schema.get("items", {}), root).schema) in (
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


def _shown(value: Any, raw: FormValues | None, typed: str | None) -> str:
    """What a control shows: the text posted (kept as typed), else the value's text."""
    return _text(value) if raw is None else typed or ""


def _truthy(text: str) -> bool:
    return text.strip().lower() in ("true", "on", "1", "yes")


def _resolve(schema: dict[str, Any], root: dict[str, Any]) -> _Prop:
    """Follow a `$ref`, and read `anyOf: [X, {type: null}]` (an optional X) as X."""
    nullable = False
    for _ in range(8):
        if "$ref" in schema:
            target: Any = root
            for part in str(schema["$ref"]).removeprefix("#/").split("/"):
                target = target.get(part, {}) if isinstance(target, dict) else {}
            schema = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
            continue
        branches = schema.get("anyOf") or schema.get("oneOf")
        if branches:
            concrete = [b for b in branches if b.get("type") != "null"]
            nullable = nullable or len(concrete) < len(branches)
            if len(concrete) == 1:
                rest = {k: v for k, v in schema.items() if k not in ("anyOf", "oneOf")}
                schema = {**concrete[0], **rest}
                continue
            return _Prop({k: v for k, v in schema.items() if k not in ("anyOf", "oneOf")}, True)
        break
    return _Prop(schema, nullable)


def _kind(schema: dict[str, Any]) -> str:
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    if kind is None and "properties" in schema:
        kind = "object"
    return str(kind) if kind else "any"


def _number_hints(schema: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    hints = [("step", "1" if schema.get("type") == "integer" else "any")]
    # An exclusive bound is hinted as inclusive; the server refuses the bound itself.
    for key, attr in (
        ("minimum", "min"),
        ("exclusiveMinimum", "min"),
        ("maximum", "max"),
        ("exclusiveMaximum", "max"),
    ):
        if isinstance(schema.get(key), int | float) and attr not in dict(hints):
            hints.append((attr, _text(schema[key])))
    hints.append(("inputmode", "numeric" if schema.get("type") == "integer" else "decimal"))
    return tuple(hints)


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
    """A form post's values by name (the last one of a name wins, as for a checkbox's)."""

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
        prop = _resolve(props[name], root).schema
        kind = _kind(prop)
        if "enum" not in prop and kind == "object" and prop.get("properties"):
            if any(n.startswith(f"{path}.") for n in form.names()):
                out[name] = values_of(prop, form, prefix=f"{path}.", root=root, problems=problems)
            continue
        raw = form.get(path)
        if raw is None:
            continue
        value = _parse(raw, prop, kind, root, path, problems)
        if value is not None:
            out[name] = value
    return out


def _parse(
    raw: str,
    prop: dict[str, Any],
    kind: str,
    root: dict[str, Any],
    path: str,
    problems: list[tuple[str, str]],
) -> Any:
    if kind == "boolean":
        return _truthy(raw)
    text = raw.strip()
    if not text:
        return None
    if "enum" in prop:
        return next((v for v in prop["enum"] if _text(v) == text), text)
    if kind in ("number", "integer"):
        return _number(text)
    if kind == "string":
        return raw
    if kind == "array":
        items = _resolve(prop.get("items", {}), root).schema
        if _kind(items) in ("string", "number", "integer"):
            lines = [line.strip() for line in raw.splitlines() if line.strip()]
            return lines if _kind(items) == "string" else [_number(line) for line in lines]
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
) -> tuple[DecisionForm, ...]:
    """A form per decision the request allows, generated from its `response_schema`.

    Args:
        request: The request to answer.
        submitted: The decision of a post being shown again (its form opens with `raw`).
        raw: The post, shown again as typed after a refusal or for a confirm step.
        errors: The refusal's errors (`loc`, `msg`), shown next to the fields they name.

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
            multiline=True,
        )
        shown = _paths(fields)
        # An error naming no field of the form (the decision itself, say) heads the form.
        unplaced = [f"{path}: {msg}" for path, msg in by_field.items() if path not in shown]
        forms.append(
            DecisionForm(
                decision=decision,
                label=DECISION_LABELS.get(decision, decision.capitalize()),
                help=DECISION_HELP.get(decision, ""),
                fields=fields,
                errors=(*rest, *unplaced) if mine else (),
                open=mine,
            )
        )
    options = request.payload.get("options") if request.kind == "question" else None
    if options:  # free text, or one of the options: a one-line input that suggests them
        forms = [
            replace(
                f,
                fields=tuple(
                    replace(x, control="text", suggestions=tuple(map(str, options)), attrs=())
                    if x.name == "answer"
                    else x
                    for x in f.fields
                ),
            )
            for f in forms
        ]
    return tuple(forms)


def _paths(fields: Sequence[Field]) -> set[str]:
    """The dotted paths of fields and of the fields inside them."""
    return {f.name for f in fields} | {p for f in fields for p in _paths(f.children)}


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


def flatten(values: Mapping[str, Any], prefix: str = "") -> list[tuple[str, str]]:
    """A JSON object as `(dotted name, text)` pairs: the hidden inputs that post it again."""
    pairs: list[tuple[str, str]] = []
    for key, value in values.items():
        if isinstance(value, dict):
            pairs += flatten(value, f"{prefix}{key}.")
        else:
            pairs.append((f"{prefix}{key}", _text(value)))
    return pairs


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
    defaults = {k: v.get("default") for k, v in schema.get("properties", {}).items()}
    return InputForm(
        workflow=workflow,
        description=description,
        fields=fields_of(schema, values=defaults, raw=raw, errors=by_field),
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
