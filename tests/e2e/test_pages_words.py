"""Every sentence a page says about a request or a run is derived from what was recorded.

Each test makes a fact happen through the API (an escalation at a moved clock, two approvals, a
takeover resolved, a rejection) and reads the page's words over real HTTP: when an escalation
fired, who approved, whether the run carried on, what the run did for the business, that a
closed request has no deadline left, and that `resumed` is shown as answered.
"""

from __future__ import annotations

import re
import sqlite3
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.fixtures.versioned_workflow import spec_of, versioned_graph
from tests.harness import (
    LATE_PURCHASE,
    REFUND_120,
    REFUND_1500,
    MovableClock,
    Server,
    escalated_purchase,
    eventually,
)
from tests.pages import page_of, signed_in, text_of
from tests.supportkit import SYNC_BROKEN, pending_request
from workflows.platform import registry

REFUND_300_LATE = {
    "workflow": "refund",
    "input": {"order_id": "A-1004", "amount": 300, "reason": "late"},
}


@pytest.fixture
def server(clocked_server: Server) -> Server:
    return clocked_server


async def page_text(server: Server, passwords: dict[str, str], who: str, path: str) -> str:
    return text_of(await page_of(server, passwords, who, path))


async def test_the_escalation_says_when_it_fired_from_its_audit_event(
    server: Server, passwords: dict[str, str], clock: MovableClock
) -> None:
    run = await server.start_run(LATE_PURCHASE)
    asked = await server.wait_for_request(run["id"])
    clock.jump(seconds=100)  # the ladder says "after 1 min"; the timer fires when it next looks

    async def escalated() -> dict[str, Any] | None:
        found = await server.request(asked["id"])
        return found if found["status"] == "escalated" else None

    await eventually(escalated, what="the escalation")
    events = await server.audit(run["id"])
    fired = next(
        e for e in events if e["type"] == "request.escalated" and e["request_id"] == asked["id"]
    )
    at = fired["at"][:16].replace("T", " ")
    page = await page_text(server, passwords, "max", f"/requests/{asked['id']}")
    assert f"Escalated to managers {at} UTC" in page
    # how long after it was asked, from the two recorded times, to the second
    after = datetime.fromisoformat(fired["at"]) - datetime.fromisoformat(asked["created_at"])
    minutes, seconds = divmod(int(after.total_seconds()), 60)
    assert f"{minutes} min {seconds} s after it was asked" in page
    # and why it is managers' to answer, first, beside why it is asked at all
    why = page.split("Why you are asked:")[1].split("Proposed action")[0]
    assert (
        f"It came to managers because legal had not answered it {minutes} min {seconds} s "
        "after it was asked." in why
    )
    # its ladder as the route gives it, to the second (90 s is not "1 min")
    [rung] = (await server.request(asked["id"]))["escalation"]
    whole, part = divmod(int(rung["after_s"]), 60)
    assert part, rung  # (a rung of whole minutes would not tell "1 min 30 s" from "1 min")
    assert f"after {whole} min {part} s → managers" in page
    # the audit trail counts the rung as the ladder does, from 1, and not twice
    assert "Escalated — legal to managers, rung 1 of its escalation ladder" in page
    assert "Step 0" not in page


async def test_a_request_says_when_it_escalates_unless_answered_before_its_later_deadline(
    server: Server, passwords: dict[str, str], clock: MovableClock
) -> None:
    # refund.medium: a deadline of 24 h, and to managers at high priority after 4 h
    run = await server.start_run(REFUND_300_LATE)
    asked = await server.wait_for_request(run["id"])
    before = await page_text(server, passwords, "lee", f"/requests/{asked['id']}")
    listed = await page_text(server, passwords, "lee", "/")
    clock.jump(hours=5)

    async def escalated() -> dict[str, Any] | None:
        found = await server.request(asked["id"])
        return found if found["status"] == "escalated" else None

    await eventually(escalated, what="the escalation")
    after = await page_text(server, passwords, "max", f"/requests/{asked['id']}")

    # the time that counts for its team is the escalation's, not the deadline a day away
    assert re.search(r" 3 h 5\d min left before it goes to managers at high priority ", before)
    assert re.search(
        r"Unless answered first \d{4}-\d\d-\d\d \d\d:\d\d UTC — 3 h 5\d min left: it goes to "
        r"managers at high priority ",
        before,
    ), before
    assert re.search(r"Deadline \d{4}-\d\d-\d\d \d\d:\d\d UTC — 23 h 5\d min left", before)
    assert re.search(rf"{asked['title']} .* 3 h 5\d min left, then managers ", listed), listed
    assert "23 h" not in listed  # the inbox's time left is its team's, as the page's head
    # and how long a claim would hold it, as this server is set (BATON_CLAIM_SECONDS: 900)
    assert "Claim No one else may answer it for the next 15 min, unless you release it" in before
    # escalated: nothing comes before its deadline now, which the head says again
    assert "Unless answered" not in after
    assert "before it goes to" not in after
    assert re.search(r" 18 h 5\d min left ", after), after


