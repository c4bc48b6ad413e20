"""Who may call what: every route x role x own/foreign team, against a real server.

`RULES` names every route the app serves with its rule; a route without a rule fails
`test_every_route_has_a_rule`, so a new route cannot arrive without deciding who may call it.
The people, for a refund of 120 that `sam` (support-agents) started, whose approval belongs to
support-leads:

- ada: admin; lee: responder of the owning team; sam: the run's starter, responder of another team;
  fay: responder of a foreign team (finance); val: viewer of the owning team; vic: viewer of a
  foreign team (legal); anon: no credentials.

Seeing: ada, lee, sam and val see the run; fay and vic get a 404 for what they may not see (never a
403 that would confirm an id). Acting: a viewer's 403 and a foreign responder's 403 say why.
"""

from __future__ import annotations

import html
import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.routing import Mount, Route

from baton.settings import Settings
from human.store import open_store
from tests.harness import MCP_INITIALIZE, REFUND_120, Server, baton_server
from tests.pages import (
    PAGE_ENV,
    PageClient,
    browser_session_of,
    csrf_of,
    demo_passwords,
    sign_in,
)
from web.app import create_app
from web.auth import new_token, token_hash

PEOPLE = ("anon", "ada", "lee", "sam", "fay", "val", "vic")
SEE = {"anon": 401, "ada": 200, "lee": 200, "sam": 200, "fay": 404, "val": 200, "vic": 404}
ANY = {"anon": 401} | dict.fromkeys(PEOPLE[1:], 200)
PUBLIC = dict.fromkeys(PEOPLE, 200)
ADMINS = {"anon": 401, "ada": 200} | dict.fromkeys(PEOPLE[2:], 403)
ONE_EACH = dict.fromkeys(PEOPLE[1:], 201)
PAGE = ANY | {"anon": 303}
SEE_PAGE = SEE | {"anon": 303}
SIGNED_FORM = dict.fromkeys(PEOPLE, 303) | {"anon": 401}
SEE_FORM = SEE | {"anon": 401, "ada": 303, "lee": 303, "sam": 303, "val": 303}
PUBLIC_FORM = dict.fromkeys(PEOPLE, 303) | {"anon": 422}

