"""What executors keep in their own attributes, in a form two instances can be compared by.

An executor's own attributes are those of its instance `__dict__` that MAF's classes do not set
themselves (`framework_names`: what the `agent_framework` classes of its MRO assign). A value's
`fingerprint` is plain data: JSON-like values as they are, containers item by item, any other
object as its class and its attributes, down to a bounded depth; functions and classes by name;
runtime machinery (locks, event loops, tasks, files), MAF's components (agents, chat clients,
tools, middleware) and the run's services by type alone. Two fingerprints `differ_at` the paths
where they disagree, and `lost_attributes` tells from them what a restore did not bring back.
"""

from __future__ import annotations

import asyncio
import dis
import enum
import functools
import io
import logging
import math
import threading
import types
from collections.abc import Iterator, Mapping
from types import CodeType
from typing import Any, Final

from agent_framework import (
    AgentMiddleware,
    BaseAgent,
    BaseChatClient,
    ChatMiddleware,
    ContextProvider,
    Executor,
    FunctionMiddleware,
    FunctionTool,
    Workflow,
)

from executors.platform.services import RunServices

MAX_DEPTH: Final = 6
"""How deep a fingerprint follows objects inside objects; below it, only types are compared."""

Path = tuple[str, ...]
Snapshot = dict[str, dict[str, Any]]
"""Executor id -> own attribute name -> fingerprint."""

_PLAIN: Final = (str, bytes, int, float, bool, type(None))
_CALLABLE: Final = (
    types.FunctionType,
    types.MethodType,
    types.BuiltinFunctionType,
    functools.partial,
)
# Compared by type alone. No checkpoint carries runtime machinery: a fresh instance makes its own
# (a lock binds its loop when first used). MAF's components (an agent, a chat client, a tool, a
# middleware) are built afresh with the graph, and what they cache or count is theirs, not the
# executor's: an agent's conversation lives in its session, which is compared. The run's services
# are handed to every instance afresh by the runtime.
_OPAQUE: Final = (
    asyncio.AbstractEventLoop,
    asyncio.Event,
    asyncio.Future,
    asyncio.Lock,
    asyncio.Queue,
    asyncio.Semaphore,
    asyncio.Condition,
    io.IOBase,
    logging.Logger,
    threading.Thread,
    type(threading.Lock()),
    type(threading.RLock()),
    BaseAgent,
    BaseChatClient,
    FunctionTool,
    AgentMiddleware,
    ChatMiddleware,
    FunctionMiddleware,
    ContextProvider,
    Executor,
    Workflow,
    RunServices,
)


def snapshot(workflow: Workflow) -> Snapshot:
    """The fingerprints of the own attributes of every part that may hold state (`parts_of`)."""
    return {
        part_id: {name: fingerprint(value) for name, value in own_attributes(part).items()}
        for part_id, part in parts_of(workflow).items()
    }


PROVIDER: Final = " context provider "
"""What joins an executor's id and its agent's context provider's in a part's id."""

MIDDLEWARE: Final = " middleware "
"""What joins an executor's id and the author's object holding its agent's middleware."""


def parts_of(workflow: Workflow) -> dict[str, Any]:
    """What of `workflow` may hold a run's state in its attributes, by id.

    Each executor (by its id), and each context provider of the agent an executor runs
    (`<executor id> context provider <source id>`): MAF checkpoints the state a provider keeps in
    the session (`state` of its `before_run`/`after_run`), not what it keeps in itself. And each
    object of the author's that holds the agent's middleware (`<executor id> middleware <class>`):
    an `AgentMiddleware` instance, or the instance whose bound method is the middleware (MAF's
    `shared_state_middleware.py` counts calls in one); MAF checkpoints none of it.
    """
    from executors.platform.agents import agent_executors

    found: dict[str, Any] = dict(workflow.executors)
    for executor_id, agent in agent_executors(workflow).items():
        for provider in getattr(agent, "context_providers", None) or ():
            name = getattr(provider, "source_id", None) or type(provider).__name__
            found[f"{executor_id}{PROVIDER}{name}"] = provider
        for held in getattr(agent, "middleware", None) or ():
            owner = getattr(held, "__self__", held)  # a bound method's instance
            if isinstance(owner, type | types.ModuleType) or not hasattr(owner, "__dict__"):
                continue  # a plain function (or a class's): no instance to hold state
            module = type(owner).__module__
            if module.startswith(("agent_framework", "executors.", "workflows.")):
                continue  # MAF's own (its loop keeps a run's state in its frame) and Baton's
            found[f"{executor_id}{MIDDLEWARE}{type(owner).__qualname__}"] = owner
    return found