async def test_approved_by_names_each_person_who_approved(
    server: Server, passwords: dict[str, str]
) -> None:
    run = await server.start_run(REFUND_1500)
    asked = await server.wait_for_request(run["id"])
    for who in ("fay", "fin"):
        reply = await server.respond(asked["id"], {"decision": "approve"}, user=who)
        assert reply.status_code == 200, reply.text
    await server.wait_for_run(run["id"], status="completed")
    page = await page_text(server, passwords, "fay", f"/requests/{asked['id']}")
    assert "Approved by fay and fin at " in page
    assert "Answered by fin" not in page  # the last approver alone is not who approved
    run_page = await page_text(server, passwords, "fay", f"/runs/{run['id']}")
    assert "Approved by fay and fin" in run_page


async def test_the_run_carries_on_only_when_it_did(
    server: Server, passwords: dict[str, str]
) -> None:
    run = await server.start_run(SYNC_BROKEN, user="sue")
    takeover = await pending_request(server, run["id"], kind="takeover")
    resolve = {
        "decision": "resolve",
        "resolution": "Restarted by hand.",
        "outcome": {"action": "fixed"},
    }
    reply = await server.respond(takeover["id"], resolve, user="sam")
    assert reply.status_code == 200, reply.text
    await server.wait_for_run(run["id"], status="completed")
    page = await page_text(server, passwords, "sam", f"/requests/{takeover['id']}")
    assert re.search(r"Resolved by sam at [\d-]+ [\d:]+ UTC\. The run has ended: completed\.", page)
    assert "carries on" not in page
    assert "carried on" not in page

    waiting = await server.start_run(REFUND_1500)
    half = await server.wait_for_request(waiting["id"])
    assert (await server.respond(half["id"], {"decision": "approve"}, user="fay")).is_success
    page = await page_text(server, passwords, "fin", f"/requests/{half['id']}")
    assert "Approved by fay; 1 more approval by a different person of finance is needed" in page
    # and the audit trail says the approval is one of two, where "fay approved" alone would not
    assert "Answered — fay approved (1 of the 2 approvals it needs)" in page


async def rejected_late_refund(server: Server) -> dict[str, Any]:
    """A refund of order A-1004 lee rejected, its run ended."""
    run = await server.start_run(REFUND_300_LATE)
    asked = await server.wait_for_request(run["id"])
    no = {"decision": "reject", "reason": "Delivered on time."}
    assert (await server.respond(asked["id"], no, user="lee")).is_success
    return await server.wait_for_run(run["id"], status="completed")


async def test_a_rejected_refund_is_not_shown_as_a_success(
    server: Server, passwords: dict[str, str]
) -> None:
    run = await rejected_late_refund(server)
    async with signed_in(server, "lee", passwords["lee"]) as lee:
        page = (await lee.http.get(f"/runs/{run['id']}")).text
    assert re.search(r'class="badge status-completed quiet" id="run-status">completed<', page)
    assert re.search(r'class="badge outcome-bad" id="run-outcome"[^>]*>rejected<', page)

    approved = await server.start_run(REFUND_120)
    yes = await server.wait_for_request(approved["id"])
    assert (await server.respond(yes["id"], {"decision": "approve"}, user="lee")).is_success
    await server.wait_for_run(approved["id"], status="completed")
    async with signed_in(server, "lee", passwords["lee"]) as lee:
        page = (await lee.http.get(f"/runs/{approved['id']}")).text
    assert re.search(r'class="badge outcome-good" id="run-outcome"[^>]*>issue_refund done<', page)


