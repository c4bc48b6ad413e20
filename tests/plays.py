"""Turns of the scripted model that more than one workflow of the tests plays."""

from __future__ import annotations

import json
from collections.abc import Sequence

from agent_framework import Content, Message


def progress_ledger(messages: Sequence[Message], team: Sequence[str]) -> Content:
    """A Magentic progress ledger sending `team` in turn, each once, then saying it is done."""
    spoke = [m for m in messages if m.role == "assistant" and m.author_name in team]
    done = len(spoke) >= len(team)
    nxt = team[min(len(spoke), len(team) - 1)]
    ledger = {
        "is_request_satisfied": {"reason": f"{len(spoke)} spoke", "answer": done},
        "is_in_loop": {"reason": "no", "answer": False},
        "is_progress_being_made": {"reason": "yes", "answer": True},
        "next_speaker": {"reason": "in turn", "answer": nxt},
        "instruction_or_question": {"reason": "go", "answer": f"{nxt}, do your part."},
    }
    return Content.from_text(json.dumps(ledger))
