"""`BATON_AUTH=easyauth` over real HTTP: the platform's principal headers name the caller.

The server is `baton serve` in a child process; the headers are what Azure Container Apps
authentication sends in front of it. With `local` (the default) the same headers prove nothing.
"""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path
from typing import Any

from human.records import User
from human.store import open_store
from tests.harness import REFUND_120, REFUND_1500, baton_server

G_LEADS = "6f1c1a2e-0000-4000-8000-00000000a001"
G_FINANCE = "6f1c1a2e-0000-4000-8000-00000000a002"
G_ADMINS = "6f1c1a2e-0000-4000-8000-00000000a003"
UPN = "http://schemas.xmlsoap.org/ws/2005/05/identity/claims/upn"
NAME_TYP = "http://schemas.xmlsoap.org/ws/2005/05/identity/claims/name"
EASYAUTH = {
    "BATON_AUTH": "easyauth",
    # mixed case on purpose: object ids compare without case
    "BATON_EASYAUTH_GROUPS": json.dumps({G_LEADS.upper(): "support-leads", G_FINANCE: "finance"}),
    "BATON_EASYAUTH_ADMIN_GROUP": G_ADMINS,
}


def principal(claims: list[tuple[str, str]], **fields: Any) -> str:
    body = {
        "auth_typ": "aad",
        "name_typ": NAME_TYP,
        "role_typ": "http://schemas.microsoft.com/ws/2008/06/identity/claims/role",
        "claims": [{"typ": t, "val": v} for t, v in claims],
    } | fields
    return base64.b64encode(json.dumps(body).encode()).decode()


def signed_in(name: str, *groups: str, claim: str = "preferred_username") -> dict[str, str]:
    """The headers the platform sends for a signed-in Entra user."""
    claims = [("name", "Some Person"), (claim, name), *(("groups", g) for g in groups)]
    return {
        "X-MS-CLIENT-PRINCIPAL": principal(claims),
        "X-MS-CLIENT-PRINCIPAL-NAME": name,
        "X-MS-CLIENT-PRINCIPAL-ID": "00000000-0000-4000-8000-0000000000ff",
        "X-MS-CLIENT-PRINCIPAL-IDP": "aad",
    }


async def stored_user(db_url: str, name: str) -> User | None:
    store = await open_store(db_url)
    try:
        return await store.get_user(name)
    finally:
        await store.close()


