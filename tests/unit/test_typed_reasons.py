"""A typed request says why it asks in the workflow's own words: a prompt, else its docstring."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel

from executors.platform.builtin_adapters import _described, _reason

STEP = "The resource allocator step waits for your answer before it goes on."


@dataclass
class ResourceRequest:
    """Request for computing resources."""

    amount: int


@dataclass
class Bare:
    amount: int


class Told(BaseModel):
    """Grade the draft

    It goes back to the writer with your grade.
    """

    grade: str


class Untold(BaseModel):
    grade: str


class Longwinded(BaseModel):
    __doc__ = "word " * 100

    grade: str


def test_a_request_without_a_prompt_says_its_type_s_docstring_before_its_step() -> None:
    assert _reason({"amount": 2}, "resource_allocator", ResourceRequest) == (
        f"Request for computing resources. {STEP}"
    )
    # the first paragraph, a stop added
    assert _described(Told) == "Grade the draft."


def test_a_prompt_or_the_request_as_text_still_comes_first() -> None:
    fields = {"prompt": "How many CPUs?", "amount": 2}
    assert _reason(fields, "resource_allocator", ResourceRequest) == "How many CPUs?"
    assert _reason({"request": "Go on?"}, "resource_allocator", str) == "Go on?"


def test_no_docstring_of_its_own_leaves_the_step_alone() -> None:
    # dataclass writes `Bare(amount: int)` as the doc of a class without one; a model inherits
    # nothing of BaseModel's; a built-in type's doc is Python's, not the workflow's
    for data_type in (Bare, Untold, int, Longwinded):
        assert _described(data_type) is None, data_type
        assert _reason({"amount": 2}, "resource_allocator", data_type) == STEP
