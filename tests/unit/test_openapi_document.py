"""`/openapi.json` publishes the API as it answers: reply models, every refusal, the bearer scheme.

schemathesis (tests/e2e/test_fuzz_api.py) checks real answers against the document; these check
the document itself: what each operation says it may answer, and that no refusal is described in
any shape but Baton's error body.
"""

from __future__ import annotations

from typing import Any

import pytest

from baton.settings import Settings
from web.app import create_app

ERROR = {"$ref": "#/components/schemas/ApiError"}

# What a route refuses because of what it does; the edge's refusals (401, 413, 422, 503) are
# checked for every operation below.
REFUSES: dict[tuple[str, str], set[int]] = {
    ("get", "/api/workflows"): set(),
    ("post", "/api/runs"): {403, 404, 409, 422},
    ("get", "/api/runs"): {422},
    ("get", "/api/runs/{run_id}"): {404},
    ("post", "/api/runs/{run_id}/cancel"): {403, 404, 409, 422},
    ("get", "/api/runs/{run_id}/events"): {404},
    ("get", "/api/requests"): {422},
    ("get", "/api/requests/{request_id}"): {404},
    ("post", "/api/requests/{request_id}/respond"): {403, 404, 409, 410, 422},
    ("get", "/api/requests/{request_id}/events"): {404},
    ("get", "/api/requests/{request_id}/attachments/{attachment_id}"): {404},
    ("post", "/api/requests/{request_id}/takeover"): {403, 404, 409, 410},
    ("post", "/api/requests/{request_id}/claim"): {403, 404, 409, 410},
    ("post", "/api/requests/{request_id}/release"): {403, 404, 409, 410},
    ("post", "/api/requests/{request_id}/reassign"): {403, 404, 409, 410, 422},
    ("get", "/api/stream"): {422},
    ("post", "/api/tokens"): {403, 422},
    ("get", "/api/tokens"): {403, 422},
    ("delete", "/api/tokens/{token_id}"): {404},
    ("get", "/api/teams"): {403},
    ("post", "/api/teams"): {403, 409, 422},
    ("get", "/api/users"): {403},
    ("post", "/api/users"): {403, 409, 422},
    ("patch", "/api/users/{name}"): {403, 404, 409, 422},
}


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    app = create_app(Settings(database_url="sqlite:///unused.db"), worker=False)
    return app.openapi()


def _operations(document: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {
        (method, path): operation
        for path, operations in document["paths"].items()
        for method, operation in operations.items()
    }


def test_the_document_is_openapi_3_1_with_a_bearer_scheme(document: dict[str, Any]) -> None:
    assert document["openapi"].startswith("3.1.")
    assert document["components"]["securitySchemes"]["bearer"] | {"description": ""} == {
        "type": "http",
        "scheme": "bearer",
        "bearerFormat": "bt_...",
        "description": "",
    }


def test_every_api_operation_is_listed_here(document: dict[str, Any]) -> None:
    api = {key for key in _operations(document) if key[1].startswith("/api/")}

    assert api == set(REFUSES)


@pytest.mark.parametrize(("method", "path"), sorted(REFUSES))
def test_an_api_operation_documents_bearer_and_each_refusal_it_can_give(
    document: dict[str, Any], method: str, path: str
) -> None:
    operation = _operations(document)[(method, path)]
    responses = operation["responses"]
    writes = method in ("post", "patch", "delete")
    expected = REFUSES[(method, path)] | {401, 422, 503} | ({403, 413} if writes else set())

    assert operation["security"] == [{"bearer": []}]
    assert {int(s) for s in responses if int(s) >= 400} == expected
    for status in expected:
        assert responses[str(status)]["content"]["application/json"]["schema"] == ERROR
    assert responses["401"]["headers"]["WWW-Authenticate"]["required"] is True
    assert "Retry-After" in responses["503"]["headers"]


@pytest.mark.parametrize(("method", "path"), sorted(REFUSES))
def test_an_api_operation_publishes_the_model_it_answers_with(
    document: dict[str, Any], method: str, path: str
) -> None:
    operation = _operations(document)[(method, path)]
    success = next(r for s, r in operation["responses"].items() if s.startswith("2"))
    media, content = next(iter(success["content"].items()))
    schema = content["schema"]

    if path == "/api/stream":
        assert media == "text/event-stream"
        assert schema["properties"]["data"]["contentMediaType"] == "application/json"
    elif path.endswith("/attachments/{attachment_id}"):  # a file's bytes, as each kind goes out
        assert set(success["content"]) == {
            "application/octet-stream",
            "image/gif",
            "image/jpeg",
            "image/png",
            "image/webp",
        }
        assert schema == {"type": "string", "format": "binary"}
    else:
        assert media == "application/json"
        described = schema.get("items", schema)
        assert "$ref" in described or "anyOf" in described, schema


def test_no_refusal_anywhere_is_described_in_fastapis_shape(document: dict[str, Any]) -> None:
    text = str(document)

    assert "HTTPValidationError" not in text
    assert "ValidationError" not in document["components"]["schemas"]


def test_health_and_slack_document_their_own_refusals_without_bearer(
    document: dict[str, Any],
) -> None:
    health = document["paths"]["/healthz"]["get"]
    slack = document["paths"]["/integrations/slack/actions"]["post"]

    assert "security" not in health
    assert "security" not in slack
    assert set(health["responses"]) == {"200", "422", "503"}  # 422: a query holding a NUL
    assert set(slack["responses"]) == {"200", "401", "404", "413", "422", "503"}
    assert slack["responses"]["401"]["content"]["application/json"]["schema"] == ERROR
