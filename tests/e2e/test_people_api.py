"""API tokens, teams and users over real HTTP and the CLI: who may do what, all audited."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.harness import Server, baton_server, sql


async def _call(
    server: Server, user: str, method: str, path: str, body: Any = None
) -> httpx.Response:
    async with server.client(user) as c:
        return await c.request(method, path, json=body)


async def _as_token(server: Server, token: str, path: str) -> httpx.Response:
    async with httpx.AsyncClient(
        base_url=server.base_url, headers={"Authorization": f"Bearer {token}"}
    ) as c:
        return await c.get(path)


def _audit(db_url: str, *types: str) -> list[dict[str, Any]]:
    wanted = ", ".join(f"'{t}'" for t in types)
    return sql(
        db_url,
        f"SELECT type, actor, data FROM audit_events WHERE type IN ({wanted}) ORDER BY id",
    )


def _baton(db_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "BATON_DATABASE_URL": db_url, "BATON_LOG_LEVEL": "WARNING"}
    return subprocess.run(
        [sys.executable, "-m", "baton", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


async def test_tokens_are_shown_once_listed_without_secrets_and_revoked(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    async with baton_server(db_url, tokens, server_log) as server:
        made = await _call(server, "lee", "POST", "/api/tokens", {"label": "laptop"})
        assert made.status_code == 201, made.text
        token, token_id = made.json()["token"], made.json()["id"]
        assert token.startswith("bt_")
        assert (made.json()["user"], made.json()["label"], made.json()["hint"]) == (
            "lee",
            "laptop",
            token[:7],
        )
        assert (await _as_token(server, token, "/api/requests")).status_code == 200

        mine = (await _call(server, "lee", "GET", "/api/tokens")).json()
        assert {t["id"] for t in mine} >= {token_id}
        assert all(t["user"] == "lee" for t in mine)
        assert all("token" not in t and "hash" not in t for t in mine)
        everyone = (await _call(server, "ada", "GET", "/api/tokens")).json()
        assert {t["user"] for t in everyone} > {"lee", "ada"}
        fays = (await _call(server, "ada", "GET", "/api/tokens?owner=fay")).json()
        assert {t["user"] for t in fays} == {"fay"}

        refused = {
            "lee for fay": await _call(server, "lee", "POST", "/api/tokens", {"user": "fay"}),
            "lee lists fay": await _call(server, "lee", "GET", "/api/tokens?owner=fay"),
            "lee lists nobody": await _call(server, "lee", "GET", "/api/tokens?owner=nobody"),
            "fay revokes lee": await _call(server, "fay", "DELETE", f"/api/tokens/{token_id}"),
            "unknown": await _call(server, "lee", "DELETE", "/api/tokens/tok_nothing"),
            "extra field": await _call(server, "lee", "POST", "/api/tokens", {"scope": "all"}),
        }
        assert {k: r.status_code for k, r in refused.items()} == {
            "lee for fay": 403,  # a permission matter, told whether or not fay exists
            "lee lists fay": 403,
            "lee lists nobody": 403,
            "fay revokes lee": 404,
            "unknown": 404,
            "extra field": 422,
        }
        assert refused["lee for fay"].json()["error"] == "not_permitted"
        assert refused["lee lists fay"].json() == refused["lee lists nobody"].json()
        unknown_owner = await _call(server, "ada", "GET", "/api/tokens?owner=nobody")
        assert unknown_owner.status_code == 422, unknown_owner.text
        assert unknown_owner.json()["errors"][0]["loc"] == ["query", "user"]
        assert (await _as_token(server, token, "/api/requests")).status_code == 200

        revoked = await _call(server, "lee", "DELETE", f"/api/tokens/{token_id}")
        assert revoked.status_code == 200, revoked.text
        assert revoked.json()["revoked_at"] is not None
        assert (await _as_token(server, token, "/api/requests")).status_code == 401
        again = await _call(server, "lee", "DELETE", f"/api/tokens/{token_id}")
        assert again.json() == revoked.json()

        for_fay = await _call(server, "ada", "POST", "/api/tokens", {"user": "fay", "label": "x"})
        assert (for_fay.status_code, for_fay.json()["user"]) == (201, "fay")
        revoke_fay = await _call(server, "ada", "DELETE", f"/api/tokens/{for_fay.json()['id']}")
        assert revoke_fay.status_code == 200

    audit = _audit(db_url, "token.created", "token.revoked")
    assert [(a["type"], a["actor"]) for a in audit] == [
        ("token.created", "lee"),
        ("token.revoked", "lee"),
        ("token.created", "ada"),
        ("token.revoked", "ada"),
    ]


@pytest.mark.process  # the CLI, beside `baton serve`
async def test_the_cli_lists_and_revokes_tokens(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    made = _baton(db_url, "tokens", "create", "fin", "--label", "cli")
    assert made.returncode == 0, made.stderr
    token = made.stdout.strip()
    listed = _baton(db_url, "tokens", "list", "fin")
    assert listed.returncode == 0, listed.stderr
    [line] = [row for row in listed.stdout.splitlines() if row.endswith(" cli")]
    token_id = line.split()[0]
    assert token_id.startswith("tok_")
    assert token[:7] in line
    assert "active" in line

    async with baton_server(db_url, tokens, server_log) as server:
        assert (await _as_token(server, token, "/api/runs")).status_code == 200
        revoked = _baton(db_url, "tokens", "revoke", token_id)
        assert revoked.returncode == 0, revoked.stderr
        assert (await _as_token(server, token, "/api/runs")).status_code == 401

    assert "revoked" in _baton(db_url, "tokens", "list", "fin").stdout
    unknown = _baton(db_url, "tokens", "revoke", "tok_nothing")
    assert unknown.returncode == 2
    assert "no token tok_nothing" in unknown.stderr


FIN_OID = "0f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0"
PIA_OID = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"


async def test_admins_manage_teams_and_users_and_nobody_else_does(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    async with baton_server(db_url, tokens, server_log) as server:
        linked = await _call(
            server, "ada", "PATCH", "/api/users/fin", {"slack_id": "U0SHARED", "entra_id": FIN_OID}
        )
        assert linked.status_code == 200, linked.text
        assert linked.json()["entra_id"] == FIN_OID
        users_before = (await _call(server, "ada", "GET", "/api/users")).json()
        teams_before = (await _call(server, "ada", "GET", "/api/teams")).json()

        refusals = {
            "responder adds a team": await _call(
                server, "lee", "POST", "/api/teams", {"name": "procurement"}
            ),
            "viewer lists users": await _call(server, "val", "GET", "/api/users"),
            "responder patches": await _call(
                server, "lee", "PATCH", "/api/users/lee", {"role": "admin"}
            ),
            "unknown team": await _call(
                server, "ada", "POST", "/api/users", {"name": "pia", "teams": ["finance", "nope"]}
            ),
            "bad role": await _call(
                server, "ada", "POST", "/api/users", {"name": "pia", "role": "boss"}
            ),
            "bad slack id": await _call(
                server, "ada", "POST", "/api/users", {"name": "pia", "slack_id": "lowercase"}
            ),
            "bad entra id": await _call(
                server, "ada", "PATCH", "/api/users/fay", {"entra_id": "not-an-object-id"}
            ),
            "taken entra id": await _call(
                server, "ada", "PATCH", "/api/users/fay", {"entra_id": FIN_OID.upper()}
            ),
            "taken name": await _call(server, "ada", "POST", "/api/users", {"name": "lee"}),
            "taken team": await _call(server, "ada", "POST", "/api/teams", {"name": "finance"}),
            "taken slack id": await _call(
                server, "ada", "PATCH", "/api/users/fay", {"slack_id": "U0SHARED"}
            ),
            "nobody": await _call(server, "ada", "PATCH", "/api/users/nobody", {"role": "viewer"}),
            "clears a role": await _call(
                server, "ada", "PATCH", "/api/users/fay", {"clear": ["role"]}
            ),
            "unknown zone": await _call(
                server, "ada", "PATCH", "/api/users/fay", {"time_zone": "Mars/Olympus_Mons"}
            ),
            "a zone's offset": await _call(
                server, "ada", "POST", "/api/users", {"name": "pia", "time_zone": "+01:00"}
            ),
        }
        assert {k: r.status_code for k, r in refusals.items()} == {
            "responder adds a team": 403,
            "viewer lists users": 403,
            "responder patches": 403,
            "unknown team": 422,
            "bad role": 422,
            "bad slack id": 422,
            "bad entra id": 422,
            "taken entra id": 409,
            "taken name": 409,
            "taken team": 409,
            "nobody": 404,
            "taken slack id": 409,
            "clears a role": 422,
            "unknown zone": 422,
            "a zone's offset": 422,
        }
        for which in ("unknown zone", "a zone's offset"):
            [error] = refusals[which].json()["errors"]
            assert error["loc"] == ["body", "time_zone"], error
            assert "not a time zone the zone database knows" in error["msg"], error
        assert refusals["unknown team"].json()["errors"][0]["loc"] == ["body", "teams", 1]
        assert refusals["bad role"].json()["errors"][0]["loc"] == ["body", "role"]
        assert refusals["clears a role"].json()["errors"][0]["loc"] == ["body", "clear"]
        assert (await _call(server, "ada", "GET", "/api/users")).json() == users_before
        assert (await _call(server, "ada", "GET", "/api/teams")).json() == teams_before

        team = await _call(
            server, "ada", "POST", "/api/teams", {"name": "procurement", "description": "Buys"}
        )
        assert team.status_code == 201, team.text
        added = await _call(
            server,
            "ada",
            "POST",
            "/api/users",
            {
                "name": "pia",
                "teams": ["procurement"],
                "email": "pia@example.com",
                "slack_id": "U0PIA",
                "entra_id": PIA_OID,
                "time_zone": "America/Los_Angeles",
            },
        )
        assert added.status_code == 201, added.text
        assert (added.json()["role"], added.json()["teams"]) == ("responder", ["procurement"])
        assert added.json()["time_zone"] == "America/Los_Angeles"
        moved = await _call(
            server,
            "ada",
            "PATCH",
            "/api/users/pia",
            {
                "role": "admin",
                "teams": ["finance", "procurement"],
                "clear": ["email", "entra_id", "time_zone"],
            },
        )
        assert moved.status_code == 200, moved.text
        assert moved.json() | {"id": None} == {
            "id": None,
            "name": "pia",
            "role": "admin",
            "teams": ["finance", "procurement"],
            "email": None,
            "slack_id": "U0PIA",
            "entra_id": None,
            "time_zone": None,
        }
        teams = {t["name"]: t for t in (await _call(server, "ada", "GET", "/api/teams")).json()}
        assert teams["procurement"] == {
            "name": "procurement",
            "description": "Buys",
            "members": ["pia"],
        }

    audit = _audit(db_url, "team.added", "user.added", "user.updated")
    assert [(a["type"], a["actor"]) for a in audit] == [
        ("user.updated", "ada"),  # fin's Slack id
        ("team.added", "ada"),
        ("user.added", "ada"),
        ("user.updated", "ada"),
    ]


@pytest.mark.process  # the CLI
async def test_the_demo_seeds_legal_and_managers_with_distinct_people(db_url: str) -> None:
    seeded = _baton(db_url, "seed", "--demo")
    assert seeded.returncode == 0, seeded.stderr
    listed = _baton(db_url, "users", "list")
    rows = {line.split()[0]: line.split()[1:3] for line in listed.stdout.splitlines()}

    assert rows["lex"] == ["responder", "legal"]
    assert rows["liv"] == ["responder", "legal"]
    assert rows["max"] == ["responder", "managers"]
    assert rows["mia"] == ["responder", "managers"]
    assert rows["fay"] == ["responder", "finance"]
    assert rows["fin"] == ["responder", "finance"]
    for name in ("sam", "lee", "val", "ada"):
        assert name in rows
    linked = _baton(db_url, "users", "add", "lee", "--team", "support-leads", "--slack-id", "U0LEE")
    assert linked.returncode == 0, linked.stderr
    [lee] = [r for r in _baton(db_url, "users", "list").stdout.splitlines() if r.startswith("lee ")]
    assert lee.split()[-4:] == ["lee@example.com", "U0LEE", "-", "-"]  # its email is kept
    oid = "eeeeeeee-0000-4000-8000-00000000000e"
    entra = _baton(db_url, "users", "add", "lee", "--team", "support-leads", "--entra-id", oid)
    assert entra.returncode == 0, entra.stderr
    [lee] = [r for r in _baton(db_url, "users", "list").stdout.splitlines() if r.startswith("lee ")]
    assert lee.split()[-4:] == ["lee@example.com", "U0LEE", oid, "-"]

    def lee_zone() -> str:
        [lee] = [
            r for r in _baton(db_url, "users", "list").stdout.splitlines() if r.startswith("lee ")
        ]
        return lee.split()[-1]

    zoned = _baton(
        db_url, "users", "add", "lee", "--team", "support-leads", "--time-zone", "Asia/Tokyo"
    )
    assert zoned.returncode == 0, zoned.stderr
    assert lee_zone() == "Asia/Tokyo"
    kept = _baton(db_url, "users", "add", "lee", "--team", "support-leads")
    assert kept.returncode == 0, kept.stderr
    assert lee_zone() == "Asia/Tokyo"
    unknown = _baton(
        db_url, "users", "add", "lee", "--team", "support-leads", "--time-zone", "CEST"
    )
    assert unknown.returncode == 2
    assert "--time-zone" in unknown.stderr
    assert "not a time zone the zone database knows" in unknown.stderr
    assert lee_zone() == "Asia/Tokyo"  # nothing changed
    cleared = _baton(db_url, "users", "add", "lee", "--team", "support-leads", "--time-zone", "")
    assert cleared.returncode == 0, cleared.stderr
    assert lee_zone() == "-"
