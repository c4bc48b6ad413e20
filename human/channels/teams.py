"""Microsoft Teams: an Adaptive Card per request, through a webhook or through Baton's bot.

The card shows the request's title, the reason, the key facts (the proposed call's arguments
first, as Slack's message does), its team, priority and deadline, and buttons. Two ways in:

- **A Teams incoming webhook or Workflows URL** (`BATON_TEAMS_WEBHOOK_URL`, channel `teams`): the
  card goes in the message envelope Teams expects (`{"type": "message", "attachments": [...]}`);
  its button opens a signed link to the request's page (`links.py`, as email's): the signature
  grants nothing, the page still asks for sign-in.
- **Baton's bot** (`BATON_TEAMS_APP_ID`, channel `teams-bot`): the card is posted through the Bot
  Connector to the Teams channel linked to the request's team (`teams_bot.py` links it), with
  `Action.Execute` buttons that answer in place, one per decision the request takes, each from
  the same form the request's page shows (`human.forms`): Approve at once; Reject, Edit, Answer,
  Resolve or Return with their fields typed in the card (an edit's arguments filled in, those
  it may not change said, not asked); a yes/no or a short list of values a button per value.
  A form a card cannot hold (JSON to type, many fields) is the page's. The posted card is
  remembered, so that once answered it can be updated for everyone.

Cards are Adaptive Cards 1.4 (the version `Action.Execute` needs); they are plain JSON, checked in
the tests against the official schema.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC
from typing import Any, Final

import aiohttp
import httpx
from azure.core.credentials_async import AsyncTokenCredential
from azure.core.exceptions import AzureError
from microsoft_agents.activity import Activity, Attachment, ResourceResponse
from microsoft_agents.hosting.core.connector.client import ConnectorClient

from baton.errors import NotificationFailed
from human.channels import (
    Due,
    Notice,
    approved_words,
    http,
    key_context,
    standing_offer,
    timing,
)
from human.channels.links import LinkSigner
from human.forms import OTHER, DecisionForm, Field, answer_forms
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
STANDING_INPUT: Final = "standing"
"""The toggle of an approval's standing (where its request offers one), sent with Approve."""
CARD_INPUTS_MAX: Final = 12
"""A decision whose form has more fields than this is given on the page, not in the card."""
QUICK_CHOICES_MAX: Final = 5
"""An answer of at most this many values (a yes/no, a short enum) is a button per value."""

Tone = str
"""An Adaptive Card container style: `good`, `attention`, `warning`, `accent` or `emphasis`."""
Fixed = Callable[[HumanRequest], dict[str, str]]
"""What an edit of a request may not change, with why (`RequestService.fixed_arguments`)."""


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def facts_of(request: HumanRequest) -> list[tuple[str, str]]:
    """What the card lists, in words: the key arguments and context, team, priority."""
    return [*key_context(request), ("Team", request.team), ("Priority", request.priority)]


def due_text(due: Due) -> str:
    """A due time on each reader's clock, then its words.

    The card's `DATE()` and `TIME()` functions, which Teams says in the reader's zone (Adaptive
    Cards' text features: a TextBlock's, in strict RFC 3339 form).
    """
    moment = due.at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return (
        f"{due.name.capitalize()}: {{{{DATE({moment}, SHORT)}}}} {{{{TIME({moment})}}}}{due.then}"
    )


def request_card(
    request: HumanRequest,
    *,
    actions: list[dict[str, Any]],
    note: str | None = None,
    tone: Tone = "emphasis",
    form: Sequence[dict[str, Any]] = (),
) -> dict[str, Any]:
    """The Adaptive Card for a request: title, note, reason, facts, `form` open, then `actions`."""
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
        *({"type": "TextBlock", "text": due_text(due), "wrap": True} for due in timing(request)),
        *form,
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


