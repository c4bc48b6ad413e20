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
    DatePickerElement,
    HeaderBlock,
    InputBlock,
    MarkdownTextObject,
    NumberInputElement,
    Option,
    PlainTextInputElement,
    RadioButtonsElement,
    SectionBlock,
    StaticSelectElement,
)
from slack_sdk.models.views import View
from slack_sdk.signature import SignatureVerifier
from slack_sdk.web.async_client import AsyncWebClient

from baton.errors import BatonError, InvalidAnswer, NotificationFailed, Unauthenticated
from human.access import check_can_answer
from human.answer_schema import answer_schema, choices, option_label
from human.channels import (
    Due,
    Notice,
    approved_words,
    http,
    key_context,
    refused_text,
    standing_offer,
    timing,
)
from human.channels.edits import CONFIRM, EditCheck, said, unconfirmed
from human.channels.links import LinkSigner
from human.forms import (
    DECISION_LABELS,
    OTHER,
    DecisionForm,
    Field,
    FormValues,
    answer_forms,
    answer_from_form,
    decision_form,
    kept_arguments,
)
from human.records import OPEN_STATUSES, HumanRequest, User
from human.service import RequestService, refuse_closed
from human.store.base import PeopleStore
from human.zones import said_at

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
FORM = "baton.form"
"""The action id prefix of a decision's button that opens its form in a modal (`baton.form.edit`),
and the modal's callback id."""
FORM_INPUTS_MAX = 12
"""A decision whose form has more fields than this is given on the page, not in a modal."""
VALUE = "value"
"""Each form input's action id (its block id is the field's dotted path, as the page names it)."""
REASON_VIEW = "baton.reject_reason"
REASON_BLOCK = "reason"
REASON_INPUT = "reason"


def escape(text: str) -> str:
    """Text safe inside Slack mrkdwn (its three control characters escaped)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def said_on_reader_clock(due: Due) -> str:
    """A due time as Slack shows it on each reader's clock (its date token), with its words.

    The token's fallback, for a client that cannot show it, is the time in UTC.
    """
    moment = int(due.at.timestamp())
    fallback = said_at(due.at, None)
    return f"<!date^{moment}^{{date_short_pretty}} {{time}}|{fallback}>{escape(due.then)}"


def request_blocks(
    request: HumanRequest, url: str, *, note: str | None = None, forms: bool = False
) -> list[Block]:
    """The message for a request: title, reason, key facts, buttons (while it is open).

    With `forms` (Baton has a bot token: it can open modals), a decision with fields of its own
    (Edit, Answer, Resolve, Return) is a button too, which opens its form (`form_button`).
    """
    facts = [
        ("Team", escape(request.team)),
        ("Priority", escape(request.priority)),
        *((due.name.capitalize(), said_on_reader_clock(due)) for due in timing(request)),
        *((name, escape(value)) for name, value in key_context(request)),
    ]
    blocks: list[Block] = [
        HeaderBlock(text=_clip(request.title, 150)),
        SectionBlock(text=MarkdownTextObject(text=_clip(escape(request.reason), 3000))),
        SectionBlock(
            fields=[
                MarkdownTextObject(text=_clip(f"*{escape(k)}*\n{v}", 2000)) for k, v in facts[:10]
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
    if forms and request.status in OPEN_STATUSES:
        opens = form_buttons(request, answered=bool(answer_buttons(request)))
        buttons = [*buttons[:-1], *opens, buttons[-1]]  # the page's button stays last
    blocks.append(ActionsBlock(block_id="baton", elements=buttons))
    return blocks


def form_buttons(request: HumanRequest, *, answered: bool) -> list[ButtonElement]:
    """A button per decision whose fields a modal asks for: Edit…, Answer…, Resolve…, Return….

    Not Approve and Reject (buttons of their own), nor an answer given by a button per value
    (`answered`), nor a form a modal cannot hold (`form_blocks`).
    """
    return [
        ButtonElement(text=f"{form.label}…", action_id=f"{FORM}.{form.decision}", value=request.id)
        for form in answer_forms(request)
        if form.decision not in ("approve", "reject")
        and not (form.decision == "answer" and answered)
        and form_blocks(form) is not None
    ]


def form_blocks(form: DecisionForm) -> list[Block] | None:
    """A decision form as a modal's blocks: an input per field, as the page's control.

    Each input's block id is the field's dotted path, so a refusal's errors land beside their
    field. An argument an edit may not change is said, not asked (and sent as proposed). None
    where a modal cannot hold the form: a field that takes JSON, or more than `FORM_INPUTS_MAX`.
    """
    blocks: list[Block] = []
    count = 0

    def add(field: Field) -> bool:
        nonlocal count
        if field.control == "fieldset":
            words = f"*{escape(field.label)}*" + (f"\n{escape(field.help)}" if field.help else "")
            blocks.append(SectionBlock(text=MarkdownTextObject(text=_clip(words, 3000))))
            return all(add(child) for child in field.children)
        if field.control == "json":
            return False
        count += 1
        if "readonly" in dict(field.attrs):
            said = f"*{escape(field.label)}:* {escape(field.value)}"
            if field.help:
                said += f"\n{escape(field.help)}"
            blocks.append(SectionBlock(text=MarkdownTextObject(text=_clip(said, 3000))))
            return True
        blocks.extend(_input_blocks(field))
        return True

    if not all(add(field) for field in form.fields) or count > FORM_INPUTS_MAX:
        return None
    return blocks


def _input_blocks(field: Field) -> list[Block]:
    """One field's input block(s)."""
    attrs = dict(field.attrs)
    label = f"{field.label} ({field.unit})" if field.unit else field.label
    element: Any
    if field.control in ("radio", "select"):
        options = [Option(value=v, text=_clip(t, 75)) for v, t in field.options]
        if field.other is not None:
            options.append(Option(value=OTHER, text="Something else"))
        chosen = next((o for o in options if o.value == field.value), None)
        kind = RadioButtonsElement if len(options) <= 10 else StaticSelectElement
        element = kind(action_id=VALUE, options=options[:100], initial_option=chosen)
    elif field.control == "number":
        element = NumberInputElement(
            action_id=VALUE,
            is_decimal_allowed=field.kind != "integer",
            initial_value=field.value or None,
            min_value=attrs.get("min"),
            max_value=attrs.get("max"),
        )
    elif attrs.get("type") == "date":
        element = DatePickerElement(action_id=VALUE, initial_date=field.value or None)
    else:
        element = PlainTextInputElement(
            action_id=VALUE,
            multiline=field.control in ("textarea", "lines"),
            initial_value=_clip(field.value, 3000) or None,
            max_length=min(int(attrs.get("maxlength", 3000)), 3000),
            placeholder="One per line" if field.control == "lines" else None,
        )
    hint = field.help
    blocks: list[Block] = [
        InputBlock(
            block_id=field.name,
            label=_clip(label, 2000),
            element=element,
            optional=not field.required or field.if_filled,
            hint=_clip(hint, 2000) if hint else None,
        )
    ]
    if field.other is not None:
        blocks.append(
            InputBlock(
                block_id=f"{field.name}_other",
                label="Something else (if chosen)",
                element=PlainTextInputElement(
                    action_id=VALUE, initial_value=field.other or None, max_length=2000
                ),
                optional=True,
            )
        )
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


