"""Microsoft Teams: an Adaptive Card per request, through a webhook or through Baton's bot.

The card shows the request's title, the reason, the key facts (the proposed call's arguments
first, as Slack's message does), its team, priority and deadline, and buttons. Two ways in:

- **A Teams incoming webhook or Workflows URL** (`BATON_TEAMS_WEBHOOK_URL`, channel `teams`): the
  card goes in the message envelope Teams expects (`{"type": "message", "attachments": [...]}`);
  its button opens a signed link to the request's page (`links.py`, as email's): the signature
  grants nothing, the page still asks for sign-in.
- **Baton's bot** (`BATON_TEAMS_APP_ID`, channel `teams-bot`): the card is posted through the Bot
  Connector to the Teams channel linked to the request's team (`teams_bot.py` links it), with
  `Action.Execute` buttons that answer in place: Approve, and Reject with a reason typed in the
  card. The posted card is remembered, so that once answered it can be updated for everyone.

Cards are Adaptive Cards 1.4 (the version `Action.Execute` needs); they are plain JSON, checked in
the tests against the official schema.
"""

from __future__ import annotations

import logging
from typing import Any, Final

import aiohttp
import httpx
from azure.core.credentials_async import AsyncTokenCredential
from azure.core.exceptions import AzureError
from microsoft_agents.activity import Activity, Attachment, ResourceResponse
from microsoft_agents.hosting.core.connector.client import ConnectorClient

from baton.errors import NotificationFailed
from human.channels import Notice, approved_words, http, key_context, standing_offer
from human.channels.links import LinkSigner
from human.records import OPEN_STATUSES, HumanRequest, TeamsCard
from human.store.base import TeamsStore

logger = logging.getLogger(__name__)

CARD_TYPE: Final = "application/vnd.microsoft.card.adaptive"
CARD_SCHEMA: Final = "http://adaptivecards.io/schemas/adaptive-card.json"
CARD_VERSION: Final = "1.4"
BOT_SCOPE: Final = "https://api.botframework.com/.default"
CONNECTOR_ERRORS: Final = (aiohttp.ClientError, AzureError, OSError, ValueError)
"""What a Bot Connector call can fail with: HTTP, the token, the network, a malformed answer."""
APPROVE: Final = "approve"
REJECT: Final = "reject"
REASON_INPUT: Final = "reason"
STANDING_INPUT: Final = "standing"
"""The toggle of an approval's standing (where its request offers one), sent with Approve."""

Tone = str
"""An Adaptive Card container style: `good`, `attention`, `warning`, `accent` or `emphasis`."""


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def facts_of(request: HumanRequest) -> list[tuple[str, str]]:
    """What the card lists, in words: the key arguments and context, team, priority, deadline."""
    facts = [*key_context(request), ("team", request.team), ("priority", request.priority)]
    if request.expires_at:
        facts.append(("deadline", request.expires_at.strftime("%Y-%m-%d %H:%M UTC")))
    return [(name.replace("_", " ").capitalize(), value) for name, value in facts]


def request_card(
    request: HumanRequest,
    *,
    actions: list[dict[str, Any]],
    note: str | None = None,
    tone: Tone = "emphasis",
) -> dict[str, Any]:
    """The Adaptive Card for a request: title, note, reason, facts, then `actions`."""
    body: list[dict[str, Any]] = [
        {
            "type": "TextBlock",
            "text": _clip(request.title, 200),
            "size": "Large",
            "weight": "Bolder",
            "wrap": True,
            "style": "heading",
        }
    ]
    if note:
        body.append(
            {
                "type": "Container",
                "style": tone,
                "items": [{"type": "TextBlock", "text": _clip(note, 500), "wrap": True}],
            }
        )
    body += [
        {"type": "TextBlock", "text": _clip(request.reason, 2000), "wrap": True},
        {
            "type": "FactSet",
            "facts": [{"title": name, "value": value} for name, value in facts_of(request)[:10]],
        },
    ]
    offer = standing_offer(request)
    if offer and any(action.get("verb") == APPROVE for action in actions):
        body.append(
            {
                "type": "Input.Toggle",
                "id": STANDING_INPUT,
                "title": _clip(offer, 200),
                "value": "false",
                "valueOn": "true",
                "valueOff": "false",
                "wrap": True,
            }
        )
    return {
        "$schema": CARD_SCHEMA,
        "type": "AdaptiveCard",
        "version": CARD_VERSION,
        "fallbackText": f"{request.title}: {request.reason}",
        "body": body,
        "actions": actions,
    }


