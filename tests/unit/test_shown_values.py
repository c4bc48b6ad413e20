"""How pages write values: times on the reader's clock (web/zones.py), money with its currency."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from human import zones as zones_of_people
from human.records import AuditEvent
from web import zones
from web.templating import (
    day_or_hour_text,
    gist,
    hour_text,
    moment_text,
    moments_read,
    second_text,
    templates,
    when,
)

WINTER = datetime(2026, 12, 7, 3, 6, tzinfo=UTC)
SUMMER = datetime(2026, 7, 7, 3, 6, tzinfo=UTC)


@pytest.fixture
def reader() -> Iterator[Any]:
    tokens = []

    def read_in(name: str | None) -> None:
        tokens.append(zones._zone.set(zones.zone_named(name)))

    yield read_in
    for token in reversed(tokens):
        zones._zone.reset(token)


@pytest.mark.parametrize(
    ("name", "winter", "summer"),
    [
        (None, "2026-12-07 03:06 UTC", "03:06 UTC"),
        ("Europe/Berlin", "2026-12-07 04:06 CET", "05:06 CEST"),
        ("America/New_York", "2026-12-06 22:06 EST", "23:06 EDT"),
        ("Asia/Kathmandu", "2026-12-07 08:51 UTC+05:45", "08:51 UTC+05:45"),
        ("America/Sao_Paulo", "2026-12-07 00:06 UTC-03", "00:06 UTC-03"),
        ("Etc/UTC", "2026-12-07 03:06 UTC", "03:06 UTC"),
    ],
)
def test_times_are_on_the_readers_clock_and_name_their_zone(
    reader: Any, name: str | None, winter: str, summer: str
) -> None:
    reader(name)
    assert moment_text(WINTER) == winter
    assert hour_text(SUMMER) == summer
    assert moment_text(WINTER.replace(tzinfo=None)) == winter  # naive is UTC, as stored


def test_today_is_the_readers_today(reader: Any) -> None:
    reader("Asia/Tokyo")  # 03:06 UTC on the 7th is 12:06 on the 7th; 20:00 UTC on the 6th, 05:00
    assert day_or_hour_text(WINTER, WINTER) == "12:06 JST"
    assert day_or_hour_text(datetime(2026, 12, 6, 20, tzinfo=UTC), WINTER) == "05:00 JST"
    assert day_or_hour_text(datetime(2026, 12, 6, 14, tzinfo=UTC), WINTER) == "2026-12-06 23:00 JST"
    assert second_text(WINTER.replace(second=2), WINTER) == "12:06:02 JST"
    assert second_text(datetime(2026, 12, 6, 14, tzinfo=UTC), WINTER) == "2026-12-06 23:00:00 JST"


@pytest.mark.parametrize(
    "name",
    ["", "Mars/Base", "../../etc/passwd", "/etc/localtime", "europe/berlin", "Europe/Berlin" * 9],
)
def test_a_name_the_zone_database_does_not_hold_is_utc(name: str) -> None:
    assert zones.zone_named(name) is UTC


def test_instants_in_data_read_as_times_and_nothing_else_does() -> None:
    data = {
        "until": "2026-12-07T04:25:04.550955+00:00",
        "at": ["2026-12-07T04:25Z", "2026-12-07T04:25:00-05:00"],
        "naive": "2026-12-07T04:25:00",  # no offset: which clock it was is not known
        "day": "2026-12-07",
        "month_13": "2026-13-07T04:25:00+00:00",
        "words": "at 2026-12-07T04:25:00+00:00",
        "amount": 300,
    }
    read = moments_read(data)
    assert read["until"] == datetime(2026, 12, 7, 4, 25, 4, 550955, tzinfo=UTC)
    assert read["at"][0] == datetime(2026, 12, 7, 4, 25, tzinfo=UTC)
    assert read["at"][1] == datetime(2026, 12, 7, 9, 25, tzinfo=UTC)
    for kept in ("naive", "day", "month_13", "words", "amount"):
        assert read[kept] == data[kept]


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.text()
    | st.datetimes(timezones=st.none() | st.just(UTC)).map(datetime.isoformat),
    lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner),
    max_leaves=20,
)


@given(json_values)
def test_reading_instants_never_fails_and_keeps_every_other_value(value: Any) -> None:
    def same(before: Any, after: Any) -> None:
        if isinstance(after, datetime):
            assert isinstance(before, str)
            assert datetime.fromisoformat(before) == after
        elif isinstance(before, dict):
            assert before.keys() == after.keys()
            for key in before:
                same(before[key], after[key])
        elif isinstance(before, list):
            assert len(before) == len(after)
            for pair in zip(before, after, strict=True):
                same(*pair)
        else:
            assert before == after

    same(value, moments_read(value))


def shown(data: Any, **page: Any) -> str:
    """`data` as the pages' `value` view draws it, as text."""
    macro = '{% from "_partials/values.html" import value with context %}{{ value(data) }}'
    drawn = templates.env.from_string(macro).render(data=data, **page)
    return " ".join(re.sub(r"<[^>]+>", " ", drawn).split())


