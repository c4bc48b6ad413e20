"""Microsoft Teams over real HTTP: the webhook's cards, and the bot's cards answered in place.

Loopback stand-ins play Teams' side: an HTTP receiver for the incoming webhook (Workflows URL),
and for the bot the Bot Connector (its OpenID metadata and signing keys, the conversations API
the bot posts and updates cards through, a member's profile) and the managed-identity endpoint
the bot's tokens come from. The activities Teams would send are signed by this test with its own
RSA key, as the Bot Connector signs them (the stand-in serves the public half). Every card any
stand-in receives, and every card an `Action.Execute` is answered with, is checked against
Microsoft's Adaptive Card schema (tests/cards.py). No real Teams tenant is involved.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from human.channels.links import LinkSigner
from tests.cards import actions_of, cards_in, check_card, texts_of
from tests.harness import REFUND_120, Server, baton_server, eventually, refunds, types_of
from tests.receivers import (
    BOT_ISSUER,
    IDENTITY_HEADER,
    BotConnectorStandIn,
    bot_connector,
    http_receiver,
    token_endpoint,
)

SECRET = "teams-link-secret"
BASE = "https://baton.example"
APP_ID = "00000000-0000-4000-8000-00000000b0a7"
TENANT = "11111111-1111-4111-8111-111111111111"
CHANNEL = "19:support-leads-channel@thread.tacv2"
ADA, FAY, LEE, SAM = (
    "aaaaaaaa-0000-4000-8000-00000000000a",
    "ffffffff-0000-4000-8000-00000000000f",
    "eeeeeeee-0000-4000-8000-00000000000e",
    "5a5a5a5a-0000-4000-8000-000000000005",
)


async def _notified(server: Server, request_id: str, channel: str, status: str) -> None:
    async def probe() -> bool:
        notes = (await server.request(request_id))["notifications"]
        return any(n["channel"] == channel and n["status"] == status for n in notes)

    await eventually(probe, what=f"{channel} notification of {request_id} to be {status}")


async def test_the_webhook_gets_a_card_with_a_signed_link(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    with http_receiver(script=[202]) as teams:
        env = {
            "BATON_TEAMS_WEBHOOK_URL": f"{teams.url}/workflows/trigger?sig=abc",
            "BATON_BASE_URL": BASE,
            "BATON_SECRET_KEY": SECRET,
        }
        async with baton_server(db_url, tokens, server_log, env) as server:
            run = await server.start_run(REFUND_120)
            asked = await server.wait_for_request(run["id"])
            rid = asked["id"]
            await _notified(server, rid, "teams", "sent")
            [note] = (await server.request(rid))["notifications"]
            [posted] = teams.at("/workflows/trigger?sig=abc")
            link = actions_of(cards_in(posted.json())[0])["Open in Baton"]["url"]
            async with server.anonymous() as anonymous:
                peek = await anonymous.get(f"/api/requests/{rid}", params=link.split("?", 1)[1])

    message = posted.json()
    assert message["type"] == "message"
    [card] = cards_in(message)
    assert card["type"] == "AdaptiveCard"
    assert card["body"][0]["text"] == "Refund 120.00 on order A-1002"
    shown = texts_of(card).splitlines()
    assert shown[1].startswith("Refunds of this size need approval by support-leads")
    # the proposed call's arguments first, then context, then team, priority and deadline
    assert shown[2:8] == [
        "Order ID: A-1002",
        "Amount: 120.00 EUR",
        "Reason: broken",
        "Customer: customer-02",
        "Team: support-leads",
        "Priority: normal",
    ]
    # then its times, on each reader's clock: the card's DATE() and TIME(), in RFC 3339 UTC
    deadline = datetime.fromisoformat(asked["expires_at"]).astimezone(UTC)
    escalates = datetime.fromisoformat(asked["created_at"]).astimezone(UTC) + timedelta(hours=4)
    assert shown[8:10] == [
        f"Deadline: {{{{DATE({deadline:%Y-%m-%dT%H:%M:%SZ}, SHORT)}}}} "
        f"{{{{TIME({deadline:%Y-%m-%dT%H:%M:%SZ})}}}}",
        f"Escalates: {{{{DATE({escalates:%Y-%m-%dT%H:%M:%SZ}, SHORT)}}}} "
        f"{{{{TIME({escalates:%Y-%m-%dT%H:%M:%SZ})}}}} unless answered: it goes to managers at "
        "high priority",
    ]
    assert [a["type"] for a in card["actions"]] == ["Action.OpenUrl"]
    assert link.startswith(f"{BASE}/requests/{rid}?sig=")
    sig = link.split("sig=", 1)[1]
    assert LinkSigner(SECRET, BASE).verify(rid, sig) == note["id"]
    assert LinkSigner("another-secret", BASE).verify(rid, sig) is None
    assert peek.status_code == 401  # the link is no credential
    assert (note["channel"], note["status"]) == ("teams", "sent")


# the bot ---------------------------------------------------------------------------------------


def _token(
    connector: BotConnectorStandIn,
    *,
    key: rsa.RSAPrivateKey | None = None,
    audience: str = APP_ID,
    expires_in: int = 600,
    service_url: str | None = None,
) -> str:
    """A Bot Connector token, as the Bot Connector signs one (by default: valid)."""
    now = int(time.time())
    claims = {
        "iss": BOT_ISSUER,
        "aud": audience,
        "nbf": now - 60,
        "iat": now - 60,
        "exp": now + expires_in,
        "serviceUrl": service_url or connector.service_url,
    }
    return jwt.encode(
        claims, key or connector.key, algorithm="RS256", headers={"kid": connector.kid}
    )


def _activity(
    connector: BotConnectorStandIn, sender: str, oid: str | None, **fields: Any
) -> dict[str, Any]:
    user = {"id": f"29:{sender}", "name": sender.title()}
    if oid:
        user["aadObjectId"] = oid
    return {
        "id": f"act-in-{time.monotonic_ns()}",
        "channelId": "msteams",
        "serviceUrl": connector.service_url,
        "from": user,
        "recipient": {"id": f"28:{APP_ID}", "name": "Baton"},
        "conversation": {"id": f"{CHANNEL};messageid=1", "isGroup": True, "tenantId": TENANT},
        "channelData": {"tenant": {"id": TENANT}, "channel": {"id": CHANNEL}},
        **fields,
    }


def _click(
    connector: BotConnectorStandIn,
    sender: str,
    oid: str | None,
    action: dict[str, Any],
    **inputs: str,
) -> dict[str, Any]:
    """The invoke Teams sends when `sender` presses an `Action.Execute` of a card."""
    value = {
        "action": {
            "type": "Action.Execute",
            "verb": action["verb"],
            "data": {**action["data"], **inputs},
        },
        "trigger": "manual",
    }
    return _activity(connector, sender, oid, type="invoke", name="adaptiveCard/action", value=value)


async def _send(server: Server, activity: dict[str, Any], token: str | None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx.AsyncClient(base_url=server.base_url, timeout=30.0) as client:
        return await client.post("/integrations/teams/messages", json=activity, headers=headers)


def _inputs(card: dict[str, Any]) -> dict[str, str]:
    """A card's inputs in its body (a form shown open), by id: their type."""
    return {e["id"]: e["type"] for e in card["body"] if str(e.get("type")).startswith("Input.")}