def notice_card(request: HumanRequest, event: str, actions: list[dict[str, Any]]) -> dict[str, Any]:
    """The card announcing a request on an occasion: created, escalated or reassigned."""
    notes = {
        "escalated": f"Escalated to {request.team}",
        "reassigned": f"Reassigned to {request.assignee or request.team}",
    }
    note = notes.get(event)
    return request_card(request, actions=actions, note=note, tone="warning" if note else "emphasis")


def open_action(url: str, title: str = "Open in Baton") -> dict[str, Any]:
    """A button opening a page (sign-in required there)."""
    return {"type": "Action.OpenUrl", "title": title, "url": url}


def answer_actions(request: HumanRequest) -> list[dict[str, Any]]:
    """Approve and Reject (with a reason typed in the card) while the request takes them."""
    if request.status not in OPEN_STATUSES or not {APPROVE, REJECT} <= set(
        request.allowed_decisions
    ):
        return []
    data = {"request_id": request.id}
    return [
        {
            "type": "Action.Execute",
            "title": "Approve",
            "verb": APPROVE,
            "data": data,
            "style": "positive",
        },
        {
            "type": "Action.ShowCard",
            "title": "Reject…",
            "card": {
                "type": "AdaptiveCard",
                "body": [
                    {
                        "type": "Input.Text",
                        "id": REASON_INPUT,
                        "label": "Why? The agent is told.",
                        "isMultiline": True,
                        "isRequired": True,
                        "maxLength": 2000,
                        "errorMessage": "A reason is required: the agent is told why.",
                    }
                ],
                "actions": [
                    {
                        "type": "Action.Execute",
                        "title": "Reject",
                        "verb": REJECT,
                        "data": data,
                        "style": "destructive",
                    }
                ],
            },
        },
    ]


_DONE: Final = {
    "approve": "Approved",
    "reject": "Rejected",
    "edit": "Edited",
    "answer": "Answered",
    "resolve": "Resolved",
    "return": "Handed back",
}


_CLOSED: Final = {
    "expired": ("Expired", "nobody answered before its deadline", "attention"),
    "cancelled": ("Cancelled", "its run no longer waits for an answer", "default"),
}
"""A request's end with no answer: the card's word for it, why, and its note's style."""


def answered_card(request: HumanRequest, url: str) -> dict[str, Any]:
    """The card once someone answered, or the request closed unanswered, the same for everyone.

    It says who answered what (or that it expired, or was cancelled with its run), and keeps its
    buttons only while more approvals are needed.
    """
    closed = _CLOSED.get(request.status)
    if closed is not None:
        word, why, tone = closed
        note = f"{word}: {why}"
    else:
        last = request.answers[-1] if request.answers else None
        verb = _DONE.get(last.decision, "Answered") if last else "Answered"
        if last and last.decision == APPROVE:
            verb = approved_words(request, last.body)
        note = f"{verb} by {last.actor if last else request.answered_by or 'someone'}"
        if request.status in OPEN_STATUSES:
            note += f" ({len(request.answers)} of {request.approvals_required} approvals)"
        tone = "attention" if last and last.decision == "reject" else "good"
    return request_card(request, actions=bot_actions(request, url), note=note, tone=tone)


def bot_actions(request: HumanRequest, url: str) -> list[dict[str, Any]]:
    """The bot card's buttons: Approve and Reject while open, and the page.

    Beside Approve and Reject the page's button is "Details", short enough for the three to fit
    a phone's width; alone it says "Open in Baton".
    """
    answers = answer_actions(request)
    return [*answers, open_action(url, "Details" if answers else "Open in Baton")]


def attachment(card: dict[str, Any]) -> dict[str, Any]:
    """A card as a message attachment."""
    return {"contentType": CARD_TYPE, "contentUrl": None, "content": card}


def webhook_message(notice: Notice, links: LinkSigner) -> dict[str, Any]:
    """The incoming-webhook (Workflows) body for a notice: one card, a signed link to the page."""
    link = links.signed(notice.request.id, notice.delivery_id)
    card = notice_card(notice.request, notice.event, [open_action(link)])
    return {"type": "message", "attachments": [attachment(card)]}


