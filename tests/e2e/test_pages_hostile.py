"""No query a page is sent, however hostile, is a 500 or changes anything stored.

The pages read their filters, views, searches, cursors, days and `after` marks from the query
string, and the reader's zone from a cookie. Hypothesis draws the addresses (any text, long text,
numbers past 64 bits, ids of nothing, each page's own names for its parameters and a parameter it
does not take), derandomized so a failure repeats; each is read signed in. Every answer is a page
or a precise refusal (2xx, 3xx or 4xx), and the stored rows are the same at the end.
"""

from __future__ import annotations

from urllib.parse import urlencode

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.harness import REFUND_120, Server, digest
from tests.pages import signed_in

PAGES = ("/", "/inbox", "/runs", "/dashboard", "/runs/new", "/requests/{request}", "/runs/{run}")
NAMES = (
    "view", "status", "team", "kind", "workflow", "assignee", "overdue", "q", "cursor", "days",
    "sort", "after", "next", "x",
)  # fmt: skip
VALUES = st.one_of(
    st.text(max_size=40),
    st.text(min_size=200, max_size=5000),
    st.integers(min_value=-(2**80), max_value=2**80).map(str),
    st.sampled_from(
        ["mine", "all", "overdue", "answered", "any", "pending", "refund", "me", "true", "0",
         "-1", "366", "367", "1e309", "NaN", "%", "_", "\\", "' OR 1=1 --", "<script>", "../",
         "run_AAAAAAAAAAAAAAAA", "req_AAAAAAAAAAAAAAAAAAAAAA", "Europe/Berlin"]
    ),
)  # fmt: skip
COOKIES = st.one_of(  # what a client can send as a cookie's value: visible ASCII but ; and ,
    st.text(
        st.characters(min_codepoint=0x21, max_codepoint=0x7E, exclude_characters=";,"), max_size=100
    ),
    st.sampled_from(["Europe/Berlin", "Asia/Kathmandu", "../../etc/passwd", "UTC%00", "x" * 100]),
)
ADDRESSES = st.tuples(
    st.sampled_from(PAGES),
    st.lists(st.tuples(st.sampled_from(NAMES), VALUES), max_size=4),
    COOKIES,  # the reader's zone
)


def drawn(count: int) -> list[tuple[str, list[tuple[str, str]], str]]:
    """`count` addresses as Hypothesis draws them, the same every run."""
    found: list[tuple[str, list[tuple[str, str]], str]] = []

    @settings(max_examples=count, derandomize=True, database=None, deadline=None)
    @given(ADDRESSES)
    def collect(address: tuple[str, list[tuple[str, str]], str]) -> None:
        found.append(address)

    collect()
    return found


async def test_no_page_query_is_a_500_or_changes_anything(
    page_server: Server, passwords: dict[str, str], db_url: str
) -> None:
    run = await page_server.start_run(REFUND_120)
    request = await page_server.wait_for_request(run["id"])
    before = digest(db_url)
    answered: dict[int, int] = {}
    async with signed_in(page_server, "lee", passwords["lee"]) as lee:
        for page, params, zone in drawn(300):
            path = page.format(request=request["id"], run=run["id"])
            # (a NUL or a lone surrogate never reaches the app: the client refuses to send it)
            query = urlencode([(k, v) for k, v in params if "\x00" not in v], errors="replace")
            lee.http.cookies.set("baton_tz", zone)
            reply = await lee.http.get(f"{path}?{query}" if query else path)
            answered[reply.status_code] = answered.get(reply.status_code, 0) + 1
            assert reply.status_code < 500, (path, query, zone, reply.text[:2000])
        lee.http.cookies.delete("baton_tz")
        inbox = await lee.http.get("/")
    assert inbox.status_code == 200
    assert request["id"] in inbox.text  # the inbox reads as before
    assert digest(db_url) == before
    assert answered.get(200, 0) > 50, answered  # most addresses are pages, not all refusals
