"""An agent's ask (`executors.platform.asks`): what each kind needs, and the schema of an edit."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from pydantic import ValidationError

from executors.platform.asks import AskInput, schema_of_arguments


def test_an_edit_keeps_the_names_and_types_the_agent_gave() -> None:
    given = {"service": "billing", "replicas": 3, "ratio": 0.5, "dry_run": False, "tags": ["a"]}
    schema = schema_of_arguments(given | {"limits": {"cpu": 2}, "note": None})

    jsonschema.validate(given | {"limits": {}, "note": "x"}, schema)
    assert schema["required"] == sorted([*given, "limits", "note"])
    assert schema["properties"]["replicas"]["type"] == "integer"
    assert schema["properties"]["dry_run"]["type"] == "boolean"
    assert "type" not in schema["properties"]["note"]  # a null says nothing of its type
    for bad in ({**given, "replicas": "three"}, {**given, "extra": 1}, {"service": "billing"}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad | {"limits": {}, "note": 1}, schema)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"kind": "approval", "reason": "x"}, "action: required for an approval"),
        ({"kind": "approval", "action": "deploy", "reason": "  "}, "reason: required"),
        ({"kind": "question"}, "question: required for a question"),
        ({"kind": "review", "draft": ""}, "draft: required for a review"),
        ({"kind": "question", "question": "q", "options": [" "]}, "options: each option"),
        ({"kind": "approval", "action": "rm -rf", "reason": "x"}, "String should match pattern"),
        ({"kind": "approval", "action": "a", "reason": "x", "asked_by": "ada"}, "asked_by"),
    ],
)
def test_each_kind_needs_its_own_fields(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        AskInput.model_validate(fields)


def test_a_well_formed_ask_of_each_kind() -> None:
    asks = [
        {"kind": "approval", "action": "deploy_service", "arguments": {"n": 1}, "reason": "why"},
        {"kind": "question", "question": "Which?", "options": ["a", "b"], "team": "finance"},
        {"kind": "review", "draft": {"subject": "Hello"}},
    ]
    assert [AskInput.model_validate(a).kind for a in asks] == ["approval", "question", "review"]