async def test_a_principal_answers_as_the_baton_user_it_names_and_tokens_still_work(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    async with baton_server(db_url, tokens, server_log, EASYAUTH) as server:
        run = await server.start_run(REFUND_120, user="sam")  # a bearer token, in easyauth mode
        pending = await server.wait_for_request(run["id"])

        client = server.anonymous()
        # Entra names compare without case: "Lee" is the Baton user lee
        reply = await client.post(
            f"/api/requests/{pending['id']}/respond",
            json={"decision": "approve"},
            headers=signed_in("Lee", claim=UPN),
        )
        assert reply.status_code == 200, reply.text
        assert reply.json()["outcome"] == "closed"
        assert reply.json()["request"]["answered_by"] == "lee"
        done = await server.wait_for_run(run["id"], status="completed")

    assert done["requests"][0]["answered_by"] == "lee"
    assert await stored_user(db_url, "Lee") is None  # lee was found, not added again


async def test_first_sign_in_adds_the_user_with_the_teams_and_role_their_groups_map_to(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    async with baton_server(db_url, tokens, server_log, EASYAUTH) as server:
        run = await server.start_run(REFUND_120, user="sam")
        pending = await server.wait_for_request(run["id"])
        client = server.anonymous()
        nia = signed_in("Nia@Contoso.com", G_LEADS, "not-a-mapped-group")
        listed = await client.get("/api/requests", headers=nia)
        assert listed.status_code == 200, listed.text
        answered = await client.post(
            f"/api/requests/{pending['id']}/respond", json={"decision": "approve"}, headers=nia
        )
        assert answered.status_code == 200, answered.text
        assert answered.json()["request"]["answered_by"] == "nia@contoso.com"

        vic = signed_in("vic@contoso.com")  # no mapped group: a viewer
        assert (await client.get("/api/runs", headers=vic)).status_code == 200
        refused = await client.post("/api/runs", json=REFUND_120, headers=vic)
        assert refused.status_code == 403, refused.text
        assert "viewer" in refused.json()["detail"]

        ade = signed_in("ade@contoso.com", G_ADMINS)
        assert (await client.get("/api/runs", headers=ade)).status_code == 200

        # val is a viewer in finance; being in finance's Entra group makes them a responder
        big = await server.start_run(REFUND_1500, user="sam")
        finance = await server.wait_for_request(big["id"])
        val = signed_in("val", G_FINANCE)
        reply = await client.post(
            f"/api/requests/{finance['id']}/respond", json={"decision": "approve"}, headers=val
        )
        assert reply.status_code == 200, reply.text
        assert reply.json()["outcome"] == "partial"  # finance needs two approvers

    nia_user = await stored_user(db_url, "nia@contoso.com")
    assert nia_user is not None
    assert (nia_user.role, nia_user.teams) == ("responder", ("support-leads",))
    vic_user = await stored_user(db_url, "vic@contoso.com")
    assert vic_user is not None
    assert (vic_user.role, vic_user.teams) == ("viewer", ())
    ade_user = await stored_user(db_url, "ade@contoso.com")
    assert ade_user is not None
    assert ade_user.role == "admin"
    val_user = await stored_user(db_url, "val")
    assert val_user is not None
    assert (val_user.role, val_user.teams) == ("responder", ("finance", "support-leads"))


async def test_a_write_from_another_sites_page_is_refused_though_the_platform_vouches(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    async with baton_server(db_url, tokens, server_log, EASYAUTH) as server:
        run = await server.start_run(REFUND_120, user="sam")
        pending = await server.wait_for_request(run["id"])
        before = await server.snapshot(pending["id"])
        client = server.anonymous()
        lee = signed_in("lee")
        respond = f"/api/requests/{pending['id']}/respond"
        claim = f"/api/requests/{pending['id']}/claim"
        own = server.base_url
        forged = {
            "another origin": {"Origin": "https://evil.example"},
            "a sandboxed page": {"Origin": "null"},
            "fetch metadata": {"Sec-Fetch-Site": "cross-site"},
            "a sibling site": {"Sec-Fetch-Site": "same-site", "Origin": own},
        }
        refused = {
            why: await client.post(claim, headers=lee | extra) for why, extra in forged.items()
        }
        for why, reply in refused.items():
            assert reply.status_code == 403, (why, reply.text)
            assert reply.json()["error"] == "csrf_refused", why
        assert await server.snapshot(pending["id"]) == before
        # reading is no write; the pages' own scripts and programs calling the API are let through
        peek = await client.get(
            f"/api/requests/{pending['id']}", headers=lee | forged["another origin"]
        )
        assert peek.status_code == 200, peek.text
        same = await client.post(
            claim, headers=lee | {"Origin": own, "Sec-Fetch-Site": "same-origin"}
        )
        assert same.status_code == 200, same.text
        program = await client.post(respond, json={"decision": "approve"}, headers=lee)
        assert program.status_code == 200, program.text


async def test_a_malformed_or_missing_principal_is_a_401_that_says_why(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    no_identity = principal([("name", "Display Only"), ("groups", G_ADMINS)])
    cases = [
        ({"X-MS-CLIENT-PRINCIPAL": "%%% not base64 %%%"}, "X-MS-CLIENT-PRINCIPAL is not base64"),
        (
            {"X-MS-CLIENT-PRINCIPAL": base64.b64encode(b"{nope").decode()},
            "X-MS-CLIENT-PRINCIPAL is base64 but not of JSON",
        ),
        (
            {"X-MS-CLIENT-PRINCIPAL": base64.b64encode(b"[1, 2]").decode()},
            "X-MS-CLIENT-PRINCIPAL must be a JSON object",
        ),
        (
            {"X-MS-CLIENT-PRINCIPAL": base64.b64encode(b'{"auth_typ": "aad"}').decode()},
            "does not have the platform's shape",
        ),
        (
            {"X-MS-CLIENT-PRINCIPAL": principal([("upn", 42)])},
            "claims.0.val",
        ),
        ({"X-MS-CLIENT-PRINCIPAL": no_identity}, "has no identity claim"),
        ({"X-MS-CLIENT-PRINCIPAL-NAME": "lee"}, "came without X-MS-CLIENT-PRINCIPAL"),
        ({}, "not signed in"),
        ({"Authorization": "Bearer eyJhbGciOi.not-a-baton-token"}, "unknown or revoked token"),
    ]
    async with baton_server(db_url, tokens, server_log, EASYAUTH) as server:
        client = server.anonymous()
        for headers, why in cases:
            reply = await client.get("/api/requests", headers=headers)
            assert reply.status_code == 401, (headers, reply.text)
            assert reply.json()["error"] == "unauthenticated"
            assert why in reply.json()["detail"], (why, reply.json()["detail"])
        # /healthz needs nobody (the platform lets it through unauthenticated)
        assert (await client.get("/healthz")).status_code == 200

    assert await stored_user(db_url, "display only") is None


async def test_with_local_auth_the_platform_headers_are_ignored(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    forged = signed_in("ada")  # ada is an admin
    async with baton_server(db_url, tokens, server_log) as server:  # BATON_AUTH=local
        client = server.anonymous()
        alone = await client.get("/api/requests", headers=forged)
        assert alone.status_code == 401, alone.text
        assert "missing bearer token" in alone.json()["detail"]

        stranger = await client.get("/api/requests", headers=signed_in("mallory@evil.test"))
        assert stranger.status_code == 401

        # with val's token the forged admin header changes nothing: val is a viewer
        as_val = forged | {"Authorization": f"Bearer {tokens['val']}"}
        refused = await client.post("/api/runs", json=REFUND_120, headers=as_val)
        assert refused.status_code == 403, refused.text
        assert "val is a viewer" in refused.json()["detail"]

    assert await stored_user(db_url, "mallory@evil.test") is None


async def test_a_principal_that_signs_in_twice_at_once_is_one_user(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:

    async with baton_server(db_url, tokens, server_log, EASYAUTH) as server:
        client = server.anonymous()
        headers = signed_in("twin@contoso.com", G_LEADS)
        replies = await asyncio.gather(
            *(client.get("/api/requests", headers=headers) for _ in range(8))
        )
        assert [r.status_code for r in replies] == [200] * 8, [r.text for r in replies]

    user = await stored_user(db_url, "twin@contoso.com")
    assert user is not None
    assert (user.role, user.teams) == ("responder", ("support-leads",))
