"""A path or query parameter no stored text may hold is a 404 or a 422, on either backend.

PostgreSQL refuses a NUL in any text it is sent, a filter's or a look-up's as much as a write's:
before the edge checked addresses, `GET /api/tokens?owner=<NUL>` was a 500 there (schemathesis,
seed 7), and so was any id in a path. Every such address is refused before a route runs, in
Baton's error body (a path names nothing stored: 404; a query parameter is named: 422), and
changes nothing stored; the same addresses without the NUL are answered as before.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness import baton_server, digest

pytestmark = pytest.mark.process  # a real `baton serve`, on SQLite and on PostgreSQL

NUL = "%00"
NAMED = "holds a NUL character"
HOSTILE = {
    # address: (who asks, the location the refusal names[, what it says])
    f"/api/tokens?owner=ada{NUL}": ("ada", ["query", "owner"]),
    f"/api/requests?team=support{NUL}leads": ("ada", ["query", "team"]),
    f"/api/requests?run_id=run_{NUL}&limit=5": ("ada", ["query", "run_id"]),
    f"/api/runs?workflow=refund{NUL}": ("sam", ["query", "workflow"]),
    f"/api/runs?status=waiting&cursor={NUL}": ("sam", ["query", "cursor"]),
    f"/?team={NUL}": ("lee", ["query", "team"]),  # a page's filter too
    f"/api/teams?x={NUL}": ("ada", ["query", "x"]),  # a parameter the operation does not take
    f"/api/runs?{NUL}=1": ("sam", ["query", "\\0"], f"parameter name {NAMED}"),
}


PATHS = {  # address: who asks
    f"/api/requests/req_{NUL}x": "ada",
    f"/api/runs/run_{NUL}/events": "sam",
    f"/api/requests/{NUL}/respond": "ada",
    f"/api/tokens/{NUL}": "ada",
    f"/requests/{NUL}": "lee",  # a page
}
PATH_METHODS = {f"/api/requests/{NUL}/respond": "POST", f"/api/tokens/{NUL}": "DELETE"}


async def test_a_nul_in_a_path_or_query_parameter_is_refused_and_changes_nothing(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    async with baton_server(db_url, tokens, server_log) as server:
        before = digest(db_url)
        replies = {}
        for address, (who, *_) in HOSTILE.items():
            async with server.client(who) as client:
                replies[address] = await client.get(address)
        paths = {}
        for address, who in PATHS.items():
            async with server.client(who) as client:
                paths[address] = await client.request(PATH_METHODS.get(address, "GET"), address)
        after = digest(db_url)
        async with server.client("ada") as ada:
            clean = await ada.get("/api/tokens?owner=ada")
            listed = await ada.get("/api/requests?team=support-leads&kind=&limit=5")
            worded = await ada.get("/api/runs?workflow=caf%C3%A9+cr%C3%A8me&status=")

    for address, (_, where, *said) in HOSTILE.items():
        reply = replies[address]
        msg = said[0] if said else NAMED
        assert reply.status_code == 422, (address, reply.text)
        body = reply.json()
        assert body["error"] == "invalid", (address, body)
        assert body["errors"][0] == {"loc": where, "msg": msg}, address
        assert body["detail"] == f"{'.'.join(where)}: {msg}", address
    for address in PATHS:
        reply = paths[address]
        assert reply.status_code == 404, (address, reply.text)
        assert reply.json() == {
            "error": "not_found",
            "detail": "no such path: it holds a NUL character",
        }, address
    assert after == before
    assert clean.status_code == 200, clean.text
    assert listed.status_code == 200, listed.text
    assert (worded.status_code, worded.json()["items"]) == (200, [])  # UTF-8, `+`, blank