async def test_the_runs_list_says_what_each_run_is_about_and_what_it_did(
    server: Server, passwords: dict[str, str], clock: MovableClock
) -> None:
    rejected = await server.start_run(REFUND_300_LATE)
    refused = await server.wait_for_request(rejected["id"])
    no = {"decision": "reject", "reason": "Delivered on time."}
    assert (await server.respond(refused["id"], no, user="lee")).is_success
    refunded = await server.start_run(REFUND_120)
    granted = await server.wait_for_request(refunded["id"])
    assert (await server.respond(granted["id"], {"decision": "approve"}, user="lee")).is_success
    expired = await server.start_run(LATE_PURCHASE)
    await server.wait_for_request(expired["id"])
    clock.jump(minutes=4)  # its approvals expire unanswered
    for run in (rejected, refunded, expired):
        await server.wait_for_run(run["id"], status="completed")

    async with signed_in(server, "ada", passwords["ada"]) as ada:
        listed = (await ada.http.get("/runs")).text
        run_page = (await ada.http.get(f"/runs/{rejected['id']}")).text

    def row_of(run_id: str) -> str:
        found = re.search(rf'data-run-id="{run_id}".*?</tr>', listed, re.DOTALL)
        assert found, run_id
        return found.group(0)

    expected = {
        rejected["id"]: ("order id A-1004 · amount 300.00 EUR · reason late", "bad", "rejected"),
        refunded["id"]: (
            "order id A-1002 · amount 120.00 EUR · reason broken",
            "good",
            "issue_refund done",
        ),
        expired["id"]: ("item laptop · amount 2400.00 EUR · vendor Contoso", "bad", "expired"),
    }
    for run_id, (about, tone, outcome) in expected.items():
        row = row_of(run_id)
        # the link says what the run is about; its id comes second
        link = re.search(rf'<a href="/runs/{run_id}">([^<]*)</a>', row)
        assert link, row
        assert link.group(1) == about
        assert f"<code>{run_id}</code>" in row
        # what the run did, as its own page says it: a rejection is never a green "completed"
        assert re.search(r'class="badge status-completed quiet">completed<', row), row
        assert re.search(rf'class="badge outcome-{tone}"[^>]*>{outcome}<', row), row
    assert "<h1>order id A-1004 · amount 300.00 EUR · reason late</h1>" in run_page
    assert "<title>order id A-1004 · amount 300.00 EUR · reason late" in run_page
    assert f"Run <code>{rejected['id']}</code>" in run_page


async def test_closed_requests_have_no_deadline_and_resumed_reads_answered(
    server: Server, passwords: dict[str, str]
) -> None:
    run = await server.start_run(REFUND_120)
    asked = await server.wait_for_request(run["id"])
    open_page = await page_text(server, passwords, "lee", f"/requests/{asked['id']}")
    assert re.search(r"Deadline .* \d+ h \d+ min left", open_page)
    assert (await server.respond(asked["id"], {"decision": "approve"}, user="lee")).is_success
    await server.wait_for_run(run["id"], status="completed")
    assert (await server.request(asked["id"]))["status"] == "resumed"

    async with signed_in(server, "lee", passwords["lee"]) as lee:
        page = (await lee.http.get(f"/requests/{asked['id']}")).text
        inbox = (await lee.http.get("/?view=answered")).text
    assert ">resumed<" not in page
    assert 'id="request-status">answered<' in page
    words = text_of(page)
    assert " left" not in words
    assert "overdue" not in words
    assert "Deadline" not in words
    assert "Closed " in words
    row = re.search(rf'data-request-id="{asked["id"]}".*?</tr>', inbox, re.DOTALL)
    assert row
    assert "status-answered" in row.group(0)
    assert " left" not in text_of(row.group(0))
    assert "closed" in text_of(row.group(0))


