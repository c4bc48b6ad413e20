"""MAF `CheckpointStorage` over the store, one per drive of a run.

A drive runs MAF without a checkpoint storage and snapshots the workflow once, where it pauses
(`workflows.platform.drive`); that checkpoint is written in the same transaction as the requests
it pauses on. So a pause costs one snapshot and one durable commit, and a crash mid-drive leaves
the run at its last committed checkpoint. `baton check` hands this storage to MAF's `run()`
itself, which saves one per superstep: those stay in memory, and only the one committed is
encoded. Decoding always goes through an explicit allow-list; nothing is ever plainly unpickled.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import logging
import sys
import types
import typing
import zlib
from collections.abc import Iterable, Mapping
from typing import Any, Final

from agent_framework import FunctionalWorkflow, RunContext, Workflow, WorkflowCheckpoint
from agent_framework._workflows._checkpoint_encoding import (
    decode_checkpoint_value,
    encode_checkpoint_value,
)
from agent_framework.exceptions import WorkflowCheckpointException
from pydantic import BaseModel

from baton import failpoints
from baton.errors import PauseNotDurable
from executors.platform.agents import agents_of, executors_of
from human.store.base import NewCheckpoint, Store

logger = logging.getLogger(__name__)


def type_key(cls: type) -> str:
    """The allow-list key MAF's restricted unpickler uses for a type."""
    return f"{cls.__module__}:{cls.__qualname__}"


class RunCheckpointStorage:
    """Checkpoints of one run: the committed one from the store, this drive's in memory."""

    def __init__(
        self,
        store: Store,
        run_id: str,
        allowed_types: Iterable[str],
        *,
        read: Mapping[str, bytes] | None = None,
    ) -> None:
        """`read`: encoded bodies already read from the store (the drive's), by checkpoint id."""
        self._store = store
        self._run_id = run_id
        self._allowed = frozenset(allowed_types)
        self._drafts: dict[str, WorkflowCheckpoint] = {}
        self._loaded: dict[str, WorkflowCheckpoint] = {}
        self._read = dict(read or {})

    async def save(self, checkpoint: WorkflowCheckpoint) -> str:
        """Keep the checkpoint (MAF's snapshot) for this drive; `draft` encodes and proves it."""
        self._drafts[checkpoint.checkpoint_id] = checkpoint
        self._loaded[checkpoint.checkpoint_id] = checkpoint
        return checkpoint.checkpoint_id

    async def load(self, checkpoint_id: str) -> WorkflowCheckpoint:
        """A checkpoint of this drive, or the run's committed one."""
        if checkpoint_id in self._loaded:
            return self._loaded[checkpoint_id]
        body = self._read.pop(checkpoint_id, None) or await self._store.load_checkpoint(
            checkpoint_id
        )
        if body is None:
            raise WorkflowCheckpointException(f"no checkpoint {checkpoint_id}")
        encoded = json.loads(zlib.decompress(body))
        checkpoint = WorkflowCheckpoint.from_dict(
            decode_checkpoint_value(encoded, allowed_types=self._allowed)
        )
        self._loaded[checkpoint_id] = checkpoint
        failpoints.hit("resume.after_restore")
        return checkpoint

    async def list_checkpoints(self, *, workflow_name: str) -> list[WorkflowCheckpoint]:
        """This drive's checkpoints of a workflow (the store keeps only the current one)."""
        return [c for c in self._loaded.values() if c.workflow_name == workflow_name]

    async def delete(self, checkpoint_id: str) -> bool:
        """Forget a draft; committed checkpoints are pruned by the store on progress."""
        self._loaded.pop(checkpoint_id, None)
        return self._drafts.pop(checkpoint_id, None) is not None

    async def get_latest(self, *, workflow_name: str) -> WorkflowCheckpoint | None:
        """Never used by Baton to resume (the run row names its checkpoint); for MAF's API."""
        candidates = await self.list_checkpoints(workflow_name=workflow_name)
        return max(candidates, key=lambda c: c.timestamp, default=None)

    async def list_checkpoint_ids(self, *, workflow_name: str) -> list[str]:
        """Ids of `list_checkpoints`."""
        return [c.checkpoint_id for c in await self.list_checkpoints(workflow_name=workflow_name)]

    def draft(self, checkpoint_id: str) -> NewCheckpoint:
        """The compressed body of a checkpoint of this drive, proven to decode under the allow-list.

        Only a checkpoint that will be committed is encoded and proven: intermediate saves of a
        drive are never persisted, so their encoding is never needed. One that cannot be encoded
        or decoded is a pause that would not survive a restart: `PauseNotDurable`.
        """
        checkpoint = self._drafts.get(checkpoint_id)
        if checkpoint is None:
            raise WorkflowCheckpointException(f"checkpoint {checkpoint_id} was not saved")
        try:
            encoded = encode_checkpoint_value(checkpoint.to_dict())
        except Exception as exc:
            raise PauseNotDurable(f"checkpoint {checkpoint_id} cannot be encoded: {exc}") from exc
        try:
            decode_checkpoint_value(encoded, allowed_types=self._allowed)
        except Exception as exc:
            raise PauseNotDurable(
                f"checkpoint {checkpoint_id} cannot be restored under the allow-list: {exc}"
            ) from exc
        body = zlib.compress(json.dumps(encoded, separators=(",", ":")).encode(), 6)
        return NewCheckpoint(id=checkpoint_id, body=body)


