"""`input` requests over HTTP: what the API shows of one, and a typed answer checked when posted.

The subjects are plain MAF samples (`tests/samples/`): `typed_review` answers with a nested
dataclass, `checkpointed` with a `bool`.
"""

from __future__ import annotations

import asyncio
import html
import json
import os
import re
import shlex
import subprocess
import sys
from typing import Any

import pytest

from tests.harness import Server, stored_run, types_of
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


# the CLI ------------------------------------------------------------------------------------


async def baton(db_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`baton ARGS` in a child process on `db_url`, serving the typed_review sample."""
    env = os.environ | {
        "BATON_DATABASE_URL": db_url,
        "BATON_WORKFLOWS": "tests.samples.typed_review",
        "BATON_LOG_LEVEL": "WARNING",
    }
    command = [sys.executable, "-m", "baton", *args]
    return await asyncio.to_thread(
        subprocess.run, command, capture_output=True, text=True, env=env, timeout=120, check=False
    )


async def test_the_cli_says_what_an_input_answer_must_be_and_refuses_one_that_is_not(
    db_url: str, tokens: dict[str, str]
) -> None:
    started = await baton(
        db_url, "run", "typed_review", "--input", json.dumps(REVIEW["input"]), "--json"
    )
    assert started.returncode == 0, started.stderr
    run = json.loads(started.stdout)
    [pending] = run["pending_requests"]

    shown = await baton(db_url, "requests", "show", pending["id"])
    assert shown.returncode == 0, shown.stderr
    for line in (
        "  author:",
        "    team: writers",
        "The answer must be an object with these fields:",
        '  verdict (required): one of "publish", "revise", "drop"',
        "  score (required): a whole number from 1 to 5",
        "  tags: a list of text values",
        "  followup: null, or an object with these fields:",
        "    due_in_days: a whole number from 1 to 30 (default: 7)",
    ):
        assert line in shown.stdout.splitlines(), (line, shown.stdout)

    refused = await baton(
        db_url,
        "requests",
        "answer",
        pending["id"],
        "--as",
        "lee",
        "--answer",
        '{"verdict": "publish", "score": 9}',
    )
    assert refused.returncode == 2, refused.stdout
    assert "answer.score: Input should be less than or equal to 5" in refused.stderr
    not_json = await baton(
        db_url, "requests", "answer", pending["id"], "--as", "lee", "--answer", "{verdict: x}"
    )
    assert not_json.returncode == 2
    assert "--answer" in not_json.stderr
    still = json.loads((await baton(db_url, "requests", "show", "--json", pending["id"])).stdout)
    assert (still["status"], still["answer"]) == ("pending", None)
    assert (await stored_run(db_url, run["id"]))["status"] == "waiting"

    # the example `show` gives is an answer that fits
    [example] = [line for line in shown.stdout.splitlines() if "--answer" in line]
    given = shlex.split(example.replace("--as NAME", "--as lee"))
    assert given[:3] == ["baton", "requests", "answer"]
    answered = await baton(db_url, *given[1:])
    assert answered.returncode == 0, answered.stderr
    said = answered.stdout.splitlines()  # in words: the outcome, then the run it went on with
    assert said[0] == f"{pending['id']}: answered; the run went on."
    assert f"typed_review run {run['id']}: completed" in said
    assert "    verdict: publish" in said
    assert any(line.startswith(f"  {pending['id']}  answered ") for line in said), said
    done = await stored_run(db_url, run["id"])
    assert done["status"] == "completed"
    assert (done["output"]["verdict"], done["output"]["score"]) == ("publish", 1)

    again = await baton(db_url, *given[1:], "--json")
    assert json.loads(again.stdout)["outcome"] == "repeated"
    listed = (await baton(db_url, "runs", "list", "--status", "completed")).stdout.splitlines()
    assert [line.split()[:3] for line in listed] == [[run["id"], "completed", "typed_review"]]
    shown_run = json.loads((await baton(db_url, "runs", "show", run["id"], "--json")).stdout)
    assert shown_run["output"] == done["output"]
    assert [r["id"] for r in shown_run["requests"]] == [pending["id"]]
    missing = await baton(db_url, "runs", "show", "run_nope")
    assert missing.returncode == 2
    assert "no run run_nope" in missing.stderr
