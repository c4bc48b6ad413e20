"""Adaptive Cards checked against Microsoft's own schema (vendored: tests/fixtures/adaptive_cards).

Every card Baton sends to Teams, or answers an `Action.Execute` with, goes through `check_card`;
`cards_in` finds the cards in a message envelope or an activity.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import jsonschema

SCHEMA = Path(__file__).parent / "fixtures" / "adaptive_cards" / "adaptive-card.json"
CARD_TYPE = "application/vnd.microsoft.card.adaptive"


@functools.cache
def _validator() -> jsonschema.protocols.Validator:
    schema = json.loads(SCHEMA.read_text())
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def check_card(card: dict[str, Any]) -> dict[str, Any]:
    """`card`, once the schema finds nothing wrong with it (else the schema's errors, raised)."""
    errors = sorted(_validator().iter_errors(card), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors[:10])
    return card


def cards_in(message: dict[str, Any]) -> list[dict[str, Any]]:
    """The cards of a message envelope or activity, each checked against the schema."""
    attachments = message.get("attachments") or []
    assert attachments, f"no attachment in {message}"
    found = []
    for attachment in attachments:
        assert attachment["contentType"] == CARD_TYPE, attachment
        found.append(check_card(attachment["content"]))
    return found


def texts_of(card: dict[str, Any]) -> str:
    """Every text a card shows (text blocks and facts), in order, one a line."""
    lines: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("type") == "TextBlock":
                lines.append(str(node["text"]))
            if node.get("type") == "FactSet":
                lines.extend(f"{f['title']}: {f['value']}" for f in node["facts"])
            for key in ("body", "items", "columns"):
                walk(node.get(key))
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(card)
    return "\n".join(lines)


def actions_of(card: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """A card's buttons by title (a ShowCard's inner buttons too, as `<outer>/<inner>`)."""
    found = {}
    for action in card.get("actions") or []:
        found[action["title"]] = action
        for inner in (action.get("card") or {}).get("actions") or []:
            found[f"{action['title']}/{inner['title']}"] = inner
    return found
