"""MAF `CheckpointStorage` over the store, one per drive of a run.

Superstep saves stay in memory for the length of one `run()` call; only the checkpoint the run
stops at (its pause) is written, in the same transaction as the requests it pauses on. So a pause
costs one durable commit, and a crash mid-drive leaves the run at its last committed checkpoint.
Only that checkpoint is ever encoded: MAF saves one per superstep, and encoding the others (which
nothing reads back but this drive, from memory) was a fifth of the checkpoint work of a cycle.
Decoding always goes through an explicit allow-list; nothing is ever plainly unpickled.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterable

from agent_framework import WorkflowCheckpoint
from agent_framework._workflows._checkpoint_encoding import (
    decode_checkpoint_value,
    encode_checkpoint_value,
)
from agent_framework.exceptions import WorkflowCheckpointException

from baton import failpoints
from baton.errors import PauseNotDurable
from human.store.base import NewCheckpoint, Store


def type_key(cls: type) -> str:
    """The allow-list key MAF's restricted unpickler uses for a type."""
    return f"{cls.__module__}:{cls.__qualname__}"


class RunCheckpointStorage:
    """Checkpoints of one run: the committed one from the store, this drive's in memory."""

    def __init__(self, store: Store, run_id: str, allowed_types: Iterable[str]) -> None:
        self._store = store
        self._run_id = run_id
        self._allowed = frozenset(allowed_types)
        self._drafts: dict[str, WorkflowCheckpoint] = {}
        self._loaded: dict[str, WorkflowCheckpoint] = {}

    async def save(self, checkpoint: WorkflowCheckpoint) -> str:
        """Keep the checkpoint (MAF's snapshot) for this drive; `draft` encodes and proves it."""
        self._drafts[checkpoint.checkpoint_id] = checkpoint
        self._loaded[checkpoint.checkpoint_id] = checkpoint
        return checkpoint.checkpoint_id

    async def load(self, checkpoint_id: str) -> WorkflowCheckpoint:
        """A checkpoint of this drive, or the run's committed one."""
        if checkpoint_id in self._loaded:
            return self._loaded[checkpoint_id]
        body = await self._store.load_checkpoint(checkpoint_id)
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