# (method, path) -> (rule, expected status per person)
RULES: dict[tuple[str, str], tuple[str, dict[str, int]]] = {
    ("GET", "/healthz"): ("public", PUBLIC),
    ("GET", "/openapi.json"): ("public: the API's shape, no data", PUBLIC),
    ("GET", "/docs"): ("public", PUBLIC),
    ("GET", "/redoc"): ("public", PUBLIC),
    ("GET", "/api/workflows"): ("signed in", ANY),
    ("POST", "/api/runs"): (
        "responders and admins start runs",
        ANY | {"val": 403, "vic": 403, **dict.fromkeys(("ada", "lee", "sam", "fay"), 201)},
    ),
    ("GET", "/api/runs"): ("signed in; lists only the runs one may see", ANY),
    ("GET", "/api/runs/{run_id}"): ("who may see the run", SEE),
    ("GET", "/api/runs/{run_id}/events"): ("who may see the run", SEE),
    ("POST", "/api/runs/{run_id}/cancel"): (
        "who may see the run, but not a viewer",
        SEE | {"val": 403},
    ),
    ("GET", "/api/requests"): ("signed in; lists only the requests one may see", ANY),
    ("GET", "/api/requests/{request_id}"): ("who may see the run", SEE),
    ("GET", "/api/requests/{request_id}/events"): ("who may see the run", SEE),
    ("GET", "/api/requests/{request_id}/attachments/{attachment_id}"): (
        "who may see the run (here a chart's review, its image)",
        SEE,
    ),
    ("POST", "/api/requests/{request_id}/respond"): (
        "a responder of the owning team or an admin; never the run's starter approving",
        SEE | {"sam": 403, "val": 403},
    ),
    ("GET", "/api/stream"): ("signed in; streams only the runs one may see", ANY),
    ("POST", "/api/requests/{request_id}/claim"): (
        "who may answer it: a responder of the owning team or an admin",
        SEE | {"sam": 403, "val": 403},
    ),
    ("POST", "/api/requests/{request_id}/release"): (
        "the claim's holder (here lee) or an admin",
        SEE | {"sam": 403, "val": 403},
    ),
    ("POST", "/api/requests/{request_id}/reassign"): (
        "a responder of the owning team or an admin",
        SEE | {"sam": 403, "val": 403},
    ),
    ("POST", "/api/tokens"): ("signed in: a token of one's own", ANY | ONE_EACH),
    ("GET", "/api/tokens"): ("signed in: one's own tokens; an admin's, everyone's", ANY),
    ("DELETE", "/api/tokens/{token_id}"): (
        "the token's owner (here lee) or an admin; anyone else: no such token",
        {"anon": 401, "ada": 200, "lee": 200, "sam": 404, "fay": 404, "val": 404, "vic": 404},
    ),
    ("GET", "/api/teams"): ("admins", ADMINS),
    ("POST", "/api/teams"): ("admins", ADMINS | {"ada": 201}),
    ("GET", "/api/users"): ("admins", ADMINS),
    ("POST", "/api/users"): ("admins", ADMINS | {"ada": 201}),
    ("PATCH", "/api/users/{name}"): ("admins", ADMINS),
    ("POST", "/integrations/slack/actions"): (
        "Slack's signature over the body, never a bearer token",
        dict.fromkeys(PEOPLE, 401),
    ),
    ("POST", "/integrations/teams/messages"): (
        "the Bot Connector's JWT for the bot's app id, never a Baton bearer token",
        dict.fromkeys(PEOPLE, 401),
    ),
    ("POST", "/agui/{workflow}"): (
        "AG-UI: as answering (here a resume approving the run's request); a stream after",
        SEE | {"sam": 403, "val": 403},
    ),
    ("POST", "/api/requests/{request_id}/takeover"): (
        "a responder of the owning team or an admin takes the request over",
        SEE | {"sam": 403, "val": 403},
    ),
    ("POST", "/mcp"): ("a Baton API token (MCP's initialize here); never a session", ANY),
    ("GET", "/mcp"): (
        "a Baton API token; MCP's stream then wants its session (400 without one)",
        ANY | dict.fromkeys(PEOPLE[1:], 400),
    ),
    ("DELETE", "/mcp"): (
        "a Baton API token; ending an MCP session wants one (400 without one)",
        ANY | dict.fromkeys(PEOPLE[1:], 400),
    ),
    # the pages, called signed in (session cookie and CSRF token): the same rules as the API's,
    # anonymous GETs redirected to sign in (303), anonymous posts 401, success of a form a 303
    ("MOUNT", "/static"): ("public: stylesheet and vendored scripts", PUBLIC),
    ("GET", "/signin"): ("public", PUBLIC),
    ("POST", "/signin"): ("public: a name and password sign in", PUBLIC_FORM),
    ("POST", "/signout"): (
        "anyone with the session's CSRF token (signing nobody out is harmless)",
        dict.fromkeys(PEOPLE, 303),
    ),
    ("GET", "/"): ("signed in; lists only the requests one may see", PAGE),
    ("GET", "/inbox"): ("signed in; lists only the requests one may see", PAGE),
    ("GET", "/requests/{request_id}"): ("who may see the run", SEE_PAGE),
    ("GET", "/requests/{request_id}/live"): ("who may see the run", SEE_PAGE),
    ("GET", "/requests/{request_id}/attachments/{attachment_id}"): (
        "who may see the run (here a chart's review, its image)",
        SEE_PAGE,
    ),
    ("POST", "/requests/{request_id}"): (
        "a responder of the owning team or an admin; never the run's starter approving",
        SEE_FORM | {"sam": 403, "val": 403},
    ),
    ("POST", "/requests/{request_id}/preview"): (
        "as answering: the diff of an edit",
        SEE_FORM | {"ada": 200, "lee": 200, "sam": 403, "val": 403},
    ),
    ("POST", "/requests/{request_id}/claim"): (
        "who may answer it: a responder of the owning team or an admin",
        SEE_FORM | {"sam": 403, "val": 403},
    ),
    ("POST", "/requests/{request_id}/release"): (
        "the claim's holder (here lee) or an admin",
        SEE_FORM | {"sam": 403, "val": 403},
    ),
    ("POST", "/requests/{request_id}/takeover"): (
        "a responder of the owning team or an admin takes the request over",
        SEE_FORM | {"sam": 403, "val": 403},
    ),
    ("GET", "/runs"): ("signed in; lists only the runs one may see", PAGE),
    ("GET", "/dashboard"): ("signed in; the figures of one's own teams (an admin's: all)", PAGE),
    ("GET", "/runs/new"): ("signed in (viewers are told they cannot start runs)", PAGE),
    ("POST", "/runs/new"): (
        "responders and admins start runs",
        SIGNED_FORM | {"val": 403, "vic": 403},
    ),
    ("GET", "/runs/{run_id}"): ("who may see the run", SEE_PAGE),
    ("POST", "/runs/{run_id}/cancel"): (
        "who may see the run, but not a viewer",
        SEE_FORM | {"val": 403},
    ),
    ("POST", "/runs/{run_id}/continue"): (
        "who may start runs and see the run (the refund takes no message: 422)",
        SEE_FORM | {"ada": 422, "lee": 422, "sam": 422, "val": 403, "vic": 403},
    ),
}

