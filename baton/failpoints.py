"""Named crash points for tests (`BATON_FAILPOINTS=name=exit,...`); off unless armed."""

from __future__ import annotations

import logging
import os
import sys

logger = logging.getLogger(__name__)

KNOWN = frozenset(
    {
        "start.after_commit",
        "pause.after_checkpoint",
        "pause.after_commit",
        "answer.after_commit",
        "resume.after_restore",
        "effect.before_commit",
        "effect.after_commit",
        "effect.started",
        "effect.recorded",
        "resume.after_commit",
    }
)

_armed: dict[str, str] = {}


def arm(spec: str) -> None:
    """Arm failpoints from a `name=exit,...` list; unknown names are an error."""
    _armed.clear()
    for item in filter(None, (part.strip() for part in spec.split(","))):
        name, _, action = item.partition("=")
        if name not in KNOWN or action != "exit":
            raise ValueError(f"unknown failpoint {item!r}; known: {sorted(KNOWN)} with '=exit'")
        _armed[name] = action


def hit(name: str) -> None:
    """Exit the process at once, as kill -9 would, if `name` is armed."""
    if _armed.get(name) == "exit":
        logger.warning("failpoint fired", extra={"failpoint": name})
        for handler in logging.getLogger().handlers:
            handler.flush()
        sys.stderr.flush()
        os._exit(137)