HOOKS: Final = ("on_checkpoint_save", "on_checkpoint_restore")
"""MAF's checkpoint hooks: on an instance, Baton's (`workflows.platform.attributes`), no state."""


def own_attributes(executor: Executor) -> dict[str, Any]:
    """The attributes an executor's own classes set on it (MAF's own are left out)."""
    skipped = framework_names(type(executor))
    return {
        name: value
        for name, value in vars(executor).items()
        if name not in skipped and name not in HOOKS
    }


def machinery(value: Any) -> bool:
    """Whether a value is no state of a run: a fresh instance makes or is handed its own.

    Classes, functions and the objects `fingerprint` compares by type alone (`_OPAQUE`: runtime
    machinery, MAF's components, the run's services).
    """
    return isinstance(value, _MACHINERY)


_MACHINERY: Final = (type, types.ModuleType, *_CALLABLE, *_OPAQUE)


def framework_names(cls: type) -> frozenset[str]:
    """The attribute names that the `agent_framework` classes in `cls`'s MRO assign on `self`.

    Found in their bytecode (every `x.name = ...` in their methods), so that the state MAF
    keeps for an executor, and checkpoints itself, is never taken for the author's.
    """
    found = _FRAMEWORK_NAMES.get(cls)
    if found is None:
        found = _FRAMEWORK_NAMES[cls] = _assigned_by_maf(cls)
    return found


_FRAMEWORK_NAMES: dict[type, frozenset[str]] = {}


def _assigned_by_maf(cls: type) -> frozenset[str]:
    names: set[str] = set()
    for klass in cls.__mro__:
        if not klass.__module__.startswith("agent_framework"):
            continue
        for member in vars(klass).values():
            for code in _code_of(member):
                names |= {
                    str(i.argval) for i in dis.get_instructions(code) if i.opname == "STORE_ATTR"
                }
    return frozenset(names)


def _code_of(member: Any) -> Iterator[CodeType]:
    """The code objects of a class member (function, static/class method, property), nested too."""
    if isinstance(member, staticmethod | classmethod):
        member = member.__func__
    functions = (
        [member.fget, member.fset, member.fdel] if isinstance(member, property) else [member]
    )
    for function in functions:
        code = getattr(function, "__code__", None)
        if isinstance(code, CodeType):
            yield from _nested(code)


def _nested(code: CodeType) -> Iterator[CodeType]:
    yield code
    for const in code.co_consts:
        if isinstance(const, CodeType):
            yield from _nested(const)


def fingerprint(value: Any, depth: int = 0, path: frozenset[int] = frozenset()) -> Any:
    """`value` as plain data that compares equal between equal states of two instances."""
    if isinstance(value, float) and math.isnan(value):
        return "<nan>"
    if isinstance(value, _PLAIN):
        return value
    if isinstance(value, enum.Enum):
        return f"{_name(type(value))}.{value.name}"
    if isinstance(value, type):
        return f"<class {_name(value)}>"
    if isinstance(value, _CALLABLE):
        return f"<callable {getattr(value, '__qualname__', _name(type(value)))}>"
    if isinstance(value, _OPAQUE) or depth >= MAX_DEPTH:
        return {"<type>": _name(type(value))}
    if id(value) in path:
        return {"<cycle>": _name(type(value))}
    inner = path | {id(value)}
    return {"<type>": _name(type(value)), **_contents(value, depth + 1, inner)}