Call = Callable[[httpx.AsyncClient, dict[str, Any]], Awaitable[httpx.Response]]


def served_routes() -> set[tuple[str, str]]:
    """(method, path) of every route the app serves, through included routers and mounts."""
    app = create_app(Settings(database_url="sqlite:///unused.db"), worker=False)
    found: set[tuple[str, str]] = set()

    def walk(routes: Any, prefix: str) -> None:
        for route in routes:
            included = getattr(route, "original_router", None)  # FastAPI >= 0.165 keeps routers
            if included is not None:
                walk(included.routes, prefix + route.include_context.prefix)
            elif isinstance(route, Mount):
                found.add(("MOUNT", prefix + route.path))
            elif isinstance(route, Route):
                methods = set(route.methods or ()) - {"HEAD"}
                found.update((method, prefix + route.path) for method in methods)

    walk(app.routes, "")
    return found


def test_every_route_has_a_rule() -> None:
    served = served_routes()
    assert served - set(RULES) == set(), "routes without an access rule: add them to RULES"
    assert set(RULES) - served == set(), "rules for routes the app does not serve"


async def add_vic(db_url: str, tokens: dict[str, str]) -> None:
    store = await open_store(db_url)
    try:
        vic = await store.add_user("vic", role="viewer", teams=["legal"])
        tokens["vic"] = new_token()
        await store.add_token(vic.id, token_hash(tokens["vic"]), "tests")
    finally:
        await store.close()


def client_of(server: Server, person: str) -> httpx.AsyncClient:
    client = server.anonymous()
    if person != "anon":
        client.headers["Authorization"] = f"Bearer {server.tokens[person]}"
    return client


async def a_chart_to_review(server: Server) -> dict[str, Any]:
    """A request that came with files (`tests/samples/chart_review.py`), and its image's id."""
    run = await server.start_run({"workflow": "chart_review", "input": {"topic": "sales"}})
    request = await server.wait_for_request(run["id"])
    return {"request_id": request["id"], "attachment_id": request["attachments"][0]["id"]}


async def a_paused_refund(server: Server, *, by: str = "sam") -> dict[str, Any]:
    run = await server.start_run(REFUND_120, user=by)
    request = await server.wait_for_request(run["id"])
    return {"run_id": run["id"], "request_id": request["id"]}


PAGE_FORMS: dict[str, dict[str, str]] = {
    "/requests/{request_id}": {"decision": "approve"},
    "/requests/{request_id}/preview": {
        "decision": "edit",
        "arguments.order_id": "A-1002",
        "arguments.amount": "60",
    },
    "/runs/new": {"workflow": "refund", "order_id": "A-1002", "amount": "120", "reason": "x"},
    "/requests/{request_id}/takeover": {"confirm": "yes"},  # (without: the page asks first)
    "/runs/{run_id}/continue": {"text": "and?"},
    # (without: the page asks first, and why)
    "/runs/{run_id}/cancel": {"confirm": "yes", "reason": "matrix"},
}


def is_page(method: str, path: str) -> bool:
    return method != "MOUNT" and not path.startswith(
        ("/api", "/healthz", "/docs", "/redoc", "/openapi", "/agui", "/mcp")
    )


