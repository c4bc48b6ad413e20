"""The pages over real HTTP: sign-in, sessions and their expiry, CSRF, every form's refusals.

Each refusal answers with its status and changes nothing stored (before/after snapshots), as the
API's do. The browser flows themselves are in tests/browser/.
"""

from __future__ import annotations

import asyncio
import base64
import html
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from baton.demo import PEOPLE
from tests.harness import (
    REFUND_20,
    REFUND_120,
    REFUND_1500,
    MovableClock,
    Server,
    baton_server,
    eventually,
    free_port,
    refunds,
)
from tests.pages import (
    PAGE_ENV,
    browser_session,
    csrf_of,
    forged_session,
    session_of,
    sign_in,
    signed_in,
    text_of,
)
from web.auth import SESSION_COOKIE

BATON = [sys.executable, "-m", "baton"]


@pytest.fixture
def server(page_server: Server) -> Server:
    return page_server


async def waiting_refund(server: Server, body: dict[str, Any] = REFUND_120) -> dict[str, Any]:
    run = await server.start_run(body)
    return await server.wait_for_request(run["id"])


def control(page: str, dom_id: str) -> str:
    """The tag of the form control with this id."""
    found = re.search(rf'<(?:input|select|textarea) [^>]*\bid="{dom_id}"[^>]*>', page)
    assert found, f"no control #{dom_id}"
    return found.group(0)


def ids_of(page: str) -> list[str]:
    return re.findall(r'data-request-id="([^"]+)"', page)


# signing in and out -------------------------------------------------------------------------


async def test_sign_in_refuses_missing_fields_and_wrong_passwords_then_signs_in_and_out(
    server: Server, passwords: dict[str, str]
) -> None:
    async with browser_session(server) as client:
        page = (await client.http.get("/signin")).text
        token = csrf_of(page)
        # who has no account is sent to a person, not to a command line
        assert "Ask your Baton administrator." in text_of(page)
        assert "baton users" not in page

        missing = await client.http.post("/signin", data={"csrf_token": token, "name": "lee"})
        assert missing.status_code == 422, missing.text
        assert 'id="signin-password-error"' in missing.text
        assert 'value="lee"' in missing.text  # what was typed stays

        for name, password in (("lee", "not-his-password"), ("nobody", passwords["lee"])):
            wrong = await client.http.post(
                "/signin", data={"csrf_token": token, "name": name, "password": password}
            )
            assert wrong.status_code == 401, wrong.text
            assert "Unknown name or wrong password." in wrong.text
            assert "user" not in session_of(client)
            assert (await client.http.get("/")).status_code == 303

        signed = await sign_in(client, "lee", passwords["lee"])
        assert (signed.status_code, signed.headers["location"]) == (303, "/")
        cookie = next(c for c in signed.headers.get_list("set-cookie") if SESSION_COOKIE in c)
        assert "httponly" in cookie.lower()
        assert "samesite=lax" in cookie.lower()
        assert "max-age=28800" in cookie.lower()
        inbox = await client.http.get("/")
        assert inbox.status_code == 200
        assert "lee" in inbox.text

        refused = await client.post("/signout", {}, token="")
        assert refused.status_code == 403, refused.text
        assert (await client.http.get("/")).status_code == 200  # still signed in

        out = await client.post("/signout", {})
        assert (out.status_code, out.headers["location"]) == (303, "/signin")
        assert (await client.http.get("/")).status_code == 303


@pytest.mark.process  # two `baton serve` processes share the count, and the CLI resets it
async def test_failed_sign_ins_in_a_row_lock_the_name_for_a_while_in_every_process(
    db_url: str,
    tokens: dict[str, str],
    passwords: dict[str, str],
    server_log: Path,
    tmp_path: Path,
) -> None:
    clock = MovableClock(tmp_path / "clock")
    env = (
        PAGE_ENV
        | clock.env
        | {
            "BATON_SIGNIN_MAX_FAILURES": "3",
            "BATON_SIGNIN_LOCKOUT_SECONDS": "600",
        }
    )
    async with (
        baton_server(db_url, tokens, server_log, env) as one,
        baton_server(db_url, tokens, server_log.with_suffix(".two"), env) as two,
        browser_session(one) as at_one,
        browser_session(two) as at_two,
    ):

        async def attempt(client: Any, name: str, password: str) -> httpx.Response:
            token = csrf_of((await client.http.get("/signin")).text)
            return await client.http.post(
                "/signin", data={"csrf_token": token, "name": name, "password": password}
            )

        # failures count across processes: two on one web process, the third on the other
        for name in ("lee", "nobody"):
            codes = [
                (await attempt(at_one, name, "wrong")).status_code,
                (await attempt(at_one, name, "wrong")).status_code,
                (await attempt(at_two, name, "wrong")).status_code,
            ]
            assert codes == [401, 401, 429], name
        locked = await attempt(at_one, "lee", passwords["lee"])  # even the right password
        nobody = await attempt(at_two, "nobody", "wrong")
        # the wait counts from the last failure, by Baton's clock (real seconds pass meanwhile)
        assert (locked.status_code, nobody.status_code) == (429, 429)
        assert 580 <= int(locked.headers["retry-after"]) <= 600
        assert 580 <= int(nobody.headers["retry-after"]) <= 600
        assert "Too many failed sign-ins for &#39;lee&#39;; try again in 10 minutes." in locked.text
        assert 'value="lee"' in locked.text
        assert "user" not in session_of(at_one)
        # others are not locked out with lee
        assert (await sign_in(at_two, "sam", passwords["sam"])).status_code == 303

        clock.jump(seconds=540)
        waiting = await attempt(at_one, "lee", passwords["lee"])
        assert waiting.status_code == 429
        wait = int(waiting.headers["retry-after"])
        assert 40 <= wait <= 60
        assert f"try again in {wait} seconds" in waiting.text
        clock.jump(seconds=61)
        assert (await sign_in(at_one, "lee", passwords["lee"])).status_code == 303
        # the success ended the streak: a new one starts from nothing
        assert [(await attempt(at_two, "lee", "wrong")).status_code for _ in range(3)] == [
            401,
            401,
            429,
        ]
        # an admin's new password lifts the lockout at once
        changed = await asyncio.to_thread(
            subprocess.run,
            [*BATON, "users", "add", "lee", "--team", "support-leads", "--password-stdin"],
            input="a-brand-new-password\n",
            env={**os.environ, "BATON_DATABASE_URL": db_url, "BATON_LOG_LEVEL": "WARNING"},
            capture_output=True,
            text=True,
        )
        assert changed.returncode == 0, changed.stderr
        assert (await sign_in(at_one, "lee", "a-brand-new-password")).status_code == 303


