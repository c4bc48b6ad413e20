"""Baton's Teams bot: the activities the Bot Connector sends it, authenticated, and applied.

Every activity arrives with `Authorization: Bearer <JWT>` signed by the Bot Connector. It is
accepted only when (`BotTokenValidator`): its signature verifies against a key of the JWKS that
the OpenID metadata (`BATON_TEAMS_OPENID_METADATA_URL`) names, that key is endorsed for the
activity's channel (`msteams`), its issuer is the metadata's, its audience is the bot's app id
(`BATON_TEAMS_APP_ID`), it has not expired (five minutes of clock skew allowed, as the Bot
Framework does), and its `serviceUrl` claim is the activity's. Anything else is a 401 and changes
nothing.

What the bot does with an accepted activity:

- **`Action.Execute`** on a card (an `invoke` named `adaptiveCard/action`, verbs `approve` and
  `reject` with the reason typed in the card): the Teams user is mapped to a Baton person by
  their Entra object id (`aadObjectId`, `baton users add NAME --entra-id …`), else by the email
  the Bot Connector gives for that member; the answer goes through `RequestService.respond`, the
  same validation, visibility, team, four-eyes and first-answer-wins as the API. The clicker gets
  the updated card in the invoke response (or a card saying why not: not linked, another team,
  already answered); a new answer also updates every card the bot posted about the request, for
  everyone, through the Bot Connector.
- **`@Baton link TEAM`** said in a Teams channel by a Baton admin: that channel receives TEAM's
  requests from then on (the conversation, its service URL and tenant are stored). The bot says
  how when it is added to a team.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import httpx
import jwt
from microsoft_agents.activity import Activity, AdaptiveCardInvokeValue
from pydantic import ValidationError

from baton.errors import BatonError, Invalid, InvalidAnswer, NotPermitted, Unauthenticated
from human.access import check_can_manage_people
from human.channels import http, refused_text
from human.channels.edits import CONFIRM, EditCheck, unconfirmed
from human.channels.links import LinkSigner
from human.channels.teams import (
    APPROVE,
    CARD_SCHEMA,
    CARD_TYPE,
    CARD_VERSION,
    CONNECTOR_ERRORS,
    STANDING_INPUT,
    BotConnector,
    answered_card,
    bot_actions,
    open_action,
    request_card,
    shown_form,
)
from human.forms import (
    DECISION_LABELS,
    FormValues,
    answer_from_form,
    control_text,
    decision_form,
    kept_arguments,
)
from human.records import OPEN_STATUSES, HumanRequest, NewEvent, TeamsConversation, User
from human.service import RequestService
from human.store.base import PeopleStore, TeamsStore

logger = logging.getLogger(__name__)

CLOCK_SKEW_S: Final = 300
"""Leeway on a token's times, as the Bot Framework allows."""
KEYS_MAX_AGE_S: Final = 24 * 3600
"""How long fetched signing keys are used before they are fetched again."""
KEYS_MIN_REFETCH_S: Final = 300
"""An unknown key id fetches the keys again, but not more often than this (no amplification)."""
TEAMS_CHANNEL: Final = "msteams"
EDIT: Final = "edit"
_MENTION = re.compile(r"<at>.*?</at>", re.S)


