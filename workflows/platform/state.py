"""The shared state of the workflow instances Baton drives: MAF's `State`, copying less.

MAF's `State` deep-copies a value on every `set` and `get` (so that no caller can change stored
state but through `set`), and deep-copies the whole committed state again to export it to a
checkpoint and to import one. A pause's snapshot and the next drive's restore so copied an
agent's conversation at least four times (set, export; import, get), through `copy.deepcopy`,
which dispatches per object.

`LeanState` keeps every promise `State` makes to executors and copies less to keep them:

- `set` and `get` still return and store deep copies, made by `tree_copy`: dicts, lists and
  atomic values are copied by their exact type, with `deepcopy`'s memo (so shared and cyclic
  parts come out as `deepcopy` makes them), and every other object goes to `copy.deepcopy`.
- `export_state` and `import_state` copy the committed mapping, not its values. A committed value
  is never changed in place: it is one `set` stored (a copy no caller holds) or one a checkpoint
  brought, and `get` hands out only copies. A checkpoint and the state so share values that
  neither side ever changes, however long the checkpoint is kept: a drive's checkpoints
  (`RunCheckpointStorage`, restored as often as the drive delivers) and a kept instance's
  `pristine` one (`pool.Built`, imported at every reset) both are. MAF's own storages copy what
  they save (`InMemoryCheckpointStorage` deep-copies it, `FileCheckpointStorage` encodes it).

`install(workflow)` gives a workflow's runner a `LeanState` before it first runs; `pool.take`
and `baton check` do so for every instance Baton builds. A sub-workflow's runner (MAF's
`WorkflowExecutor`) keeps MAF's `State`.
"""

from __future__ import annotations

import copy
import logging
from typing import Any

from agent_framework import Workflow
from agent_framework._workflows._state import State, _DeleteSentinel

logger = logging.getLogger(__name__)

_ATOMIC = frozenset({str, int, float, bool, type(None), bytes})


def tree_copy(value: Any, memo: dict[int, Any] | None = None) -> Any:
    """A deep copy of `value`, equal to `copy.deepcopy(value)`, made faster for JSON-like data.

    Plain dicts and lists are copied here, keys and items by this function, and remembered in
    `memo` as `deepcopy` does (a part shared twice is copied once, a cycle stays a cycle); atomic
    values are returned as they are; anything else is `copy.deepcopy(item, memo)`.
    """
    kind = type(value)
    if kind in _ATOMIC:
        return value
    if memo is None:
        memo = {}
    if kind is dict:
        seen = memo.get(id(value))
        if seen is not None:
            return seen
        made: dict[Any, Any] = {}
        memo[id(value)] = made
        for key, item in value.items():
            made[key if type(key) in _ATOMIC else tree_copy(key, memo)] = (
                item if type(item) in _ATOMIC else tree_copy(item, memo)
            )
        return made
    if kind is list:
        seen = memo.get(id(value))
        if seen is not None:
            return seen
        items: list[Any] = []
        memo[id(value)] = items
        append = items.append  # a loop, as deepcopy's: a generator would cost a frame a level
        for item in value:
            append(item if type(item) in _ATOMIC else tree_copy(item, memo))
        return items
    return copy.deepcopy(value, memo)


class LeanState(State):
    """MAF's `State` with copies made by `tree_copy`, and checkpoints that share values."""

    def set(self, key: str, value: Any) -> None:
        """As `State.set`: a deep copy of `value` is pending under `key`."""
        self._pending[key] = tree_copy(value)

    def get(self, key: str, default: Any = None) -> Any:
        """As `State.get`: a deep copy of the pending or committed value, else `default`."""
        if key in self._pending:
            value = self._pending[key]
            return default if value is _DeleteSentinel else tree_copy(value)
        if key in self._committed:
            return tree_copy(self._committed[key])
        return default

    def export_state(self) -> dict[str, Any]:
        """The committed state, a new mapping of the values it holds (never changed in place)."""
        return dict(self._committed)

    def import_state(self, state: dict[str, Any]) -> None:
        """Merge a checkpoint's state into the committed one, sharing its values (see above)."""
        self._committed.update(state)


def install(workflow: Workflow) -> bool:
    """Give `workflow`'s runner a `LeanState`, if it has MAF's own, still empty; whether it did.

    A workflow whose runner holds anything else (a later MAF, a state already written) keeps it;
    the first such workflow of a process is logged, since its drives then copy as MAF does.
    """
    runner = getattr(workflow, "_runner", None)
    state = getattr(runner, "_state", None)
    if type(state) is LeanState:
        return False
    if type(state) is not State or state._committed or state._pending:
        if not _refused:
            _refused.append(type(state).__name__)
            logger.warning(
                "a workflow's runner state is not MAF's State, empty: Baton's lean state is off",
                extra={"workflow": getattr(workflow, "name", None), "state": _refused[0]},
            )
        return False
    runner._state = LeanState()  # type: ignore[union-attr]
    return True


_refused: list[str] = []
"""The type of the first runner state `install` refused in this process (logged once)."""
