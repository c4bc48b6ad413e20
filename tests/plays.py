"""Turns of the scripted model that more than one workflow of the tests plays, and a tool's asking
variant that more than one sample registers."""

from __future__ import annotations

import copy
import json
import os
import re
from collections.abc import Callable, Sequence
from typing import Any

from agent_framework import Content, FunctionTool, Message

Play = Callable[[Sequence[Message], dict[str, Any]], list[Content]]


def asking(plain: FunctionTool) -> FunctionTool:
    """`plain` as `@tool(approval_mode="always_require")` would have made it: each call asks."""
    asked = copy.copy(plain)
    asked.approval_mode = "always_require"
    return asked


def handed(messages: Sequence[Message]) -> list[str]:
    """What a model turn was handed, a line a message: role, author, each content in short."""
    lines = []
    for m in messages:
        parts = []
        for c in m.contents:
            if c.type == "text":
                parts.append(f"text {c.text!r}")
            elif c.type == "function_call":
                written = c.arguments  # as MAF's OpenAI client writes them, a mapping dumped
                written = json.dumps(written) if isinstance(written, dict) else written
                parts.append(f"call {c.call_id} {c.name} {written}")
            elif c.type == "function_result":
                parts.append(f"result {c.call_id} {c.result!r}")
            else:
                parts.append(str(c.type))
        lines.append(f"{m.role}/{m.author_name}: {'; '.join(parts)}")
    return lines


def handed_turn(messages: Sequence[Message], options: dict[str, Any]) -> dict[str, Any]:
    """What a model turn was handed: its messages (`handed`), its options, its tools' names."""
    tools = [getattr(t, "name", str(t)) for t in options.get("tools") or ()]
    kept = {k: repr(v) for k, v in sorted(options.items()) if k != "tools"}
    return {"messages": handed(messages), "options": kept, "tools": tools}


def recorded(
    play: Play,
    *,
    env: str = "SAMPLE_MODEL_INPUTS",
    described: Callable[[Sequence[Message], dict[str, Any]], Any] = handed_turn,
) -> Play:
    """`play`, writing what each turn was handed (`described`) to the file the environment
    variable `env` names (a JSON line a turn), when it names one: a test compares it with MAF
    alone's."""

    def playing(messages: Sequence[Message], options: dict[str, Any]) -> list[Content]:
        path = os.environ.get(env)
        if path:
            with open(path, "a", encoding="utf-8") as f:
                f.write(json.dumps(described(messages, options)) + "\n")
        return play(messages, options)

    playing.__module__ = play.__module__
    return playing


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


MAGENTIC_PROMPTS = (  # words of each of the prompts of MAF's standard Magentic manager
    "Below I will present you a request",
    "To address this request we have assembled",
    "As a reminder, we are working to solve the following task",
    "Please briefly explain what went wrong",
    "Recall we are working on the following request",
    "We are working on the following task",
)
_PLAN = re.compile(r"Plan(?:, revised)?: [^\n]*")


def magentic_manager(team: Sequence[str], *, facts: str, plan: str, answer: str) -> Play:
    """A Magentic manager's play: `facts`, `plan` (replanned on a person's feedback, as
    `Plan, revised: <their words>`), `team` in turn, then `answer` naming the plan it followed:
    a person's feedback lost on the way shows in the answer."""

    def play(messages: Sequence[Message], options: dict[str, Any]) -> list[Content]:
        last = messages[-1].text if messages else ""
        if MAGENTIC_PROMPTS[0] in last:
            return [Content.from_text(f"Facts: {facts}")]
        if MAGENTIC_PROMPTS[1] in last:
            return [Content.from_text(f"Plan: {plan}")]
        if MAGENTIC_PROMPTS[2] in last:
            return [Content.from_text("Facts, updated: a person reviewed the plan.")]
        if MAGENTIC_PROMPTS[3] in last:
            said = [
                m.text
                for m in messages
                if m.role == "user" and m.text and not any(p in m.text for p in MAGENTIC_PROMPTS)
            ]
            return [Content.from_text(f"Plan, revised: {said[-1]}")]
        if MAGENTIC_PROMPTS[4] in last:
            return [progress_ledger(messages, team)]
        plans = [found for m in messages for found in _PLAN.findall(m.text or "")]
        return [Content.from_text(f"{answer} {plans[-1]}")]

    return play
