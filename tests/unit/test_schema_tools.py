"""A tool declared by a JSON Schema alone (`FunctionTool.from_dict`) is gated by that schema.

MAF keeps no pydantic model of such a tool, only the schema it tells the model
(`parameters()`): Baton's approval requests carry it, and the gate checks a call against it
before any policy or person is asked, as it checks a typed `@tool`'s call against its model.
"""

from __future__ import annotations

from typing import Any

import pytest
from agent_framework import FunctionTool

from executors.platform.tool_gate import GatedTool, judge
from human.policy import Policy
from human.typed import schema_problems
from tests.fixtures.schema_tools import DEFINITION, add

POLICY = Policy([], default_team="support-leads")


def adder() -> GatedTool:
    tool = FunctionTool.from_dict(
        DEFINITION, dependencies={"function_tool": {"name:add_numbers": {"func": add}}}
    )
    assert tool.input_model is None  # the schema is all MAF has
    return GatedTool.of(tool)


def test_the_gated_tool_keeps_the_schema_the_model_was_told() -> None:
    gated = adder()
    assert gated.arguments_schema == FunctionTool.from_dict(DEFINITION).parameters()
    assert gated.arguments_schema["required"] == ["a", "b"]
    assert gated.declaration().parameters() == gated.arguments_schema


async def test_a_call_that_breaks_the_schema_is_refused_naming_each_field() -> None:
    refused = await judge(adder(), {"a": "five", "c": 3}, POLICY)
    terse = await judge(adder(), {"a": "five", "c": 3}, POLICY, detailed=False)
    allowed = await judge(adder(), {"a": 5, "b": 3}, POLICY)

    assert refused.decision is None
    assert refused.error == (  # MAF's words, and what is wrong (`include_detailed_errors`)
        "Error: Argument parsing failed. Exception: invalid arguments for add_numbers: "
        "b: Field required; a: 'five' is not of type 'integer'"
    )
    assert terse.error == "Error: Argument parsing failed."  # MAF's words alone, as its loop's
    assert allowed.error is None
    assert allowed.arguments == {"a": 5, "b": 3}


@pytest.mark.parametrize(
    ("odd", "kept"),
    [
        ({"a": {"type": "int"}}, False),  # a type JSON Schema does not know: not a schema
        ({"a": {"$ref": "#/$defs/nowhere"}}, True),  # a reference to nothing: checks nothing
    ],
)
async def test_a_schema_jsonschema_cannot_apply_is_left_to_maf_as_before(
    odd: dict[str, Any], kept: bool
) -> None:
    """MAF's own check lets such a schema pass (`_validate_arguments_against_schema`): the gate
    neither raises on it nor refuses the call, and asks as for any call."""
    definition = dict(DEFINITION, input_model={"properties": odd, "type": "object"})
    tool = FunctionTool.from_dict(
        definition, dependencies={"function_tool": {"name:add_numbers": {"func": add}}}
    )
    gated = GatedTool.of(tool)
    judged = await judge(gated, {"a": 5, "b": 3}, POLICY)

    assert (gated.arguments_schema == gated.schema) is kept  # (else its open model's)
    assert judged.error is None
    assert judged.decision is not None
    assert schema_problems({"properties": odd}, {"a": 5}) == []
