"""Slack: a Block Kit message per notice, and its buttons' callbacks (the actions endpoint).

Messages go to an incoming webhook (`BATON_SLACK_WEBHOOK_URL`): the title, the reason, the key
context, and the buttons Approve, Reject (for approvals and reviews) and Open in Baton (the
request's page). An `input` request whose answer is a yes/no or one of a few values
(`human.answer_schema.choices`: a boolean, an enum of at most five) gets a button per answer
instead of Approve and Reject; any other answer is given on the page.

A click comes back to Baton signed with the app's signing secret (`BATON_SLACK_SIGNING_SECRET`):
`X-Slack-Signature` is `v0=` + HMAC-SHA256 of `v0:<X-Slack-Request-Timestamp>:<raw body>`; a
timestamp more than five minutes from now is refused, so a captured request cannot be replayed
later. The Slack user is mapped to the Baton user holding that Slack id (`baton users add NAME
--slack-id U…`, or the users API), and the answer goes through `RequestService.respond`: the same
validation, authorization and idempotency as the API. The outcome replaces the message through
the callback's `response_url`; a refusal (not linked, not permitted, already answered) is shown to
the clicker alone.

Reject needs a reason, which the agent is told. With a bot token (`BATON_SLACK_BOT_TOKEN`, Slack's
Web API through slack-sdk) Reject opens a modal asking for it (`views.open`); its submission comes
back to the same endpoint, signed the same way, and a refusal is shown in the modal beside the
field. Without one, Reject sends "Rejected from Slack by <name>".
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

import httpx
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.models.blocks import (
    ActionsBlock,
    Block,
    ButtonElement,
    CheckboxesElement,
    ContextBlock,
    HeaderBlock,
    InputBlock,
    MarkdownTextObject,
    Option,
    PlainTextInputElement,
    SectionBlock,
)
from slack_sdk.models.views import View
from slack_sdk.signature import SignatureVerifier
from slack_sdk.web.async_client import AsyncWebClient

from baton.errors import BatonError, NotificationFailed, Unauthenticated
from human.access import check_can_answer
from human.answer_schema import answer_schema, choices, option_label
from human.channels import Notice, approved_words, http, key_context, standing_offer
from human.channels.links import LinkSigner
from human.records import OPEN_STATUSES, HumanRequest, User
from human.service import RequestService, refuse_closed
from human.store.base import PeopleStore

logger = logging.getLogger(__name__)

REPLAY_WINDOW_S = 300
APPROVE = "baton.approve"
REJECT = "baton.reject"
OPEN = "baton.open"
ANSWER = "baton.answer"
"""The action id prefix of an input's answer buttons (`baton.answer.0`, `baton.answer.1`, ...)."""
STANDING = "baton.standing"
"""The block and the checkbox of an approval's standing (where its request offers one): ticked,
Approve lets the approval stand for the run's later calls of the tool under the same rule."""
REASON_VIEW = "baton.reject_reason"
REASON_BLOCK = "reason"
REASON_INPUT = "reason"


