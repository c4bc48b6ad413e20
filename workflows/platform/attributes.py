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
  executor's own classes, not MAF's) that differs from the value the build gave it, as a copy
  that MAF's checkpoint encoding brings back under the workflow's allow-list (the value's types
  the workflow's own, allow-listed, or MAF's): the copy is what the checkpoint keeps, so a later
  change in place does not reach it, and a pause is never made undurable by it;
- restore each of those attributes, and put every other back to a copy of its built value: a
  fresh instance gets the paused one's state, and a kept instance (`pool`) resets to as built.

Not carried: MAF's components, runtime machinery and the run's services (`snapshots.machinery`:
a fresh instance makes its own), and a value MAF's encoding does not bring back (its attribute
stays as built, as without Baton; the first such save of each attribute is logged, and `baton
check` names it).
"""

from __future__ import annotations

import copy
import logging
from typing import Any, Final

from agent_framework import Executor, Workflow
from agent_framework._workflows._checkpoint_encoding import (
    decode_checkpoint_value,
    encode_checkpoint_value,
)

from executors.platform.agents import executors_of
from workflows.platform.snapshots import HOOKS, framework_names, machinery, own_attributes

logger = logging.getLogger(__name__)

KEY: Final = "baton.attributes"
"""Where in an executor's checkpointed state its carried attributes are."""


def install(workflow: Workflow, allowed: frozenset[str]) -> None:
    """Carry the own attributes of `workflow`'s executors (sub-workflows' too) in checkpoints.

    Call it on a new instance, before it runs: the values its executors hold then are the
    built ones a restore puts back where a checkpoint carries none. `allowed`: the workflow's
    checkpoint allow-list.
    """
    for executor in executors_of(workflow):
        if not writes_own_hooks(type(executor)):
            _Carrier(executor, allowed).attach()


def refusal(executor: Executor, name: str) -> str | None:
    """Why a save of `executor` could not carry its attribute `name`, if one could not."""
    carrier = getattr(getattr(executor, HOOKS[0], None), "__self__", None)
    return carrier.refused.get(name) if isinstance(carrier, _Carrier) else None


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
    on the state they saved.
    """

    def __init__(self, executor: Executor, allowed: frozenset[str]) -> None:
        self._executor = executor
        self._maf_save = executor.on_checkpoint_save
        self._maf_restore = executor.on_checkpoint_restore
        self._allowed = allowed
        self._built: dict[str, Any] = {}
        own = own_attributes(executor)
        self._present = frozenset(own)
        uncopied: set[str] = set()
        for name, value in own.items():
            if machinery(value):
                continue
            try:
                self._built[name] = copy.deepcopy(value)
            except Exception:  # a resource (a client, a connection): not state, left as it is
                uncopied.add(name)
        self._skipped = framework_names(type(executor)) | frozenset(HOOKS) | uncopied
        self.refused: dict[str, str] = {}
        """Why each attribute a save could not carry was not: its first refusal."""

    def attach(self) -> None:
        setattr(self._executor, HOOKS[0], self.save)
        setattr(self._executor, HOOKS[1], self.restore)

    async def save(self) -> dict[str, Any]:
        """The attributes that differ from the built ones, as the checkpoint brings them back."""
        carried: dict[str, Any] = {}
        for name, value in vars(self._executor).items():  # `own_attributes`, with a set made once
            if name in self._skipped or machinery(value):
                continue
            if name in self._built and _same(value, self._built[name]):
                continue
            try:
                carried[name] = decode_checkpoint_value(
                    encode_checkpoint_value(value), allowed_types=self._allowed
                )
            except Exception as exc:  # not carried: as without Baton
                if name not in self.refused:
                    self.refused[name] = _reason(exc)
                if (type(self._executor), name) not in _TOLD:  # once a process, not a build
                    _TOLD.add((type(self._executor), name))
                    logger.warning(
                        "an executor attribute cannot be checkpointed: a restore leaves it built",
                        extra={
                            "executor": self._executor.id,
                            "attribute": name,
                            "reason": self.refused[name],
                        },
                    )
        state = await self._maf_save()
        return {**state, KEY: carried} if carried else state

    async def restore(self, state: dict[str, Any]) -> None:
        """The carried attributes back; every other as built (a copy), none the build lacked.

        An attribute whose built value could not be copied (a client, say) is left as it is.
        """
        carried: dict[str, Any] = state.get(KEY) or {}
        await self._maf_restore({k: v for k, v in state.items() if k != KEY})
        for name, built in self._built.items():
            if name not in carried:
                setattr(self._executor, name, copy.deepcopy(built))
        for name, value in carried.items():  # MAF's state hands a hook its own copy
            setattr(self._executor, name, value)
        for name, value in list(vars(self._executor).items()):
            made_since = name not in self._present and name not in self._skipped
            if made_since and name not in carried and not machinery(value):
                delattr(self._executor, name)


_TOLD: set[tuple[type, str]] = set()
"""The attributes whose refusal this process has logged, by executor class."""


def _reason(exc: BaseException) -> str:
    """What the first cause of a failed encoding or decoding says, in its first sentence."""
    while exc.__cause__ is not None:
        exc = exc.__cause__
    said = str(exc).split(". ", 1)[0].rstrip(".")
    return (said or type(exc).__name__)[:300]


def _same(value: Any, built: Any) -> bool:
    """Whether an attribute still holds its built value (an `==` that raises: it does not)."""
    try:
        return type(value) is type(built) and bool(value == built)
    except Exception:  # e.g. arrays, whose == is not a truth value
        return False
