from __future__ import annotations

import pytest

from baton.cli import _fail
from baton.errors import Invalid, InvalidAnswer, NotFound
from web.errors import sent_in


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