def _contents(value: Any, depth: int, path: frozenset[int]) -> dict[str, Any]:
    if isinstance(value, Mapping):
        return {"<items>": {_key(k): fingerprint(v, depth, path) for k, v in value.items()}}
    if isinstance(value, list | tuple):
        return {"<items>": [fingerprint(v, depth, path) for v in value]}
    if isinstance(value, set | frozenset):
        return {"<items>": sorted(repr(fingerprint(v, depth, path)) for v in value)}
    return {"<fields>": {k: fingerprint(v, depth, path) for k, v in _fields_of(value).items()}}


def _key(key: Any) -> str:
    """A mapping's key as a fingerprint holds it: a string as itself, any other with its type.

    The key 3 and the key "3" differ: MAF's checkpoint encoding turns the one into the other.
    """
    return key if isinstance(key, str) else f"<{type(key).__name__} {key!r}>"


def keys_became_strings(before: Any, after: Any) -> bool:
    """Whether `after` is `before` but for dict keys that were not strings and now are.

    MAF's checkpoint encoding is JSON's: a dict keyed by ints (or any other keys) that an
    executor's `on_checkpoint_save` returns, or its workflow's state holds, comes back keyed by
    their strings (the plain attributes Baton carries keep theirs: `workflows.platform.attributes`).
    """
    was, now = fingerprint(before), fingerprint(after)
    return bool(was != now and fingerprint(_string_keyed(before)) == now)


def _string_keyed(value: Any, depth: int = 0) -> Any:
    """`value` with its dicts' keys as strings, in its lists and tuples too.

    A dict's subclass stays as it is: a checkpoint would not bring it back as itself either.
    """
    if depth >= MAX_DEPTH:
        return value
    if type(value) is dict:
        return {str(k): _string_keyed(v, depth + 1) for k, v in value.items()}
    if type(value) in (list, tuple):
        return type(value)(_string_keyed(v, depth + 1) for v in value)
    return value


def _fields_of(value: Any) -> dict[str, Any]:
    fields = dict(getattr(value, "__dict__", {}))
    for klass in type(value).__mro__:
        for slot in getattr(klass, "__slots__", ()):
            if slot not in ("__dict__", "__weakref__") and hasattr(value, slot):
                fields.setdefault(slot, getattr(value, slot))
    return fields


def differ_at(a: Any, b: Any, path: Path = ()) -> Iterator[Path]:
    """The paths at which two fingerprints disagree (a whole container when its length does)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(a.keys() | b.keys()):
            if key not in a or key not in b:
                yield (*path, key)
            else:
                yield from differ_at(a[key], b[key], (*path, key))
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for index, (x, y) in enumerate(zip(a, b, strict=True)):
            yield from differ_at(x, y, (*path, str(index)))
    elif type(a) is not type(b) or a != b:
        yield path


def _name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def lost_attributes(
    before: dict[str, Any], after: dict[str, Any], fresh: tuple[dict[str, Any], dict[str, Any]]
) -> list[str]:
    """The own attributes of one executor that a restore did not bring back, by name.

    `before` and `after` fingerprint its attributes at a pause and after a fresh instance was
    restored from that pause; `fresh` are two instances that never ran. What differs between
    those two (an id made at random, say) is no state and never compared; an attribute the run
    never changed (still as freshly built: an agent, a setting) is not state either.
    """
    unstable = set(differ_at(*fresh))
    changed_by_run = _stable(differ_at(fresh[0], before), unstable)
    return sorted(_stable(differ_at(before, after), unstable) & changed_by_run)


def kept_attributes(
    reset: dict[str, Any], fresh: tuple[dict[str, Any], dict[str, Any]]
) -> list[str]:
    """The own attributes of one executor that a kept instance, once reset, does not hold anew.

    `reset` fingerprints its attributes on an instance that ran and was reset for another run
    (`workflows.platform.pool`); `fresh` are two instances that never ran. What differs between
    those two (an id made at random, say) is no state and never compared.
    """
    return sorted(_stable(differ_at(fresh[0], reset), set(differ_at(*fresh))))


def _stable(paths: Iterator[Path], unstable: set[Path]) -> set[str]:
    """The attribute names at `paths`, leaving out what lies under an `unstable` path."""
    return {p[0] for p in paths if p and not any(p[: len(u)] == u for u in unstable)}
