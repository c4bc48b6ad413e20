"""`make screenshots`: every page of the web UI at a laptop's and a phone's width, in one folder.

Seeds the demo into a fresh database, serves it with `baton serve` (a real child process on a
movable clock), drives requests to every state through the API (pending, two approvers half
done, escalated to managers, rejected, refunded, a question, a takeover, a review, a typed
input, MAF's own `sub_workflow_parallel_requests.py` sample's two at once and its
`agents_with_HITL.py` draft with its conversation, a functional `@workflow`'s second round, an
answer that repeats its request's id, a run held after a deploy changed its workflow: the
server is stopped and started on the changed code) and writes a full-page PNG of each page as
each demo person sees it, at 1366x768 and 390x844, into `var/screenshots/` (git-ignored). Run:
`.venv/bin/python -m tests.screenshots`.
"""

from __future__ import annotations

import asyncio
import os
import re
import socket
import subprocess
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
from playwright.async_api import Browser, BrowserContext, async_playwright

from tests.browser.conftest import ARGS, CHROMIUM
from tests.fixtures.versioned_workflow import DEPLOYED
from tests.harness import LATE_PURCHASE, MovableClock

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "var" / "screenshots"
WIDTHS = {"laptop": (1366, 768), "phone": (390, 844)}
BATON = str(ROOT / ".venv" / "bin" / "baton")
SECRET = "screenshots-only-" + "x" * 40


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _baton(env: dict[str, str], *args: str) -> str:
    done = subprocess.run([BATON, *args], env=env, capture_output=True, text=True, check=True)
    return done.stdout


async def _until(probe: Callable[[], Awaitable[Any]], what: str, seconds: float = 60) -> Any:
    for _ in range(int(seconds * 10)):
        found = await probe()
        if found:
            return found
        await asyncio.sleep(0.1)
    raise TimeoutError(what)


class Demo:
    """The demo server and an API client per person."""

    def __init__(self, base: str, tokens: dict[str, str]) -> None:
        self.base = base
        self.http = {
            name: httpx.AsyncClient(base_url=base, headers={"Authorization": f"Bearer {token}"})
            for name, token in tokens.items()
        }

    async def start(self, body: dict[str, Any], who: str = "sam") -> str:
        reply = await self.http[who].post("/api/runs", json=body)
        reply.raise_for_status()
        return str(reply.json()["id"])

    async def run(self, run_id: str) -> dict[str, Any]:
        reply = await self.http["ada"].get(f"/api/runs/{run_id}")
        reply.raise_for_status()
        return dict(reply.json())

    async def open_request(self, run_id: str, kind: str | None = None) -> dict[str, Any]:
        async def probe() -> dict[str, Any] | None:
            run = await self.run(run_id)
            found = [
                r
                for r in run["requests"]
                if r["status"] in ("pending", "escalated") and kind in (None, r["kind"])
            ]
            return found[0] if found else None

        return dict(await _until(probe, f"an open {kind or ''} request of {run_id}"))

    async def answer(self, request_id: str, who: str, body: dict[str, Any]) -> None:
        reply = await self.http[who].post(f"/api/requests/{request_id}/respond", json=body)
        reply.raise_for_status()

    async def settled(self, run_id: str) -> dict[str, Any]:
        async def probe() -> dict[str, Any] | None:
            run = await self.run(run_id)
            return run if run["status"] in ("completed", "failed", "cancelled") else None

        return dict(await _until(probe, f"run {run_id} ended"))