def checkpoint_types_of(workflow: Workflow | FunctionalWorkflow) -> frozenset[str]:
    """The allow-list keys of every type a workflow's executors take, send, ask and are answered.

    Those are the types a checkpoint of it can hold (messages in flight, pending requests and
    their response types), found from the handlers and response handlers MAF registered, with the
    types nested in their fields (pydantic models, dataclasses, TypedDicts, enums, list/dict/
    Optional of those). A generic alias response type (`list[Message]`) needs
    `types:GenericAlias`. And the value classes the executors' own modules define (dataclasses,
    pydantic models, enums, as for a functional workflow below): what an executor keeps in its
    own state or the workflow's (`ctx.set_state`) is most often one. Name any other in
    `register(..., checkpoint_types=...)`.

    A functional workflow's checkpoint holds its steps' results, its first message, its state
    and what it asks people (`ctx.request_info(data, response_type)`), none of which MAF
    declares: found are the types its function and the `@step` functions it calls take and
    return (their annotations), and the value classes their modules define (dataclasses,
    pydantic models, enums: what a step returns or a request holds, never a class that acts
    when made, which a tampered checkpoint could make). Name any other in `checkpoint_types`.
    """
    found: set[type] = set()
    aliases: list[bool] = []
    for declared in [*_declared_types(workflow), *_response_formats(workflow)]:
        _collect(declared, found, aliases)
    keys = {type_key(t) for t in found if t.__module__ != "builtins"}
    return frozenset({*keys, *(("types:GenericAlias",) if any(aliases) else ())})


def _declared_types(workflow: Workflow | FunctionalWorkflow) -> list[Any]:
    """The types a workflow's executors, or its function and steps, declare."""
    if isinstance(workflow, FunctionalWorkflow):
        steps, _ = workflow._discover_workflow_dependencies(workflow._func)
        functions = [workflow._func, *(s._func for s in steps)]
        declared: list[Any] = _value_classes_of({f.__module__ for f in functions})
        for function in functions:
            try:
                hints = typing.get_type_hints(function).values()
                declared += [t for t in hints if t is not RunContext]
            except Exception:  # an annotation that does not resolve: MAF warns of it as it runs
                logger.warning("cannot read the annotations of %s", function.__qualname__)
        return declared
    found: list[Any] = []
    modules: set[str] = set()
    for executor in executors_of(workflow):
        handlers = getattr(executor, "_response_handlers", {})
        found += [
            *executor.input_types,
            *executor.output_types,
            *(t for pair in handlers for t in pair),
        ]
        # its class's module, or a function executor's function's (`@executor`)
        written = getattr(executor, "_original_func", None) or type(executor)
        modules.add(str(getattr(written, "__module__", "")))
    # what an executor keeps in the workflow's state (`ctx.set_state`) or its own, of a class
    # its module defines (MAF's `state_with_agents.py` keeps an `Email` no handler takes)
    own = {m for m in modules if not m.startswith(_PLATFORM)}
    return [*found, *_value_classes_of(own)]


_PLATFORM: Final = (
    "agent_framework",
    "baton.",
    "executors.platform",
    "human.",
    "web.",
    "workflows.platform",
)
"""MAF's modules and Baton's own, whose value classes no workflow's checkpoint holds unless its
types say so."""


def _value_classes_of(modules: Iterable[str]) -> list[type]:
    """The value classes (`_value_class`) each of `modules` defines (not those it imports)."""
    found: list[type] = []
    for name in modules:
        defined = list(vars(sys.modules[name]).values()) if name in sys.modules else []
        found += [c for c in defined if _value_class(c) and c.__module__ == name]
    return found


def _response_formats(workflow: Workflow | FunctionalWorkflow) -> list[Any]:
    """The structured-output models of the workflow's agents (`response_format`).

    MAF parses an agent's reply into its `response_format` model (`AgentResponse.value`), and
    the reply travels in the messages and requests the executors declare
    (`AgentExecutorResponse`, a reply held for review), so a checkpoint can hold an instance of
    it that no declared type names. A model given only in a run's options is not found here:
    name it in `checkpoint_types`.
    """
    found: list[Any] = []
    for agent in agents_of(workflow):
        options = getattr(agent, "default_options", None)
        if isinstance(options, Mapping):
            found.append(options.get("response_format"))
    return found


def _value_class(found: object) -> bool:
    """Whether `found` is a class that only holds values: a dataclass, a pydantic model, an enum."""
    return isinstance(found, type) and (
        dataclasses.is_dataclass(found) or issubclass(found, BaseModel | enum.Enum)
    )


def _collect(declared: Any, found: set[type], aliases: list[bool], depth: int = 0) -> None:
    """Add `declared` and the types inside it to `found` (a bounded walk: no type loops)."""
    if depth > 8 or declared is None or declared is Any:
        return
    if isinstance(declared, types.GenericAlias):
        aliases.append(True)
    args = typing.get_args(declared)
    origin = typing.get_origin(declared)
    if args or origin is not None:
        for arg in args:
            _collect(arg, found, aliases, depth + 1)
        return
    if not isinstance(declared, type) or declared in found:
        return
    found.add(declared)
    fields: list[Any] = []
    if issubclass(declared, BaseModel):
        fields = [f.annotation for f in declared.model_fields.values()]
    elif dataclasses.is_dataclass(declared) or typing.is_typeddict(declared):
        try:
            fields = list(typing.get_type_hints(declared).values())
        except Exception:  # a field's annotation that does not resolve (an import only a type
            # checker makes): the class is found, the types in that field are not
            logger.warning("cannot read the field types of %s", declared.__qualname__)
    for annotation in fields:
        _collect(annotation, found, aliases, depth + 1)