async def call_page(
    pages: PageClient, person: str, password: str, method: str, path: str, ids: dict[str, Any]
) -> httpx.Response:
    """A page route as `person` signed in to the pages (anon: signed in to nothing)."""
    url = path.format(**ids)
    if method == "GET":
        return await pages.http.get(url)
    if path == "/signin":
        async with browser_session_of(pages) as fresh:
            if person == "anon":
                form = await fresh.http.get("/signin")
                return await fresh.http.post("/signin", data={"csrf_token": csrf_of(form.text)})
            return await sign_in(fresh, person, password)
    if path == "/signout":
        async with browser_session_of(pages) as fresh:
            if person == "anon":
                await fresh.refresh_token("/signin")
            else:
                await sign_in(fresh, person, password)
            return await fresh.post("/signout", {})
    return await pages.post(url, PAGE_FORMS.get(path, {}))


async def call(client: httpx.AsyncClient, method: str, path: str, ids: dict[str, Any]) -> Any:
    url = path.format(**{"workflow": "refund", **ids})
    if method == "MOUNT":
        return await client.get(f"{url}/app.css")
    if path == "/mcp":  # MCP's streamable HTTP: JSON-RPC that accepts a stream back
        headers = {"Accept": "application/json, text/event-stream"}
        body = MCP_INITIALIZE if method == "POST" else None
        return await client.request(method, url, json=body, headers=headers)
    if (method, path) == ("GET", "/api/stream"):
        async with client.stream("GET", url) as reply:
            return reply  # the status is known once the headers arrive
    if path == "/agui/{workflow}":
        body = {
            "threadId": ids["run_id"],
            "runId": "matrix",
            "messages": [],
            "forwardedProps": {"baton": {"follow": False}},  # ends with the run: read it whole
            "resume": [
                {
                    "interruptId": ids["request_id"],
                    "status": "resolved",
                    "payload": {"decision": "approve"},
                }
            ],
        }
        return await client.post(url, json=body)
    body: Any = None
    if path == "/api/runs" and method == "POST":
        body = REFUND_120
    elif path.endswith("/respond"):
        body = {"decision": "approve"}
    elif path.endswith("/reassign"):
        body = {"team": "finance"}
    elif (method, path) == ("POST", "/api/tokens"):
        body = {"label": "matrix"}
    elif (method, path) == ("POST", "/api/teams"):
        body = {"name": "matrix-team"}
    elif (method, path) == ("POST", "/api/users"):
        body = {"name": "matrix-user"}
    elif method == "PATCH":
        body = {"email": "val@matrix.example"}
    return await client.request(method, url, json=body)