async def test_sign_in_returns_to_where_the_person_was_going_and_never_off_site(
    server: Server, passwords: dict[str, str]
) -> None:
    async with browser_session(server) as client:
        away = await client.http.get("/runs?status=waiting")
        assert away.status_code == 303
        assert away.headers["location"] == "/signin?next=%2Fruns%3Fstatus%3Dwaiting"
        form = await client.http.get(away.headers["location"])
        assert 'name="next" value="/runs?status=waiting"' in form.text

        for target, lands in (
            ("/runs?status=waiting", "/runs?status=waiting"),
            ("//evil.example/x", "/"),
            ("https://evil.example/", "/"),
            ("/\\evil.example", "/"),
        ):
            token = csrf_of((await client.http.get("/signin")).text)
            reply = await client.http.post(
                "/signin",
                data={
                    "csrf_token": token,
                    "name": "lee",
                    "password": passwords["lee"],
                    "next": target,
                },
            )
            assert (reply.status_code, reply.headers["location"]) == (303, lands), target


@pytest.mark.process  # `baton seed --demo` as the CLI, then its sign-ins on `baton serve`
async def test_seed_demo_prints_demo_sign_ins_that_work(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    env = {**os.environ, "BATON_DATABASE_URL": db_url, "BATON_LOG_LEVEL": "WARNING"}
    seeded = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "baton", "seed", "--demo"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert seeded.returncode == 0, seeded.stderr
    printed = dict(re.findall(r"^  (\w+)\s+(\S+)\s+\w+ of ", seeded.stdout, re.M))
    assert set(printed) == set(PEOPLE), seeded.stdout

    async with (
        baton_server(db_url, tokens, server_log, PAGE_ENV) as server,
        signed_in(server, "lee", printed["lee"]) as lee,
    ):
        assert (await lee.http.get("/")).status_code == 200


async def test_a_new_password_ends_the_sessions_of_the_old_one(
    server: Server, passwords: dict[str, str], db_url: str
) -> None:
    async with signed_in(server, "lee", passwords["lee"]) as lee:
        assert (await lee.http.get("/")).status_code == 200
        changed = await asyncio.to_thread(
            subprocess.run,
            [*BATON, "users", "add", "lee", "--team", "support-leads", "--password-stdin"],
            input="a-brand-new-password\n",
            env={**os.environ, "BATON_DATABASE_URL": db_url, "BATON_LOG_LEVEL": "WARNING"},
            capture_output=True,
            text=True,
        )
        assert changed.returncode == 0, changed.stderr
        assert (await lee.http.get("/")).status_code == 303
        assert (await lee.http.get("/api/requests")).status_code == 401
    async with signed_in(server, "lee", "a-brand-new-password") as again:
        assert (await again.http.get("/")).status_code == 200


# sessions: expiry, forgery, the API ---------------------------------------------------------


async def test_an_expired_or_forged_session_signs_nobody_in(
    server: Server, passwords: dict[str, str]
) -> None:
    async with signed_in(server, "lee", passwords["lee"]) as lee:
        session = session_of(lee)
    nine_hours_ago = time.time() - 9 * 3600
    cookies = {
        # the control: a cookie made as the server makes it is taken (so the others are faithful)
        "fresh": (forged_session(session), True),
        # signed 9 h ago: past BATON_SESSION_MAX_AGE_S (8 h) for the cookie's own signature
        "cookie expired": (forged_session(session, signed_at=nine_hours_ago), False),
        # re-signed just now, but the sign-in it carries was 9 h ago: still over
        "sign-in expired": (forged_session(session | {"since": nine_hours_ago}), False),
        # another password's session
        "other password": (forged_session(session | {"key": "0" * 24}), False),
        # not signed with this server's secret
        "foreign": (forged_session(session, secret="another-servers-secret"), False),
    }
    for what, (cookie, valid) in cookies.items():
        async with httpx.AsyncClient(
            base_url=server.base_url, cookies={SESSION_COOKIE: cookie}, follow_redirects=False
        ) as client:
            page = await client.get("/requests/whatever")
            api = await client.get("/api/requests")
        if valid:
            assert (page.status_code, api.status_code) == (404, 200), what
        else:
            assert page.status_code == 303, what
            assert page.headers["location"] == "/signin?next=%2Frequests%2Fwhatever", what
            assert api.status_code == 401, what


async def test_a_session_unused_for_an_hour_ends_and_each_use_but_a_live_refresh_renews_it(
    server: Server, passwords: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.harness import EventStream
    from web.routes import stream

    async with signed_in(server, "lee", passwords["lee"]) as lee:
        session = session_of(lee)
    now = time.time()
    used_59_min_ago = forged_session(session | {"seen": now - 59 * 60})

    async def visit(cookie: str, **headers: str) -> tuple[int, int, float | None]:
        async with httpx.AsyncClient(
            base_url=server.base_url, cookies={SESSION_COOKIE: cookie}, follow_redirects=False
        ) as client:
            page = await client.get("/", headers=headers)
            api = await client.get("/api/requests", headers=headers)
            sent = page.cookies.get(SESSION_COOKIE)
        seen = json.loads(base64.b64decode(sent.rsplit(".", 2)[0])).get("seen") if sent else None
        return page.status_code, api.status_code, seen

    # BATON_SESSION_IDLE_S is 1 h: 59 min unused is still signed in, and the visit renews it
    status, api, seen = await visit(used_59_min_ago)
    assert (status, api) == (200, 200)
    assert seen is not None
    assert seen >= now - 5
    # a page's live refresh (htmx on a stream event) is not a use: no cookie with a new time
    status, api, seen = await visit(used_59_min_ago, **{"X-Baton-Live": "1"})
    assert (status, api) == (200, 200)
    assert seen is None or seen == pytest.approx(now - 59 * 60, abs=1)
    # 61 min unused, or a cookie that never noted a use: signed out, pages and API
    for cookie in (
        forged_session(session | {"seen": now - 61 * 60}),
        forged_session({k: v for k, v in session.items() if k != "seen"}),
    ):
        status, api, _ = await visit(cookie)
        assert (status, api) == (303, 401)

    # an open stream is not a use either: it ends when its session goes idle under it
    monkeypatch.setattr(stream, "RECHECK_S", 0.2)  # the server runs in this process
    about_to_idle = forged_session(session | {"seen": time.time() - 3600 + 2})
    async with (
        httpx.AsyncClient(
            base_url=server.base_url, cookies={SESSION_COOKIE: about_to_idle}, timeout=30
        ) as watcher,
        watcher.stream("GET", "/api/stream") as reply,
    ):
        events = EventStream(reply.aiter_lines())
        assert (await events.next())["event"] == "ready"
        ended = await events.next(timeout=15)
    assert ended["event"] == "ended"


async def test_signing_out_ends_every_copy_of_the_session_and_a_role_change_ends_it_too(
    server: Server, passwords: dict[str, str]
) -> None:
    async def works(cookie: str) -> tuple[int, int]:
        async with httpx.AsyncClient(
            base_url=server.base_url, cookies={SESSION_COOKIE: cookie}, follow_redirects=False
        ) as client:
            return (await client.get("/")).status_code, (
                await client.get("/api/requests")
            ).status_code

    async with signed_in(server, "lee", passwords["lee"]) as lee:
        copied = lee.http.cookies[SESSION_COOKIE]
        assert await works(copied) == (200, 200)
        await lee.refresh_token()
        out = await lee.post("/signout", {})
        assert out.status_code == 303
    after_sign_out = await works(copied)
    async with signed_in(server, "sam", passwords["sam"]) as sam:
        before = await works(sam.http.cookies[SESSION_COOKIE])
        async with server.client("ada") as ada:
            changed = await ada.patch("/api/users/sam", json={"role": "viewer"})
        after_role_change = await works(sam.http.cookies[SESSION_COOKIE])

    assert after_sign_out == (303, 401)
    assert before == (200, 200)
    assert changed.status_code == 200, changed.text
    assert after_role_change == (303, 401)


async def test_the_api_takes_the_session_cookie_and_its_writes_need_the_csrf_header(
    server: Server, passwords: dict[str, str]
) -> None:
    async with signed_in(server, "sam", passwords["sam"]) as sam:
        listed = await sam.http.get("/api/requests")
        assert listed.status_code == 200, listed.text
        count = await server.run_count()

        refused = await sam.api_post("/api/runs", REFUND_20, csrf=False)
        assert refused.status_code == 403, refused.text
        assert refused.json()["error"] == "csrf_refused"
        assert await server.run_count() == count

        started = await sam.api_post("/api/runs", REFUND_20, csrf=True)
        assert started.status_code == 201, started.text
        assert started.json()["created_by"] == "sam"
    assert (await server.anonymous().get("/api/requests")).status_code == 401


async def test_every_form_refuses_a_post_without_this_sessions_csrf_token(
    server: Server, passwords: dict[str, str]
) -> None:
    pending = await waiting_refund(server)
    before = await server.snapshot(pending["id"])
    count = await server.run_count()
    forms = [
        (f"/requests/{pending['id']}", {"decision": "approve"}),
        (
            f"/requests/{pending['id']}/preview",
            {"decision": "edit", "arguments.order_id": "A-1002", "arguments.amount": "30"},
        ),
        ("/runs/new", {"workflow": "refund", "order_id": "A-1001", "amount": "20", "reason": "x"}),
        (f"/runs/{pending['run_id']}/cancel", {}),
        (f"/requests/{pending['id']}/takeover", {}),
        ("/signout", {}),
    ]
    async with (
        signed_in(server, "lee", passwords["lee"]) as lee,
        signed_in(server, "sam", passwords["sam"]) as sam,
    ):
        for path, data in forms:
            for token in ("", sam.token, "forged-token"):
                reply = await lee.post(path, data, token=token)
                assert reply.status_code == 403, (path, token, reply.text)
                assert "security token" in reply.text
        assert (await lee.http.get("/")).status_code == 200  # sign-out was refused too
    async with browser_session(server) as stranger:
        reply = await stranger.http.post(
            "/signin", data={"name": "lee", "password": passwords["lee"]}
        )
        assert reply.status_code == 403, reply.text
    assert await server.snapshot(pending["id"]) == before
    assert await server.run_count() == count


# the answer forms ---------------------------------------------------------------------------

EDIT = {"decision": "edit", "arguments.order_id": "A-1002"}
ANSWER_REFUSALS = [
    (
        "edit-amount-not-a-number",
        "lee",
        EDIT | {"arguments.amount": "x"},
        422,
        ("a-edit-arguments-amount-error", "is not of type 'number'", 'value="x"'),
    ),
    (
        "edit-amount-zero",
        "lee",
        EDIT | {"arguments.amount": "0"},
        422,
        ("a-edit-arguments-amount-error", "less than or equal to the minimum of 0", 'value="0"'),
    ),
    (
        "edit-without-order",
        "lee",
        {"decision": "edit", "arguments.order_id": "", "arguments.amount": "30"},
        422,
        ("a-edit-arguments-error", "'order_id' is a required property", 'value="30"'),
    ),
    (
        "reject-with-blank-reason",
        "lee",
        {"decision": "reject", "reason": "   "},
        422,
        ("a-reject-reason-error", "required when decision is 'reject'", 'id="form-reject"'),
    ),
    (
        "unknown-decision",
        "lee",
        {"decision": "maybe"},
        422,
        ('role="alert"', "decision must be one of approve, edit, reject", ""),
    ),
    ("responder-of-another-team", "sam", {"decision": "approve"}, 403, None),
    ("viewer", "val", {"decision": "approve"}, 403, None),
]


async def test_a_refused_answer_form_says_why_keeps_what_was_typed_and_changes_nothing(
    server: Server, passwords: dict[str, str], db_url: str
) -> None:
    pending = await waiting_refund(server)
    for case, who, form, status, shown in ANSWER_REFUSALS:
        before = await server.snapshot(pending["id"])
        async with signed_in(server, who, passwords[who]) as client:
            reply = await client.post(f"/requests/{pending['id']}", form)
        assert reply.status_code == status, (case, reply.text)
        assert "text/html" in reply.headers["content-type"], case
        if shown is not None:
            where, message, kept = shown
            assert where in reply.text, (case, reply.text)
            assert message in html.unescape(reply.text), case
            assert kept in reply.text, case
        assert await server.snapshot(pending["id"]) == before, case
    assert (await server.run(pending["run_id"]))["status"] == "waiting"
    assert await refunds(db_url) == []


async def test_answer_forms_for_unknown_answered_and_cancelled_requests(
    server: Server, passwords: dict[str, str]
) -> None:
    pending = await waiting_refund(server)
    async with signed_in(server, "lee", passwords["lee"]) as lee:
        unknown = await lee.post("/requests/req_nope", {"decision": "approve"})
        assert unknown.status_code == 404, unknown.text

        first = await lee.post(f"/requests/{pending['id']}", {"decision": "approve"})
        # nothing else waits for lee: the inbox, telling what was done
        assert (first.status_code, first.headers["location"]) == (303, "/#top")
        shown = await lee.http.get(first.headers["location"])
        assert "Approved: “Refund 120.00 on order A-1002”. Nothing else waits" in shown.text
        await server.wait_for_run(pending["run_id"], status="completed")
        before = await server.snapshot(pending["id"])
        page = await lee.http.get(f"/requests/{pending['id']}")
        assert "Approved by lee at " in page.text
        assert "The run has ended: completed (issue_refund done)." in page.text
        assert "The run carries on" not in page.text

        again = await lee.post(f"/requests/{pending['id']}", {"decision": "approve"})
        assert again.status_code == 303  # the same answer again changes nothing
        repeated = await lee.http.get(again.headers["location"])
        assert "You had already given this answer to “Refund 120.00" in repeated.text
        async with signed_in(server, "ada", passwords["ada"]) as ada:
            stale = await ada.post(f"/requests/{pending['id']}", {"decision": "approve"})
            told = await ada.http.get(stale.headers["location"])
            assert "lee had already given this answer to “Refund 120.00" in told.text
        other = await lee.post(
            f"/requests/{pending['id']}", {"decision": "reject", "reason": "changed my mind"}
        )
        assert other.status_code == 409, other.text
        assert "You cannot answer this request because lee already answered it" in other.text
        assert "Approved by lee at " in other.text
        assert await server.snapshot(pending["id"]) == before

        cancelled = await waiting_refund(server)
        async with server.client("ada") as ada:
            assert (await ada.post(f"/api/runs/{cancelled['run_id']}/cancel")).status_code == 200
        before = await server.snapshot(cancelled["id"])
        closed = await lee.post(f"/requests/{cancelled['id']}", {"decision": "approve"})
        assert closed.status_code == 410, closed.text
        assert "cancelled" in closed.text
        assert await server.snapshot(cancelled["id"]) == before


async def test_the_starter_of_a_run_is_offered_only_what_four_eyes_allows(
    server: Server, passwords: dict[str, str]
) -> None:
    run = await server.start_run(REFUND_120, user="lee")  # lee is also one of the approvers
    pending = await server.wait_for_request(run["id"])
    before = await server.snapshot(pending["id"])
    async with signed_in(server, "lee", passwords["lee"]) as lee:
        page = await lee.http.get(f"/requests/{pending['id']}")
        assert page.status_code == 200
        assert 'id="four-eyes"' in page.text
        assert "You cannot approve or edit this request because you started its run" in page.text
        assert 'id="form-approve"' not in page.text
        assert 'id="form-edit"' not in page.text
        assert 'id="form-reject"' in page.text  # withdrawing stays possible

        for path, form in (
            (f"/requests/{pending['id']}", {"decision": "approve"}),
            (f"/requests/{pending['id']}", EDIT | {"arguments.amount": "60"}),
            (f"/requests/{pending['id']}/preview", EDIT | {"arguments.amount": "60"}),
        ):
            refused = await lee.post(path, form)
            assert refused.status_code == 403, refused.text
            assert "because you started its run (four-eyes)" in html.unescape(refused.text)
    assert await server.snapshot(pending["id"]) == before


async def test_a_request_is_taken_over_from_its_page(
    server: Server, passwords: dict[str, str]
) -> None:
    pending = await waiting_refund(server)
    async with signed_in(server, "lee", passwords["lee"]) as lee:
        page = await lee.http.get(f"/requests/{pending['id']}")
        assert f'action="/requests/{pending["id"]}/takeover#take-over"' in page.text
        before = await server.snapshot(pending["id"])
        asked = await lee.post(f"/requests/{pending['id']}/takeover", {})
        assert asked.status_code == 200, asked.text
        assert "Take this case over?" in asked.text  # confirmed first, without JavaScript too
        assert await server.snapshot(pending["id"]) == before
        taken = await lee.post(f"/requests/{pending['id']}/takeover", {"confirm": "yes"})
        assert (taken.status_code, taken.headers["location"]) == (
            303,
            f"/requests/{pending['id']}#top",
        )
        shown = await lee.http.get(taken.headers["location"])
        assert "You took this over" in shown.text
        again = await lee.post(f"/requests/{pending['id']}/takeover", {"confirm": "yes"})
        assert again.status_code in (200, 303, 409), again.text

    async def takeover_for_lee() -> dict[str, Any] | None:
        run = await server.run(pending["run_id"])
        found = [r for r in run["requests"] if r["kind"] == "takeover"]
        return found[0] if found else None

    takeover = await eventually(takeover_for_lee, what="the takeover request")
    assert (takeover["assignee"], takeover["status"]) == ("lee", "pending")
    async with signed_in(server, "lee", passwords["lee"]) as lee:
        taken_page = await lee.http.get(f"/requests/{pending['id']}")
    link = f'<a href="/requests/{takeover["id"]}" id="takeover-link">Open the takeover request</a>'
    assert link in taken_page.text


async def test_claiming_or_taking_over_a_closed_request_shows_its_page_with_why(
    server: Server, passwords: dict[str, str]
) -> None:
    cancelled = await waiting_refund(server)
    async with server.client("ada") as ada:
        assert (await ada.post(f"/api/runs/{cancelled['run_id']}/cancel")).status_code == 200
    before = await server.snapshot(cancelled["id"])
    url = f"/requests/{cancelled['id']}"
    async with signed_in(server, "lee", passwords["lee"]) as lee:
        for action in ("claim", "takeover"):
            refused = await lee.post(f"{url}/{action}", {})
            assert refused.status_code == 410, (action, refused.text)
            assert 'id="request-title"' in refused.text  # the request's page, not an error page
            assert 'role="alert"' in refused.text
            assert "cancelled" in refused.text
    assert await server.snapshot(cancelled["id"]) == before


async def test_a_claim_from_the_page_holds_others_off_until_released(
    server: Server, passwords: dict[str, str]
) -> None:
    pending = await waiting_refund(server)
    url = f"/requests/{pending['id']}"
    async with (
        signed_in(server, "lee", passwords["lee"]) as lee,
        signed_in(server, "ada", passwords["ada"]) as ada,
    ):
        page = await lee.http.get(url)
        assert f'action="{url}/claim"' in page.text
        claimed = await lee.post(f"{url}/claim", {})
        assert (claimed.status_code, claimed.headers["location"]) == (303, url)
        mine = await lee.http.get(url)
        assert "Claimed:" in mine.text  # the notice
        assert f'action="{url}/release"' in mine.text
        assert "by <strong>lee</strong>" in mine.text

        # ada (an admin) sees who holds it; her answer is refused, naming lee; nothing changes
        theirs = await ada.http.get(url)
        assert 'id="claimed"' in theirs.text
        assert "Release lee&#39;s claim" in theirs.text or "Release lee's claim" in theirs.text
        # the service refuses anyone's answer over the claim: no form offers one
        until = r"until \d\d:\d\d UTC"
        assert re.search(rf"lee is working on this {until} \(\d+ min left\)", text_of(theirs.text))
        for form in ("form-approve", "form-edit", "form-reject", "take-over"):
            assert f'id="{form}"' not in theirs.text, form
        before = await server.snapshot(pending["id"])
        refused = await ada.post(url, {"decision": "approve"})
        assert refused.status_code == 409, refused.text
        alert = re.search(r'<p class="error" role="alert">(.*?)</p>', refused.text, re.DOTALL)
        assert alert, refused.text
        told = html.unescape(alert.group(1))  # for people: no id, no raw timestamp
        assert re.fullmatch(
            rf"lee is working on this {until}; try again after that, or ask lee\.", told
        )
        again = await ada.post(f"{url}/claim", {})
        assert again.status_code == 409, again.text
        assert await server.snapshot(pending["id"]) == before

        released = await lee.post(f"{url}/release", {})
        assert released.status_code == 303, released.text
        free = await ada.http.get(url)
        assert f'action="{url}/claim"' in free.text
        answered = await ada.post(url, {"decision": "approve"})
        assert answered.status_code == 303, answered.text
    events = [e["type"] for e in await server.audit(pending["run_id"])]
    assert events.count("request.claimed") == 1
    assert events.count("request.released") == 1


async def test_an_edit_is_confirmed_before_it_is_sent(
    server: Server, passwords: dict[str, str], db_url: str
) -> None:
    pending = await waiting_refund(server)
    before = await server.snapshot(pending["id"])
    async with signed_in(server, "lee", passwords["lee"]) as lee:
        edit = EDIT | {"arguments.amount": "45", "reason": "partial damage"}
        step = await lee.post(f"/requests/{pending['id']}", edit)
        assert step.status_code == 200, step.text
        assert "Check your edit, then confirm it" in step.text  # inside the edit form
        assert step.text.index('id="form-edit"') < step.text.index("Check your edit")
        assert "Rule refund.small applies to the changed call instead of refund.medium" in step.text
        assert "<del>120.00 EUR</del>" in step.text
        assert "<ins>45.00 EUR</ins>" in step.text
        assert await server.snapshot(pending["id"]) == before

        digest = re.search(r'name="confirm" value="([^"]+)"', step.text)
        assert digest
        stale = await lee.post(
            f"/requests/{pending['id']}",
            EDIT | {"arguments.amount": "46", "confirm": digest.group(1)},
        )
        assert stale.status_code == 200  # a confirmation of another edit: shown again, not sent
        assert "<ins>46.00 EUR</ins>" in stale.text
        assert await server.snapshot(pending["id"]) == before

        sent = await lee.post(f"/requests/{pending['id']}", edit | {"confirm": digest.group(1)})
        assert sent.status_code == 303, sent.text
    done = await server.wait_for_run(pending["run_id"], status="completed")
    assert "Refunded 45.00" in done["output"]["text"]
    assert [r["amount"] for r in await refunds(db_url)] == [45.0]


async def test_the_edit_preview_shows_a_diff_or_the_errors(
    server: Server, passwords: dict[str, str]
) -> None:
    pending = await waiting_refund(server)
    before = await server.snapshot(pending["id"])
    async with signed_in(server, "lee", passwords["lee"]) as lee:
        url = f"/requests/{pending['id']}/preview"
        good = await lee.post(url, EDIT | {"arguments.amount": "80"})
        assert good.status_code == 200, good.text
        assert "<del>120.00 EUR</del>" in good.text
        assert "<ins>80.00 EUR</ins>" in good.text
        assert "Rule refund.medium still applies: your approval is enough" in good.text
        assert 'name="confirm"' not in good.text  # confirmed only on the step Send edit shows
        bad = await lee.post(url, EDIT | {"arguments.amount": "-1"})
        assert bad.status_code == 422, bad.text
        assert "<li>Amount: -1 is less than or equal to the minimum of 0</li>" in bad.text
        assert 'name="confirm"' not in bad.text
    async with signed_in(server, "val", passwords["val"]) as val:
        refused = await val.post(url, EDIT | {"arguments.amount": "80"})
        assert refused.status_code == 403
    assert await server.snapshot(pending["id"]) == before


# starting and cancelling runs ---------------------------------------------------------------

START = {"workflow": "refund", "order_id": "A-1002", "reason": "broken"}
START_REFUSALS = [
    ("no-amount", "sam", START, 422, ("in-amount-error", "Field required", ">broken</textarea>")),
    (
        "amount-not-a-number",
        "sam",
        START | {"amount": "x"},
        422,
        ("in-amount-error", "valid number", 'value="x"'),
    ),
    (
        "amount-zero",
        "sam",
        START | {"amount": "0"},
        422,
        ("in-amount-error", "greater than 0", 'value="0"'),
    ),
    ("unknown-workflow", "sam", {"workflow": "nope", "amount": "5"}, 404, None),
    *(
        (
            case,
            "sam",
            form,
            422,
            ("pick-workflow-error", "Choose a workflow", 'aria-invalid="true"'),
        )
        for case, form in (("no-workflow", {"amount": "5"}), ("blank-workflow", {"workflow": ""}))
    ),
    ("viewer", "val", START | {"amount": "20"}, 403, None),
]


async def test_a_refused_start_form_says_why_and_starts_nothing(
    server: Server, passwords: dict[str, str], db_url: str
) -> None:
    for case, who, form, status, shown in START_REFUSALS:
        async with signed_in(server, who, passwords[who]) as client:
            reply = await client.post("/runs/new", form)
        assert reply.status_code == status, (case, reply.text)
        if shown is not None:
            where, message, kept = shown
            assert where in reply.text, case
            assert message in html.unescape(reply.text), case
            assert kept in reply.text, case
        assert await server.run_count() == 0, case
    assert await refunds(db_url) == []


async def test_the_start_form_is_built_from_the_input_schema_and_starts_a_run(
    server: Server, passwords: dict[str, str]
) -> None:
    async with signed_in(server, "sam", passwords["sam"]) as sam:
        form = await sam.http.get("/runs/new?workflow=refund")
        assert form.status_code == 200
        amount = control(form.text, "in-amount")
        assert amount.startswith('<input type="number"')
        # money (the workflow says so): cents, and more than 0 as the server says
        for hint in (" required", 'min="0.01"', 'step="0.01"', 'inputmode="decimal"'):
            assert hint in amount, amount
        assert control(form.text, "in-reason").startswith("<textarea")  # a message: a text area
        order = control(form.text, "in-order_id")
        for hint in (" required", 'minlength="1"', 'type="text"'):
            assert hint in order, order
        assert 'for="in-order_id"' in form.text
        started = await sam.post("/runs/new", START | {"amount": "20"})
        assert started.status_code == 303, started.text
        run_id = started.headers["location"].rsplit("/", 1)[1]
    done = await server.wait_for_run(run_id, status="completed")
    assert done["created_by"] == "sam"
    assert done["input"] == {"order_id": "A-1002", "amount": 20.0, "reason": "broken"}


CONFIRMED = {"confirm": "yes", "reason": "The customer withdrew it"}


async def test_cancel_refusals_change_nothing(server: Server, passwords: dict[str, str]) -> None:
    pending = await waiting_refund(server)
    finished = await server.start_run(REFUND_20)
    await server.wait_for_run(finished["id"], status="completed")
    before = await server.snapshot(pending["id"])
    for form in ({}, CONFIRMED):  # asking, and confirmed
        async with signed_in(server, "val", passwords["val"]) as val:
            assert (await val.post(f"/runs/{pending['run_id']}/cancel", form)).status_code == 403
        async with signed_in(server, "sam", passwords["sam"]) as sam:
            ended = await sam.post(f"/runs/{finished['id']}/cancel", form)
            assert ended.status_code == 409, ended.text
            assert "You cannot cancel this run because it has already completed." in ended.text
            assert (await sam.post("/runs/run_nope/cancel", form)).status_code == 404
    assert await server.snapshot(pending["id"]) == before
    assert (await server.run(finished["id"]))["status"] == "completed"


async def test_a_cancel_asks_first_and_why_and_the_request_then_says_who_and_why(
    server: Server, passwords: dict[str, str]
) -> None:
    pending = await waiting_refund(server)
    url = f"/runs/{pending['run_id']}/cancel"
    before = await server.snapshot(pending["id"])
    async with signed_in(server, "sam", passwords["sam"]) as sam:
        page = await sam.http.get(f"/runs/{pending['run_id']}")
        asked = await sam.post(url, {})  # the button: it asks, in place
        blank = await sam.post(url, {"confirm": "yes", "reason": "  "})
        unchanged = await server.snapshot(pending["id"])
        done = await sam.post(url, CONFIRMED)
    async with signed_in(server, "lee", passwords["lee"]) as lee:
        request_page = text_of((await lee.http.get(f"/requests/{pending['id']}")).text)
        run_page = text_of((await lee.http.get(f"/runs/{pending['run_id']}")).text)

    assert "Cancel this run…" in page.text
    assert 'name="confirm"' not in page.text  # a click asks; it cancels nothing
    assert asked.status_code == 200, asked.text
    words = text_of(asked.text)
    assert "Cancel this run? The run stops for good, and its open request closes as cancelled" in (
        words
    )
    assert "This cannot be undone." in words
    assert re.search(r'<textarea id="cancel-reason" name="reason"[^>]* required', asked.text)
    assert 'name="confirm" value="yes"' in asked.text
    assert blank.status_code == 422, blank.text
    assert "Say why the run is cancelled" in text_of(blank.text)
    assert 'aria-invalid="true"' in blank.text
    assert unchanged == before
    assert done.status_code == 303, done.text
    run = await server.run(pending["run_id"])
    assert run["status"] == "cancelled"
    outcome = re.search(
        r"Cancelled by sam at \d{4}-\d\d-\d\d \d\d:\d\d UTC: (.*?)\. The run", request_page
    )
    assert outcome, request_page
    assert outcome.group(1) == "The customer withdrew it"
    assert "Run cancelled by sam — why: The customer withdrew it" in run_page
    assert re.search(r"Cancelled by sam at [^:]*:\d\d UTC: The customer withdrew it", run_page)


# the inbox ----------------------------------------------------------------------------------


async def test_the_inbox_filters_counts_and_pages_by_keyset(
    server: Server, passwords: dict[str, str]
) -> None:
    runs = [await server.start_run(REFUND_120) for _ in range(27)]
    large = await server.start_run(REFUND_1500)
    for run in [*runs, large]:
        await server.wait_for_request(run["id"])
    async with signed_in(server, "ada", passwords["ada"]) as ada:
        first = await ada.http.get("/")
        assert first.status_code == 200
        assert re.search(r'data-view="mine">28<', first.text)
        page_one = ids_of(first.text)
        assert len(page_one) == 25
        older = re.search(r'<a href="([^"]+)" rel="next">More requests</a>', first.text)
        assert older
        second = await ada.http.get(older.group(1).replace("&amp;", "&"))
        page_two = ids_of(second.text)
        assert len(page_two) == 3
        assert not set(page_one) & set(page_two)

        finance = await ada.http.get("/?team=finance")
        assert len(ids_of(finance.text)) == 1
        assert "2 approvals" in finance.text
        assert ids_of((await ada.http.get("/?kind=question")).text) == []
        assert len(ids_of((await ada.http.get("/?workflow=refund&team=*")).text)) == 25

        live = await ada.http.get("/?team=finance", headers={"HX-Request": "true"})
        assert live.text.lstrip().startswith('<section id="inbox-list"')
        assert len(ids_of(live.text)) == 1

        for query, name in (("status=bogus", "status"), ("kind=bogus", "kind")):
            bad = await ada.http.get(f"/?{query}")
            assert bad.status_code == 422, bad.text
            assert f"query.{name}" in bad.text
    async with signed_in(server, "lee", passwords["lee"]) as lee:
        mine = await lee.http.get("/")
        assert re.search(r'data-view="mine">27<', mine.text)
        assert "Refund 1500.00" not in mine.text


async def test_pages_carry_security_headers_and_unknown_pages_are_html_404s(
    server: Server, passwords: dict[str, str]
) -> None:
    async with signed_in(server, "lee", passwords["lee"]) as lee:
        inbox = await lee.http.get("/")
        assert "script-src 'self'" in inbox.headers["content-security-policy"]
        assert "frame-ancestors 'none'" in inbox.headers["content-security-policy"]
        assert inbox.headers["cache-control"] == "no-store"
        missing = await lee.http.get("/no/such/page")
        assert missing.status_code == 404
        assert "text/html" in missing.headers["content-type"]
        assert "Not found" in missing.text
        api = await lee.http.get("/api/nope")
        assert api.headers["content-type"].startswith("application/json")
        css = await lee.http.get("/static/app.css")
        assert (css.status_code, css.headers["content-type"].split(";")[0]) == (200, "text/css")
        htmx = await lee.http.get("/static/vendor/htmx/htmx.min.js")
        assert htmx.status_code == 200


async def test_behind_easyauth_the_pages_take_the_platforms_principal(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    env = PAGE_ENV | {"BATON_AUTH": "easyauth"}
    claims = [{"typ": "preferred_username", "val": "lee"}]
    principal = base64.b64encode(json.dumps({"auth_typ": "aad", "claims": claims}).encode())
    headers = {"X-MS-CLIENT-PRINCIPAL": principal.decode()}
    async with baton_server(db_url, tokens, server_log, env) as server:
        pending = await waiting_refund(server)
        async with httpx.AsyncClient(base_url=server.base_url, headers=headers) as platform:
            inbox = await platform.get("/")
            assert inbox.status_code == 200, inbox.text
            assert pending["id"] in ids_of(inbox.text)
            token = csrf_of(inbox.text)
            out = await platform.post("/signout", data={"csrf_token": token})
            assert (out.status_code, out.headers["location"]) == (303, "/.auth/logout")
        bare = await server.anonymous().get("/")  # no principal: sign in
        assert bare.status_code == 303


# serving ------------------------------------------------------------------------------------


async def test_serve_refuses_the_development_secret_beyond_loopback(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "BATON_SECRET_KEY"}
    env["BATON_DATABASE_URL"] = f"sqlite:///{tmp_path / 'baton.db'}"
    done = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "baton", "serve", "--host", "0.0.0.0", "--port", str(free_port())],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert "development BATON_SECRET_KEY" in done.stderr
    assert not (tmp_path / "baton.db").exists()  # refused before anything was opened
