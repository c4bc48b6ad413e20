# Copyright (c) Microsoft. All rights reserved.

"""
Functional Workflow Basics — Orchestrate async functions with @workflow

The functional API lets you write workflows as plain Python async functions.
No graph concepts, no edges, no executor classes — just call functions
and use native control flow (if/else, loops, asyncio.gather).

This sample builds a minimal pipeline with two steps:
1. Convert text to uppercase
2. Reverse the text

No external services are required.

(MAF's `python/samples/01-get-started/06_functional_workflow_basics.py`, less its `main()`, with
a registration appended: no `start_message`, so the function gets the input's one text field.)
"""

from agent_framework import workflow
from pydantic import BaseModel

from baton.api import RunServices, register


# Plain async functions — no decorators needed
async def to_upper_case(text: str) -> str:
    """Convert input to uppercase."""
    return text.upper()


async def reverse_text(text: str) -> str:
    """Reverse the string."""
    return text[::-1]


# <create_workflow>
@workflow
async def text_workflow(text: str) -> str:
    """Uppercase the text, then reverse it."""
    upper = await to_upper_case(text)
    return await reverse_text(upper)


# </create_workflow>


class Text(BaseModel):
    text: str


@register("functional_basics", input_model=Text)
def build_workflow(services: RunServices) -> object:
    """The sample's `@workflow`, as it defines it."""
    return text_workflow
