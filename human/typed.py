"""Any Python type as plain data, and values checked against it: the `input` kind's answer type.

A workflow may ask for an answer of any type pydantic can validate (str, int, bool, an Enum, a
Literal, a dataclass, a pydantic model, a TypedDict, list/dict/Optional of those). The request is
stored, and answered in another process, long after the type was at hand: `describe` writes the
type down as JSON (`{"class": "module:Qualname"}`, `{"origin": "list", "args": [...]}`,
`{"literal": [...]}`), `rebuild` finds it again. Only classes of modules this process has already
imported are found (stored data never makes Baton import anything), and only classes: a
description can name nothing that runs.

`check` validates an answer with the type itself (its own validators included) and gives each
problem's location; where the type cannot be rebuilt here it falls back to the stored JSON Schema.
"""

from __future__ import annotations

import copy
import dataclasses
import enum
import functools
import json
import sys
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, Literal

import jsonschema
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, create_model
from pydantic.errors import PydanticSchemaGenerationError
from pydantic_core import to_jsonable_python

_ORIGINS: dict[str, Any] = {
    "list": list,
    "dict": dict,
    "tuple": tuple,
    "set": set,
    "frozenset": frozenset,
}


class UnknownType(LookupError):
    """A described type this process cannot find (its module is not loaded, or it is gone)."""


def describe(tp: Any) -> Any:
    """`tp` as JSON: a class by its `module:Qualname`, generics and unions by their parts."""
    if tp is Any:
        return {"any": True}
    if tp is None or tp is type(None):
        return {"none": True}
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Literal:
        return {"literal": [a.value if isinstance(a, enum.Enum) else a for a in args]}
    if origin in (typing.Union, types.UnionType):
        return {"origin": "union", "args": [describe(a) for a in args]}
    if origin is typing.Annotated:
        return describe(args[0])
    if origin is not None:
        name = next((k for k, v in _ORIGINS.items() if v is origin), None)
        if name is None:
            raise TypeError(f"cannot describe {tp!r}: only list, dict, tuple and sets are generic")
        return {"origin": name, "args": [describe(a) if a is not Ellipsis else "..." for a in args]}
    if isinstance(tp, type):
        return {"class": f"{tp.__module__}:{tp.__qualname__}"}
    raise TypeError(f"cannot describe {tp!r} as a type")


def rebuild(description: Any) -> Any:
    """The type `description` names, from modules already imported; else `UnknownType`."""
    return _rebuild(json.dumps(description, sort_keys=True))


@functools.lru_cache(maxsize=512)
def _rebuild(text: str) -> Any:
    return _build(json.loads(text))


def _build(d: Any) -> Any:
    if d == "...":
        return Ellipsis
    if not isinstance(d, dict):
        raise UnknownType(f"not a type description: {d!r}")
    if d.get("any"):
        return Any
    if d.get("none"):
        return type(None)
    if "literal" in d:
        return typing.Literal[tuple(d["literal"])]
    if "class" in d:
        return _class(str(d["class"]))
    origin, args = d.get("origin"), tuple(_build(a) for a in d.get("args") or ())
    if origin == "union":
        return functools.reduce(lambda a, b: a | b, args)
    if origin in _ORIGINS:
        return _ORIGINS[origin][args] if args else _ORIGINS[origin]
    raise UnknownType(f"not a type description: {d!r}")


def _class(key: str) -> type:
    module_name, _, qualname = key.partition(":")
    module = sys.modules.get(module_name)
    if module is None:
        raise UnknownType(f"{key}: module {module_name} is not loaded in this process")
    found: Any = module
    for part in qualname.split("."):
        found = getattr(found, part, None)
    if not isinstance(found, type):
        raise UnknownType(f"{key} is not a class of module {module_name}")
    return found


@functools.lru_cache(maxsize=512)
def _adapter(text: str) -> Answering:
    return answer_adapter(_rebuild(text))


def adapter(description: Any) -> Answering:
    """A pydantic `TypeAdapter` of the described type (cached per process)."""
    return _adapter(json.dumps(description, sort_keys=True))


def type_adapter(tp: Any) -> TypeAdapter[Any]:
    """A pydantic `TypeAdapter` of `tp`, built once per type and process.

    Building one generates the type's core schema, which costs milliseconds: several times what
    a whole drive of a small workflow costs otherwise. A type that cannot be a dict key (an
    unhashable annotation) gets a fresh adapter each time.
    """
    try:
        return _type_adapter(tp)
    except TypeError:  # unhashable
        return TypeAdapter(tp)


@functools.lru_cache(maxsize=512)
def _type_adapter(tp: Any) -> TypeAdapter[Any]:
    return TypeAdapter(tp)


def schema_of_type(tp: Any) -> dict[str, Any]:
    """The JSON Schema of the values of `tp` (a person's form is made from it); the caller's own."""
    if not _hashable(tp):
        return _answering(tp).json_schema()
    return copy.deepcopy(_schema_of_type(tp))


@functools.lru_cache(maxsize=512)
def _schema_of_type(tp: Any) -> dict[str, Any]:
    return answer_adapter(tp).json_schema()


