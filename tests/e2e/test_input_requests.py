"""`input` requests over HTTP: what the API shows of one, and a typed answer checked when posted.

The subjects are plain MAF samples (`tests/samples/`): `typed_review` answers with a nested
dataclass, `checkpointed` with a `bool`.
"""

from __future__ import annotations

import html
import re
from typing import Any

import pytest

from tests.harness import Server, types_of
from tests.pages import signed_in

REVIEW = {"workflow": "typed_review", "input": {"title": "Spring launch post"}}
SIGN_OFF = {"workflow": "checkpointed", "input": {"release": "1.2"}}


@pytest.fixture
def server(samples_server: Server) -> Server:
    return samples_server


async def test_an_input_request_shows_its_data_and_the_schema_of_the_answer_type(
    server: Server,
) -> None:
    run = await server.start_run(REVIEW)
    pending = await server.wait_for_request(run["id"])
    shown = await server.request(pending["id"], user="lee")

    assert (shown["kind"], shown["allowed_decisions"], shown["status"]) == (
        "input",
        ["answer"],
        "pending",
    )
    assert shown["context"] == {
        "title": "Spring launch post",
        "body": "Text of the draft.",
        "author": {"name": "kim", "team": "writers"},
        "words": 4,
    }
    schema = shown["response_schema"]
    answer = schema["properties"]["answer"]
    assert list(answer["properties"]) == ["verdict", "score", "tags", "followup", "note"]
    assert answer["required"] == ["verdict", "score"]
    assert answer["properties"]["verdict"] == {"$ref": "#/$defs/Verdict"}
    assert (answer["properties"]["score"]["minimum"], answer["properties"]["score"]["maximum"]) == (
        1,
        5,
    )
    # the answer type's own definitions sit at the root, where its references point
    assert schema["$defs"]["Verdict"]["enum"] == ["publish", "revise", "drop"]
    assert schema["$defs"]["Followup"]["required"] == ["owner"]
    assert schema["properties"]["decision"]["enum"] == ["answer"]


MALFORMED: list[tuple[Any, list[str]]] = [
    ({"verdict": "publish", "score": 9}, ["body", "answer", "score"]),
    ({"verdict": "maybe", "score": 3}, ["body", "answer", "verdict"]),
    ({"verdict": "publish", "score": "high"}, ["body", "answer", "score"]),
    ({"verdict": "publish"}, ["body", "answer", "score"]),
    (
        {"verdict": "publish", "score": 3, "followup": {"due_in_days": 3}},
        ["body", "answer", "followup", "owner"],
    ),
    (
        {"verdict": "publish", "score": 3, "followup": {"owner": "ann", "due_in_days": 31}},
        ["body", "answer", "followup", "due_in_days"],
    ),
    ({"verdict": "publish", "score": 3, "tags": "tone"}, ["body", "answer", "tags"]),
    ("publish", ["body", "answer"]),
]


async def test_a_malformed_typed_answer_is_a_422_naming_the_field_and_changes_nothing(
    server: Server,
) -> None:
    run = await server.start_run(REVIEW)
    pending = await server.wait_for_request(run["id"])
    before = await server.snapshot(pending["id"])

    for answer, loc in MALFORMED:
        reply = await server.respond(
            pending["id"], {"decision": "answer", "answer": answer}, user="lee"
        )
        assert reply.status_code == 422, (answer, reply.text)
        problem = reply.json()
        assert [e["loc"] for e in problem["errors"]] == [loc], (answer, problem)
        assert ".".join(loc[1:]) in problem["detail"], problem["detail"]
    missing = await server.respond(pending["id"], {"decision": "answer"}, user="lee")
    assert missing.status_code == 422
    assert missing.json()["errors"][0]["loc"] == ["body", "answer"]

    assert await server.snapshot(pending["id"]) == before  # no answer, no event
    assert (await server.run(run["id"]))["status"] == "waiting"

    good = {"verdict": "publish", "score": "3", "followup": {"owner": "ann"}}
    reply = await server.respond(pending["id"], {"decision": "answer", "answer": good}, user="lee")
    assert reply.status_code == 200, reply.text
    stored = reply.json()["request"]["answer"]
    # kept as the type reads it: the number a number, the default filled in
    assert stored["answer"]["score"] == 3
    assert stored["answer"]["followup"] == {"owner": "ann", "due_in_days": 7}
    done = await server.wait_for_run(run["id"], status="completed")
    assert (done["output"]["score"], done["output"]["due_in_days"]) == (3, 7)
    assert types_of(await server.audit(run["id"])).count("request.answered") == 1


async def test_a_yes_or_no_page_asks_the_question_once_and_chooses_for_no_one(
    server: Server, passwords: dict[str, str]
) -> None:
    run = await server.start_run(SIGN_OFF)
    pending = await server.wait_for_request(run["id"])
    question = "Sign off step 1 of 2 for release 1.2?"
    async with signed_in(server, "max", passwords["max"]) as manager:
        page = await manager.http.get(f"/requests/{pending['id']}")
        assert page.status_code == 200
        text = html.unescape(page.text)
        # the reason and the legend of the choice; not a third time among the context's facts
        assert text.count(question) == 2, text
        radios = re.findall(r'<input type="radio" name="answer"[^>]*>', page.text)
        assert [re.search(r'value="(\w+)"', r).group(1) for r in radios] == ["true", "false"]
        assert all(" required" in r and "checked" not in r for r in radios), radios
        assert 'type="checkbox"' not in page.text

        nothing = await manager.post(f"/requests/{pending['id']}", {"decision": "answer"})
        assert nothing.status_code == 422
        assert 'id="a-answer-answer-error"' in nothing.text
        said_no = await manager.post(
            f"/requests/{pending['id']}", {"decision": "answer", "answer": "false"}
        )
        assert said_no.status_code == 303, said_no.text

    done = await server.wait_for_run(run["id"], status="completed")
    assert done["output"] == "1.2 stopped at step 1"
    assert done["requests"][0]["answer"] == {"decision": "answer", "answer": False}
