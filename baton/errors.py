"""The error tree every layer raises and only `web/errors.py` maps to HTTP.

BatonError
├── NotFound            404   RequestNotFound, RunNotFound, WorkflowNotFound, UserNotFound,
│                             TokenNotFound, NotConfigured
├── NotPermitted        403   CsrfRefused (and Unauthenticated 401: BadCredentials)
├── Conflict            409   AnswerConflict, RunNotCancellable, AlreadyTakeover,
│                             RequestClaimed, NotClaimed, RequestAnswered, AlreadyExists,
│                             ThreadEnded, RunNotEnded
├── Closed              410   RequestClosed
├── TooManySignIns      429   a name's failed sign-ins reached the bound; it waits out a lockout
├── Invalid             422   InvalidAnswer (EditRefused), InvalidInput, InvalidContinues,
│                             InvalidPolicy, InvalidSettings (carry per-field errors)
├── StoreError          500   a backend failed
│   └── StoreUnavailable  503   the database cannot serve now (disk full, read-only, locked
│                               past its timeout, unreachable): retry after `retry_after_s`
├── PauseNotDurable     500   a pause whose checkpoint could not be saved
└── NotificationFailed  500   a channel could not deliver (the outbox retries; never HTTP)
"""

from __future__ import annotations

import copy
from typing import Any, Self


class BatonError(Exception):
    """Root of every error Baton raises on purpose.

    `message` is the error as the API says it (`detail`), naming ids for programs; `facts` join
    the API's body. `to_reader`, where given, is the same refusal as a page says it to the person
    who tried, in the second person ("You cannot approve this request because you started its
    run …"); it is never part of the API's answer.
    """

    code = "baton_error"

    def __init__(self, message: str, *, to_reader: str | None = None, **facts: Any) -> None:
        super().__init__(message)
        self.facts = facts
        self.to_reader = to_reader


class NotFound(BatonError):
    """Something named by the caller does not exist (or must not be revealed)."""

    code = "not_found"


class RequestNotFound(NotFound):
    """No human request has that id."""

    code = "request_not_found"


class AttachmentNotFound(NotFound):
    """The request lists no file of that id (or it is no longer kept)."""

    code = "attachment_not_found"


class RunNotFound(NotFound):
    """No run has that id."""

    code = "run_not_found"


class WorkflowNotFound(NotFound):
    """No workflow is registered under that name."""

    code = "workflow_not_found"


class UserNotFound(NotFound):
    """No user has that name."""

    code = "user_not_found"


class NotPermitted(BatonError):
    """The caller is known but may not do this."""

    code = "not_permitted"


class Unauthenticated(NotPermitted):
    """The caller did not prove who they are."""

    code = "unauthenticated"


class Conflict(BatonError):
    """The call contradicts what is already stored."""

    code = "conflict"


class AnswerConflict(Conflict):
    """The request was already answered differently."""

    code = "answer_conflict"


class IdempotencyConflict(Conflict):
    """The idempotency key already started a run with another workflow or input."""

    code = "idempotency_conflict"


class RecordDamaged(Conflict):
    """Part of the stored request could not be read: nobody decides without all of it."""

    code = "record_damaged"


class RunNotCancellable(Conflict):
    """The run already ended."""

    code = "run_not_cancellable"


class RunNotEnded(Conflict):
    """A run continues another's conversation before that one ended (it may still ask)."""

    code = "run_not_ended"


class ThreadEnded(Conflict):
    """A chat's new message on an ended AG-UI thread whose workflow takes no conversation."""

    code = "thread_ended"


class RunEnded(Conflict):
    """The run ended (cancelled, say) while a drive of it ran: that drive calls no more tools."""

    code = "run_ended"


class Closed(BatonError):
    """The request was closed without an answer (expired or cancelled)."""

    code = "closed"


class RequestClosed(Closed):
    """The request expired or was cancelled; it takes no answer."""

    code = "request_closed"


