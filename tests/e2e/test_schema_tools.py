"""A tool declared by a JSON Schema alone (`FunctionTool.from_dict`) is edited by that schema.

Its approval request carries the schema the model was given, so the request page offers a field
per argument; an edit that breaks it (a wrong type, a missing or misspelt name) is refused with a
422 naming each field, on the API, the page and the CLI, and nothing is stored; a good edit runs
the tool once, with the person's arguments, as a typed `@tool`'s would.
"""

from __future__ import annotations

import html
from pathlib import Path

import pytest

from tests.e2e.test_pages_http import control
from tests.e2e.test_safe_edits import edit_by_cli
from tests.fixtures import schema_tools
from tests.harness import baton_server
from tests.pages import PAGE_ENV, signed_in

ENV = PAGE_ENV | {"BATON_WORKFLOWS": "tests.fixtures.schema_tools"}
MISSPELT = '{"arguments": {"cod": 1}}'
BAD = {"a": "five", "c": 3}


@pytest.fixture(autouse=True)
def fresh_notes() -> None:
    schema_tools.ADDED.clear()


async def test_a_schema_declared_tool_s_edit_is_checked_by_its_schema_and_runs_once(
    db_url: str, tokens: dict[str, str], passwords: dict[str, str], server_log: Path
) -> None:
    async with baton_server(db_url, tokens, server_log, ENV) as server:
        run = await server.start_run({"workflow": "added_numbers", "input": {}})
        pending = await server.wait_for_request(run["id"])
        before = await server.snapshot(pending["id"])
        url = f"/requests/{pending['id']}"

        api = await server.respond(
            pending["id"], {"decision": "edit", "arguments": BAD}, user="ada"
        )
        async with signed_in(server, "ada", passwords["ada"]) as ada:
            shown = await ada.http.get(url)
            page = await ada.post(url, {"decision": "edit", "arguments.a": "five"})
        cli = edit_by_cli(db_url, pending["id"], "ada", MISSPELT)
        after = await server.snapshot(pending["id"])
        good = {"decision": "edit", "arguments": {"a": 2, "b": 40}}
        taken = await server.respond(pending["id"], good, user="ada")
        done = await server.wait_for_run(run["id"], status=("completed", "failed"))

    schema = pending["proposed_action"]["arguments_schema"]
    assert (sorted(schema["properties"]), schema["required"]) == (["a", "b"], ["a", "b"])
    assert schema["properties"]["a"]["type"] == "integer"
    for field in ("a", "b"):
        assert control(shown.text, f"a-edit-arguments-{field}")
    assert api.status_code == 422, api.text
    assert api.json()["errors"] == [
        {"loc": ["body", "arguments"], "msg": "'b' is a required property"},
        {"loc": ["body", "arguments", "a"], "msg": "'five' is not of type 'integer'"},
    ]
    assert page.status_code == 422, page.text
    assert "Your answer was not sent" in page.text
    shown_error = '<p class="field-error" id="a-edit-arguments-a-error">'
    assert f"{shown_error}'five' is not of type 'integer'</p>" in html.unescape(page.text)
    assert cli.returncode != 0
    assert "arguments: 'a' is a required property" in cli.stderr
    assert after == before
    assert taken.status_code == 200, taken.text
    assert done["status"] == "completed"
    assert done["output"]["text"] == "Result: 42"
    assert schema_tools.ADDED == [(2, 40)]