class PartlyDescribed:
    """The answer side of a dataclass pydantic cannot describe whole: a person gives the rest.

    Each field of a type pydantic has no schema for (a framework's class: a list of chat
    messages, say) must have a default; the form, the check and the answer are made of the other
    fields, and the answer's instance keeps those defaults. A value that holds such a field is
    refused as an extra input: no person's JSON can be one. A field without a default that
    pydantic cannot describe: the type cannot be answered in a form (`TypeError`).
    """

    def __init__(self, tp: type) -> None:
        hints = typing.get_type_hints(tp)
        answered: dict[str, Any] = {}
        for each in dataclasses.fields(tp):
            if not each.init:
                continue
            try:
                TypeAdapter(hints[each.name])
            except PydanticSchemaGenerationError:
                if (
                    each.default is dataclasses.MISSING
                    and each.default_factory is dataclasses.MISSING
                ):
                    raise TypeError(
                        f"{tp.__qualname__}.{each.name} has no default, and no form can give "
                        f"a {hints[each.name]!r}"
                    ) from None
                continue
            default: Any = (
                Field(default_factory=each.default_factory)
                if each.default_factory is not dataclasses.MISSING
                else (... if each.default is dataclasses.MISSING else each.default)
            )
            answered[each.name] = (hints[each.name], default)
        self._type = tp
        self._model: type[BaseModel] = create_model(
            tp.__name__, __config__=ConfigDict(extra="forbid"), **answered
        )
        self._fields = tuple(answered)

    def validate_python(self, value: Any) -> Any:
        """An instance of the dataclass from a person's JSON (`ValidationError` if it is not)."""
        given = self._model.model_validate(value)
        return self._type(**{name: getattr(given, name) for name in self._fields})

    def dump_python(self, value: Any, *, mode: Literal["json", "python"] = "python") -> Any:
        """What a person gave of an instance: the fields they answer."""
        given = {name: getattr(value, name) for name in self._fields}
        return self._model.model_validate(given).model_dump(mode=mode)

    def json_schema(self) -> dict[str, Any]:
        """The form's schema: the fields a person answers."""
        return self._model.model_json_schema()


Answering = TypeAdapter[Any] | PartlyDescribed
"""What checks a person's answer of a type: pydantic's adapter, or a partly described one's."""


def answer_adapter(tp: Any) -> Answering:
    """What checks and makes a person's answer of type `tp` (cached per type and process).

    pydantic's `TypeAdapter`; for a dataclass pydantic cannot describe whole, a
    `PartlyDescribed` one. (A request's data is shown by `as_json`, every field of it.)
    """
    return _answer_adapter(tp) if _hashable(tp) else _answering(tp)


def _hashable(tp: Any) -> bool:
    """Whether `tp` can key a cache (an annotation holding a list, say, cannot)."""
    try:
        hash(tp)
    except TypeError:
        return False
    return True


@functools.lru_cache(maxsize=512)
def _answer_adapter(tp: Any) -> Answering:
    return _answering(tp)


def _answering(tp: Any) -> Answering:
    try:
        return TypeAdapter(tp)
    except PydanticSchemaGenerationError:
        if isinstance(tp, type) and dataclasses.is_dataclass(tp):
            return PartlyDescribed(tp)
        raise


def as_json(value: Any, *, fallback: Callable[[Any], Any] = str) -> Any:
    """A request's data as JSON: fields of dataclasses and models, enums by value.

    A type pydantic cannot describe (a dataclass with a field of a framework's class, say) is
    still shown field by field, each value pydantic cannot serialize as `fallback` makes it
    (by default what it says of itself, `str`); only what fails even so is one `str()`.
    """
    try:
        return type_adapter(type(value)).dump_python(value, mode="json")
    except Exception:  # no schema for the type: serialize it by what each value is
        try:
            return to_jsonable_python(value, fallback=fallback)
        except Exception:  # what the fallback made is no JSON either
            return str(value)


Problem = tuple[list[str], str]


def check(description: Any, schema: Mapping[str, Any], value: Any) -> tuple[Any, list[Problem]]:
    """`value` in its canonical JSON form, and what is wrong with it: `(location, message)` each.

    The described type itself judges (its own validators included) where this process can
    rebuild it, and its canonical form is what is kept (`"3"` for an int is `3`); the stored JSON
    Schema judges otherwise, and the value is kept as sent.
    """
    try:
        checker = adapter(description)
    except Exception:  # not here, or not a type pydantic can check: the stored schema judges
        return value, schema_problems(schema, value)
    try:
        typed = checker.validate_python(value)
    except ValidationError as exc:
        return value, [
            ([str(p) for p in e["loc"]], e["msg"].removeprefix("Value error, "))
            for e in exc.errors(include_url=False)
        ]
    return checker.dump_python(typed, mode="json"), []


def checkable(schema: Mapping[str, Any]) -> bool:
    """Whether `schema` is a JSON Schema a value can be checked against (`schema_problems`).

    Not one with an unknown type (`"type": "int"`): jsonschema refuses it, where MAF's own check
    of a tool's arguments lets it pass. Worked out once a schema (a metaschema check costs a
    millisecond).
    """
    return _checkable(json.dumps(schema, sort_keys=True, default=str))


@functools.lru_cache(maxsize=512)
def _checkable(text: str) -> bool:
    try:
        jsonschema.Draft202012Validator.check_schema(json.loads(text))
    except Exception:  # (SchemaError, UnknownType, ...)
        return False
    return True


def schema_problems(schema: Mapping[str, Any], value: Any) -> list[Problem]:
    """What is wrong with `value` by the JSON Schema `schema`: `(location, message)` each.

    None found by a schema that cannot check it (`checkable`): the value is let be.
    """
    validator = jsonschema.Draft202012Validator(dict(schema))
    found: list[Problem] = []
    try:
        errors = sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))
    except Exception:  # a schema jsonschema cannot apply (`checkable`)
        return []
    for e in errors:
        loc = [str(p) for p in e.absolute_path]
        if e.validator == "required" and isinstance(e.instance, dict):
            missing = [str(n) for n in e.validator_value if n not in e.instance]
            found += [([*loc, name], "Field required") for name in missing]
        else:
            found.append((loc, e.message))
    return found


def value_of(description: Any, value: Any) -> Any:
    """`value` (JSON) as an instance of the described type; `ValidationError` if it is not one."""
    return adapter(description).validate_python(value)
