"""What an executor keeps in its own attributes, carried by MAF's checkpoints for it.

MAF checkpoints an executor's state only through `on_checkpoint_save`/`on_checkpoint_restore`.
An executor written for one process keeps it in plain attributes instead (MAF's own
`sub_workflow_parallel_requests.py` sample: `self._pending_requests[request.id] = event`,
`self._cache[kind] -= amount`), and a restore in a fresh instance does not bring it back. On
Baton every resume is such a restore, often in another process; so Baton carries that state:
for each executor whose own classes leave both hooks as MAF's (an author who wrote the hooks
keeps the state there), `install` gives the instance hooks that, beside what MAF's classes save
and restore (an `AgentExecutor`'s session),

- save, with MAF's executor state, every own attribute (`snapshots.own_attributes`: set by the
  executor's own classes, not MAF's) that is not as the build left it, as the text of MAF's
  encoding of it whole (pickled as a one-item tuple, so that a dict's int or tuple keys stay
  what they were), proven to decode under the workflow's allow-list (the value's types the
  workflow's own, allow-listed, or MAF's): a later change in place does not reach it, and a
  pause is never made undurable by it;
- restore each of those attributes, and put every other back to its built value: a fresh
  instance gets the paused one's state, and a kept instance (`pool`) resets to as built, an
  object executors share still shared (refilled in place where it is a dict, list or set).

Not carried: MAF's components, runtime machinery and the run's services (`snapshots.machinery`:
a fresh instance makes its own); a resource, a value that cannot be pickled (a client made at
the build or on first use, an object holding a lock), left as it is and never reset; and a value
whose type the allow-list lacks (its attribute goes back as built, as without Baton; logged once
a process, and `baton check` names it and why).
"""

from __future__ import annotations

import json
import logging
import pickle
from typing import Any, Final

from agent_framework import Executor, Workflow
from agent_framework._workflows._checkpoint_encoding import (
    decode_checkpoint_value,
    encode_checkpoint_value,
)

from executors.platform.agents import (
    count_tools,
    executors_of,
    load_tools,
    loaded_tools,
    tool_counts,
)
from workflows.platform.snapshots import HOOKS, framework_names, machinery, own_attributes

logger = logging.getLogger(__name__)

KEY: Final = "baton.attributes"
"""Where in an executor's checkpointed state its carried attributes are."""

LOADED: Final = "baton.loaded_tools"
"""Where an agent executor's MCP tools' loaded tools are (`agents.loaded_tools`)."""

COUNTED: Final = "baton.tool_counts"
"""Where the calls MAF counted on an agent executor's limited tools are (`agents.tool_counts`)."""


def install(workflow: Workflow, allowed: frozenset[str]) -> None:
    """Carry the own attributes of `workflow`'s executors (sub-workflows' too) in checkpoints.

    Call it on a new instance, before it runs: the values its executors hold then are the
    built ones a restore puts back where a checkpoint carries none. `allowed`: the workflow's
    checkpoint allow-list. An executor already carried (one instance a builder hands every
    build, or a sub-workflow run by two executors) keeps its hooks.
    """
    seen: set[int] = set()
    for executor in executors_of(workflow):
        if id(executor) in seen or writes_own_hooks(type(executor)) or _carrier_of(executor):
            continue
        seen.add(id(executor))
        _Carrier(executor, allowed).attach()


def refusal(executor: Executor, name: str) -> str | None:
    """Why a save of `executor` could not carry its attribute `name`, if one could not."""
    carrier = _carrier_of(executor)
    return carrier.refused.get(name) if carrier is not None else None


def _carrier_of(executor: Executor) -> _Carrier | None:
    carrier = getattr(vars(executor).get(HOOKS[0]), "__self__", None)
    return carrier if isinstance(carrier, _Carrier) else None


def writes_own_hooks(cls: type) -> bool:
    """Whether an executor class of the author's own (not MAF's) defines a checkpoint hook.

    MAF's classes that define them (`AgentExecutor` keeps its session so) are MAF's business:
    an author's subclass of one that leaves them alone still has its own attributes carried.
    """
    return any(
        hook in vars(klass)
        for klass in cls.__mro__
        if not klass.__module__.startswith("agent_framework")
        for hook in HOOKS
    )