def message_of(notice: Notice, *, forms: bool = False) -> dict[str, Any]:
    """The incoming-webhook body for a notice (`forms`: see `request_blocks`)."""
    request = notice.request
    notes = {
        "escalated": f":rotating_light: Escalated to *{escape(request.team)}*",
        "reassigned": f":arrow_right: Reassigned to *{escape(request.assignee or request.team)}*",
    }
    note = notes.get(notice.event)
    blocks = request_blocks(request, notice.url, note=note, forms=forms)
    return {"text": notice.headline, "blocks": [b.to_dict() for b in blocks]}


class SlackChannel:
    """Posts Block Kit messages to an incoming webhook."""

    name = "slack"
    follows_answers = False

    def __init__(self, webhook_url: str, *, timeout_s: float = 10.0, forms: bool = False) -> None:
        self._url = webhook_url
        self._timeout_s = timeout_s
        self._forms = forms  # a bot token opens the forms' modals (`SlackActions`)

    async def send(self, notice: Notice) -> str | None:
        """POST the message; `NotificationFailed` unless Slack answers 2xx."""
        try:
            async with http.client(self._timeout_s) as client:
                reply = await client.post(self._url, json=message_of(notice, forms=self._forms))
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
        decision = action_id.removeprefix(f"{FORM}.") if action_id.startswith(f"{FORM}.") else ""
        opening = decision in DECISION_LABELS and self._web is not None
        if (action_id not in (APPROVE, REJECT) and not answering and not opening) or not isinstance(
            response_url, str
        ):
            return SlackResult()
        user, slack_user = await self._user_of(payload)
        if user is None:
            return SlackResult(reply=_only_you(response_url, _not_linked(slack_user)))
        if answering:
            return await self._answer_clicked(str(action.get("value") or ""), user, response_url)
        if opening:
            request_id = str(action.get("value") or "")
            return await self._open_form(payload, request_id, decision, user, response_url)
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
            return SlackResult(reply=_only_you(response_url, refused_text(answer["decision"], exc)))
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
            return SlackResult(reply=_only_you(response_url, refused_text("answer", exc)))
        return SlackResult(reply=SlackReply(response_url, outcome))

    async def _answerable(self, request_id: str, user: User) -> HumanRequest:
        """The request, if `user` may answer it now (else the service's refusal, raised)."""
        request = await self._requests.get(request_id, viewer=user)
        refuse_closed(request)
        check_can_answer(user, request)
        return request

    async def _ask_reason(
        self, payload: dict[str, Any], request_id: str, user: User, response_url: str
    ) -> SlackResult:
        """Open the modal that asks why (within the click's three seconds, as Slack needs).

        Someone who could not reject it (a viewer, another team, the request closed) is told so
        at once rather than after typing a reason.
        """
        try:
            request = await self._answerable(request_id, user)
        except BatonError as exc:
            return SlackResult(reply=_only_you(response_url, refused_text("reject", exc)))
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
        return await self._show(payload, view, response_url)

    async def _open_form(
        self,
        payload: dict[str, Any],
        request_id: str,
        decision: str,
        user: User,
        response_url: str,
    ) -> SlackResult:
        """Open the modal of a decision's form (its fields as the page's), within three seconds.

        Someone who could not answer is told so at once; a form a modal cannot hold is the
        page's. The arguments an edit may not change ride in the modal's metadata, as proposed.
        """
        try:
            request = await self._answerable(request_id, user)
        except BatonError as exc:
            return SlackResult(reply=_only_you(response_url, refused_text(decision, exc)))
        base = {"request_id": request.id, "decision": decision, "response_url": response_url}
        view = self._form_view(request, decision, base)
        if view is None:
            page = self._links.page(request.id)
            return SlackResult(
                reply=_only_you(response_url, f"Give this answer on its page: {page}")
            )
        return await self._show(payload, view, response_url)

    def _form_view(
        self,
        request: HumanRequest,
        decision: str,
        meta: dict[str, Any],
        *,
        typed: FormValues | None = None,
        check: EditCheck | None = None,
    ) -> View | None:
        """The modal of a decision's form; None where a modal cannot hold it.

        `typed`: the fields as sent, shown again; `check`: an edit's check, shown above them,
        its digest in the metadata and Confirm edit the modal's button. The arguments an edit
        may not change ride in the metadata, as proposed.
        """
        fixed = self._requests.fixed_arguments(request)
        form = decision_form(request, decision, raw=typed, fixed=fixed)
        blocks = form_blocks(form) if form is not None else None
        kept = kept_arguments(request, fixed)
        meta = meta | ({"kept": kept} if kept else {})
        if check is not None:
            meta[CONFIRM] = check.digest
        text = json.dumps(meta)
        if form is None or blocks is None or len(text) > 3000:
            return None
        heading = f"*{escape(_clip(request.title, 200))}*"
        if check is not None:
            heading += (
                "\n*Check your edit, then confirm it:* nothing is recorded until you do; "
                f"change a field to check it again.\n{escape(said(check))}"
            )
        title = SectionBlock(text=MarkdownTextObject(text=_clip(heading, 3000)))
        return View(
            type="modal",
            callback_id=FORM,
            title=_clip(form.label, 24),
            submit="Confirm edit" if check is not None else _clip(form.submit, 24),
            close="Cancel",
            private_metadata=text,
            blocks=[title, *blocks],
        )

    async def _show(self, payload: dict[str, Any], view: View, response_url: str) -> SlackResult:
        """Open `view` for the click's trigger; a failure is told to the clicker."""
        assert self._web is not None
        try:
            async with asyncio.timeout(self._timeout_s):
                await self._web.views_open(
                    trigger_id=str(payload.get("trigger_id") or ""), view=view
                )
        except (SlackApiError, SlackClientError, OSError, TimeoutError) as exc:
            logger.warning("slack views.open failed", extra={"error": str(exc)})
            return SlackResult(reply=_only_you(response_url, f"Could not open the form: {exc}"))
        return SlackResult()

    async def _form_sent(self, payload: dict[str, Any], view: dict[str, Any]) -> SlackResult:
        """A decision's modal sent: answer with its fields, or keep it open, errors beside them."""
        try:
            meta = json.loads(view.get("private_metadata") or "{}")
        except json.JSONDecodeError:
            meta = {}
        meta = meta if isinstance(meta, dict) else {}
        request_id, decision = str(meta.get("request_id") or ""), str(meta.get("decision") or "")
        found = meta.get("kept")
        kept: dict[str, Any] = found if isinstance(found, dict) else {}
        values = (view.get("state") or {}).get("values") or {}
        checked = meta.get(CONFIRM)
        typed = FormValues(
            [
                ("decision", decision),
                *_typed(values),
                *((k, _text(v)) for k, v in kept.items()),
                *([(CONFIRM, checked)] if isinstance(checked, str) else []),
            ]
        )
        user, slack_user = await self._user_of(payload)
        if user is None:
            return _errors_in(values, {"": _not_linked(slack_user)})
        try:
            request = await self._requests.get(request_id, viewer=user)
            answer = answer_from_form(request, typed)
            check = await unconfirmed(self._requests, request_id, answer, typed, user)
            if check is not None:  # an edit is checked first, as on the request's page
                base = {k: v for k, v in meta.items() if k not in ("kept", CONFIRM)}
                again = self._form_view(request, decision, base, typed=typed, check=check)
                if again is None:  # (never recorded unchecked)
                    page = self._links.page(request.id)
                    return _errors_in(values, {"": f"Check this edit on its page: {page}"})
                return SlackResult(response={"response_action": "update", "view": again.to_dict()})
            outcome = await self._answer(request_id, user, answer)
        except InvalidAnswer as exc:
            placed = {
                ".".join(str(p) for p in e.get("loc", [])): str(e.get("msg", "is invalid"))
                for e in exc.errors
            }
            return _errors_in(values, placed or {"": str(exc)})
        except BatonError as exc:
            return _errors_in(values, {"": refused_text(decision, exc)})
        response_url = meta.get("response_url")
        reply = SlackReply(response_url, outcome) if isinstance(response_url, str) else None
        return SlackResult(reply=reply)

    async def _submitted(self, payload: dict[str, Any]) -> SlackResult:
        """A modal sent: a decision's form, or a reason to reject (else, say in it why not)."""
        view = payload.get("view") or {}
        if isinstance(view, dict) and view.get("callback_id") == FORM:
            return await self._form_sent(payload, view)
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
            return _field_error(refused_text("reject", exc))
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
        verbs = {
            "approve": approved_words(request, answer),
            "reject": "Rejected",
            "edit": "Approved with changes" if request.kind == "approval" else "Edited",
            "resolve": "Resolved",
            "return": "Handed back",
        }
        answered = answer.get("answer")
        plain = answered is None or isinstance(answered, str | int | float | bool)
        said = f"Answered {option_label(answered)}" if plain else "Answered"
        verb = verbs.get(answer["decision"]) or said
        done = request.status not in OPEN_STATUSES
        note = f"*{verb}* by {escape(who)} from Slack" + (
            "" if done else f" ({len(request.answers)} of {request.approvals_required} approvals)"
        )
        blocks = request_blocks(
            request, self._links.page(request.id), note=note, forms=self._web is not None
        )
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