def _card_of(reply: httpx.Response) -> dict[str, Any]:
    """The card an invoke response shows the clicker, checked against the schema."""
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert (body["statusCode"], body["type"]) == (200, "application/vnd.microsoft.card.adaptive")
    return check_card(body["value"])


async def _posts(connector: BotConnectorStandIn, count: int) -> list[dict[str, Any]]:
    async def probe() -> list[dict[str, Any]] | None:
        found = [r.json() for r in connector.posts()]
        return found if len(found) >= count else None

    return await eventually(probe, what=f"{count} posts to the Bot Connector")


async def _link_people(server: Server) -> None:
    """ada, fay and sam by their Entra object ids; lee only by email (found through the
    connector)."""
    async with server.client("ada") as admin:
        for name, oid in (("ada", ADA), ("fay", FAY), ("sam", SAM)):
            linked = await admin.patch(f"/api/users/{name}", json={"entra_id": oid})
            assert linked.status_code == 200, linked.text


@pytest.fixture
def teams_env(monkeypatch: pytest.MonkeyPatch) -> Any:
    with bot_connector() as connector:
        # The bot's tokens: the managed identity protocol of Container Apps (as Azure runs it).
        monkeypatch.setenv("IDENTITY_ENDPOINT", f"{connector.url}/msi/token")
        monkeypatch.setenv("IDENTITY_HEADER", IDENTITY_HEADER)
        connector.members["29:lee"] = {"id": "29:lee", "name": "Lee", "email": "LEE@example.com"}
        env = {
            "BATON_TEAMS_APP_ID": APP_ID,
            "BATON_TEAMS_TENANT_ID": TENANT,
            "BATON_TEAMS_OPENID_METADATA_URL": connector.metadata_url,
            "BATON_BASE_URL": BASE,
            "BATON_SECRET_KEY": SECRET,
        }
        yield connector, env