class BotTokenValidator:
    """Checks the Bot Connector's JWT on each incoming activity."""

    def __init__(self, app_id: str, metadata_url: str, *, timeout_s: float = 10.0) -> None:
        self._app_id = app_id
        self._metadata_url = metadata_url
        self._timeout_s = timeout_s
        self._issuer = ""
        self._keys: dict[str, dict[str, Any]] = {}
        self._fetched_at = 0.0
        self._lock = asyncio.Lock()

    async def validate(
        self, authorization: str | None, *, service_url: str, channel_id: str
    ) -> dict[str, Any]:
        """The token's claims; `Unauthenticated` saying what is wrong, otherwise."""
        scheme, _, token = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise Unauthenticated("not from the Bot Connector: a bearer token is required")
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError as exc:
            raise Unauthenticated("the bearer token is not a JWT") from exc
        if header.get("alg") != "RS256":
            raise Unauthenticated("the token is not signed with RS256")
        jwk = await self._key(str(header.get("kid") or ""))
        endorsements = jwk.get("endorsements")
        if isinstance(endorsements, list) and channel_id not in endorsements:
            raise Unauthenticated(f"the signing key is not endorsed for channel {channel_id}")
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key=jwt.PyJWK(jwk, algorithm="RS256").key,
                algorithms=["RS256"],
                audience=self._app_id,
                issuer=self._issuer,
                leeway=CLOCK_SKEW_S,
                options={"require": ["exp", "iss", "aud"]},
            )
        except jwt.PyJWTError as exc:
            raise Unauthenticated(f"the token is not valid: {exc}") from exc
        claimed = str(claims.get("serviceUrl") or claims.get("serviceurl") or "")
        if claimed.rstrip("/") != service_url.rstrip("/"):
            raise Unauthenticated("the token's serviceUrl is not the activity's")
        return claims

    async def _key(self, kid: str) -> dict[str, Any]:
        async with self._lock:
            age = time.monotonic() - self._fetched_at
            stale = not self._keys or age > KEYS_MAX_AGE_S
            if stale or (kid not in self._keys and age > KEYS_MIN_REFETCH_S):
                await self._fetch()
        if kid not in self._keys:
            raise Unauthenticated("the token's signing key is not one of the Bot Connector's")
        return self._keys[kid]

    async def _fetch(self) -> None:
        """The OpenID metadata, then the JWKS it names (a failure leaves the keys as they were)."""
        try:
            async with http.client(self._timeout_s) as client:
                metadata = (await client.get(self._metadata_url)).raise_for_status().json()
                jwks = (await client.get(metadata["jwks_uri"])).raise_for_status().json()
            keys = {str(k["kid"]): dict(k) for k in jwks["keys"] if isinstance(k, dict)}
            issuer = str(metadata["issuer"])
        except (httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
            logger.warning("teams signing keys unavailable", extra={"error": repr(exc)})
            if not self._keys:
                raise Unauthenticated(
                    "the Bot Connector's signing keys could not be fetched: nothing is accepted"
                ) from exc
            return
        self._issuer, self._keys, self._fetched_at = issuer, keys, time.monotonic()


Later = Callable[[], Awaitable[None]]
"""Work to do once the Bot Connector has its answer (a reply, card updates)."""


@dataclass
class TeamsResult:
    """What an activity leads to: the HTTP answer's JSON (None: an empty 200), and work after."""

    response: dict[str, Any] | None = None
    later: list[Later] = field(default_factory=list)


def _invoke_reply(card: dict[str, Any]) -> dict[str, Any]:
    """The invoke response that shows `card` to the person who clicked."""
    return {"statusCode": 200, "type": CARD_TYPE, "value": card}


def message_card(text: str, *, url: str | None = None, tone: str = "attention") -> dict[str, Any]:
    """A card that only says something (a refusal that must not show the request)."""
    return {
        "$schema": CARD_SCHEMA,
        "type": "AdaptiveCard",
        "version": CARD_VERSION,
        "body": [
            {
                "type": "Container",
                "style": tone,
                "items": [{"type": "TextBlock", "text": text, "wrap": True}],
            }
        ],
        "actions": [open_action(url)] if url else [],
    }


class TeamsBot:
    """Authenticates and applies the activities Teams sends Baton's bot."""

    def __init__(
        self,
        store: PeopleStore,
        teams: TeamsStore,
        requests: RequestService,
        links: LinkSigner,
        validator: BotTokenValidator,
        connector: BotConnector,
    ) -> None:
        self._store = store
        self._teams = teams
        self._requests = requests
        self._links = links
        self._validator = validator
        self._connector = connector

    async def handle(self, body: bytes, headers: Mapping[str, str]) -> TeamsResult:
        """Verify the token first, then apply the activity (401 before anything is read)."""
        try:
            raw = json.loads(body)
        except (json.JSONDecodeError, UnicodeDecodeError):
            raw = None
        raw = raw if isinstance(raw, dict) else {}
        await self._validator.validate(
            headers.get("authorization"),
            service_url=str(raw.get("serviceUrl") or ""),
            channel_id=str(raw.get("channelId") or ""),
        )
        try:
            activity = Activity.model_validate(raw)
        except ValidationError as exc:
            raise Invalid("not a Bot Framework activity", _errors(exc)) from exc
        if activity.channel_id != TEAMS_CHANNEL:
            return TeamsResult()
        if activity.type == "invoke" and activity.name == "adaptiveCard/action":
            return TeamsResult(response=await self._execute(activity))
        if activity.type == "message":
            return TeamsResult(later=[lambda: self._message(activity)])
        if activity.type == "conversationUpdate" and self._bot_added(activity):
            return TeamsResult(later=[lambda: self._welcome(activity)])
        return TeamsResult()

    # Action.Execute -------------------------------------------------------------------------

    async def _execute(self, activity: Activity) -> dict[str, Any]:
        try:
            value = AdaptiveCardInvokeValue.model_validate(activity.value)
        except ValidationError as exc:
            raise Invalid("not an Adaptive Card action", _errors(exc)) from exc
        data = dict(value.action.data or {})
        verb = value.action.verb or ""
        request_id = str(data.get("request_id") or "")
        page = self._links.page(request_id) if request_id else None
        if verb not in DECISION_LABELS or not request_id:
            return _invoke_reply(message_card("This button is not one of Baton's."))
        user, who = await self._user_of(activity)
        if user is None:
            text = (
                f"Your Teams account ({who}) is not linked to a Baton user: ask a Baton admin "
                "to set your Entra object id (`baton users add NAME --entra-id …`)."
            )
            return _invoke_reply(message_card(text, url=page))
        typed = posted(verb, data)
        try:
            request = await self._requests.get(request_id, viewer=user)
            answer = answer_from_form(request, typed)
            check = await unconfirmed(self._requests, request_id, answer, typed, user)
            if check is not None:  # an edit is checked first, as on the request's page
                return self._checked(request, typed, check)
            result = await self._requests.respond(request_id, answer, responder=user)
        except BatonError as exc:
            logger.info(
                "teams answer refused",
                extra={"request_id": request_id, "user": user.name, "error": exc.code},
            )
            refused = (verb, typed, exc.errors) if isinstance(exc, InvalidAnswer) else None
            return await self._refused(request_id, user, refused_text(verb, exc), refused)
        logger.info(
            "teams answer applied",
            extra={"request_id": request_id, "user": user.name, "outcome": result.outcome},
        )
        # Everyone's cards are updated through the outbox (event `answered`, written with the
        # answer): the same for an answer given here, on the web, by the API or in Slack.
        fixed = self._requests.fixed_arguments(result.request)
        return _invoke_reply(
            answered_card(result.request, self._links.page(request_id), fixed=fixed)
        )

    def _checked(
        self, request: HumanRequest, typed: FormValues, check: EditCheck
    ) -> dict[str, Any]:
        """An edit's check, to the clicker: what it changes and leads to, and Confirm edit.

        The edit form stays open as typed: Confirm edit sends it with the digest of the edit
        checked, and an edit changed since is checked again rather than recorded.
        """
        fixed = self._requests.fixed_arguments(request)
        typed = _kept(typed, request, fixed)
        form = decision_form(request, EDIT, raw=typed, fixed=fixed)
        shown = shown_form(request, form) if form is not None else None
        body = shown[0] if shown is not None else []
        sent = {f"{EDIT}:{n}": typed.get(n) for n in typed.names() if n != "decision"}
        confirm = {
            "type": "Action.Execute",
            "title": "Confirm edit",
            "verb": EDIT,
            "data": {"request_id": request.id, **sent, f"{EDIT}:{CONFIRM}": check.digest},
            "style": "positive",
        }
        changes = {
            "type": "FactSet",
            "facts": [{"title": n, "value": f"{b} → {a}"} for n, b, a in check.changes[:10]],
        }
        then = [{"type": "TextBlock", "text": c, "wrap": True} for c in check.consequences]
        note = (
            "Check your edit, then press Confirm edit: nothing is recorded until you do. "
            "Change a field to check it again."
        )
        page = self._links.page(request.id)
        actions = [confirm, *bot_actions(request, page, fixed=fixed, shown=form)]
        card = request_card(
            request, actions=actions, note=note, tone="accent", form=[changes, *then, *body]
        )
        return _invoke_reply(card)

    async def _refused(
        self,
        request_id: str,
        user: User,
        why: str,
        answer: tuple[str, FormValues, list[dict[str, Any]]] | None = None,
    ) -> dict[str, Any]:
        """The card as `user` may see it now, with why their click did nothing (only theirs).

        A refused `answer` (its decision, the fields as typed, the errors) is shown open in the
        card, as typed, each error beside its field, to send again (where a card can hold it).
        """
        try:
            request = await self._requests.get(request_id, viewer=user)
        except BatonError:
            return _invoke_reply(message_card(why))
        fixed = self._requests.fixed_arguments(request)
        form, body, send = None, list[dict[str, Any]](), list[dict[str, Any]]()
        if answer is not None and request.status in OPEN_STATUSES:
            verb, typed, errors = answer
            typed = _kept(typed, request, fixed)
            mine = decision_form(request, verb, raw=typed, errors=errors, fixed=fixed)
            shown = shown_form(request, mine) if mine is not None else None
            if mine is not None and shown is not None:
                form, (body, button) = mine, shown
                send = [button]
                why = f"Not sent: change what is marked below, then press {mine.submit}."
        actions = [
            *send,
            *bot_actions(request, self._links.page(request.id), fixed=fixed, shown=form),
        ]
        card = request_card(request, actions=actions, note=why, tone="attention", form=body)
        return _invoke_reply(card)

    async def _user_of(self, activity: Activity) -> tuple[User | None, str]:
        """The Baton person behind a Teams user: by Entra object id, else by email."""
        sender = activity.from_property
        if sender is None:
            return None, "unknown"
        who = sender.name or sender.id or "unknown"
        if sender.aad_object_id:
            user = await self._store.user_for_entra_id(sender.aad_object_id)
            if user is not None:
                return user, who
        conversation = activity.conversation
        if not sender.id or conversation is None or not activity.service_url:
            return None, who
        try:
            email = await self._connector.member_email(
                activity.service_url, conversation.id, sender.id
            )
        except CONNECTOR_ERRORS as exc:
            logger.warning("teams member lookup failed", extra={"error": repr(exc)})
            return None, who
        return (await self._store.user_for_email(email) if email else None), who

    # messages: linking a channel --------------------------------------------------------------

    async def _message(self, activity: Activity) -> None:
        """`link TEAM` by a Baton admin links this channel to TEAM; anything else: how to."""
        words = _MENTION.sub(" ", activity.text or "").split()
        if len(words) == 2 and words[0].lower() == "link":
            text = await self._link(activity, words[1])
        else:
            text = (
                "I post Baton's requests here once a Baton admin links this channel to a Baton "
                "team: say `@Baton link TEAM`. Answer the cards here, or open them in Baton."
            )
        await self._say(activity, text)

    async def _link(self, activity: Activity, team: str) -> str:
        user, who = await self._user_of(activity)
        if user is None:
            return f"Your Teams account ({who}) is not linked to a Baton user."
        try:
            check_can_manage_people(user)
        except NotPermitted as exc:
            return f"Not linked: {exc}."
        if team not in {t.name for t in await self._store.list_teams()}:
            return f"Not linked: Baton has no team {team}."
        conversation_id = _channel_of(activity)
        link = TeamsConversation(
            team=team,
            service_url=activity.service_url or "",
            conversation_id=conversation_id,
            tenant_id=_tenant_of(activity),
            linked_by=user.name,
            linked_at=self._requests.now(),
        )
        event = NewEvent(
            type="teams.linked",
            actor=user.name,
            data={"team": team, "conversation_id": conversation_id},
        )
        await self._teams.link_teams_conversation(link, events=[event])
        logger.info("teams channel linked", extra={"team": team, "user": user.name})
        return f"Linked: requests for {team} will be posted here."

    async def _welcome(self, activity: Activity) -> None:
        await self._say(
            activity,
            "Hello: I post Baton's requests for a person. A Baton admin links this channel to a "
            "Baton team by saying `@Baton link TEAM` here.",
        )

    async def _say(self, activity: Activity, text: str) -> None:
        """Reply in the activity's conversation (a failure is logged)."""
        if activity.conversation is None or not activity.service_url:
            return
        reply = Activity(type="message", text=text, reply_to_id=activity.id)
        try:
            await self._connector.post(activity.service_url, activity.conversation.id, reply)
        except CONNECTOR_ERRORS as exc:
            logger.warning("teams reply failed", extra={"error": repr(exc)})

    @staticmethod
    def _bot_added(activity: Activity) -> bool:
        me = activity.recipient.id if activity.recipient else None
        return any(m.id == me for m in activity.members_added or [])


def _channel_of(activity: Activity) -> str:
    """The conversation to post new cards to: the channel (not a thread in it)."""
    data = activity.channel_data if isinstance(activity.channel_data, dict) else {}
    channel = data.get("channel")
    if isinstance(channel, dict) and channel.get("id"):
        return str(channel["id"])
    conversation = activity.conversation.id if activity.conversation else ""
    return conversation.split(";", 1)[0]


def _tenant_of(activity: Activity) -> str | None:
    data = activity.channel_data if isinstance(activity.channel_data, dict) else {}
    tenant = data.get("tenant")
    if isinstance(tenant, dict) and tenant.get("id"):
        return str(tenant["id"])
    conversation = activity.conversation
    return conversation.tenant_id if conversation is not None else None


def posted(verb: str, data: Mapping[str, Any]) -> FormValues:
    """The fields a card sent for decision `verb`, named as the page's form names them.

    A card's inputs come keyed by `verb:path` (`human.channels.teams.answer_actions`); the
    inputs of the card's other decisions are not read. Approve's standing toggle is its own.
    Teams sends each value as text; a number or a yes/no sent as JSON is read as its text.
    """
    items: list[tuple[str, Any]] = [("decision", verb)]
    for key, value in data.items():
        name = key.removeprefix(f"{verb}:") if key.startswith(f"{verb}:") else None
        if name is None and verb == APPROVE and key == STANDING_INPUT:
            name = "standing"
        if name is None:
            continue
        if isinstance(value, bool):
            value = "true" if value else "false"
        elif isinstance(value, int | float):
            value = str(value)
        items.append((name, value))
    return FormValues(items)


def _kept(typed: FormValues, request: HumanRequest, fixed: Mapping[str, str]) -> FormValues:
    """A refused edit as typed, but each argument it may not change as proposed.

    A card sends what it shows: a changed one, shown again, would be refused again, with no
    field to fix it in.
    """
    proposed = {n: control_text(v) for n, v in kept_arguments(request, fixed).items()}
    return FormValues([*((n, typed.get(n)) for n in typed.names()), *proposed.items()])


def _errors(exc: ValidationError) -> list[dict[str, Any]]:
    return [{"loc": list(e["loc"]), "msg": e["msg"]} for e in exc.errors()]
