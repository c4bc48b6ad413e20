"""An answer's JSON Schema read for people: references followed, labels, choices, plain words.

Every channel shows an `input` request's answer from one schema (the workflow's answer type,
`response_schema.properties.answer`, its `$defs` at the root): the web form builds its controls
from it, Slack offers a button per choice when the answer is a yes/no or a short list of values,
and the CLI says in words what the answer must be. The reading rules live here once: how a `$ref`
and an optional (`anyOf: [X, null]`) resolve, what a field is called, what a value is called.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Final

from human.records import HumanRequest

CHOICES_MAX: Final = 5
"""At most this many values are offered as one button each (Slack)."""

_ACRONYMS: Final = {"id": "ID", "url": "URL", "uri": "URI", "api": "API", "ip": "IP"}


@dataclass(frozen=True)
class Resolved:
    """A property's schema with its `$ref`s followed; `nullable` when null is also allowed."""

    schema: dict[str, Any]
    nullable: bool


def resolve(schema: dict[str, Any], root: dict[str, Any]) -> Resolved:
    """Follow `$ref`s (against `root`) and read `anyOf: [X, {type: null}]` (an optional X) as X.

    A union of several concrete types is read as any value (its `anyOf` dropped).
    """
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
            rest = {k: v for k, v in schema.items() if k not in ("anyOf", "oneOf")}
            return Resolved(rest, nullable)
        break
    return Resolved(schema, nullable)


def json_type(schema: dict[str, Any]) -> str:
    """The JSON type a schema names (`object` for one with properties; `any` when it names none)."""
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    if kind is None and "properties" in schema:
        kind = "object"
    return str(kind) if kind else "any"


def answer_schema(request: HumanRequest) -> dict[str, Any]:
    """The schema an `input` request's answer value must fit, its `$defs` beside it."""
    root = request.response_schema
    answer = root.get("properties", {}).get("answer", {})
    return {**answer, "$defs": root.get("$defs", {})} if root.get("$defs") else dict(answer)


# words for people -----------------------------------------------------------------------------


def label(name: str, title: Any = None) -> str:
    """What a person calls a field: its schema title, or its name in words.

    `due_in_days` is `Due in days`; a title pydantic made up from the name (`Due In Days`)
    counts as no title.
    """
    made_up = name.replace("_", " ").title()
    if isinstance(title, str) and title.strip() and title != made_up:
        return title
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name).replace("_", " ").replace("-", " ")
    parts = [_ACRONYMS.get(w.lower(), w.lower()) for w in words.split()]
    if not parts:
        return name
    return " ".join([parts[0][:1].upper() + parts[0][1:], *parts[1:]])


def option_label(value: Any) -> str:
    """What a person calls one value of a choice: `needs_work` -> `Needs work`, `true` -> `Yes`.

    Values that are not lower-case words (`XL`, `A-1`, `3`) stay as they are.
    """
    if value is True:
        return "Yes"
    if value is False:
        return "No"
    if value is None:
        return "None"
    text = str(value)
    if not re.fullmatch(r"[a-z][a-z0-9]*(?:[ _-][a-z0-9]+)*", text):
        return text
    words = re.split(r"[ _-]", text)
    return " ".join([words[0].capitalize(), *words[1:]])


def choices(schema: dict[str, Any], root: dict[str, Any] | None = None) -> list[tuple[Any, str]]:
    """The few values an answer can take, with their labels; empty for any other answer.

    Yes and no for a boolean, each value of an enum of at most `CHOICES_MAX`; nothing for text,
    numbers, objects or longer lists of values.
    """
    found = resolve(schema, root if root is not None else schema).schema
    if "enum" in found:
        values = list(found["enum"])
        return [(v, option_label(v)) for v in values] if len(values) <= CHOICES_MAX else []
    if "const" in found:
        return [(found["const"], option_label(found["const"]))]
    if json_type(found) == "boolean":
        return [(True, "Yes"), (False, "No")]
    return []


