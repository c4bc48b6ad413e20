"""What may be stored: JSON values whose texts are valid Unicode, finite, shallow and bounded.

Every value a person or a client sends (a run's input, an answer, a reason) may end up in the
store, the audit trail and the pages. A lone UTF-16 surrogate cannot be encoded as UTF-8 (the
store refuses it, after part of a write, and every later read of it fails); PostgreSQL keeps no
NUL character in text; `Infinity` and numbers beyond a double are not JSON; a value nested
hundreds deep breaks renderers. `problems` finds each of those with its location, before anything
is written; `parse` reads JSON text with the same rules.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any, Final

MAX_DEPTH: Final = 32
"""Levels of nesting a stored JSON value may have."""

MAX_TEXT: Final = 65_536
"""Characters one stored text may have."""

MAX_INT: Final = 2**63 - 1
"""The largest integer a stored number may be (what a database column holds)."""

Problem = tuple[list[str], str]


def problems(value: Any, *, max_depth: int = MAX_DEPTH, max_text: int = MAX_TEXT) -> list[Problem]:
    """Each reason `value` may not be stored, with where in it (`[]` for the value itself)."""
    return list(_walk(value, [], 0, max_depth, max_text))


def _walk(
    value: Any, loc: list[str], depth: int, max_depth: int, max_text: int
) -> Iterator[Problem]:
    if depth > max_depth:
        yield loc, f"nested more than {max_depth} levels deep"
        return
    if isinstance(value, str):
        yield from ((loc, msg) for msg in _text_problems(value, max_text))
    elif isinstance(value, float) and not math.isfinite(value):
        yield loc, "must be a finite number"
    elif isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_INT:
        yield loc, "number too large"
    elif isinstance(value, dict):
        for key, item in value.items():
            name = str(key)
            for msg in _text_problems(name, 200):
                yield [*loc, _excerpt(name)], f"field name {msg}"
            yield from _walk(item, [*loc, name], depth + 1, max_depth, max_text)
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            yield from _walk(item, [*loc, str(i)], depth + 1, max_depth, max_text)


def _text_problems(text: str, max_text: int) -> list[str]:
    found = []
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        found.append("is not valid Unicode text (a lone surrogate)")
    if "\x00" in text:
        found.append("holds a NUL character")
    if len(text) > max_text:
        found.append(f"is longer than {max_text} characters")
    return found


def _excerpt(text: str, limit: int = 40) -> str:
    shown = text.encode("utf-8", "replace").decode("utf-8")
    return shown if len(shown) <= limit else shown[:limit] + "…"


class NotJson(ValueError):
    """Text that is not JSON Baton will store, with each problem's location."""

    def __init__(self, message: str, found: list[Problem]) -> None:
        super().__init__(message)
        self.problems = found


def parse(text: str | bytes) -> Any:
    """JSON text as a value, or `NotJson` naming what may not be stored.

    No NaN or Infinity, no number beyond a double (or an integer beyond 64 bits), and none of the
    value's own `problems` (surrogates, NUL, depth, length).
    """

    def constant(name: str) -> Any:
        raise NotJson(f"{name} is not a JSON number", [([], f"{name} is not a JSON number")])

    def number(literal: str) -> float:
        value = float(literal)
        if not math.isfinite(value):
            raise NotJson(f"{_excerpt(literal)} is too large", [([], "number too large")])
        return value

    def integer(literal: str) -> int:
        value = int(literal)
        if abs(value) > MAX_INT:
            raise NotJson(f"{_excerpt(literal)} is too large", [([], "number too large")])
        return value

    try:
        value = json.loads(text, parse_constant=constant, parse_float=number, parse_int=integer)
    except RecursionError as exc:
        raise NotJson("nested too deeply", [([], "nested too deeply")]) from exc
    except NotJson:
        raise
    except ValueError as exc:  # JSONDecodeError, or bytes that are not UTF-8
        raise NotJson(f"not valid JSON: {exc}", [([], f"not valid JSON: {exc}")]) from exc
    found = problems(value)
    if found:
        raise NotJson(f"{where(found[0][0])}: {found[0][1]}", found)
    return value


def where(loc: list[str]) -> str:
    """A location as words: `a.b.c`, cut short when it is long."""
    shown = ".".join(loc[:8]) + (".…" if len(loc) > 8 else "")
    return shown or "value"


def with_stop(text: str, stops: str = ".!?") -> str:
    """`text` ended as a sentence: a full stop added unless it ends with one of `stops`."""
    return text if text and text[-1] in stops else f"{text}."