def escape(text: str) -> str:
    """Text safe inside Slack mrkdwn (its three control characters escaped)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def request_blocks(request: HumanRequest, url: str, *, note: str | None = None) -> list[Block]:
    """The message for a request: title, reason, key facts, buttons (while it is open)."""
    facts = [
        ("team", request.team),
        ("priority", request.priority),
        *(
            [("deadline", request.expires_at.strftime("%Y-%m-%d %H:%M UTC"))]
            if request.expires_at
            else []
        ),
        *key_context(request),
    ]
    blocks: list[Block] = [
        HeaderBlock(text=_clip(request.title, 150)),
        SectionBlock(text=MarkdownTextObject(text=_clip(escape(request.reason), 3000))),
        SectionBlock(
            fields=[
                MarkdownTextObject(text=_clip(f"*{escape(k)}*\n{escape(v)}", 2000))
                for k, v in facts[:10]
            ]
        ),
    ]
    if note:
        blocks.append(ContextBlock(elements=[MarkdownTextObject(text=_clip(note, 3000))]))
    buttons = [ButtonElement(text="Open in Baton", action_id=OPEN, url=url)]
    if request.status in OPEN_STATUSES and {"approve", "reject"} <= set(request.allowed_decisions):
        offer = standing_offer(request)
        if offer:
            tick = Option(value="yes", text=_clip(offer, 75))
            box = CheckboxesElement(action_id=STANDING, options=[tick])
            blocks.append(ActionsBlock(block_id=STANDING, elements=[box]))
        buttons = [
            ButtonElement(text="Approve", action_id=APPROVE, value=request.id, style="primary"),
            ButtonElement(text="Reject", action_id=REJECT, value=request.id, style="danger"),
            *buttons,
        ]
    elif request.status in OPEN_STATUSES and request.kind == "input":
        buttons = [*answer_buttons(request), *buttons]
    blocks.append(ActionsBlock(block_id="baton", elements=buttons))
    return blocks


def _ticked(payload: dict[str, Any]) -> bool:
    """Whether the message's standing checkbox was ticked as its Approve was clicked.

    Slack sends the state of a message's inputs with each click on it (`state.values`).
    """
    found: Any = payload
    for key in ("state", "values", STANDING, STANDING, "selected_options"):
        found = found.get(key) if isinstance(found, dict) else None
    chosen = found
    return isinstance(chosen, list) and any(
        isinstance(o, dict) and o.get("value") == "yes" for o in chosen
    )


def answer_buttons(request: HumanRequest) -> list[ButtonElement]:
    """A button per answer an `input` request can take, when there are few (else none).

    Each button's value names the request and the answer, as JSON; a click answers with it.
    """
    return [
        ButtonElement(
            text=_clip(label, 75),
            action_id=f"{ANSWER}.{index}",
            value=json.dumps({"request_id": request.id, "answer": value}),
        )
        for index, (value, label) in enumerate(choices(answer_schema(request)))
    ]


def message_of(notice: Notice) -> dict[str, Any]:
    """The incoming-webhook body for a notice."""
    request = notice.request
    notes = {
        "escalated": f":rotating_light: Escalated to *{escape(request.team)}*",
        "reassigned": f":arrow_right: Reassigned to *{escape(request.assignee or request.team)}*",
    }
    note = notes.get(notice.event)
    blocks = request_blocks(request, notice.url, note=note)
    return {"text": notice.headline, "blocks": [b.to_dict() for b in blocks]}


class SlackChannel:
    """Posts Block Kit messages to an incoming webhook."""

    name = "slack"
    follows_answers = False

    def __init__(self, webhook_url: str, *, timeout_s: float = 10.0) -> None:
        self._url = webhook_url
        self._timeout_s = timeout_s

    async def send(self, notice: Notice) -> str | None:
        """POST the message; `NotificationFailed` unless Slack answers 2xx."""
        try:
            async with http.client(self._timeout_s) as client:
                reply = await client.post(self._url, json=message_of(notice))
        except httpx.HTTPError as exc:
            raise NotificationFailed(f"slack: {type(exc).__name__}: {exc}") from exc
        if not reply.is_success:
            raise NotificationFailed(f"slack: HTTP {reply.status_code} {reply.text[:200]}")
        return None


@dataclass(frozen=True)
class SlackReply:
    """What to post to a callback's `response_url` once the click is handled."""

    response_url: str
    body: dict[str, Any]


@dataclass(frozen=True)
class SlackResult:
    """What a callback leads to: a message for `response_url`, and the HTTP answer's body.

    `response` is JSON for Slack (a modal's field errors); None is an empty 200, which also
    closes a submitted modal.
    """

    reply: SlackReply | None = None
    response: dict[str, Any] | None = None