async def drive(demo: Demo, clock: MovableClock) -> dict[str, str]:
    """Requests in every state; the pages to photograph, by name."""
    pages: dict[str, str] = {}
    refund = "refund"
    # a purchase whose approvals escalate to managers after 90 s (the clock jumps)
    late = await demo.start(LATE_PURCHASE)
    pending = await demo.start(
        {"workflow": refund, "input": {"order_id": "A-1005", "amount": 120, "reason": "damaged"}}
    )
    pages["request-approval"] = (await demo.open_request(pending))["id"]
    pages["run-waiting"] = pending

    two = await demo.start(
        {"workflow": refund, "input": {"order_id": "A-1003", "amount": 1500, "reason": "lost"}}
    )
    half = await demo.open_request(two)
    await demo.answer(half["id"], "fay", {"decision": "approve"})
    pages["request-two-approvers"] = half["id"]

    rejected = await demo.start(
        {"workflow": refund, "input": {"order_id": "A-1004", "amount": 300, "reason": "late"}}
    )
    no = await demo.open_request(rejected)
    await demo.answer(no["id"], "lee", {"decision": "reject", "reason": "Delivered on time."})
    pages["request-rejected"] = no["id"]
    pages["run-rejected"] = (await demo.settled(rejected))["id"]

    refunded = await demo.start(
        {"workflow": refund, "input": {"order_id": "A-1006", "amount": 200, "reason": "broken"}}
    )
    yes = await demo.open_request(refunded)
    await demo.answer(yes["id"], "lee", {"decision": "approve"})
    pages["request-answered"] = yes["id"]
    pages["run-refunded"] = (await demo.settled(refunded))["id"]

    ask = await demo.start(
        {
            "workflow": "support",
            "input": {"customer_id": "customer-02", "message": "Hello, I have a question."},
        },
        who="sue",
    )
    pages["request-question"] = (await demo.open_request(ask, "question"))["id"]
    manager = await demo.start(
        {
            "workflow": "support",
            "input": {
                "customer_id": "customer-03",
                "message": "This is the third time I write! I want to talk to a manager.",
            },
        },
        who="sue",
    )
    pages["request-takeover"] = (await demo.open_request(manager, "takeover"))["id"]
    pages["run-support"] = manager

    order = await demo.start(
        {
            "workflow": "purchase",
            "input": {"item": "chairs", "amount": 900, "vendor": "Fabrikam", "requester": "sam"},
        }
    )
    for _ in range(2):
        asked = await demo.open_request(order, "approval")
        who = "lex" if asked["team"] == "legal" else "fay"
        await demo.answer(asked["id"], who, {"decision": "approve"})
    pages["request-review"] = (await demo.open_request(order, "review"))["id"]

    typed = await demo.start(
        {"workflow": "typed_review", "input": {"title": "Spring launch post"}}, who="sam"
    )
    pages["request-input"] = (await demo.open_request(typed, "input"))["id"]
    maf = await demo.start({"workflow": "parallel_requests", "input": {}}, who="sam")
    pages["request-input-maf-sample"] = (await demo.open_request(maf, "input"))["id"]
    pages["run-maf-sample"] = maf  # MAF's own sample: two requests waiting at once
    draft = await demo.start({"workflow": "agents_hitl", "input": {}}, who="sam")
    pages["request-input-conversation"] = (await demo.open_request(draft, "input"))["id"]
    rounds = await demo.start(
        {"workflow": "functional_rounds", "input": {"topic": "the spring launch"}}, who="sam"
    )
    first = await demo.open_request(rounds, "input")
    revise = {"decision": "answer", "answer": {"approved": False, "note": "shorter"}}
    await demo.answer(first["id"], "lee", revise)

    async def second_round() -> str | None:
        run = await demo.run(rounds)
        asked = [r for r in run["requests"] if r["status"] == "pending"]
        return asked[0]["id"] if asked else None

    pages["request-input-functional"] = await _until(second_round, "the second round's request")
    pages["run-functional"] = rounds  # a functional @workflow: one node, its second round
    echo = await demo.start({"workflow": "echoed_review", "input": {}}, who="sam")
    pages["request-input-echo"] = (await demo.open_request(echo, "input"))["id"]

    clock.jump(seconds=100)
    escalated = await _until(
        lambda: _escalated(demo, late), "the purchase's approvals escalated", seconds=90
    )
    pages["request-escalated"] = escalated
    pages["run-escalated"] = late
    return pages


async def _escalated(demo: Demo, run_id: str) -> str | None:
    run = await demo.run(run_id)
    found = [r["id"] for r in run["requests"] if r["status"] == "escalated"]
    return found[0] if len(found) == 2 else None


async def sign_in(browser: Browser, base: str, name: str, password: str) -> BrowserContext:
    context = await browser.new_context(base_url=base)
    page = await context.new_page()
    await page.goto("/signin")
    await page.get_by_label("Name").fill(name)
    await page.get_by_label("Password").fill(password)
    await page.get_by_role("button", name="Sign in").click()
    await page.wait_for_url(f"{base}/")
    await page.close()
    return context


async def photograph(context: BrowserContext, path: str, name: str) -> list[Path]:
    page = await context.new_page()
    written = []
    for label, (width, height) in WIDTHS.items():
        await page.set_viewport_size({"width": width, "height": height})
        await page.goto(path)
        await page.wait_for_load_state("networkidle")
        target = OUT / f"{name}-{label}.png"
        await page.screenshot(path=str(target), full_page=True)
        written.append(target)
    await page.close()
    return written