def answer_actions(
    request: HumanRequest,
    *,
    fixed: Mapping[str, str] | None = None,
    shown: DecisionForm | None = None,
) -> list[dict[str, Any]]:
    """A button per decision the request takes, each from its form (`human.forms`, as the page's).

    Approve answers at once. A decision with fields opens them under its button (`Reject…`,
    `Edit…`, `Answer…`) and sends them with its own; an answer of a few values (a yes/no, a
    short enum) is a button per value instead. A decision whose form a card cannot hold (JSON to
    type, or more than `CARD_INPUTS_MAX` fields) is left to the page (the card's Details).
    `fixed`: the arguments an edit may not change, with why (`RequestService.fixed_arguments`).
    `shown`: a decision form the card shows open in its body (a refused answer, as typed): its
    button sends it, and it has no button of its own here.
    """
    if request.status not in OPEN_STATUSES:
        return []
    data = {"request_id": request.id}
    actions: list[dict[str, Any]] = []
    for form in answer_forms(request, fixed=fixed):
        if shown is not None and form.decision == shown.decision:
            continue
        if form.decision == APPROVE:
            actions.append(_execute("Approve", APPROVE, data, style="positive"))
            continue
        quick = _quick(form)
        if quick is not None:
            name, options = quick
            actions += [
                _execute(title, form.decision, {**data, _input_id(form, name): value})
                for value, title in options
            ]
            continue
        inputs = form_inputs(form)
        if inputs is None:
            continue
        body, sent = inputs
        button = _execute(form.submit, form.decision, {**data, **sent}, style=_style(form))
        actions.append(
            {
                "type": "Action.ShowCard",
                "title": f"{form.label}…",
                "card": {"type": "AdaptiveCard", "body": body, "actions": [button]},
            }
        )
    return actions


def shown_form(
    request: HumanRequest, form: DecisionForm
) -> tuple[list[dict[str, Any]], dict[str, Any]] | None:
    """A decision form open in a card's body, and the button that sends it.

    None where a card cannot hold the form (see `answer_actions`).
    """
    inputs = form_inputs(form)
    if inputs is None:
        return None
    body, sent = inputs
    data = {"request_id": request.id, **sent}
    return body, _execute(form.submit, form.decision, data, style=_style(form))


def _execute(
    title: str, verb: str, data: dict[str, Any], *, style: str | None = None
) -> dict[str, Any]:
    action: dict[str, Any] = {"type": "Action.Execute", "title": title, "verb": verb, "data": data}
    if style:
        action["style"] = style
    return action


def _style(form: DecisionForm) -> str | None:
    return "destructive" if form.decision == REJECT else None


def _input_id(form: DecisionForm, name: str) -> str:
    """A field's input id: its dotted path under its decision (`edit:arguments.amount`).

    Each decision's fields are apart, so that a card's two forms (Reject's reason, Edit's) never
    share an id; the bot reads back only the fields of the decision sent.
    """
    return f"{form.decision}:{name}"


def _quick(form: DecisionForm) -> tuple[str, tuple[tuple[str, str], ...]] | None:
    """The one field and its few values of an answer given by a button per value, or None."""
    if form.decision != "answer" or len(form.fields) != 1:
        return None
    [only] = form.fields
    if only.control != "radio" or only.other is not None or not only.options:
        return None
    return (only.name, only.options) if len(only.options) <= QUICK_CHOICES_MAX else None


def form_inputs(form: DecisionForm) -> tuple[list[dict[str, Any]], dict[str, str]] | None:
    """A decision form as a card's elements, and the values it sends as they are (fixed ones).

    None where a card cannot hold it: a field that takes JSON, or more than `CARD_INPUTS_MAX`.
    A field's help and the error a refused answer left on it follow it in words.
    """
    body: list[dict[str, Any]] = []
    if form.errors:
        body.append(_words(" ".join(form.errors), color="attention"))
    sent: dict[str, str] = {}
    count = 0

    def add(field: Field) -> bool:
        nonlocal count
        if field.control == "fieldset":
            body.append(_words(field.label, weight="Bolder"))
            if field.help:
                body.append(_words(field.help, subtle=True))
            return all(add(child) for child in field.children)
        if field.control == "json":
            return False
        count += 1
        if "readonly" in dict(field.attrs):  # an argument an edit may not change: said, and sent
            body.append(_words(f"{field.label}: {field.value}"))
            sent[_input_id(form, field.name)] = field.value
        else:
            body.extend(_inputs(form, field))
        if field.help:
            body.append(_words(field.help, subtle=True))
        if field.error:
            body.append(_words(field.error, color="attention"))
        return True

    if not all(add(field) for field in form.fields) or count > CARD_INPUTS_MAX:
        return None
    return body, sent