def _typed(values: Any) -> list[tuple[str, str]]:
    """A modal's inputs as a form post: each block's (its field's path) one value, as text."""
    typed: list[tuple[str, str]] = []
    for block_id, elements in values.items() if isinstance(values, dict) else ():
        element = (elements or {}).get(VALUE) if isinstance(elements, dict) else None
        if not isinstance(element, dict):
            continue
        kind = element.get("type")
        found: Any = element.get("value")
        if kind in ("radio_buttons", "static_select"):
            found = (element.get("selected_option") or {}).get("value")
        elif kind == "datepicker":
            found = element.get("selected_date")
        if isinstance(found, str):
            typed.append((str(block_id), found))
    return typed


def _text(value: Any) -> str:
    return json.dumps(value) if not isinstance(value, str) else value


def _errors_in(values: Any, errors: Mapping[str, str]) -> SlackResult:
    """A sent modal kept open, each error under its field's input (else under the first one).

    Slack places an error only under an input block of the modal: one naming no field, or a
    field the modal has no input for, goes under the first input.
    """
    inputs = list(values) if isinstance(values, dict) else []
    placed: dict[str, str] = {}
    for path, message in errors.items():
        where = path if path in inputs else (inputs[0] if inputs else "")
        said = message if where == path else (f"{path}: {message}" if path else message)
        placed[where] = f"{placed[where]}; {said}" if where in placed else said
    return SlackResult(
        response={
            "response_action": "errors",
            "errors": {k: _clip(v, 150) for k, v in placed.items() if k},
        }
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
