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


async def test_a_5xx_refusal_is_logged_with_its_path_and_a_4xx_or_unavailable_is_not_an_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    import logging

    from starlette.requests import Request

    from baton.errors import StoreError, StoreUnavailable
    from web.errors import on_baton_error

    def api(path: str) -> Request:
        return Request({"type": "http", "method": "GET", "path": path, "headers": []})

    with caplog.at_level(logging.WARNING, logger="web.errors"):
        failed = await on_baton_error(api("/api/tokens"), StoreError("postgresql: bad byte"))
        refused = await on_baton_error(api("/api/runs/x"), NotFound("no run x"))
        away = await on_baton_error(api("/api/runs"), StoreUnavailable("the disk is full"))

    assert (failed.status_code, refused.status_code, away.status_code) == (500, 404, 503)
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert [(r.getMessage(), r.path, r.code) for r in errors] == [
        ("request failed", "/api/tokens", "store_error")
    ]