async def test_the_dashboard_counts_an_expiry_apart_from_the_answers(
    server: Server, passwords: dict[str, str], clock: MovableClock
) -> None:
    run = await server.start_run(LATE_PURCHASE)  # its approvals expire unanswered at 3 min
    await server.wait_for_request(run["id"])
    clock.jump(minutes=4)
    await server.wait_for_run(run["id"], status="completed")
    expired = [r for r in (await server.run(run["id"]))["requests"] if r["status"] == "expired"]
    assert expired, "the purchase's approvals expired"

    async with signed_in(server, "ada", passwords["ada"]) as ada:
        page = (await ada.http.get("/dashboard")).text
    times = re.search(r"From asked to answered.*?</table>", page, re.DOTALL)
    assert times
    for team in {r["team"] for r in expired}:
        row = re.search(rf"<tr>\s*<th scope=\"row\"[^>]*>{team}</th>.*?</tr>", times.group(0), re.S)
        assert row, team
        count = sum(1 for r in expired if r["team"] == team)
        # Nobody answered: no answer, no time to answer; the expiry is its own figure.
        assert text_of(row.group(0)) == f"{team} 0 \N{EN DASH} \N{EN DASH} {count}"


async def test_a_held_run_says_why_and_when_it_is_tried_again_until_the_rollback(
    server: Server, passwords: dict[str, str], monkeypatch: pytest.MonkeyPatch, db_url: str
) -> None:
    # the deploy and its rollback, played by swapping the registration this process serves
    paused_on = spec_of(lambda: versioned_graph(extra=False))
    monkeypatch.setitem(registry._REGISTRY, "versioned", paused_on)
    run = await server.start_run({"workflow": "versioned", "input": {"topic": "x"}})
    asked = await server.wait_for_request(run["id"])
    monkeypatch.setitem(
        registry._REGISTRY, "versioned", spec_of(lambda: versioned_graph(extra=True))
    )
    answer = {"decision": "answer", "answer": "yes"}
    answered = await server.respond(asked["id"], answer, user="lee")
    assert answered.status_code == 200, answered.text

    async def held() -> dict[str, Any] | None:
        found = await server.run(run["id"])
        return found if found["retrying"] else None

    detail = await eventually(held, what="the answer's delivery held")
    page = await page_text(server, passwords, "ada", f"/runs/{run['id']}")
    listed = await page_text(server, passwords, "ada", "/runs?workflow=versioned")
    # other failures of a drive, as the worker records them: the page names their kind only
    otherwise = {}
    with sqlite3.connect(db_url.removeprefix("sqlite:///")) as db:
        for error, attempts in (("StoreUnavailable: disk I/O error", 0), ("KeyError: 'x'", 3)):

            async def rewritten(error: str = error, attempts: int = attempts) -> bool:
                # not while a worker holds the job: its retry would write its own error over
                done = db.execute(
                    "UPDATE jobs SET last_error = ?, attempts = ?, available_at = 4102444800 "
                    "WHERE run_id = ? AND lease_until IS NULL",
                    (error, attempts, run["id"]),
                )
                db.commit()
                return done.rowcount == 1

            await eventually(rewritten, what="the job rewritten between its tries")
            otherwise[error] = await page_text(server, passwords, "ada", f"/runs/{run['id']}")
        db.execute("UPDATE jobs SET available_at = 0 WHERE run_id = ?", (run["id"],))
    monkeypatch.setitem(registry._REGISTRY, "versioned", paused_on)  # rolled back
    done = await server.wait_for_run(run["id"], status=("completed", "failed"))
    after = await page_text(server, passwords, "ada", f"/runs/{run['id']}")
    listed_after = await page_text(server, passwords, "ada", "/runs?workflow=versioned")

    assert detail["status"] == "waiting"
    assert detail["retrying"]["kind"] == "resume"
    assert detail["retrying"]["error"] == (
        "RunHeld: the run paused on another graph of workflow 'versioned' than the one this "
        "process builds (its executors or edges changed since)"
    )
    said = re.search(
        r"Held: this run paused on another version of the versioned workflow than the one "
        r"running now\. The answer it was given is kept, not yet delivered\. Baton tries again "
        r"(?:at \d{4}-\d\d-\d\d \d\d:\d\d UTC|shortly) \((\d+) tr(?:y|ies) so far\)\. The run "
        r"goes on once "
        r"the version that paused it runs again, or cancel it below\. As recorded: The run "
        r"paused on another graph of workflow 'versioned' than the one this process builds "
        r"\(its executors or edges changed since\)\.",
        page,
    )
    assert said is not None, page
    assert int(said[1]) >= 1
    assert "Drawn as the version running now, not the one the run paused on." in page
    # where the run is: its answer waits for the version, not "shortly"
    assert (
        f"“{asked['title']}”: Answered by lee. The run carries on with it once the version of its "
        "workflow that paused it runs again."
    ) in page
    assert "shortly" not in page.replace("Baton tries again shortly", "")
    assert (
        "The run carries on with it once Baton's next try succeeds." in otherwise["KeyError: 'x'"]
    )
    assert (
        "Baton's database could not serve this run. Nothing of it is lost. Baton tries again at "
        "2100-01-01 00:00 UTC."
    ) in otherwise["StoreUnavailable: disk I/O error"]
    assert (
        "Baton could not carry this run on. The last try failed (KeyError). Baton tries again at "
        "2100-01-01 00:00 UTC (3 tries so far)."
    ) in otherwise["KeyError: 'x'"]
    assert "'x'" not in otherwise["KeyError: 'x'"]  # the error's text is the API's and the log's
    assert (done["status"], done["output"], done["retrying"]) == ("completed", "x: yes", None)
    assert "Held" not in after
    assert "tries again" not in after
    assert "Drawn as the version" not in after
    assert f"{run['id']} versioned waiting held " in listed
    assert f"{run['id']} versioned completed " in listed_after