def bounds(schema: dict[str, Any]) -> str:
    """A number's limits in words: `from 1 to 5`, `at least 1`, `more than 0`; `""` for none."""
    low = _first(schema, "minimum", "exclusiveMinimum")
    high = _first(schema, "maximum", "exclusiveMaximum")
    if low and high and low[0] == "minimum" and high[0] == "maximum":
        return f"from {_number(low[1])} to {_number(high[1])}"
    words = []
    if low:
        words.append(f"{'at least' if low[0] == 'minimum' else 'more than'} {_number(low[1])}")
    if high:
        words.append(f"{'at most' if high[0] == 'maximum' else 'less than'} {_number(high[1])}")
    return " and ".join(words)


def _first(schema: dict[str, Any], *keys: str) -> tuple[str, float] | None:
    return next(
        ((k, schema[k]) for k in keys if isinstance(schema.get(k), int | float)),
        None,
    )


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def describe(
    schema: dict[str, Any], root: dict[str, Any] | None = None, *, indent: str = "  "
) -> list[str]:
    """What a value of `schema` must be, in words, one line per field (nested fields indented).

    Fields are named as they are written in JSON; a required one says so, a default is told.
    """
    root = root if root is not None else schema
    return _describe(schema, root, indent, "")


def _describe(schema: dict[str, Any], root: dict[str, Any], indent: str, at: str) -> list[str]:
    branches = schema.get("anyOf") or schema.get("oneOf") or []
    concrete = [b for b in branches if b.get("type") != "null"]
    if len(concrete) > 1:  # a union: each of its types in a phrase
        either = " or ".join(_inline(b, root, plural=False) for b in concrete)
        return [f"null, or {either}" if len(concrete) < len(branches) else either]
    found = resolve(schema, root)
    head, fields = _shape(found.schema, root)
    if found.nullable:
        head = f"null, or {head}"
    lines = [head]
    required = set(found.schema.get("required", ()))
    for name, prop in fields.items():
        sub = _describe(prop, root, indent, at + indent)
        default = resolve(prop, root).schema.get("default", _NO_DEFAULT)
        note = " (required)" if name in required else ""
        if default is not _NO_DEFAULT and default is not None:
            told = f" (default: {json.dumps(default)})"
            sub[0] = f"{sub[0][:-1]}{told}:" if sub[0].endswith(":") else sub[0] + told
        lines.append(f"{at}{indent}{name}{note}: {sub[0]}")
        lines += sub[1:]
    return lines


_NO_DEFAULT: Final = object()


def _shape(schema: dict[str, Any], root: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """A one-line description of `schema`'s own type, and the fields to describe under it."""
    if "enum" in schema:
        return "one of " + ", ".join(json.dumps(v) for v in schema["enum"]), {}
    if "const" in schema:
        return f"exactly {json.dumps(schema['const'])}", {}
    kind = json_type(schema)
    if kind == "object" and schema.get("properties"):
        return "an object with these fields:", dict(schema["properties"])
    if kind == "object":
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict) and extra:
            return f"an object whose values are each {_inline(extra, root)}", {}
        return "an object", {}
    if kind == "array":
        items = schema.get("items")
        return (f"a list of {_inline(items, root)}" if items else "a list"), {}
    return _scalar(schema, kind), {}


def _inline(schema: dict[str, Any], root: dict[str, Any], *, plural: bool = True) -> str:
    """A nested type in a phrase: a list's items, a map's values (`plural`), a union's types."""
    found = resolve(schema, root).schema
    if json_type(found) == "object" and found.get("properties"):
        fields = ", ".join(found["properties"])
        return f"objects with fields {fields}" if plural else f"an object with fields {fields}"
    text, _ = _shape(found, root)
    if not plural:
        return text
    return {"text": "text values", "true or false": "true or false values"}.get(text, text)


def _scalar(schema: dict[str, Any], kind: str) -> str:
    if kind == "boolean":
        return "true or false"
    if kind in ("integer", "number"):
        noun = "a whole number" if kind == "integer" else "a number"
        limits = bounds(schema)
        return f"{noun} {limits}" if limits else noun
    if kind == "string":
        return _text_words(schema)
    if kind == "null":
        return "null"
    if "anyOf" in schema or "oneOf" in schema or kind == "any":
        return "any JSON value"
    return kind