async def test_the_bot_links_a_channel_posts_cards_and_answers_in_place(
    db_url: str, tokens: dict[str, str], server_log: Path, teams_env: Any
) -> None:
    connector, env = teams_env
    async with baton_server(db_url, tokens, server_log, env) as server:
        await _link_people(server)
        early = await server.start_run(REFUND_120)
        unlinked_team = (await server.wait_for_request(early["id"]))["id"]
        await _notified(server, unlinked_team, "teams-bot", "skipped")

        # the bot is added to the channel; lee (not an admin) and then ada say "link"
        added = _activity(
            connector,
            "ada",
            ADA,
            type="conversationUpdate",
            membersAdded=[{"id": f"28:{APP_ID}"}],
        )
        assert (await _send(server, added, _token(connector))).status_code == 200
        # each reply is posted after its activity's 200, so wait for one before the next
        await _posts(connector, 1)
        say = "<at>Baton</at> link support-leads"
        by_lee = _activity(connector, "lee", LEE, type="message", text=say)
        assert (await _send(server, by_lee, _token(connector))).status_code == 200
        await _posts(connector, 2)
        by_ada = _activity(connector, "ada", ADA, type="message", text=say)
        assert (await _send(server, by_ada, _token(connector))).status_code == 200
        replies = await _posts(connector, 3)

        run = await server.start_run(REFUND_120)
        rid = (await server.wait_for_request(run["id"]))["id"]
        await _notified(server, rid, "teams-bot", "sent")
        posted = (await _posts(connector, 4))[3]
        [card] = cards_in(posted)
        buttons = actions_of(card)
        before = await server.snapshot(rid)

        # forged, expired, misdirected or missing tokens: 401, nothing changes
        approve = _click(connector, "lee", None, buttons["Approve"])
        stranger_key = rsa.generate_private_key(65537, 2048)
        forged = [
            _token(connector, key=stranger_key),
            _token(connector, audience="someone-elses-bot"),
            _token(connector, expires_in=-3600),
            _token(connector, service_url="https://evil.example/teams/"),
            "not-a-jwt",
            None,
        ]
        statuses = [(await _send(server, approve, token)).status_code for token in forged]
        assert statuses == [401] * len(forged)
        assert await server.snapshot(rid) == before

        # an unlinked Teams user, and a person of another team: a card saying why, nothing stored
        nobody = _card_of(
            await _send(
                server, _click(connector, "nobody", None, buttons["Approve"]), _token(connector)
            )
        )
        foreign = _card_of(
            await _send(
                server, _click(connector, "fay", FAY, buttons["Approve"]), _token(connector)
            )
        )
        starter = _card_of(
            await _send(
                server, _click(connector, "sam", SAM, buttons["Approve"]), _token(connector)
            )
        )
        no_reason = _card_of(
            await _send(
                server, _click(connector, "lee", None, buttons["Reject…/Reject"]), _token(connector)
            )
        )
        assert await server.snapshot(rid) == before

        # lee approves (mapped by email); again: the same card, nothing more
        approved = _card_of(await _send(server, approve, _token(connector)))
        again = _card_of(await _send(server, approve, _token(connector)))
        done = await server.wait_for_run(run["id"], status="completed")

        async def updated() -> Any:
            return connector.updates() or None

        [update] = await eventually(updated, what="the posted card updated")
        events = await server.audit(run["id"])

        # another refund, rejected in the card with a reason
        second = await server.start_run(REFUND_120)
        other = (await server.wait_for_request(second["id"]))["id"]
        await _notified(server, other, "teams-bot", "sent")
        reject = actions_of(cards_in((await _posts(connector, 5))[4])[0])["Reject…/Reject"]
        reason = "the parcel was found; no refund"
        rejected = _card_of(
            await _send(
                server,
                _click(connector, "lee", None, reject, **{"reject:reason": reason}),
                _token(connector),
            )
        )
        closed = await server.wait_for_run(second["id"], status="completed")

        async def two_updated() -> Any:
            return connector.updates() if len(connector.updates()) >= 2 else None

        await eventually(two_updated, what="the second card updated")
        stranger_updates = len(connector.updates())
        late = _card_of(
            await _send(
                server,
                _click(connector, "lee", None, reject, **{"reject:reason": "x"}),
                _token(connector),
            )
        )
        assert len(connector.updates()) == stranger_updates

        # answered on the web side (the API): the card in Teams says so too
        third = await server.start_run(REFUND_120)
        elsewhere = (await server.wait_for_request(third["id"]))["id"]
        await _notified(server, elsewhere, "teams-bot", "sent")
        answered_by_api = await server.respond(elsewhere, {"decision": "approve"}, user="ada")
        assert answered_by_api.status_code == 200, answered_by_api.text

        async def three_updated() -> Any:
            return connector.updates() if len(connector.updates()) >= 3 else None

        api_update = (await eventually(three_updated, what="the third card updated"))[2]

        # its run cancelled: the card says so, its buttons gone
        fourth = await server.start_run(REFUND_120)
        dropped = (await server.wait_for_request(fourth["id"]))["id"]
        await _notified(server, dropped, "teams-bot", "sent")
        async with server.client("ada") as admin:
            stopped = await admin.post(f"/api/runs/{fourth['id']}/cancel")
        assert stopped.status_code == 200, stopped.text

        async def four_updated() -> Any:
            return connector.updates() if len(connector.updates()) >= 4 else None

        cancel_update = (await eventually(four_updated, what="the fourth card updated"))[3]
        the_refunds = await refunds(db_url)

    # linking: lee is told only admins link; ada links; the bot said hello when added
    texts = [r["text"] for r in replies]
    assert "`@Baton link TEAM`" in texts[0]
    assert texts[1].startswith("Not linked: lee is not an admin")
    assert texts[2] == "Linked: requests for support-leads will be posted here."
    # replies go to the thread they answer; cards to the channel itself
    for reply in connector.posts()[:3]:
        assert unquote(reply.path) == f"/teams/v3/conversations/{CHANNEL};messageid=1/activities"

    # the posted card: through the linked channel, the bot's token from the managed identity
    assert unquote(connector.posts()[3].path) == f"/teams/v3/conversations/{CHANNEL}/activities"
    assert connector.posts()[3].headers["authorization"] == "Bearer bot-connector-token"
    assert connector.tokens_asked, "the managed identity endpoint was never asked"
    assert "client_id=" + APP_ID in connector.tokens_asked[0]["query"]
    assert card["body"][0]["text"] == "Refund 120.00 on order A-1002"
    assert texts_of(card).splitlines()[2:4] == ["Order ID: A-1002", "Amount: 120.00 EUR"]
    assert buttons["Approve"]["type"] == "Action.Execute"
    assert buttons["Approve"]["data"] == {"request_id": rid}
    assert buttons["Reject…"]["card"]["body"][0]["type"] == "Input.Text"
    assert buttons["Reject…/Reject"]["verb"] == "reject"
    assert list(buttons) == [
        "Approve",
        "Edit…",
        "Edit…/Send edit",
        "Reject…",
        "Reject…/Reject",
        "Details",
    ]
    assert buttons["Details"]["url"].startswith(f"{BASE}/requests/{rid}?sig=")

    # refusals say why, to the clicker only
    assert "not linked to a Baton user" in texts_of(nobody)
    assert actions_of(nobody) == {
        "Open in Baton": {
            "type": "Action.OpenUrl",
            "title": "Open in Baton",
            "url": f"{BASE}/requests/{rid}",
        }
    }
    assert f"Could not approve: no request {rid}" in texts_of(foreign)
    assert "Refund 120.00" not in texts_of(foreign)  # fay may not see it: nothing shown
    # sam started the run and is in another team: he sees the card, and why he may not answer
    assert (
        "You cannot answer this request because it belongs to support-leads, and you are not in "
        "that team." in texts_of(starter)
    )
    assert "Refund 120.00 on order A-1002" in texts_of(starter)
    # a reject sent without its reason (Teams checks the field first; an old card may not): the
    # form is shown open to the clicker, the error beside the field
    assert "Not sent: change what is marked below, then press Reject." in texts_of(no_reason)
    assert "required when decision is 'reject'" in texts_of(no_reason)
    assert _inputs(no_reason) == {"reject:reason": "Input.Text"}
    assert list(actions_of(no_reason))[:2] == ["Reject", "Approve"]

    # the answer: one, by lee; the card says so, for the clicker and (updated) for everyone
    assert "Approved by lee" in texts_of(approved)
    assert list(actions_of(approved)) == ["Open in Baton"]
    assert again == approved
    assert "Refunded 120.00" in done["output"]["text"]
    assert types_of(events).count("request.answered") == 1
    [answered] = [e for e in events if e["type"] == "request.answered"]
    assert answered["actor"] == "lee"
    assert update.path == connector.posts()[3].path + "/" + "activity-4"
    [shown_to_all] = cards_in(update.json())
    assert "Approved by lee" in texts_of(shown_to_all)
    assert "Action.Execute" not in str(shown_to_all)

    # the rejection's reason reached the agent; a late click is told, and changes nothing
    assert "Rejected by lee" in texts_of(rejected)
    assert reason in closed["output"]["text"]
    [request] = closed["requests"]
    assert request["answer"] == {"decision": "reject", "reason": reason}
    assert "You cannot answer this request because lee already answered it: rejected." in (
        texts_of(late)
    )
    assert len(the_refunds) == 2
    [api_card] = cards_in(api_update.json())
    assert "Approved by ada" in texts_of(api_card)
    assert list(actions_of(api_card)) == ["Open in Baton"]
    [cancelled_card] = cards_in(cancel_update.json())
    assert "Cancelled: its run no longer waits for an answer" in texts_of(cancelled_card)
    assert list(actions_of(cancelled_card)) == ["Open in Baton"]
    assert cancel_update.json()["summary"] == "Cancelled: Refund 120.00 on order A-1002"


