"""The scripted model's plays: what a capable model would do, decided from the conversation."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from agent_framework import Content, Message


def _first_json(messages: Sequence[Message]) -> dict[str, Any]:
    for message in messages:
        if message.role == "user" and message.text and "{" in message.text:
            try:
                return dict(json.loads(message.text[message.text.index("{") :]))
            except ValueError:
                continue
    return {}


def _results(messages: Sequence[Message]) -> dict[str, Any]:
    """Function results by the name of the call they answer (the last one wins)."""
    names = {c.call_id: c.name for m in messages for c in m.contents if c.type == "function_call"}
    found: dict[str, Any] = {}
    for m in messages:
        for c in m.contents:
            if c.type == "function_result" and c.call_id in names:
                found[str(names[c.call_id])] = _parsed(c.result)
    return found


def _parsed(result: Any) -> Any:
    if isinstance(result, str):
        try:
            return json.loads(result)
        except ValueError:
            return result
    return result


def _call(messages: Sequence[Message], name: str, **arguments: Any) -> list[Content]:
    turn = sum(1 for m in messages if m.role == "assistant") + 1
    return [
        Content.from_function_call(
            call_id=f"call_{name}_{turn}", name=name, arguments=json.dumps(arguments)
        )
    ]


def _say(text: str) -> list[Content]:
    return [Content.from_text(text)]


def refund_play(messages: Sequence[Message], options: dict[str, Any]) -> list[Content]:
    """Look the order up, propose the refund, then report what happened to it."""
    ask = _first_json(messages)
    order_id, amount = str(ask.get("order_id", "")), float(ask.get("amount", 0))
    seen = _results(messages)
    if "lookup_order" not in seen:
        return _call(messages, "lookup_order", order_id=order_id)
    order = seen["lookup_order"]
    if not isinstance(order, dict) or "error" in order:
        return _say(f"No refund was issued: order {order_id} was not found.")
    if amount > float(order["total"]):
        return _say(
            f"No refund was issued: {amount:.2f} is more than order {order_id}'s total "
            f"of {float(order['total']):.2f}."
        )
    if "issue_refund" not in seen:
        return _call(messages, "issue_refund", order_id=order_id, amount=amount)
    outcome = seen["issue_refund"]
    if isinstance(outcome, dict) and "refund_id" in outcome:
        return _say(
            f"Refunded {float(outcome['amount']):.2f} {order.get('currency', '')} on order "
            f"{outcome['order_id']} (refund {outcome['refund_id']})."
        )
    return _say(f"No refund was issued for order {order_id}: {outcome}")


PLAYS = {"refund": refund_play}