class TeamsWebhookChannel:
    """Posts cards to a Teams incoming webhook or a Power Automate Workflows URL."""

    name = "teams"
    follows_answers = False

    def __init__(self, url: str, links: LinkSigner, *, timeout_s: float = 10.0) -> None:
        self._url = url
        self._links = links
        self._timeout_s = timeout_s

    async def send(self, notice: Notice) -> str | None:
        """POST the card; `NotificationFailed` unless Teams answers 2xx (Workflows say 202)."""
        try:
            async with http.client(self._timeout_s) as client:
                reply = await client.post(self._url, json=webhook_message(notice, self._links))
        except httpx.HTTPError as exc:
            raise NotificationFailed(f"teams: {type(exc).__name__}: {exc}") from exc
        if not reply.is_success:
            raise NotificationFailed(f"teams: HTTP {reply.status_code} {reply.text[:200]}")
        return None


class BotConnector:
    """The Bot Connector API as Baton's bot: post, update, and look up a conversation's members.

    Each call gets a token for the Bot Framework's audience from `credential` (the app's secret,
    or the managed identity the bot is registered with), cached by the credential until it ends.
    """

    def __init__(self, credential: AsyncTokenCredential) -> None:
        self._credential = credential

    async def _client(self, service_url: str) -> ConnectorClient:
        token = await self._credential.get_token(BOT_SCOPE)
        return ConnectorClient(service_url, token.token)

    async def post(self, service_url: str, conversation_id: str, activity: Activity) -> str:
        """Post an activity to a conversation; the new activity's id."""
        client = await self._client(service_url)
        try:
            sent: ResourceResponse = await client.conversations.send_to_conversation(
                conversation_id, activity
            )
        finally:
            await client.close()
        return str(sent.id or "")

    async def update(self, card: TeamsCard, activity: Activity) -> None:
        """Replace a posted activity (for everyone in the conversation)."""
        client = await self._client(card.service_url)
        try:
            await client.conversations.update_activity(
                card.conversation_id, card.activity_id, activity
            )
        finally:
            await client.close()

    async def member_email(
        self, service_url: str, conversation_id: str, member_id: str
    ) -> str | None:
        """A conversation member's email (or user principal name), when Teams gives one."""
        client = await self._client(service_url)
        try:
            member = await client.conversations.get_conversation_member(conversation_id, member_id)
        finally:
            await client.close()
        extra = member.model_extra or {}
        found = (
            extra.get("email") or extra.get("userPrincipalName") or extra.get("user_principal_name")
        )
        return str(found) if found else None

    async def close(self) -> None:
        """Release the credential's connections."""
        await self._credential.close()


def card_activity(card: dict[str, Any], *, summary: str) -> Activity:
    """A message activity carrying one card."""
    return Activity(
        type="message",
        summary=_clip(summary, 200),
        attachments=[Attachment(content_type=CARD_TYPE, content=card)],
    )


class TeamsBotChannel:
    """Posts a card through the bot to the Teams channel linked to the request's team."""

    name = "teams-bot"
    follows_answers = True

    def __init__(
        self,
        store: TeamsStore,
        connector: BotConnector,
        links: LinkSigner,
    ) -> None:
        self._store = store
        self._connector = connector
        self._links = links

    async def send(self, notice: Notice) -> str | None:
        """Post the card and remember it; why not, when no channel is linked to the team.

        Once the request is answered (event `answered`), every card posted about it is replaced
        by one saying who answered, for everyone in the conversation.
        """
        request = notice.request
        if notice.event == "answered":
            return await self._update(request)
        link = await self._store.teams_conversation(request.team)
        if link is None:
            return (
                f"no Teams channel is linked to team {request.team} "
                f"(a Baton admin says '@Baton link {request.team}' in one)"
            )
        actions = bot_actions(request, self._links.signed(request.id, notice.delivery_id))
        card = notice_card(request, notice.event, actions)
        try:
            activity_id = await self._connector.post(
                link.service_url, link.conversation_id, card_activity(card, summary=notice.headline)
            )
        except CONNECTOR_ERRORS as exc:
            raise NotificationFailed(f"teams-bot: {type(exc).__name__}: {exc}") from exc
        if activity_id:
            await self._store.add_teams_card(
                TeamsCard(
                    request_id=request.id,
                    service_url=link.service_url,
                    conversation_id=link.conversation_id,
                    activity_id=activity_id,
                )
            )
        return None

    async def _update(self, request: HumanRequest) -> str | None:
        posted = await self._store.teams_cards(request.id)
        if not posted:
            return "no card was posted about this request"
        card = answered_card(request, self._links.page(request.id))
        said = _CLOSED[request.status][0] if request.status in _CLOSED else "Answered"
        activity = card_activity(card, summary=f"{said}: {request.title}")
        for each in posted:
            try:
                await self._connector.update(each, activity)
            except CONNECTOR_ERRORS as exc:
                raise NotificationFailed(f"teams-bot: {type(exc).__name__}: {exc}") from exc
        return None