async def test_the_bot_endpoint_without_an_app_id_is_not_there(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    async with (
        baton_server(db_url, tokens, server_log) as server,
        server.anonymous() as anonymous,
    ):
        reply = await anonymous.post("/integrations/teams/messages", json={"type": "message"})

    assert reply.status_code == 404
    assert "BATON_TEAMS_APP_ID" in reply.json()["detail"]


@pytest.mark.process
async def test_a_bot_with_a_client_secret_gets_its_tokens_from_entra_and_answers(
    db_url: str, tokens: dict[str, str], server_log: Path, tmp_path: Path
) -> None:
    """`baton serve` as a child process, on each backend: the bot's tokens come from its app
    registration's secret (azure-identity's client-credentials grant, over TLS to a stand-in
    Entra authority), and a card is linked, posted and approved in place."""
    with bot_connector() as connector, token_endpoint(tmp_path) as entra:
        env = {
            "BATON_TEAMS_APP_ID": APP_ID,
            "BATON_TEAMS_APP_PASSWORD": "the-bots-client-secret",
            "BATON_TEAMS_TENANT_ID": TENANT,
            "BATON_TEAMS_OPENID_METADATA_URL": connector.metadata_url,
            # azure-identity's own setting for a sovereign cloud's authority; the child trusts
            # the stand-in's certificate as it would a real one
            "AZURE_AUTHORITY_HOST": entra.authority,
            "SSL_CERT_FILE": str(entra.cafile),
        }
        async with baton_server(db_url, tokens, server_log, env) as server:
            await _link_people(server)
            async with server.client("ada") as admin:
                linked = await admin.patch("/api/users/lee", json={"entra_id": LEE})
                assert linked.status_code == 200, linked.text
            say = _activity(connector, "ada", ADA, type="message", text="link support-leads")
            assert (await _send(server, say, _token(connector))).status_code == 200
            await _posts(connector, 1)
            run = await server.start_run(REFUND_120)
            await server.wait_for_request(run["id"])
            [_, posted] = await _posts(connector, 2)
            approve = actions_of(cards_in(posted)[0])["Approve"]
            approved = _card_of(
                await _send(server, _click(connector, "lee", LEE, approve), _token(connector))
            )
            done = await server.wait_for_run(run["id"], status="completed")

            async def updated() -> Any:
                return connector.updates() or None

            [update] = await eventually(updated, what="the posted card updated")

    assert connector.posts()[0].json()["text"].startswith("Linked: requests for support-leads")
    assert "Approved by lee" in texts_of(approved)
    assert "Approved by lee" in texts_of(cards_in(update.json())[0])
    assert "Refunded 120.00" in done["output"]["text"]
    for call in (*connector.posts(), update):
        assert call.headers["authorization"] == f"Bearer {entra.token}"
    asked = entra.asked[0]
    assert asked["path"] == f"/{TENANT}/oauth2/v2.0/token"
    assert (asked["grant_type"], asked["client_id"]) == ("client_credentials", APP_ID)
    assert asked["client_secret"] == "the-bots-client-secret"
    assert asked["scope"] == "https://api.botframework.com/.default"
    assert connector.tokens_asked == []  # no managed identity was asked


async def _by_lee(
    server: Server, connector: BotConnectorStandIn, action: dict[str, Any], **inputs: str
) -> dict[str, Any]:
    """lee presses `action` with `inputs` typed: the card the invoke response shows him."""
    click = _click(connector, "lee", None, action, **inputs)
    return _card_of(await _send(server, click, _token(connector)))


def _field(card_or_form: dict[str, Any], input_id: str) -> dict[str, Any]:
    """The input of this id in a card's body or a ShowCard's card."""
    [found] = [e for e in card_or_form["body"] if e.get("id") == input_id]
    return found


async def test_the_bot_takes_edits_typed_answers_and_choices_in_the_card(
    db_url: str, tokens: dict[str, str], server_log: Path, teams_env: Any
) -> None:
    """Every decision a request takes is answered in the card, from the page's own form."""
    connector, env = teams_env
    env = {**env, "BATON_WORKFLOWS": "tests.samples.typed_review,tests.fixtures.triage_workflow"}
    async with baton_server(db_url, tokens, server_log, env) as server:
        await _link_people(server)
        say = _activity(connector, "ada", ADA, type="message", text="link support-leads")
        assert (await _send(server, say, _token(connector))).status_code == 200
        await _posts(connector, 1)

        # an approval edited in the card: the amount is asked, the order (policy: keep) is said
        run = await server.start_run(REFUND_120)
        rid = (await server.wait_for_request(run["id"]))["id"]
        [card] = cards_in((await _posts(connector, 2))[1])
        buttons = actions_of(card)
        edit_form = buttons["Edit…"]["card"]
        send_edit = buttons["Edit…/Send edit"]
        await _notified(server, rid, "teams-bot", "sent")  # nothing else moves after this
        before = await server.snapshot(rid)
        negative = await _by_lee(server, connector, send_edit, **{"edit:arguments.amount": "-5"})
        other_order = await _by_lee(
            server,
            connector,
            send_edit,
            **{"edit:arguments.amount": "80", "edit:arguments.order_id": "A-9999"},
        )
        # hostile clicks: a decision the request does not take, values that are no text, fields
        # of no form: each a card saying why, nothing stored
        odd = [
            {**send_edit, "verb": "answer"},
            {**send_edit, "verb": "delete"},
        ]
        strange = [await _by_lee(server, connector, action) for action in odd]
        shapes = [
            {"edit:arguments.amount": {"$gt": 0}},
            {"edit:arguments.amount": ["80"], "edit:arguments.extra": "1"},
            {"edit:arguments.amount": "8e400"},
        ]
        for typed in shapes:
            strange.append(await _by_lee(server, connector, send_edit, **typed))
        assert await server.snapshot(rid) == before
        # an edit is checked first, as on the page: what it changes, then Confirm edit
        checked = await _by_lee(
            server,
            connector,
            send_edit,
            **{"edit:arguments.amount": "80", "edit:reason": "half was found"},
        )
        confirm = actions_of(checked)["Confirm edit"]
        changed = await _by_lee(server, connector, confirm, **{"edit:arguments.amount": "90"})
        assert await server.snapshot(rid) == before  # checked twice, recorded never
        edited = await _by_lee(server, connector, confirm)
        done = await server.wait_for_run(run["id"], status="completed")

        # a typed answer (a dataclass with an enum, bounds, a list and an optional group)
        review = await server.start_run(
            {"workflow": "typed_review", "input": {"title": "Spring launch post"}}
        )
        draft = (await server.wait_for_request(review["id"]))["id"]
        [review_card] = cards_in((await _posts(connector, 3))[2])
        answer_form = actions_of(review_card)["Answer…"]["card"]
        send = actions_of(review_card)["Answer…/Send answer"]
        typed = {
            "answer:answer.verdict": "publish",
            "answer:answer.score": "9",
            "answer:answer.tags": "launch\nspring",
            "answer:answer.followup.owner": "kim",
        }
        await _notified(server, draft, "teams-bot", "sent")
        before = await server.snapshot(draft)
        too_high = await _by_lee(server, connector, send, **typed)
        assert await server.snapshot(draft) == before
        resent = actions_of(too_high)["Send answer"]
        typed["answer:answer.score"] = "4"
        answered = await _by_lee(server, connector, resent, **typed)
        reviewed = await server.wait_for_run(review["id"], status="completed")

        # a choice of a few values: a button each
        triage = await server.start_run({"workflow": "triage", "input": {"service": "mail"}})
        await server.wait_for_request(triage["id"])
        [triage_card] = cards_in((await _posts(connector, 4))[3])
        choices = actions_of(triage_card)
        urgent = await _by_lee(server, connector, choices["Urgent"])
        triaged = await server.wait_for_run(triage["id"], status="completed")
        the_refunds = await refunds(db_url)

    # the edit form: the page's fields, the proposed values filled in, the kept one said
    amount = _field(edit_form, "edit:arguments.amount")
    assert (amount["type"], amount["value"], amount["isRequired"]) == ("Input.Number", 120, True)
    assert "Order ID: A-1002" in texts_of(edit_form)
    assert "Fixed: rule refund.medium lets an approver change only amount." in texts_of(edit_form)
    # the approver's note is theirs, apart from the tool's arguments (as on the page)
    assert "Arguments of issue_refund" in texts_of(edit_form)
    assert _field(edit_form, "edit:reason")["label"] == "Your note"
    assert send_edit["data"] == {"request_id": rid, "edit:arguments.order_id": "A-1002"}
    # refused edits: the form open again as typed, the error beside its field; nothing stored
    assert "Not sent: change what is marked below, then press Send edit." in texts_of(negative)
    assert _field(negative, "edit:arguments.amount")["value"] == -5
    assert "-5 is less than or equal to the minimum of 0" in texts_of(negative)
    # an order changed by hand (the card does not offer it): refused beside the field, and the
    # form shown again sends the order proposed
    assert "rule refund.medium lets an approver change only amount" in texts_of(other_order)
    resend = actions_of(other_order)["Send edit"]
    assert resend["data"]["edit:arguments.order_id"] == "A-1002"
    said = [texts_of(card) for card in strange]
    assert "Could not answer" in said[0]
    assert "This button is not one of Baton's." in said[1]
    assert all("Not sent" in text or "Could not edit" in text for text in said[2:]), said
    assert "Check your edit, then press Confirm edit" in texts_of(checked)
    assert "Amount: 120 → 80" in texts_of(checked)
    assert "your approval is enough; the changed call runs" in texts_of(checked)
    assert _field(checked, "edit:arguments.amount")["value"] == 80  # the form as typed
    assert confirm["data"]["edit:arguments.amount"] == "80"
    assert "Amount: 120 → 90" in texts_of(changed)  # changed after its check: checked again
    # the edit: recorded with its reason, refunded 80, the card says so
    assert "Edited by lee" in texts_of(edited)
    [request] = done["requests"]
    assert request["answer"]["arguments"] == {"order_id": "A-1002", "amount": 80}
    assert request["answer"]["reason"] == "half was found"
    assert [r["amount"] for r in the_refunds] == [80.0]

    # the typed answer's form, as the page's: a choice, a bounded number, a list, a group
    verdict = _field(answer_form, "answer:answer.verdict")
    assert (verdict["type"], verdict["style"]) == ("Input.ChoiceSet", "expanded")
    assert [c["title"] for c in verdict["choices"]] == ["Publish", "Revise", "Drop"]
    score = _field(answer_form, "answer:answer.score")
    assert (score["type"], score["min"], score["max"]) == ("Input.Number", 1, 5)
    assert _field(answer_form, "answer:answer.tags")["isMultiline"] is True
    assert _field(answer_form, "answer:answer.followup.due_in_days")["value"] == 7
    assert "Followup" in texts_of(answer_form)
    # required only once its optional group is begun: Teams must not insist on it
    assert "isRequired" not in _field(answer_form, "answer:answer.followup.owner")
    assert _field(too_high, "answer:answer.score")["value"] == 9
    assert _field(too_high, "answer:answer.verdict")["value"] == "publish"
    assert "less than or equal to 5" in texts_of(too_high)
    assert "Answered by lee" in texts_of(answered)
    assert reviewed["output"] == {
        "title": "Spring launch post",
        "verdict": "publish",
        "score": 4,
        "tags": ["launch", "spring"],
        "followup": "kim",
        "due_in_days": 7,
    }

    # the short enum: a button per value, no form
    assert list(choices) == ["Low", "Needs care", "Urgent", "Details"]
    assert choices["Urgent"]["data"] == {
        "request_id": choices["Urgent"]["data"]["request_id"],
        "answer:answer": "urgent",
    }
    assert "Answered by lee" in texts_of(urgent)
    assert triaged["output"] == "mail: URGENT"