class _Carrier:
    """One executor's checkpoint hooks: its own attributes saved and restored with MAF's state.

    MAF's own hooks of the executor's class (an `AgentExecutor`'s session, say) still run, first,
    on the state they saved. The built value of each attribute is kept pickled (a pickle fails
    before it builds anything, and is a copy nothing changes) beside the object itself: an
    attribute holds its built value while it is that object and pickles the same. One that does
    not pickle at all is a resource (a client, a connection, a lock inside an object), no state of
    a run: it is never carried, reset or told of. A carried value is kept as the text of MAF's
    encoding of it, decoded in `restore` under the allow-list: one that no longer decodes (its
    class renamed by a deploy since) goes back to its built value, logged, and the rest of the
    checkpoint is unharmed.
    """

    def __init__(self, executor: Executor, allowed: frozenset[str]) -> None:
        self._executor = executor
        self._maf_save = executor.on_checkpoint_save
        self._maf_restore = executor.on_checkpoint_restore
        self._allowed = allowed
        self._originals: dict[str, Any] = {}
        self._built: dict[str, bytes] = {}
        self._resources: set[str] = set()
        own = own_attributes(executor)
        self._present = frozenset(own)
        for name, value in own.items():
            if machinery(value):
                continue
            built = _pickled(value)
            if built is None:
                self._resources.add(name)
            else:
                self._originals[name], self._built[name] = value, built
        self._skipped = framework_names(type(executor)) | frozenset(HOOKS)
        self.refused: dict[str, str] = {}
        """Why each attribute a save could not carry was not (the allow-list): its last refusal."""

    def attach(self) -> None:
        setattr(self._executor, HOOKS[0], self.save)
        setattr(self._executor, HOOKS[1], self.restore)

    def _unchanged(self, name: str, value: Any, now: bytes) -> bool:
        return value is self._originals.get(name, _NONE) and now == self._built[name]

    async def save(self) -> dict[str, Any]:
        """MAF's state, and the attributes that are not as built, as the text of their encoding."""
        carried: dict[str, str] = {}
        held = vars(self._executor)
        for name in held.keys() - self._skipped - self._resources:  # its own, as sets in C
            value = held[name]
            if machinery(value):
                continue
            now = _pickled(value)
            if now is None:  # made since the build, or become one: a resource
                self._resources.add(name)
                continue
            if name in self._built and self._unchanged(name, value, now):
                continue
            encoded = encode_checkpoint_value((value,))  # a tuple is pickled whole: keys kept
            try:
                decode_checkpoint_value(encoded, allowed_types=self._allowed)
            except Exception as exc:  # not carried: as without Baton
                self._refuse(name, _reason(exc))
                continue
            self.refused.pop(name, None)
            carried[name] = json.dumps(encoded)
        state = await self._maf_save()
        loaded = loaded_tools(self._executor)  # MAF's MCP tool keeps them in no checkpoint
        counted = tool_counts(self._executor)  # nor MAF's tool its calls, for its limits
        return (
            state
            | ({KEY: carried} if carried else {})
            | ({LOADED: loaded} if loaded else {})
            | ({COUNTED: counted} if counted else {})
        )

    async def restore(self, state: dict[str, Any]) -> None:
        """MAF's state; the carried attributes back; every other as built; none the build lacked.

        An attribute that holds its built object, unchanged, is left as it is (shared with
        another executor, it stays shared); one changed in place is put back in place where it is
        a dict, list or set. A resource is left as it is.
        """
        await self._maf_restore({k: v for k, v in state.items() if k not in (KEY, LOADED, COUNTED)})
        load_tools(self._executor, state.get(LOADED) or {})
        count_tools(self._executor, state.get(COUNTED) or {})
        carried: dict[str, Any] = {}
        for name, text in (state.get(KEY) or {}).items():
            try:
                [carried[name]] = decode_checkpoint_value(
                    json.loads(text), allowed_types=self._allowed
                )
            except Exception as exc:  # e.g. its class renamed since: as built
                logger.warning(
                    "a carried executor attribute no longer decodes: it is restored as built",
                    extra={
                        "executor": self._executor.id,
                        "attribute": name,
                        "reason": _reason(exc),
                    },
                )
        for name, original in self._originals.items():
            if name in carried or name in self._resources:
                continue
            value = getattr(self._executor, name, _NONE)
            now = _pickled(value) if value is not _NONE else b""
            if now is None:  # become a resource (a client made on first use): left as it is
                self._resources.add(name)
                continue
            if value is original and now == self._built[name]:
                continue
            setattr(self._executor, name, _as_built(original, self._built[name]))
        for name, value in carried.items():
            setattr(self._executor, name, value)
        held = vars(self._executor)
        for name in held.keys() - self._present - self._skipped - self._resources - carried.keys():
            if not machinery(held[name]):  # made since the build
                delattr(self._executor, name)

    def _refuse(self, name: str, why: str) -> None:
        self.refused[name] = why
        if (type(self._executor), name) not in _TOLD:  # once a process, not once a build
            _TOLD.add((type(self._executor), name))
            logger.warning(
                "an executor attribute cannot be checkpointed: a restore leaves it built",
                extra={"executor": self._executor.id, "attribute": name, "reason": why},
            )


_NONE: Final = object()


def _pickled(value: Any) -> bytes | None:
    """`value` pickled, or None where it cannot be (a resource)."""
    try:
        return pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # a client, a lock: no state of a run
        return None


def _as_built(original: Any, built: bytes) -> Any:
    """The built value again: `original` itself refilled where it is a dict, list or set."""
    fresh = pickle.loads(built)  # Baton's own pickle of the built value, never a stored one
    if type(original) is dict:
        original.clear()
        original.update(fresh)
        return original
    if type(original) is list:
        original[:] = fresh
        return original
    if type(original) is set:
        original.clear()
        original.update(fresh)
        return original
    return fresh


_TOLD: set[tuple[type, str]] = set()
"""The attributes whose refusal this process has logged, by executor class."""


def _reason(exc: BaseException) -> str:
    """What the first cause of a failed encoding or decoding says, in its first sentence."""
    while exc.__cause__ is not None:
        exc = exc.__cause__
    said = str(exc).split(". ", 1)[0].rstrip(".")
    return (said or type(exc).__name__)[:300]
