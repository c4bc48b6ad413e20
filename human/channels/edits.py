"""An edit answered from a chat (a Teams card, a Slack modal) is checked before it is recorded.

The request's page shows an edit's check first (what it changes, before -> after, and what the
edited call leads to: another rule, more approvers, a refusal) and records it only on Confirm
edit, whose post carries the digest of the edit it checked (`human.forms.confirmation`). A chat
does the same: an edit sent without the digest of exactly itself comes back as its check, with
a Confirm edit that carries the digest; a change after the check is checked again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from human.answer_schema import label
from human.forms import FormValues, confirmation, control_text
from human.records import User
from human.service import RequestService

CONFIRM = "confirm"
"""The form value that carries the digest of the edit its sender saw checked."""


@dataclass(frozen=True)
class EditCheck:
    """What an edit changes (`changes`: label, before, after), leads to, and its digest."""

    changes: list[tuple[str, str, str]]
    consequences: list[str]
    digest: str


async def unconfirmed(
    requests: RequestService,
    request_id: str,
    answer: dict[str, Any],
    typed: FormValues,
    user: User,
) -> EditCheck | None:
    """An edit sent without the digest of exactly itself: its check. None for anything else.

    The check is the service's (`RequestService.preview`): an edit it refuses raises as
    `respond` would, and nothing is recorded either way.
    """
    if answer.get("decision") != "edit":
        return None
    digest = confirmation(answer)
    if typed.get(CONFIRM) == digest:
        return None
    preview = await requests.preview(request_id, answer, responder=user)
    return EditCheck(_changes(preview.diff or {}), list(preview.consequences), digest)


def _changes(diff: dict[str, Any]) -> list[tuple[str, str, str]]:
    """The diff's fields in words: an edit's arguments one by one, a draft's content whole."""
    rows = []
    for name, change in diff.items():
        if isinstance(change, dict) and {"before", "after"} <= set(change):
            rows.append((label(name), _shown(change["before"]), _shown(change["after"])))
        elif isinstance(change, dict):
            for field, each in change.items():
                if isinstance(each, dict):
                    rows.append(
                        (label(field), _shown(each.get("before")), _shown(each.get("after")))
                    )
    return rows


def _shown(value: Any) -> str:
    text = "(none)" if value is None else control_text(value)
    return text if len(text) <= 300 else text[:299] + "…"


def said(check: EditCheck) -> str:
    """The check in one paragraph of plain words (a card's or a modal's text)."""
    changes = (
        "; ".join(f"{name}: {before} → {after}" for name, before, after in check.changes)
        or "No change: everything stays as proposed"
    )
    then = " ".join(check.consequences)
    return f"Your edit changes {changes}." + (f" {then}" if then else "")