async def test_the_inbox_finds_a_request_by_an_order_answered_or_not(
    server: Server, passwords: dict[str, str]
) -> None:
    await rejected_late_refund(server)
    other = await server.start_run(REFUND_120)
    await server.wait_for_request(other["id"])

    found = await page_text(server, passwords, "lee", "/?q=a-1004")
    nothing = await page_text(server, passwords, "lee", "/?q=A-9999")
    async with signed_in(server, "lee", passwords["lee"]) as lee:
        too_long = await lee.http.get("/", params={"q": "x" * 201})

    # a rejected request is found too: a search looks at every request one may see
    assert "Refund 300.00 on order A-1004" in found
    assert "A-1002" not in found
    assert "whose title, reason or details hold “a-1004”" in found
    assert "no request matches" in nothing
    assert too_long.status_code == 422


async def test_an_expired_request_was_answered_by_nobody(
    server: Server, passwords: dict[str, str], clock: MovableClock
) -> None:
    run = await server.start_run(LATE_PURCHASE)
    await server.wait_for_request(run["id"])
    clock.jump(hours=1)  # past every deadline: both approvals expire, the purchase with them
    done = await server.wait_for_run(run["id"], status="completed")
    assert done["output"]["status"] == "expired"
    expired = [r for r in done["requests"] if r["status"] == "expired"]
    assert expired
    assert all(r["answered_by"] == "system" for r in expired)  # the API's record stays

    async with signed_in(server, "fin", passwords["fin"]) as fin:
        reply = await fin.http.get(f"/runs/{run['id']}")
        assert reply.status_code == 200, reply.text[:2000]
        page = reply.text
    for request in expired:
        row = re.search(rf'data-request-id="{request["id"]}".*?</tr>', page, re.DOTALL)
        assert row, request["id"]
        cell = re.search(r'data-label="Decided">(.*?)</td>', row.group(0), re.DOTALL)
        assert cell
        assert text_of(cell.group(1)) == "—"
    words = text_of(page)
    assert "system: expired" not in words
    assert "system answered" not in words  # (the audit trail still says system expired it)
    assert "Nobody answered before the deadline; the run was told it expired." in words


