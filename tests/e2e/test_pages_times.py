"""Times on the pages are on the reader's clock: the `baton_tz` cookie the pages' script sets.

A request claimed and escalated, read with Asia/Kathmandu (UTC+05:45 all year, so the expected
text does not move with the date): its deadline, its claim, the refusal of another's answer, the
audit trail's instants (the claim's end, which the event's data holds as ISO text) all read so,
each `<time>` keeping the UTC instant. A cookie naming no zone, or a hostile one, reads UTC.
"""

from __future__ import annotations

import html
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.harness import REFUND_120, Server
from tests.pages import browser_session, sign_in, signed_in, text_of
from web.zones import COOKIE

KATHMANDU = timedelta(hours=5, minutes=45)


@pytest.fixture
def server(page_server: Server) -> Server:
    return page_server


def local(moment: str, *, day: bool = True) -> str:
    """An API instant as the Kathmandu reader's page says it."""
    at = datetime.fromisoformat(moment).astimezone(UTC) + KATHMANDU
    return f"{at:%Y-%m-%d %H:%M} UTC+05:45" if day else f"{at:%H:%M} UTC+05:45"


async def claimed_refund(server: Server, passwords: dict[str, str]) -> dict[str, Any]:
    run = await server.start_run(REFUND_120)
    pending = await server.wait_for_request(run["id"])
    async with signed_in(server, "lee", passwords["lee"]) as lee:
        claimed = await lee.post(f"/requests/{pending['id']}/claim", {})
        assert claimed.status_code == 303, claimed.text
    return await server.request(pending["id"])


async def test_a_request_reads_on_the_readers_clock_each_time_keeping_its_instant(
    server: Server, passwords: dict[str, str]
) -> None:
    request = await claimed_refund(server, passwords)
    url = f"/requests/{request['id']}"
    async with signed_in(server, "ada", passwords["ada"]) as ada:
        ada.http.cookies.set(COOKIE, "Asia/Kathmandu")
        page = (await ada.http.get(url)).text
        words = text_of(page)
        assert local(request["created_at"]) in words  # asked
        deadline = re.search(r"<dt>Deadline</dt><dd>(.*?)</dd>", page, re.DOTALL)
        assert deadline
        assert local(request["expires_at"]) in text_of(deadline.group(1))
        until = local(request["claimed_until"], day=False)
        assert re.search(
            rf"lee is working on this until {re.escape(until)} \(\d+ min left\)", words
        )
        assert " UTC " not in words
        assert not words.endswith(" UTC")

        # the audit trail: the claim's end, kept as ISO text in the event, reads as a time
        claim = re.search(r'<span class="ename">Claimed</span>.*?</li>', page, re.DOTALL)
        assert claim, "no claim in the audit trail"
        instant = datetime.fromisoformat(request["claimed_until"]).isoformat()
        assert f'<time datetime="{instant}">{local(request["claimed_until"])}</time>' in (
            claim.group(0)
        )
        assert not re.search(r"\d\d-\d\dT\d\d:", text_of(claim.group(0)))  # no ISO text

        # a refusal the page shows speaks the reader's clock too
        refused = await ada.post(url, {"decision": "approve"})
        assert refused.status_code == 409, refused.text
        alert = re.search(r'<p class="error" role="alert">(.*?)</p>', refused.text, re.DOTALL)
        assert alert
        assert f"until {until};" in html.unescape(alert.group(1))


@pytest.mark.parametrize(
    "cookie",
    [
        "",
        "Mars/Olympus_Mons",
        "../../../../etc/passwd",
        "Europe/../../etc/localtime",
        "UTC%00",
        "Ё/Москва",
        "x" * 4000,
        "europe/berlin",
    ],
)
async def test_a_cookie_naming_no_zone_reads_utc_and_breaks_nothing(
    server: Server, passwords: dict[str, str], cookie: str
) -> None:
    request = await claimed_refund(server, passwords)
    url = f"/requests/{request['id']}"
    async with signed_in(server, "ada", passwords["ada"]) as ada:
        plain = text_of((await ada.http.get(url)).text)
        headers = {"cookie": f"{COOKIE}={cookie}; {_session_cookie(ada)}".encode()}
        shown = await ada.http.get(url, headers=headers)
        assert shown.status_code == 200, shown.text
        assert f"{datetime.fromisoformat(request['expires_at']):%Y-%m-%d %H:%M} UTC" in (
            text_of(shown.text)
        )
        assert text_of(shown.text).count(" UTC") == plain.count(" UTC")
    assert await server.request(request["id"]) == request  # reading changed nothing


def _session_cookie(client: Any) -> str:
    return "; ".join(f"{name}={value}" for name, value in client.http.cookies.items())


async def test_an_instant_at_the_calendars_edge_in_a_runs_data_reads_on_any_clock(
    server: Server, passwords: dict[str, str]
) -> None:
    """A run's input is the data of its first audit event, whose instants read as times: year 1
    in New York, or 9999 in Tokyo, lies past the calendar and is shown on its own clock (it was a
    500 before)."""
    edges = ("0001-01-01T00:00:00+00:00", "9999-12-31T23:59:59+00:00")
    runs = [
        await server.start_run(REFUND_120 | {"input": REFUND_120["input"] | {"reason": edge}})
        for edge in edges
    ]
    async with signed_in(server, "ada", passwords["ada"]) as ada:
        for zone in ("America/New_York", "Asia/Tokyo"):
            ada.http.cookies.set(COOKIE, zone)
            for run, edge in zip(runs, edges, strict=True):
                shown = await ada.http.get(f"/runs/{run['id']}")
                assert shown.status_code == 200, (zone, edge, shown.text[:2000])
                instant = datetime.fromisoformat(edge).isoformat()
                assert f'<time datetime="{instant}">' in shown.text  # as a time, its instant kept


async def test_sign_in_keeps_the_browser_s_zone_for_a_person_who_has_none(
    server: Server, passwords: dict[str, str]
) -> None:
    """Messages to a person give times on their clock: their browser's, kept at sign-in."""

    async def zones() -> dict[str, str | None]:
        async with server.client("ada") as ada:
            return {u["name"]: u["time_zone"] for u in (await ada.get("/api/users")).json()}

    async with server.client("ada") as ada:
        set_zone = await ada.patch("/api/users/val", json={"time_zone": "Asia/Tokyo"})
        assert set_zone.status_code == 200, set_zone.text
    assert (await zones())["lee"] is None

    async def sign_in_from(name: str, zone: str) -> None:
        async with browser_session(server) as browser:
            browser.http.cookies.set(COOKIE, zone)
            reply = await sign_in(browser, name, passwords[name])
            assert reply.status_code == 303, reply.text

    await sign_in_from("lee", "Europe/Berlin")
    await sign_in_from("val", "Europe/Berlin")  # an administrator's setting stays
    await sign_in_from("sam", "../../etc/passwd")  # no zone the database knows: none kept
    assert {
        name: zone for name, zone in (await zones()).items() if name in {"lee", "val", "sam"}
    } == {
        "lee": "Europe/Berlin",
        "val": "Asia/Tokyo",
        "sam": None,
    }
    await sign_in_from("lee", "America/New_York")  # kept once: only an administrator changes it
    assert (await zones())["lee"] == "Europe/Berlin"