def _text_words(schema: dict[str, Any]) -> str:
    formats = {"date": "a date (YYYY-MM-DD)", "date-time": "a date and time (ISO 8601)"}
    words = formats.get(str(schema.get("format")), "text")
    low, high = schema.get("minLength"), schema.get("maxLength")
    if isinstance(low, int) and low == high:
        words += f" of {low} characters"
    elif isinstance(low, int) and isinstance(high, int):
        words += f" of {low} to {high} characters"
    elif isinstance(high, int):
        words += f" of at most {high} characters"
    elif isinstance(low, int) and low > 0:
        words += f" of at least {low} character{'s' if low > 1 else ''}"
    if isinstance(schema.get("pattern"), str):
        words += f" matching {schema['pattern']}"
    return words


def example(schema: dict[str, Any], root: dict[str, Any] | None = None) -> Any:
    """A small value that fits `schema`: its required fields only, each at its simplest."""
    root = root if root is not None else schema
    found = resolve(schema, root).schema
    if found.get("default") is not None:
        return found["default"]
    if found.get("enum"):
        return found["enum"][0]
    if "const" in found:
        return found["const"]
    kind = json_type(found)
    if kind == "object":
        props = found.get("properties", {})
        return {n: example(props[n], root) for n in found.get("required", ()) if n in props}
    if kind in ("integer", "number"):
        low = _first(found, "minimum", "exclusiveMinimum")
        if low is None:
            return 0
        start = low[1] if low[0] == "minimum" else low[1] + 1
        return int(start) if kind == "integer" or float(start).is_integer() else start
    simple: dict[str, Any] = {"boolean": True, "string": "text", "array": [], "null": None}
    return simple.get(kind, "text")


# values an answer repeats from its request ----------------------------------------------------

_JSON_TYPES: Final = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
}


ECHOED: Final = "Filled in from the request."


def echoed(schema: dict[str, Any], data: Any) -> dict[str, Any]:
    """An object answer's `schema`, each field its request's data holds by name filled in.

    An answer type may have to repeat a value of its request (MAF's
    `workflow_as_agent_human_in_the_loop.py`: a `ReviewResponse` repeats the `request_id` of the
    `ReviewRequest` inside the request), which no person should have to copy by hand. A field of
    the answer whose name is a field of the request data, or of an object inside it (one level
    down), holding a plain value (text, number, yes/no) of the field's own type, gets that value
    as its default and says so (its description, where it has none): the form shows it filled
    in, read-only (`readOnly`: nobody should change what the workflow needs back as it is), and
    an answer that leaves it out is given it (`with_defaults`). It stays required, as the
    workflow needs it; an answer sent otherwise (the API) may still give another value. A name
    found with two different values is left alone.
    """
    properties = schema.get("properties")
    if (
        schema.get("type") != "object"
        or not isinstance(properties, dict)
        or not isinstance(data, dict)
    ):
        return schema
    found: dict[str, set[str]] = {}
    values: dict[str, Any] = {}
    for holder in [data, *(v for v in data.values() if isinstance(v, dict))]:
        for name, value in holder.items():
            if isinstance(value, str | int | float) and name in properties:  # bool is an int
                found.setdefault(name, set()).add(json.dumps(value))
                values[name] = value
    filled = dict(properties)
    for name, seen in found.items():
        kind = json_type(resolve(dict(properties[name]), schema).schema)
        value = values[name]
        fits = isinstance(value, _JSON_TYPES.get(kind, ())) and (
            kind == "boolean" or not isinstance(value, bool)
        )
        if len(seen) == 1 and fits and "default" not in properties[name]:
            filled[name] = {
                "description": ECHOED,
                **properties[name],
                "default": value,
                "readOnly": True,
            }
    return {**schema, "properties": filled} if filled != properties else schema


def with_defaults(schema: dict[str, Any], value: Any) -> Any:
    """An object answer with each field it leaves out that `schema` gives a default filled in."""
    properties = schema.get("properties")
    if not isinstance(value, dict) or not isinstance(properties, dict):
        return value
    given = {
        name: field["default"]
        for name, field in properties.items()
        if isinstance(field, dict) and "default" in field and name not in value
    }
    return {**given, **value} if given else value