async def test_an_edited_approval_says_what_was_changed_and_the_answered_list_each_decision(
    server: Server, passwords: dict[str, str]
) -> None:
    edited, rejected = [await server.start_run(REFUND_300_LATE) for _ in range(2)]
    asked = await server.wait_for_request(edited["id"])
    edit = {"decision": "edit", "arguments": {"order_id": "A-1004", "amount": 250}}
    assert (await server.respond(asked["id"], edit, user="lee")).is_success
    no = await server.wait_for_request(rejected["id"])
    reject = {"decision": "reject", "reason": "Delivered on time."}
    assert (await server.respond(no["id"], reject, user="lee")).is_success
    for run in (edited, rejected):
        await server.wait_for_run(run["id"], status="completed")

    async with signed_in(server, "lee", passwords["lee"]) as lee:
        page = text_of((await lee.http.get(f"/requests/{asked['id']}")).text)
        answered = (await lee.http.get("/?view=answered")).text
        run_page = (await lee.http.get(f"/runs/{edited['id']}")).text
    # worded as the audit trail words it, the change from the recorded answer and proposed call
    assert re.search(
        r"Approved with changes by lee at [\d-]+ [\d:]+ UTC: "
        r"amount 300\.00( EUR)? → 250\.00( EUR)?\. "
        r"The run has ended: completed \(issue_refund done\)\.",
        page,
    ), page
    assert "Answered by lee" not in page
    assert ": edit." not in page
    for request, decision in ((asked, "Approved with changes"), (no, "Rejected")):
        row = re.search(rf'data-request-id="{request["id"]}".*?</tr>', answered, re.DOTALL)
        assert row, request["id"]
        status = re.search(r'data-label="Status">(.*?)</td>', row.group(0), re.DOTALL)
        assert status
        assert decision in text_of(status.group(1)), text_of(status.group(1))
    # the run page's requests say it the same way
    row = re.search(rf'data-request-id="{asked["id"]}".*?</tr>', run_page, re.DOTALL)
    assert row
    cell = re.search(r'data-label="Decided">(.*?)</td>', row.group(0), re.DOTALL)
    assert cell
    assert text_of(cell.group(1)) == "Approved with changes by lee: amount 300.00 EUR → 250.00 EUR"


async def test_a_request_escalated_away_tells_its_old_team_and_nobody_else_that_it_exists(
    server: Server, passwords: dict[str, str], clock: MovableClock
) -> None:
    escalated = await escalated_purchase(server, clock)
    finance = next(r for r in escalated if r["context"]["desk"] == "finance")
    [moved] = [
        e
        for e in await server.audit(finance["run_id"])
        if e["type"] == "request.escalated" and e["request_id"] == finance["id"]
    ]
    at = moved["at"][11:16]

    async def shown_to(who: str, path: str) -> tuple[int, str]:
        async with signed_in(server, who, passwords[who]) as client:
            reply = await client.http.get(path)
            return reply.status_code, text_of(reply.text)

    # fay's team owned it: she learns where it went and when, not a bare "not found"
    status, page = await shown_to("fay", f"/requests/{finance['id']}")
    assert status == 404
    assert f"This request was escalated to managers at {at} UTC; you can no longer open it." in page
    assert finance["id"] not in page
    # lee (support) and lex (legal: its own request, not this one) never had it: the page is
    # word for word the page of an address no request has
    never = "There is no request at this address, or you may not see it."
    for who in ("lee", "lex"):
        status, page = await shown_to(who, f"/requests/{finance['id']}")
        _, nothing = await shown_to(who, "/requests/req_AAAAAAAAAAAAAAAAAAAAAA")
        assert status == 404, who
        assert never in page, (who, page)
        assert page == nothing, who


async def test_a_viewer_is_not_offered_a_run_to_start(
    server: Server, passwords: dict[str, str]
) -> None:
    async with signed_in(server, "val", passwords["val"]) as val:
        inbox = (await val.http.get("/")).text
        start = (await val.http.get("/runs/new", params={"workflow": "refund"})).text
    async with signed_in(server, "lee", passwords["lee"]) as lee:
        offered = (await lee.http.get("/")).text

    assert 'href="/runs/new"' not in inbox
    assert 'href="/runs/new"' in offered
    assert "You are a viewer: you can look at runs and requests, but not start a run." in (
        text_of(start)
    )
    assert 'id="start-form"' not in start


def rows_of(html: str) -> dict[str, str]:
    """Each inbox row's words, by its request's id."""
    found = re.findall(r'<tr class="request-row" data-request-id="([^"]+)">(.*?)</tr>', html, re.S)
    return {request_id: text_of(row) for request_id, row in found}


