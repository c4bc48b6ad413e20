"""My work counts and lists what its reader may act on now, and says what it leaves out and why.

A request of one's teams that four-eyes keeps from its starter, that another person's claim
holds, or that one approved already (it waits for a second approver) is not one's work: My work's
count, its list and the count beside it on a request's page leave it out, and the inbox names
each left out with its reason, from its record and its run's. A viewer answers nothing. The API's
`GET /api/requests?view=mine` lists the same work as the page, and so do its other views and
`baton requests list --as NAME --view VIEW`.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from typing import Any

from tests.harness import REFUND_120, REFUND_1500, Server
from tests.pages import page_of, text_of


def count_of(html: str, view: str) -> int:
    found = re.search(rf'<span class="count" data-view="{view}">(\d+)</span>', html)
    assert found, f"no {view} count"
    return int(found.group(1))


def listed(html: str) -> list[str]:
    return re.findall(r'<tr class="request-row" data-request-id="([^"]+)"', html)


async def api_view(server: Server, user: str, view: str, **filters: str) -> list[str]:
    """The ids `GET /api/requests?view=` lists for `user`, in its order."""
    async with server.client(user) as client:
        reply = await client.get("/api/requests", params={"view": view, **filters})
    assert reply.status_code == 200, reply.text
    return [r["id"] for r in reply.json()["items"]]


async def cli_view(db_url: str, user: str, view: str) -> list[str]:
    """The ids `baton requests list --as USER --view VIEW` lists, in its order."""
    done = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "baton", "requests", "list", "--as", user, "--view", view],
        capture_output=True,
        text=True,
        env=os.environ | {"BATON_DATABASE_URL": db_url, "BATON_LOG_LEVEL": "WARNING"},
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return [line.split()[0] for line in done.stdout.splitlines() if line.startswith("req_")]


async def asked(server: Server, body: dict[str, Any], *, user: str) -> dict[str, Any]:
    run = await server.start_run(body, user=user)
    return await server.wait_for_request(run["id"])


async def test_my_work_leaves_out_what_four_eyes_keeps_from_its_reader(
    page_server: Server, passwords: dict[str, str], db_url: str
) -> None:
    server = page_server
    own = await asked(server, REFUND_120, user="lee")  # lee may not approve it
    others = [await asked(server, REFUND_120, user=who) for who in ("sam", "sue")]

    inbox = await page_of(server, passwords, "lee", "/")
    assert count_of(inbox, "mine") == 2
    assert sorted(listed(inbox)) == sorted(r["id"] for r in others)
    said = text_of(inbox)
    assert (
        "Not counted in My work: 1 open request of your teams waits for someone else. "
        f"{own['title']}: you started its run, so another member of support-leads approves it "
        "(four-eyes)."
    ) in said

    # the count beside My work on a request's page is the same, not the length of a list
    beside = await page_of(server, passwords, "lee", f"/requests/{others[0]['id']}")
    found = re.search(r'<a href="/">My work</a> <span class="count">(\d+)</span>', beside)
    assert found
    assert int(found.group(1)) == 2
    assert f'href="/requests/{own["id"]}"' not in beside.split('class="queue"')[1]

    # the API's My work is the page's, in the page's order; its other views hold the rest
    assert await api_view(server, "lee", "mine") == listed(inbox)
    assert sorted(await api_view(server, "lee", "all")) == sorted(r["id"] for r in [own, *others])
    assert await api_view(server, "lee", "mine", team="finance") == []
    assert await api_view(server, "lee", "answered") == []
    # and so is the command line's
    assert await cli_view(db_url, "lee", "mine") == listed(inbox)
    assert sorted(await cli_view(db_url, "lee", "all")) == sorted(r["id"] for r in [own, *others])


async def test_my_work_leaves_out_a_claim_of_another_and_what_its_reader_approved(
    page_server: Server, passwords: dict[str, str]
) -> None:
    server = page_server
    approved = await asked(server, REFUND_1500, user="sam")  # two finance approvers
    claimed = await asked(
        server, REFUND_1500 | {"input": REFUND_1500["input"] | {"order_id": "A-1007"}}, user="sam"
    )
    reply = await server.respond(approved["id"], {"decision": "approve"}, user="fay")
    assert reply.status_code == 200, reply.text
    async with server.client("fin") as fin:
        reply = await fin.post(f"/api/requests/{claimed['id']}/claim")
        assert reply.status_code == 200, reply.text
        until = reply.json()["claimed_until"][11:16]

    inbox = await page_of(server, passwords, "fay", "/")
    assert count_of(inbox, "mine") == 0
    assert listed(inbox) == []
    said = text_of(inbox)
    assert "Nothing here: nothing waits for you." in said
    assert "Not counted in My work: 2 open requests of your teams wait for someone else." in said
    assert (
        f"{approved['title']}: you approved it; it needs 1 more approval by another member of "
        "finance."
    ) in said
    assert f"{claimed['title']}: fin is working on it until {until} UTC." in said

    # fin holds the claim: it is fin's work, and fin's count says so
    assert count_of(await page_of(server, passwords, "fin", "/"), "mine") == 2

    # the API says the same to each of them
    assert await api_view(server, "fay", "mine") == []
    assert sorted(await api_view(server, "fin", "mine")) == sorted([approved["id"], claimed["id"]])
    assert await api_view(server, "fin", "claimed") == [claimed["id"]]
    assert await api_view(server, "fay", "answered") == [approved["id"]]
    assert await api_view(server, "fay", "unassigned") == [approved["id"]]


async def test_a_viewer_has_no_work_and_is_told_where_their_teams_requests_are(
    page_server: Server, passwords: dict[str, str]
) -> None:
    server = page_server
    await asked(server, REFUND_120, user="sam")
    inbox = await page_of(server, passwords, "val", "/")
    assert count_of(inbox, "mine") == 0
    assert listed(inbox) == []
    assert (
        "You are a viewer: you may read requests, not answer them, so none is counted in My "
        "work. Your teams have 1 open request: All requests lists it."
    ) in text_of(inbox)
    assert await api_view(server, "val", "mine") == []
    assert len(await api_view(server, "val", "all")) == 1