def test_money_reads_with_its_currency_where_one_is_known_and_other_numbers_as_given() -> None:
    data = {
        "amount": 300,
        "count": 3,
        "order": {"total": 2375, "currency": "USD"},
        "price": [1.5, 2],
        "value": True,
    }
    assert shown(data, page_currency="EUR") == (
        "Amount 300.00 EUR Count 3 Order Total 2375.00 USD Currency USD Price 1.50 EUR 2.00 EUR "
        "Value yes"
    )
    # no currency known: a number is left as it was given, but an object's own still counts
    assert (
        shown(data)
        == "Amount 300 Count 3 Order Total 2375.00 USD Currency USD Price 1.5 2 Value yes"
    )
    assert shown({"amount": float("inf")}, page_currency="EUR") == "Amount inf"


@given(
    st.datetimes(timezones=st.timezones()),
    st.sampled_from(["America/New_York", "Asia/Tokyo", "Pacific/Kiritimati", "Etc/GMT+12", None]),
)
def test_any_instant_reads_on_any_readers_clock_the_calendars_edges_too(
    moment: datetime, name: str | None
) -> None:
    """Year 1 in New York, or 9999 in Tokyo, is past the calendar: shown on its own clock."""
    token = zones._zone.set(zones.zone_named(name))
    try:
        said = moment_text(moment)
        seen = zones.local(moment)
        assert said == f"{seen.date().isoformat()} {seen:%H:%M} {zones.zone_label(seen)}"
        assert second_text(moment, moment).endswith(zones.zone_label(zones.local(moment)))
    finally:
        zones._zone.reset(token)


def test_the_calendars_edges_read_as_they_are() -> None:
    token = zones._zone.set(zones.zone_named("America/New_York"))
    try:
        assert moment_text(datetime(1, 1, 1, tzinfo=UTC)) == "0001-01-01 00:00 UTC"
        assert str(when(moments_read("0001-01-01T00:00:00+00:00"))).endswith(
            ">0001-01-01 00:00 UTC</time>"
        )
    finally:
        zones._zone.reset(token)


@pytest.mark.parametrize("name", ["localtime", "Factory", "", "Europe/Nowhere", "x" * 65])
def test_a_name_that_is_no_person_s_clock_is_no_zone(name: str) -> None:
    """`localtime` (the server's clock) and `Factory` (a placeholder) are in the zone database,
    but no person reads their clock by them: refused as a person's zone, UTC on a page."""
    assert not zones_of_people.is_zone(name)
    assert zones.zone_named(name) is UTC


def test_a_person_s_zone_reads_as_people_write_it() -> None:
    moment = datetime(2026, 12, 7, 18, 0, tzinfo=UTC)
    assert zones_of_people.said_at(moment, "America/Los_Angeles") == "2026-12-07 10:00 PST"
    assert zones_of_people.said_at(moment, "Asia/Kathmandu") == "2026-12-07 23:45 UTC+05:45"
    assert zones_of_people.said_at(moment, None) == "2026-12-07 18:00 UTC"


def test_a_notification_attempt_s_gist_says_what_came_of_it() -> None:
    def notified(**data: Any) -> AuditEvent:
        return AuditEvent(
            id=1,
            type="request.notified",
            at=WINTER,
            run_id="run_1",
            request_id="req_1",
            actor="system",
            data={"channel": "email", "event": "created", **data},
        )

    assert gist(notified(outcome="sent", attempt=2)) == "email: sent"
    assert gist(notified(outcome="retrying", attempt=1, parts_sent=["Europe/Berlin"])) == (
        "email: attempt 1 failed; it is tried again (the messages for Europe/Berlin went out, "
        "and are not sent again)"
    )
    assert gist(notified(outcome="failed", attempt=6)) == (
        "email: attempt 6 failed; it is not tried again"
    )
    assert gist(notified(outcome="skipped", attempt=0)) == "email: nothing to send"