async def test_the_run_page_says_where_the_run_is_in_words_not_executor_ids(
    server: Server, passwords: dict[str, str]
) -> None:
    run = await server.start_run(LATE_PURCHASE)

    async def both_asked() -> list[dict[str, Any]] | None:
        found = [r for r in (await server.run(run["id"]))["requests"] if r["status"] == "pending"]
        return found if len(found) == 2 else None

    asked = await eventually(both_asked, what="legal and finance asked")
    html = await page_of(server, passwords, "ada", f"/runs/{run['id']}")
    page = text_of(html)
    # waiting at both desks alike: the drawing marks both as waiting and neither apart
    states = dict(re.findall(r'data-node="([^"]+)" data-state="([^"]+)"', html))
    assert (states["legal_approval"], states["finance_approval"]) == ("pending", "pending")
    assert "current" not in " ".join(states.values())
    title = asked[0]["title"]
    assert "The run waits for answers to “" in page
    # each open request by its title, its team and the step that asked, in words
    for request in asked:
        step = request["executor_id"].replace("_", " ")
        assert f"“{request['title']}” from {request['team']} (its {step} step)" in page
        # and its row in the run's requests, alike but for its step and desk, says them
        row = rows_of(html)[request["id"]]
        assert f"step {step} desk {request['team']} " in row
        # and the request's own page names the step so too
        asked_page = await page_text(server, passwords, "ada", f"/requests/{request['id']}")
        assert f"started by sam, asked at its {step} step" in asked_page
        assert request["executor_id"] not in asked_page.split("Audit trail")[0]
    assert title == "Purchase of laptop from Contoso for 2400.00 EUR"
    assert "The run is at" not in page
    assert "Waiting for a person at" not in page

    who = "lex" if asked[0]["team"] == "legal" else "fay"
    reply = await server.respond(asked[0]["id"], {"decision": "reject", "reason": "No."}, user=who)
    assert reply.status_code == 200, reply.text
    await server.wait_for_run(run["id"], status="completed")
    page = await page_text(server, passwords, "ada", f"/runs/{run['id']}")
    assert "The run has ended." in page


async def test_requests_alike_in_the_inbox_say_what_tells_them_apart(
    server: Server, passwords: dict[str, str], clock: MovableClock
) -> None:
    by_sue = LATE_PURCHASE | {"input": LATE_PURCHASE["input"] | {"requester": "sue"}}
    runs = [await server.start_run(body) for body in (LATE_PURCHASE, LATE_PURCHASE, by_sue)]

    async def all_of(status: str) -> list[dict[str, Any]] | None:
        found = [
            r
            for run in runs
            for r in (await server.run(run["id"]))["requests"]
            if r["status"] == status
        ]
        return found if len(found) == 6 else None

    await eventually(lambda: all_of("pending"), what="legal and finance asked thrice")
    clock.jump(seconds=100)
    escalated = await eventually(lambda: all_of("escalated"), what="all six escalated")
    rows = rows_of(await page_of(server, passwords, "max", "/"))
    # the page's clock, moved as the test moved it: a run started on another day says its day
    seen = datetime.now(UTC) + timedelta(seconds=clock.seconds)

    assert len({r["title"] for r in escalated}) == 1  # one title for all six
    assert set(rows) == {r["id"] for r in escalated}
    assert len(set(rows.values())) == 6  # and no two rows alike
    for request in escalated:
        row = rows[request["id"]]
        # the step that asked, and the facts that differ (who asked for it) before the rest
        assert f"step {request['executor_id'].replace('_', ' ')} " in row
        assert f"requester {request['context']['requester']} " in row
        alone = request["run_id"] == runs[2]["id"]  # sue's: its facts tell it apart
        # the two runs of the same purchase differ by their runs alone: each names its own
        created = datetime.fromisoformat(
            next(run["created_at"] for run in runs if run["id"] == request["run_id"])
        )
        day = "" if created.date() == seen.date() else f"{created.date().isoformat()} "
        started = f"{day}{created:%H:%M:%S} UTC"
        twin = f"run {request['run_id']} started {started}"
        assert (twin in row) is not alone
    # My work beside a request tells them apart as well
    beside = await page_of(server, passwords, "max", f"/requests/{escalated[0]['id']}")
    queue = re.findall(r"<li[^>]*>(.*?)</li>", beside.split('<aside class="queue"')[1], re.S)
    assert len(queue) == 6
    assert len({text_of(entry) for entry in queue}) == 6