async def test_every_route_for_every_person(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    await add_vic(db_url, tokens)
    passwords = await demo_passwords(db_url, extra=("vic",))
    mismatches = []
    integrations = {"BATON_SLACK_SIGNING_SECRET": "matrix"}  # configured: only its signature counts
    # the Teams bot configured: only a Bot Connector token counts (none is fetched: no JWT comes)
    integrations |= {
        "BATON_TEAMS_APP_ID": "matrix-bot",
        "BATON_TEAMS_OPENID_METADATA_URL": "http://127.0.0.1:9/",
    }
    integrations |= {"BATON_WORKFLOWS": "tests.samples.chart_review"}
    async with baton_server(db_url, tokens, server_log, PAGE_ENV | integrations) as server:
        shared = await a_paused_refund(server)
        chart = await a_chart_to_review(server)
        async with server.client("lee") as lee:
            token = await lee.post("/api/tokens", json={"label": "to revoke"})
            shared |= {"token_id": token.json()["id"], "name": "val"}
        pages = {person: await pages_of(server, person, passwords) for person in PEOPLE}
        for (method, path), (rule, expected) in RULES.items():
            changes_state = method == "POST" and "{" in path
            for person in PEOPLE:
                ids = await a_paused_refund(server) if changes_state else shared
                if "{attachment_id}" in path:
                    ids = chart
                if path.endswith("/release"):
                    async with server.client("lee") as lee:
                        await lee.post(f"/api/requests/{ids['request_id']}/claim")
                if is_page(method, path):
                    reply = await call_page(
                        pages[person], person, passwords.get(person, ""), method, path, ids
                    )
                else:
                    reply = await call(client_of(server, person), method, path, ids)
                missing = headers_missing(reply, path, credentialed=person != "anon")
                if missing:
                    mismatches.append(f"{method} {path} as {person}: no {missing} header")
                if reply.status_code != expected[person]:
                    mismatches.append(
                        f"{method} {path} as {person}: {reply.status_code}, expected "
                        f"{expected[person]} ({rule})"
                    )
                elif reply.status_code == 403:
                    detail = detail_of(reply)
                    # the API names who; a page speaks to its reader
                    said_to = "You cannot " if is_html(reply) else person
                    assert said_to in detail, f"a 403 says who and why: {detail}"
                elif reply.status_code == 404:
                    detail = detail_of(reply)
                    # (a page says it to people, the same whether the request never was or
                    # is not theirs: web.errors.said_to_people)
                    told = ("no run", "no request", "no token", "There is no request at this")
                    assert detail.startswith(told), detail
    assert mismatches == []


def headers_missing(reply: httpx.Response, path: str, *, credentialed: bool) -> list[str]:
    """The security headers (`web/headers.py`) this response lacks (the API docs, FastAPI's own
    inline pages, are not held to the pages' script policy)."""
    wanted = {
        "x-content-type-options": "nosniff",
        "x-frame-options": "DENY",
        "referrer-policy": "same-origin",
    }
    missing = [name for name, value in wanted.items() if reply.headers.get(name) != value]
    policy = reply.headers.get("content-security-policy", "")
    if "frame-ancestors 'none'" not in policy:
        missing.append("content-security-policy")
    scripts = [d.strip() for d in policy.split(";") if d.strip().startswith("script-src")]
    html = reply.headers.get("content-type", "").startswith("text/html")
    if html and set(scripts) != {"script-src 'self'"}:  # only this origin's script files
        missing.append("content-security-policy for a page")
    if credentialed and not reply.headers.get("cache-control"):
        missing.append("cache-control")
    return missing


def is_html(reply: httpx.Response) -> bool:
    return not reply.headers["content-type"].startswith("application/json")


def detail_of(reply: httpx.Response) -> str:
    """What a refusal says: the API's `detail`, or the error page's alert."""
    if not is_html(reply):
        return str(reply.json()["detail"])
    found = re.search(r'<p class="error" role="alert">([^<]*)</p>', reply.text)
    assert found, reply.text
    return html.unescape(found.group(1))


async def pages_of(server: Server, person: str, passwords: dict[str, str]) -> PageClient:
    """A client of the pages, signed in as `person` (anon: not signed in), kept for the test."""
    http = server.anonymous()  # closed with the server
    client = PageClient(http)
    if person != "anon":
        reply = await sign_in(client, person, passwords[person])
        assert reply.status_code == 303, reply.text
    return client


@pytest.mark.parametrize("person", ["ada", "lee", "sam", "fay", "val", "vic"])
async def test_lists_hold_only_what_one_may_see(
    db_url: str, tokens: dict[str, str], server_log: Path, person: str
) -> None:
    await add_vic(db_url, tokens)
    async with baton_server(db_url, tokens, server_log) as server:
        refund = await a_paused_refund(server)
        async with server.client(person) as client:
            runs = (await client.get("/api/runs")).json()["items"]
            requests = (await client.get("/api/requests")).json()["items"]

    sees = SEE[person] == 200
    assert [r["id"] for r in runs] == ([refund["run_id"]] if sees else [])
    assert [r["id"] for r in requests] == ([refund["request_id"]] if sees else [])


async def test_four_eyes_the_starter_cannot_approve_another_can(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    async with baton_server(db_url, tokens, server_log) as server:
        mine = await a_paused_refund(server, by="lee")  # lee is in support-leads, the approvers
        before = await server.snapshot(mine["request_id"])

        refused = await server.respond(mine["request_id"], {"decision": "approve"}, user="lee")
        assert refused.status_code == 403, refused.text
        assert "four-eyes: lee started run" in refused.json()["detail"]
        edit = {"decision": "edit", "arguments": {"order_id": "A-1002", "amount": 60}}
        refused = await server.respond(mine["request_id"], edit, user="lee")
        assert refused.status_code == 403, refused.text
        assert await server.snapshot(mine["request_id"]) == before

        # ada is an admin, and not the starter: she may
        reply = await server.respond(mine["request_id"], {"decision": "approve"}, user="ada")
        assert reply.status_code == 200, reply.text
        await server.wait_for_run(mine["run_id"], status="completed")

        # the starter may still withdraw: a rejection is no approval
        theirs = await a_paused_refund(server, by="lee")
        withdrawn = {"decision": "reject", "reason": "asked by mistake"}
        reply = await server.respond(theirs["request_id"], withdrawn, user="lee")
        assert reply.status_code == 200, reply.text