class Invalid(BatonError):
    """The caller sent data that does not fit; `errors` names each field.

    Each error is `{"loc": [...], "msg": ...}`, its `loc` the field's path in what the raising
    function was given (`["decision"]`, `["input", "amount"]`). Where that data travelled in a
    call from outside (an HTTP body, a query) is the caller's to add, with `at`.
    """

    code = "invalid"

    def __init__(self, message: str, errors: list[dict[str, Any]] | None = None) -> None:
        super().__init__(message)
        self.errors = errors or []

    def at(self, *prefix: str | int) -> Self:
        """A copy whose every error's `loc` starts with `prefix` (`at("body")`: `["body", ...]`)."""
        moved = copy.copy(self)
        moved.errors = [{**e, "loc": [*prefix, *e.get("loc", [])]} for e in self.errors]
        return moved


class InvalidAnswer(Invalid):
    """An answer does not fit the request's schema or decisions."""

    code = "invalid_answer"


class EditRefused(InvalidAnswer):
    """An edit changes an argument the policy keeps, or breaks one of its invariants."""

    code = "edit_refused"


class InvalidInput(Invalid):
    """A run's input does not fit the workflow's input model."""

    code = "invalid_input"


class InvalidContinues(Invalid):
    """A run's `continues` names no run the caller may see, or its workflow takes none."""

    code = "invalid_continues"


class StoreError(BatonError):
    """A storage backend failed."""

    code = "store_error"


class StoreUnavailable(StoreError):
    """The database cannot take the call now; the same call may succeed in a few seconds.

    Raised by a backend that recognised its driver's error as the store's condition rather than
    the call's: the disk is full, the database is read-only, it is locked past its timeout, it
    cannot be reached. Nothing of the call was stored (a write is one transaction).
    """

    code = "store_unavailable"

    def __init__(self, message: str, *, retry_after_s: int = 5) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class PauseNotDurable(BatonError):
    """No persisted checkpoint covers a pause: the run fails instead of pretending."""

    code = "pause_not_durable"


class RunHeld(BatonError):
    """A paused run's checkpoint is of other code than this process runs: it waits for that code.

    The worker records it as the drive's error (`RunHeld: ...`) and tries the drive again later;
    the run's page and `GET /api/runs/{id}` show it (`retrying`).
    """

    code = "run_held"


class InvalidPolicy(Invalid):
    """A policies file does not parse or validate; each error names its line."""

    code = "invalid_policy"


class InvalidSettings(Invalid):
    """A setting Baton needs is missing or wrong; the message names it."""

    code = "invalid_settings"


class AlreadyTakeover(Conflict):
    """A takeover request cannot be taken over; it is answered."""

    code = "already_takeover"


class TokenNotFound(NotFound):
    """No API token with that id is the caller's to see."""

    code = "token_not_found"


class NotConfigured(NotFound):
    """An integration this Baton has no settings for (e.g. Slack without a signing secret)."""

    code = "not_configured"


class RequestClaimed(Conflict):
    """Someone else holds a live claim on the request (`claimed_by`, `claimed_until`)."""

    code = "request_claimed"


class NotClaimed(Conflict):
    """There is no live claim to release."""

    code = "not_claimed"


class RequestAnswered(Conflict):
    """The request was answered: it can no longer be claimed or moved."""

    code = "request_answered"


class AlreadyExists(Conflict):
    """A team or user of that name exists already."""

    code = "already_exists"


class NotificationFailed(BatonError):
    """A channel could not deliver a notification (the dispatcher retries it)."""

    code = "notification_failed"


class CsrfRefused(NotPermitted):
    """A form, or a write authenticated by the session cookie, came without the session's token."""

    code = "csrf_refused"


class BadCredentials(Unauthenticated):
    """A sign-in with an unknown name or a wrong password (which of the two is not told)."""

    code = "bad_credentials"


class TooManySignIns(BatonError):
    """Sign-ins under this name failed too often in a row; it is locked for `retry_after_s`."""

    code = "too_many_sign_ins"

    def __init__(self, message: str, *, retry_after_s: int) -> None:
        super().__init__(message, retry_after_s=retry_after_s)
        self.retry_after_s = retry_after_s