def _words(
    text: str, *, color: str | None = None, subtle: bool = False, weight: str | None = None
) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "TextBlock", "text": _clip(text, 1000), "wrap": True}
    if color:
        block["color"] = color
    if subtle:
        block |= {"isSubtle": True, "size": "Small", "spacing": "None"}
    if weight:
        block["weight"] = weight
    return block


def _inputs(form: DecisionForm, field: Field) -> list[dict[str, Any]]:
    """The card input(s) of one field: as the page's control, in Adaptive Card terms."""
    attrs = dict(field.attrs)
    name = _input_id(form, field.name)
    label = f"{field.label} ({field.unit})" if field.unit else field.label
    base: dict[str, Any] = {"id": name, "label": _clip(label, 200)}
    if field.required and not field.if_filled:  # in an optional group: the server judges
        base |= {"isRequired": True, "errorMessage": f"{field.label} is required."}
    if field.control in ("radio", "select"):
        choices = [{"title": _clip(t, 200), "value": v} for v, t in field.options]
        if field.other is not None:
            choices.append({"title": "Something else", "value": OTHER})
        made = {
            "type": "Input.ChoiceSet",
            **base,
            "choices": choices,
            "style": "expanded" if field.control == "radio" else "compact",
            "wrap": True,
        }
        if field.value:
            made["value"] = field.value
        if field.other is None:
            return [made]
        typed = {
            "type": "Input.Text",
            "id": f"{name}_other",
            "label": "Something else (if chosen)",
            "maxLength": 2000,
            "value": field.other,
        }
        return [made, typed]
    if field.control == "number":
        made = {"type": "Input.Number", **base}
        for key in ("min", "max"):
            if key in attrs:
                made[key] = _number(attrs[key])
        number = _number(field.value) if field.value else None
        if number is not None:
            made["value"] = number
        return [made]
    if attrs.get("type") == "date":
        return [{"type": "Input.Date", **base, **({"value": field.value} if field.value else {})}]
    made = {"type": "Input.Text", **base, "value": field.value}
    if field.control in ("textarea", "lines"):
        made["isMultiline"] = True
    if field.control == "lines":
        made["placeholder"] = "One per line"
    if "maxlength" in attrs:
        made["maxLength"] = int(attrs["maxlength"])
    if "pattern" in attrs:
        made["regex"] = f"^(?:{attrs['pattern']})$"
    style = {"email": "Email", "url": "Url"}.get(attrs.get("type", ""))
    if style:
        made["style"] = style
    return [made]


def _number(text: str) -> float | int | None:
    """A number input's value from its text; None for text that is no finite number."""
    try:
        value = float(text)
    except ValueError:
        return None
    if not math.isfinite(value):  # (`8e400` typed: a card cannot carry it, JSON has no inf)
        return None
    return int(value) if value.is_integer() else value


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


def answered_card(
    request: HumanRequest, url: str, *, fixed: Mapping[str, str] | None = None
) -> dict[str, Any]:
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
    actions = bot_actions(request, url, fixed=fixed)
    return request_card(request, actions=actions, note=note, tone=tone)


def bot_actions(
    request: HumanRequest,
    url: str,
    *,
    fixed: Mapping[str, str] | None = None,
    shown: DecisionForm | None = None,
) -> list[dict[str, Any]]:
    """The bot card's buttons: the request's decisions while open (`answer_actions`), the page.

    Beside the decisions the page's button is "Details", short enough for three to fit a phone's
    width; alone it says "Open in Baton".
    """
    answers = answer_actions(request, fixed=fixed, shown=shown)
    return [*answers, open_action(url, "Details" if answers or shown else "Open in Baton")]


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
        *,
        fixed: Fixed | None = None,
    ) -> None:
        self._store = store
        self._connector = connector
        self._links = links
        self._fixed = fixed or (lambda request: {})

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
        page = self._links.signed(request.id, notice.delivery_id)
        actions = bot_actions(request, page, fixed=self._fixed(request))
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
        card = answered_card(request, self._links.page(request.id), fixed=self._fixed(request))
        said = _CLOSED[request.status][0] if request.status in _CLOSED else "Answered"
        activity = card_activity(card, summary=f"{said}: {request.title}")
        for each in posted:
            try:
                await self._connector.update(each, activity)
            except CONNECTOR_ERRORS as exc:
                raise NotificationFailed(f"teams-bot: {type(exc).__name__}: {exc}") from exc
        return None