class SlackActions:
    """Verifies and applies button clicks (and reason modals) from Slack."""

    def __init__(
        self,
        store: PeopleStore,
        requests: RequestService,
        links: LinkSigner,
        *,
        signing_secret: str,
        web: AsyncWebClient | None = None,
        timeout_s: float = 10.0,
    ) -> None:
        self._store = store
        self._requests = requests
        self._links = links
        self._verifier = SignatureVerifier(signing_secret)
        self._web = web
        self._timeout_s = timeout_s

    def verify(self, body: bytes, headers: Mapping[str, str]) -> None:
        """`Unauthenticated` unless Slack signed this body within the replay window."""
        stamp = headers.get("x-slack-request-timestamp")
        signature = headers.get("x-slack-signature")
        if not stamp or not signature:
            raise Unauthenticated(
                "not from Slack: X-Slack-Request-Timestamp and X-Slack-Signature are required"
            )
        try:
            sent = int(stamp)
        except ValueError as exc:
            raise Unauthenticated("X-Slack-Request-Timestamp is not a Unix time") from exc
        if abs(time.time() - sent) > REPLAY_WINDOW_S:
            raise Unauthenticated(
                "X-Slack-Request-Timestamp is more than five minutes away: a replay is refused"
            )
        if not self._verifier.is_valid(body, stamp, signature):
            raise Unauthenticated("X-Slack-Signature does not match the body")

    async def act(self, body: bytes, headers: Mapping[str, str]) -> SlackResult:
        """Apply a verified click or reason modal; what to post back and to answer Slack."""
        self.verify(body, headers)
        payload = _payload(body)
        if payload.get("type") == "block_actions":
            return await self._clicked(payload)
        if payload.get("type") == "view_submission":
            return await self._submitted(payload)
        return SlackResult()

    async def _clicked(self, payload: dict[str, Any]) -> SlackResult:
        actions = payload.get("actions") or []
        action = actions[0] if actions and isinstance(actions[0], dict) else {}
        response_url = payload.get("response_url")
        action_id = str(action.get("action_id") or "")
        answering = action_id.startswith(f"{ANSWER}.")
        if (action_id not in (APPROVE, REJECT) and not answering) or not isinstance(
            response_url, str
        ):
            return SlackResult()
        user, slack_user = await self._user_of(payload)
        if user is None:
            return SlackResult(reply=_only_you(response_url, _not_linked(slack_user)))
        if answering:
            return await self._answer_clicked(str(action.get("value") or ""), user, response_url)
        request_id = str(action.get("value") or "")
        if action["action_id"] == REJECT and self._web is not None:
            return await self._ask_reason(payload, request_id, user, response_url)
        answer: dict[str, Any] = (
            {"decision": "approve"} | ({"standing": True} if _ticked(payload) else {})
            if action["action_id"] == APPROVE
            else {"decision": "reject", "reason": f"Rejected from Slack by {user.name}"}
        )
        try:
            outcome = await self._answer(request_id, user, answer)
        except BatonError as exc:
            return SlackResult(
                reply=_only_you(response_url, f"Could not {answer['decision']}: {exc}")
            )
        return SlackResult(reply=SlackReply(response_url, outcome))

    async def _answer_clicked(self, value: str, user: User, response_url: str) -> SlackResult:
        """An input's answer button: answer with the value it carries."""
        try:
            chosen = json.loads(value)
            request_id, answer = str(chosen["request_id"]), chosen["answer"]
        except (json.JSONDecodeError, KeyError, TypeError):
            return SlackResult(
                reply=_only_you(response_url, "Could not answer: not a Baton button")
            )
        try:
            outcome = await self._answer(request_id, user, {"decision": "answer", "answer": answer})
        except BatonError as exc:
            return SlackResult(reply=_only_you(response_url, f"Could not answer: {exc}"))
        return SlackResult(reply=SlackReply(response_url, outcome))

    async def _ask_reason(
        self, payload: dict[str, Any], request_id: str, user: User, response_url: str
    ) -> SlackResult:
        """Open the modal that asks why (within the click's three seconds, as Slack needs).

        Someone who could not reject it (a viewer, another team, the request closed) is told so
        at once rather than after typing a reason.
        """
        assert self._web is not None
        try:
            request = await self._requests.get(request_id, viewer=user)
            refuse_closed(request)
            check_can_answer(user, request)
        except BatonError as exc:
            return SlackResult(reply=_only_you(response_url, f"Could not reject: {exc}"))
        view = View(
            type="modal",
            callback_id=REASON_VIEW,
            title="Reject",
            submit="Reject",
            close="Cancel",
            private_metadata=json.dumps({"request_id": request.id, "response_url": response_url}),
            blocks=[
                SectionBlock(
                    text=MarkdownTextObject(text=f"*{escape(_clip(request.title, 200))}*")
                ),
                InputBlock(
                    block_id=REASON_BLOCK,
                    label="Why? The agent is told.",
                    element=PlainTextInputElement(
                        action_id=REASON_INPUT, multiline=True, max_length=2000
                    ),
                ),
            ],
        )
        try:
            async with asyncio.timeout(self._timeout_s):
                await self._web.views_open(
                    trigger_id=str(payload.get("trigger_id") or ""), view=view
                )
        except (SlackApiError, SlackClientError, OSError, TimeoutError) as exc:
            logger.warning("slack views.open failed", extra={"error": str(exc)})
            return SlackResult(
                reply=_only_you(response_url, f"Could not open the form for a reason: {exc}")
            )
        return SlackResult()

    async def _submitted(self, payload: dict[str, Any]) -> SlackResult:
        """A reason modal sent: reject with its reason, or say in the modal why not."""
        view = payload.get("view") or {}
        if not isinstance(view, dict) or view.get("callback_id") != REASON_VIEW:
            return SlackResult()
        try:
            meta = json.loads(view.get("private_metadata") or "{}")
        except json.JSONDecodeError:
            meta = {}
        values = (view.get("state") or {}).get("values") or {}
        reason = str(((values.get(REASON_BLOCK) or {}).get(REASON_INPUT) or {}).get("value") or "")
        user, slack_user = await self._user_of(payload)
        if user is None:
            return _field_error(_not_linked(slack_user))
        if not reason.strip():
            return _field_error("A reason is required: the agent is told why.")
        answer = {"decision": "reject", "reason": reason.strip()}
        try:
            outcome = await self._answer(str(meta.get("request_id") or ""), user, answer)
        except BatonError as exc:
            return _field_error(f"Could not reject: {exc}")
        response_url = meta.get("response_url")
        reply = SlackReply(response_url, outcome) if isinstance(response_url, str) else None
        return SlackResult(reply=reply)

    async def _user_of(self, payload: dict[str, Any]) -> tuple[User | None, str]:
        slack_user = str((payload.get("user") or {}).get("id") or "")
        user = await self._store.user_for_slack_id(slack_user) if slack_user else None
        return user, slack_user

    async def _answer(self, request_id: str, user: User, answer: dict[str, Any]) -> dict[str, Any]:
        """Answer through `RequestService.respond`; the message that shows the outcome."""
        try:
            result = await self._requests.respond(request_id, answer, responder=user)
        except BatonError as exc:
            logger.info(
                "slack answer refused",
                extra={"request_id": request_id, "user": user.name, "error": exc.code},
            )
            raise
        logger.info(
            "slack answer applied",
            extra={"request_id": request_id, "user": user.name, "outcome": result.outcome},
        )
        return self._outcome(result.request, user.name, answer)

    def _outcome(self, request: HumanRequest, who: str, answer: dict[str, Any]) -> dict[str, Any]:
        verbs = {"approve": approved_words(request, answer), "reject": "Rejected"}
        verb = verbs.get(answer["decision"]) or f"Answered {option_label(answer.get('answer'))}"
        done = request.status not in OPEN_STATUSES
        note = f"*{verb}* by {escape(who)} from Slack" + (
            "" if done else f" ({len(request.answers)} of {request.approvals_required} approvals)"
        )
        blocks = request_blocks(request, self._links.page(request.id), note=note)
        return {
            "replace_original": True,
            "text": f"{verb} by {who}: {request.title}",
            "blocks": [b.to_dict() for b in blocks],
        }

    async def post(self, reply: SlackReply) -> None:
        """Send a reply to Slack's `response_url` (a failure is logged: the answer stands)."""
        try:
            async with (
                asyncio.timeout(self._timeout_s),
                http.client(self._timeout_s) as client,
            ):
                sent = await client.post(reply.response_url, json=reply.body)
            if not sent.is_success:
                logger.warning("slack response_url refused", extra={"status": sent.status_code})
        except (httpx.HTTPError, TimeoutError) as exc:
            logger.warning("slack response_url unreachable", extra={"error": repr(exc)})


def _payload(body: bytes) -> dict[str, Any]:
    form = parse_qs(body.decode("utf-8", errors="replace"))
    raw = (form.get("payload") or [""])[0]
    try:
        payload = json.loads(raw)
    except json.JSONDecodeError:
        return {}
    return payload if isinstance(payload, dict) else {}


def _not_linked(slack_user: str) -> str:
    return (
        f"Your Slack account ({slack_user or 'unknown'}) is not linked to a Baton user: "
        "ask an admin to set your Slack id (`baton users add NAME --slack-id ...`)."
    )


def _field_error(text: str) -> SlackResult:
    """A submitted modal stays open with `text` under its reason field."""
    return SlackResult(
        response={"response_action": "errors", "errors": {REASON_BLOCK: _clip(text, 150)}}
    )


def _only_you(response_url: str, text: str) -> SlackReply:
    return SlackReply(
        response_url, {"response_type": "ephemeral", "replace_original": False, "text": text}
    )
