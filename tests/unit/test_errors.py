from __future__ import annotations

from pathlib import Path

import pytest

from baton.cli import _fail
from baton.errors import Invalid, InvalidAnswer, InvalidInput, NotFound
from human.policy import load_policy
from human.store import open_store
from web.errors import sent_in
from workflows.platform import registry
from workflows.platform.runtime import Runtime
from workflows.shipped import POLICIES


def test_at_prefixes_every_location_of_a_copy_and_keeps_the_rest() -> None:
    refused = InvalidAnswer(
        "bad answer",
        [{"loc": ["decision"], "msg": "odd"}, {"loc": [], "msg": "expected an object", "line": 3}],
    )

    moved = refused.at("body")

    assert type(moved) is InvalidAnswer
    assert (str(moved), moved.code) == ("bad answer", "invalid_answer")
    assert moved.errors == [
        {"loc": ["body", "decision"], "msg": "odd"},
        {"loc": ["body"], "msg": "expected an object", "line": 3},
    ]
    assert refused.errors[0]["loc"] == ["decision"]  # the original is left as it was


def test_sent_in_says_where_the_caller_sent_the_data() -> None:
    with pytest.raises(Invalid) as caught, sent_in("query"):
        raise Invalid("cursor is not one this API issued", [{"loc": ["cursor"], "msg": "invalid"}])

    assert caught.value.errors == [{"loc": ["query", "cursor"], "msg": "invalid"}]
    assert caught.value.__cause__ is not None


def test_sent_in_lets_every_other_error_through_untouched() -> None:
    with pytest.raises(NotFound, match="no run"), sent_in("body"):
        raise NotFound("no run")


def test_the_cli_names_a_field_of_the_answer_not_of_an_http_body(
    capsys: pytest.CaptureFixture[str],
) -> None:
    refused = InvalidAnswer("decision must be one of approve", [{"loc": ["decision"], "msg": "x"}])

    with pytest.raises(SystemExit):
        _fail(refused)

    assert capsys.readouterr().err.splitlines()[1] == "  decision: x"


async def test_a_run_input_that_does_not_fit_is_named_inside_the_input(tmp_path: Path) -> None:
    registry.load("tests.fixtures.twin_workflow")
    store = await open_store(f"sqlite:///{tmp_path / 'baton.db'}")
    try:
        with pytest.raises(InvalidInput) as caught:
            await Runtime(store, policy=load_policy(POLICIES)).start("twin", {}, actor="sam")
    finally:
        await store.close()

    assert caught.value.errors == [{"loc": ["input", "item"], "msg": "Field required"}]
    assert str(caught.value) == "invalid input for twin: item: Field required"