async def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for old in OUT.glob("*.png"):
        old.unlink()
    with tempfile.TemporaryDirectory(prefix="baton-screens-") as tmp:
        clock = MovableClock(Path(tmp) / "clock")
        port = _free_port()
        env = (
            os.environ
            | {
                "BATON_DATABASE_URL": f"sqlite:///{tmp}/baton.db",
                "BATON_SECRET_KEY": SECRET,
                "BATON_WORKFLOWS": ",".join(
                    f"tests.samples.{name}"
                    for name in (
                        "typed_review",
                        "parallel_requests",
                        "agents_hitl",
                        "functional_rounds",
                        "echoed_review",
                    )
                )
                + ",tests.fixtures.versioned_workflow",
                "BATON_LOG_LEVEL": "WARNING",
                "PYTHONPATH": str(ROOT),
            }
            | clock.env
        )
        _baton(env, "migrate")
        seeded = _baton(env, "seed", "--demo")
        passwords = dict(re.findall(r"^  (\w+)\s+(\S+)\s", seeded, re.MULTILINE))
        people = ("sam", "sue", "lee", "fay", "lex", "max", "ada")
        tokens = {n: _baton(env, "tokens", "create", n).strip() for n in people}
        base = f"http://127.0.0.1:{port}"
        log = open(Path(tmp) / "serve.log", "w")  # noqa: SIM115 - closed below
        server = subprocess.Popen(
            [BATON, "serve", "--port", str(port)], env=env, stdout=log, stderr=log
        )
        try:
            demo = Demo(base, tokens)
            await _until(lambda: _healthy(base), "the server to serve")
            pages = await drive(demo, clock)
            held = await demo.start({"workflow": "versioned", "input": {"topic": "the launch"}})
            asked = await demo.open_request(held)
            # a deploy that changed the workflow: the server is stopped and started on it
            server.terminate()
            server.wait(20)
            server = subprocess.Popen(
                [BATON, "serve", "--port", str(port)],
                env=env | {DEPLOYED: "1"},
                stdout=log,
                stderr=log,
            )
            await _until(lambda: _healthy(base), "the deployed server to serve")
            await demo.answer(asked["id"], "lee", {"decision": "answer", "answer": "go"})
            pages["run-held"] = await _until(
                lambda: _retrying(demo, held), "the answer's delivery held"
            )
            async with async_playwright() as playwright:
                browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
                written = await shoot(browser, base, passwords, pages)
                await browser.close()
        finally:
            server.terminate()
            server.wait(20)
            log.close()
    for path in written:
        sys.stdout.write(f"{path.relative_to(ROOT)}\n")


async def _retrying(demo: Demo, run_id: str) -> str | None:
    return run_id if (await demo.run(run_id))["retrying"] else None


async def _healthy(base: str) -> bool:
    try:
        async with httpx.AsyncClient() as http:
            return (await http.get(f"{base}/healthz")).status_code == 200
    except httpx.TransportError:
        return False


async def shoot(
    browser: Browser, base: str, passwords: dict[str, str], pages: dict[str, str]
) -> list[Path]:
    written: list[Path] = []
    people = ("lee", "max", "fay", "sam")
    contexts = {n: await sign_in(browser, base, n, passwords[n]) for n in people}
    anonymous = await browser.new_context(base_url=base)
    written += await photograph(anonymous, "/signin", "signin")
    for name in people:
        written += await photograph(contexts[name], "/", f"inbox-{name}")
    lee, max_, fay, sam = (contexts[n] for n in people)
    shots = [
        (lee, "request-approval"),
        (fay, "request-two-approvers"),
        (lee, "request-rejected"),
        (lee, "request-answered"),
        (sam, "request-question"),
        (sam, "request-takeover"),
        (fay, "request-review"),
        (lee, "request-input"),
        (lee, "request-input-maf-sample"),
        (lee, "request-input-conversation"),
        (lee, "request-input-functional"),
        (lee, "request-input-echo"),
        (max_, "request-escalated"),
    ]
    for context, name in shots:
        written += await photograph(context, f"/requests/{pages[name]}", name)
    for name in (
        "run-waiting",
        "run-rejected",
        "run-refunded",
        "run-maf-sample",
        "run-functional",
        "run-held",
    ):
        written += await photograph(lee, f"/runs/{pages[name]}", name)
    written += await photograph(sam, f"/runs/{pages['run-support']}", "run-support")
    written += await photograph(max_, f"/runs/{pages['run-escalated']}", "run-escalated")
    written += await photograph(lee, "/runs", "runs")
    written += await photograph(lee, "/runs/new?workflow=refund", "run-new")
    written += await photograph(lee, "/dashboard", "dashboard-lee")
    written += await photograph(max_, "/dashboard?days=30", "dashboard-max")
    written += await photograph(anonymous, "/docs", "api-docs")
    written += await photograph(anonymous, "/redoc", "api-reference")
    return written


if __name__ == "__main__":
    asyncio.run(main())
