"""The store Protocols every backend implements, one per concept, and `Store`, their union.

Each method that must be atomic is one transaction in every backend: a drive's progress
(`record_progress`: a pause, or a run's end, with the effects the drive performed), an answer
(`record_answer`), a run's creation and its cancellation, a timer's firing (`fire_timer`) and a
delivery attempt (`record_delivery`).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, SkipValidation

from human.attachments import Kept
from human.records import (
    LANES,
    AnswerRecord,
    ApiToken,
    AuditEvent,
    HumanRequest,
    Job,
    JobLane,
    NewEvent,
    Notification,
    NotificationEvent,
    Page,
    Retrying,
    Run,
    RunStatus,
    Team,
    TeamsCard,
    TeamsConversation,
    User,
)


class NewCheckpoint(BaseModel):
    """An encoded MAF checkpoint to persist with the progress it belongs to."""

    model_config = ConfigDict(frozen=True)

    id: str
    body: bytes


class NewTimer(BaseModel):
    """A durable timer on a request, due by Baton's clock: expire it, escalate it, end a claim."""

    model_config = ConfigDict(frozen=True)

    request_id: str
    run_id: str
    action: Literal["expire", "escalate", "lapse_claim"]
    due_at: datetime
    step: int | None = Field(None, description="The escalation rung, for `escalate`.")


class NewNotification(BaseModel):
    """An outbox row: tell `channel` that a request was created, escalated or reassigned."""

    model_config = ConfigDict(frozen=True)

    request_id: str
    run_id: str
    channel: str
    event: NotificationEvent


FAILED: Final = "baton_tool_failed"
"""The key of a plain tool's recorded failure: its result is `{FAILED: "TimeoutError: …"}`."""


def failure_of(result: Any) -> str | None:
    """The error a recorded result says its call raised (`FAILED`), or None for a result."""
    if isinstance(result, dict) and len(result) == 1 and isinstance(result.get(FAILED), str):
        return str(result[FAILED])
    return None


class NewEffect(BaseModel):
    """A side effect a drive performed (`human.effects.EffectLedger`), recorded with its progress.

    The called system was handed `key` and dedupes on it: the record is the ledger's memory of
    the first result, written in the same transaction as the drive that performed the call.
    """

    model_config = ConfigDict(frozen=True)

    key: str
    run_id: str
    tool: str
    arguments: dict[str, Any]
    result: Any = None
    started: bool = False
    """Its start was kept (`EffectStore.start_effect`): its record ends it."""


class Progress(BaseModel):
    """What one drive of a run produced, committed at once or not at all.

    The write is fenced: it applies only while the run still points at `expected_checkpoint_id`,
    so a worker that lost its lease cannot overwrite the progress of the one that took over.
    A fenced-off progress loses its `effects` with the rest, which is safe: the worker that took
    over performs the same calls with the same idempotency keys, and the called systems, which
    dedupe on them, return their first results.
    """

    model_config = ConfigDict(frozen=True)

    run_id: str
    expected_checkpoint_id: str | None
    job_id: int | None
    status: RunStatus
    output: Any = None
    error: str | None = None
    checkpoint: NewCheckpoint | None = None
    new_requests: Sequence[HumanRequest] = ()
    delivered_request_ids: Sequence[str] = ()
    events: Sequence[NewEvent] = ()
    timers: Sequence[NewTimer] = ()
    notifications: Sequence[NewNotification] = ()
    transcript: Sequence[dict[str, Any]] = Field(
        default=(), description="Conversation entries of this drive, appended to the run's."
    )
    effects: Sequence[NewEffect] = Field(
        default=(), description="The effects this drive performed, each with its event, once."
    )
    attachments: Sequence[Kept] = Field(
        default=(),
        description="The files its new requests and conversation entries came with, each kept "
        "once (`human.attachments`).",
    )
    closing_channels: Sequence[str] = Field(
        default=(),
        description="A run that ends cancels its open requests: these channels (those that "
        "follow a request to its end) are told of each, as of an answer.",
    )


class Lease(BaseModel):
    """A worker that takes the job a write queues, in the same transaction."""

    model_config = ConfigDict(frozen=True)

    owner: str
    seconds: float


@dataclass(frozen=True)
class EffectLookup:
    """An effect's record, if any, and the status of the run about to perform it."""

    recorded: dict[str, Any] | None
    """`get_effect`'s answer: the key, tool and result recorded, or None."""
    run_status: RunStatus | None
    """The run's status now (None: no such run)."""
    started: bool = False
    """A drive started the call (`start_effect`) and nothing recorded its end."""


@dataclass(frozen=True)
class InPlay:
    """What a drive of a run starts from, read in one transaction.

    `Store.run_in_play` reads it in a read transaction of its own; an answer that queues its run's
    resume for this process reads it in its own write transaction, after the answer (on
    PostgreSQL, under the run's row lock, each statement seeing what was committed before it).
    """

    run: Run
    open: list[HumanRequest]
    """Requests still waiting for a person, oldest first."""
    answered: list[HumanRequest]
    """Requests answered (or expired) and not yet delivered, in answer order."""
    checkpoint: bytes | None = None
    """The encoded body of the run's current checkpoint, when an answer waits to be delivered."""
    transcript: list[dict[str, Any]] | None = None
    """The run's conversation entries so far, in order, when an answer waits to be delivered:
    what the drive's requests show people (None: not read)."""


class AnswerOutcome(BaseModel):
    """What `record_answer` did: closed the request, counted one approval, or nothing."""

    model_config = ConfigDict(frozen=True)

    result: Literal["closed", "partial", "repeated", "not_open", "claimed"]
    request: HumanRequest
    job: Job | None = None
    in_play: SkipValidation[InPlay | None] = None
    """With a `job` leased to the answering process: what its drive starts from, read with the
    answer (the drive reads it again if it cannot start at once)."""


class ClaimOutcome(BaseModel):
    """What a claim, release or reassignment did, and the request after it.

    `claimed`/`renewed`/`released`/`reassigned`: done. `held`: someone else's claim is live.
    `not_claimed`: there was no live claim to release. `not_open`: the request is closed.
    """

    model_config = ConfigDict(frozen=True)

    result: Literal[
        "claimed", "renewed", "released", "reassigned", "held", "not_claimed", "not_open"
    ]
    request: HumanRequest


class TimerOutcome(BaseModel):
    """What a fired timer did.

    `expired`, `escalated`, `released` (a lapsed claim), `dropped` (nothing left to do: the
    request closed or moved on), or `lost` (the job's lease was lost to another worker).
    """

    model_config = ConfigDict(frozen=True)

    result: Literal["expired", "escalated", "released", "dropped", "lost"]
    request: HumanRequest | None = None


class LocalWorker(Protocol):
    """The worker in this process, which takes the jobs this process queues (see `Lease`)."""

    @property
    def lease(self) -> Lease:
        """Owner and duration for jobs leased to this worker."""
        ...

    def accept(self, job: Job, in_play: InPlay | None = None) -> None:
        """Run a job already leased to this worker.

        `in_play`: for a drive, what it starts from as the queuing transaction left it; the
        drive reads it again if it cannot start at once.
        """
        ...

    def stop_run(self, run_id: str) -> None:
        """Stop this worker's drive of `run_id` (the run was cancelled): its work is for nobody."""
        ...

    def wake(self, lanes: Iterable[JobLane] = LANES) -> None:
        """Look for due jobs in `lanes` now (this process queued some there)."""
        ...


class Viewer(BaseModel):
    """Whose eyes a list is for: the runs they started and the runs their teams take part in."""

    model_config = ConfigDict(frozen=True)

    name: str
    teams: tuple[str, ...] = ()


class Actor(BaseModel):
    """Who would act on requests now: whether a request is theirs to act on (`RequestFilter`)."""

    model_config = ConfigDict(frozen=True)

    name: str
    answers: bool = Field(True, description="False for one who answers nothing (a viewer).")
    at: datetime = Field(description="Now: another person's claim holds until it lapses.")


class RequestFilter(BaseModel):
    """Filters of the request list; every field optional."""

    model_config = ConfigDict(frozen=True)

    status: str | None = None
    team: str | None = None
    kind: str | None = None
    run_id: str | None = None
    workflow: str | None = None
    assignee: str | None = None
    teams: tuple[str, ...] | None = None
    overdue_at: datetime | None = Field(
        None, description="Only open requests whose deadline is before this moment."
    )
    visible_to: Viewer | None = Field(
        None, description="Only requests of runs this viewer may see (None: every request)."
    )
    statuses: tuple[str, ...] | None = Field(
        None, description="Only requests in one of these statuses (besides `status`)."
    )
    claimed_by: str | None = Field(None, description="Only requests this person holds a claim on.")
    answered_by: str | None = Field(
        None, description="Only requests this person answered (an approval of two counts)."
    )
    unassigned: bool = Field(False, description="Only requests nobody is assigned or claims.")
    search: str | None = Field(
        None,
        min_length=1,
        max_length=200,
        description="Only requests whose title, reason or context holds this text (any case), "
        "or whose id or run id it is.",
    )
    waiting_for: Viewer | None = Field(
        None,
        description="Only requests of the viewer's teams, assigned to them or claimed by them.",
    )
    actionable_by: Actor | None = Field(
        None,
        description="Only requests this person may act on now (`human.access.held_from`): none "
        "another person's live claim holds, none four-eyes keeps them from approving (they "
        "started its run), none they approved already; none at all for one who answers nothing.",
    )
    held_from: Actor | None = Field(
        None, description="Only the requests `actionable_by` the same person would leave out."
    )
    sort: Literal["newest", "urgent"] = Field(
        "newest",
        description="`newest` first, or most `urgent` first: priority, then the nearest "
        "deadline or escalation before it (`human.routing.escalates_at`; none last), then the "
        "newest.",
    )
    limit: int = Field(50, ge=1, le=500)
    cursor: str | None = None


class RequestFact(BaseModel):
    """What a team's dashboard counts of one request: team, rule, times and the decision given."""

    model_config = ConfigDict(frozen=True)

    team: str
    status: str
    policy_rule: str | None
    created_at: datetime
    answered_at: datetime | None
    expires_at: datetime | None
    escalation_level: int
    decision: str | None


class RunBrief(BaseModel):
    """What a list of runs says of each beyond its row: its requests and its effects' events.

    Enough for `human.summary.outcome_of`, the one derivation of what a run did, read for a
    page of runs at once.
    """

    model_config = ConfigDict(frozen=True)

    requests: list[HumanRequest] = Field(default_factory=list, description="Oldest first.")
    effect_events: list[AuditEvent] = Field(
        default_factory=list,
        description="Its `effect.executed`, `effect.uncertain` and `effect.failed` events, "
        "oldest first.",
    )


class RunKey(BaseModel):
    """A client's idempotency key for starting a run, and a digest of what it asked."""

    model_config = ConfigDict(frozen=True)

    key: str
    digest: str


class KeyTaken(Exception):
    """The person's idempotency key was taken by another start first; nothing was stored."""


class RunStore(Protocol):
    """Runs and their checkpoints: a run's creation, each drive's progress, its end.

    `record_progress`, `create_run` and `cancel_run` are each one transaction.
    """

    async def create_run(
        self,
        run: Run,
        events: Sequence[NewEvent],
        *,
        lease: Lease | None = None,
        key: RunKey | None = None,
    ) -> Job | None:
        """Store a new run, its audit events and its start job (leased at once with `lease`).

        With `key`, the run is stored under the creator's idempotency key in the same
        transaction; `KeyTaken` (and nothing stored) when that key is already theirs.
        """
        ...

    async def run_of_key(self, created_by: str, key: str) -> RunKey | None:
        """The run a person's idempotency key started (`RunKey.key` is the run's id), if any."""
        ...

    async def get_run(self, run_id: str) -> Run | None:
        """A run by id."""
        ...

    async def runs_continuing(self, run_id: str) -> list[str]:
        """The runs that continue `run_id`'s conversation (`Run.continues`): ids, oldest first."""
        ...

    async def run_retrying(self, run_id: str) -> Retrying | None:
        """The run's drive that failed and waits to be tried again, if one does."""
        ...

    async def runs_retrying(self, run_ids: Sequence[str]) -> dict[str, Retrying]:
        """`run_retrying` of many runs: those of `run_ids` with one, by run id."""
        ...

    async def run_briefs(self, run_ids: Sequence[str]) -> dict[str, RunBrief]:
        """Each of `run_ids`' requests and effect events, by run id, in a fixed few statements."""
        ...

    async def list_runs(
        self,
        *,
        status: str | None,
        workflow: str | None,
        cursor: str | None,
        limit: int,
        visible_to: Viewer | None = None,
    ) -> Page:
        """Runs, newest first (only those `visible_to` may see, when given)."""
        ...

    async def teams_of_run(self, run_id: str) -> frozenset[str]:
        """The teams that own one of the run's requests (which lets their members see the run)."""
        ...

    async def record_progress(self, progress: Progress) -> bool:
        """Commit one drive's outcome; False if the run moved on meanwhile (fenced)."""
        ...

    async def cancel_run(
        self, run_id: str, actor: str, *, notify: Sequence[str] = (), reason: str | None = None
    ) -> Run | None:
        """Cancel an unfinished run and its open requests; None if it had already ended.

        `notify`: channels told of each request it cancels (those that follow a request to its
        end), as of an answer. `reason`, the canceller's why, is kept in the `run.cancelled`
        event's data and in each `request.cancelled` event's.
        """
        ...

    async def load_checkpoint(self, checkpoint_id: str) -> bytes | None:
        """An encoded checkpoint body."""
        ...

    async def list_transcript(self, run_id: str) -> list[dict[str, Any]]:
        """A run's conversation entries, in order."""
        ...


class RequestStore(Protocol):
    """Requests and their answers, and who holds one: claims, releases, reassignment.

    `record_answer` is one transaction: first answer wins, approvals counted per person.
    """

    async def get_request(self, request_id: str) -> HumanRequest | None:
        """A request with its answers."""
        ...

    async def request_with_run(self, request_id: str) -> tuple[HumanRequest, Run] | None:
        """A request with its answers, and its run, read in one transaction (None: no request)."""
        ...

    async def load_attachment(self, attachment_id: str) -> Kept | None:
        """A kept file by its id (the SHA-256 of its bytes); None when none is kept so."""
        ...

    async def list_requests(self, flt: RequestFilter) -> Page:
        """Requests, newest first, keyset-paginated."""
        ...

    async def count_requests(self, flt: RequestFilter) -> dict[str, int]:
        """How many requests match `flt` per status (its status, cursor and limit ignored)."""
        ...

    async def request_facts(
        self, *, since: datetime, teams: Sequence[str] | None
    ) -> list[RequestFact]:
        """The facts of every request created since `since` and every open one (of `teams`)."""
        ...

    async def run_in_play(self, run_id: str) -> InPlay | None:
        """A run with its open and its answered-undelivered requests, read at once (a drive's)."""
        ...

    async def record_answer(
        self,
        answer: AnswerRecord,
        *,
        final: dict[str, Any],
        lease: Lease | None = None,
        audit: dict[str, Any] | None = None,
        notifications: Sequence[NewNotification] = (),
    ) -> AnswerOutcome:
        """Apply an answer if the request is open: first answer wins, approvals are counted.

        `audit` is added to the `request.answered` event's data (e.g. an edit's diff);
        `notifications` are outbox rows written with the answer (none if it changed nothing).
        """
        ...

    async def claim_request(self, request_id: str, actor: str, *, until: datetime) -> ClaimOutcome:
        """Claim an open request for `actor` until `until` (Baton's clock), by a conditional write.

        Someone else's live claim wins (`held`); the holder claiming again renews it; a lapsed
        claim counts as none. Writes `request.claimed` and a timer that ends the claim at `until`.
        """
        ...

    async def release_request(
        self, request_id: str, actor: str, *, holder: str | None
    ) -> ClaimOutcome:
        """End a live claim and write `request.released`: only `holder`'s, or anyone's if None."""
        ...

    async def reassign_request(
        self,
        request_id: str,
        actor: str,
        *,
        team: str | None,
        assignee: str | None,
        channels: Sequence[str] = (),
    ) -> ClaimOutcome:
        """Move an open request to another team and/or person, ending any claim; audited.

        When the move changes who should answer, `channels` get outbox rows telling them.
        """
        ...


class JobStore(Protocol):
    """The work queue (start, resume, timer and notify jobs), each job leased to one worker."""

    async def wait_for_jobs(self, timeout_s: float) -> None:
        """Return when another process may have queued a job, or after `timeout_s`."""
        ...

    async def jobs_due(self, lane: JobLane | None = None) -> bool:
        """Whether any job (of `lane`, if given) is due and unleased: one cheap read."""
        ...

    async def lanes_due(self) -> frozenset[JobLane]:
        """The lanes that have a job due and unleased: `jobs_due` of each lane in one read."""
        ...

    async def lease_jobs(
        self,
        owner: str,
        *,
        limit: int,
        lease_s: float,
        lane: JobLane | None = None,
        checked: bool = False,
    ) -> list[Job]:
        """Lease due jobs, never two drive jobs of one run at once; only `lane`'s, if given.

        `checked`: the caller has just read that the lane has a job due (`lanes_due`), so the
        read a lease takes first, to find nothing cheaply, is skipped.
        """
        ...

    async def renew_leases(
        self, owner: str, job_ids: Sequence[int], *, lease_s: float
    ) -> list[int]:
        """Extend the leases this owner holds; the drive jobs among them whose run was cancelled."""
        ...

    async def finish_job(self, job_id: int, owner: str) -> None:
        """Delete a done job."""
        ...

    async def retry_job(
        self, job_id: int, owner: str, *, delay_s: float, error: str, counted: bool = True
    ) -> None:
        """Release a failed job for a later attempt; `counted=False` gives its attempt back."""
        ...


class EffectStore(Protocol):
    """The effect ledger: a side effect is recorded once per idempotency key.

    Effects are written by `record_progress`, with the drive that performed them.
    """

    async def get_effect(self, key: str) -> dict[str, Any] | None:
        """The recorded result of an effect."""
        ...

    async def effect_in_run(self, key: str, run_id: str) -> EffectLookup:
        """The effect recorded for `key`, and the status of run `run_id`, in one read.

        What `EffectLedger.perform` reads before a call. The status is None for no such run (as
        for `baton check`'s runs, which are never stored).
        """
        ...

    async def start_effect(self, effect: NewEffect) -> bool:
        """Note durably that a call whose system takes no key is about to run (its `result` unused).

        Until `record_effect` (or a drive's progress with the effect) ends it, a later drive that
        finds it knows the call may have acted. False: a start of the key was there (another
        drive's claim): the caller must not call.
        """
        ...

    async def record_effect(
        self, effect: NewEffect, *, uncertain: bool = False, replaces: Any = None
    ) -> None:
        """Record an effect now, durably, with its event (once per key), ending its start.

        For a call whose system was handed no key (a plain tool): the record is all that
        remembers it, so it is not left to the drive's commit. `uncertain`: the call was started
        and never recorded (its process stopped): its event is `effect.uncertain`, and `result`
        is what the model is told instead of a second call. A `result` that is a failure
        (`failure_of`: the tool raised) has the event `effect.failed`. `replaces`: a recorded
        result this one replaces, with its own event (the uncertain one another drive recorded
        while this call still ran).
        """
        ...


class PeopleStore(Protocol):
    """Teams, users, API tokens and failed sign-ins."""

    async def add_team(
        self, name: str, description: str = "", *, events: Sequence[NewEvent] = ()
    ) -> bool:
        """Create a team if missing (with `events`, audit); False if it existed."""
        ...

    async def add_user(
        self,
        name: str,
        *,
        role: str,
        teams: Sequence[str],
        password_hash: str | None = None,
        email: str | None = None,
        slack_id: str | None = None,
        entra_id: str | None = None,
        time_zone: str | None = None,
        events: Sequence[NewEvent] = (),
    ) -> User:
        """Create or update a user and set their teams (with `events`, audit).

        `password_hash`, `email`, `slack_id`, `entra_id` and `time_zone` left None keep what is
        stored; "" clears the email, Slack id, Entra object id or time zone.
        """
        ...

    async def keep_time_zone(self, name: str, time_zone: str) -> bool:
        """Give `name` this time zone if they have none (their browser's, at sign-in).

        Whether it was kept.
        """
        ...

    async def get_user(self, name: str) -> User | None:
        """A user by name."""
        ...

    async def list_users(self) -> list[User]:
        """Every user, by name."""
        ...

    async def list_teams(self) -> list[Team]:
        """Every team with its members, by name."""
        ...

    async def team_members(self, team: str) -> list[User]:
        """The users in a team, by name."""
        ...

    async def user_for_slack_id(self, slack_id: str) -> User | None:
        """The user whose Slack user id this is."""
        ...

    async def user_for_entra_id(self, entra_id: str) -> User | None:
        """The user whose Entra object id (a Teams user's `aadObjectId`) this is."""
        ...

    async def user_for_email(self, email: str) -> User | None:
        """The user with this email address, compared without regard to case."""
        ...

    async def credentials(self, name: str) -> tuple[User, str | None] | None:
        """A user and their password hash (None: no password set), for sign-in."""
        ...

    async def sign_in_streak(self, name: str, *, window_s: float) -> tuple[int, float] | None:
        """The failed sign-ins in a row for the name tried, and how many seconds ago the last was.

        None when there were none in the last `window_s` seconds (by the store's clock).
        """
        ...

    async def note_failed_sign_in(self, name: str, *, window_s: float) -> int:
        """Count a failed sign-in for the name tried; the streak's length with it.

        A streak whose last failure is older than `window_s` starts over (and stale streaks are
        forgotten).
        """
        ...

    async def clear_failed_sign_ins(self, name: str) -> None:
        """End the name's streak (a successful sign-in)."""
        ...

    async def end_session(self, session_id: str, *, keep_s: float) -> None:
        """Note a browser session signed out (and forget those ended over `keep_s` ago)."""
        ...

    async def session_ended(self, session_id: str) -> bool:
        """Whether a browser session was signed out."""
        ...

    async def add_token(
        self,
        user_id: str,
        token_hash: str,
        label: str = "",
        *,
        token_id: str | None = None,
        hint: str = "",
        events: Sequence[NewEvent] = (),
    ) -> str:
        """Store an API token's hash (with `events`, audit); its public id."""
        ...

    async def user_for_token(self, token_hash: str) -> User | None:
        """The user of an unrevoked token."""
        ...

    async def list_tokens(self, user_id: str | None = None) -> list[ApiToken]:
        """API tokens (of one user, or everyone's), newest first; never the tokens themselves."""
        ...

    async def get_token(self, token_id: str) -> ApiToken | None:
        """An API token by its public id."""
        ...

    async def revoke_token(
        self, token_id: str, *, events: Sequence[NewEvent] = ()
    ) -> ApiToken | None:
        """Revoke a token (kept as it was if already revoked), with `events`; None if unknown."""
        ...


class OutboxStore(Protocol):
    """Timers to fire and notifications to deliver, each applied in one transaction."""

    async def fire_timer(
        self,
        job: Job,
        owner: str,
        *,
        channels: Sequence[str],
        answer_channels: Sequence[str] = (),
    ) -> TimerOutcome:
        """Apply a due timer job in one transaction (expire, escalate, end a claim) and finish it.

        Applies at most once whatever happens: a timer whose work is done, or no longer due by the
        request's state, is dropped. `channels` get outbox rows for an escalation,
        `answer_channels` for an expiry.
        """
        ...

    async def get_notification(self, notification_id: str) -> Notification | None:
        """An outbox row."""
        ...

    async def record_delivery(
        self,
        notification_id: str,
        *,
        job_id: int,
        owner: str,
        outcome: Literal["sent", "retrying", "failed", "skipped"],
        error: str | None = None,
        retry_in_s: float = 0.0,
        parts_sent: Sequence[str] = (),
    ) -> Notification | None:
        """Record one delivery attempt and its `request.notified` event; finish or delay the job.

        `retrying` gives the job back for another attempt in `retry_in_s`; the others end it.
        `parts_sent` (of a `retrying` attempt) are the parts it handed over before it failed,
        added to the row's `parts_sent` for the next attempt to leave out.
        None, with nothing written, when the row is gone or `owner` no longer holds the job.
        """
        ...


class TeamsStore(Protocol):
    """Where the Teams bot posts each team's requests, and the cards it posted."""

    async def link_teams_conversation(
        self, link: TeamsConversation, *, events: Sequence[NewEvent] = ()
    ) -> None:
        """Post `link.team`'s requests to this conversation from now on (replacing any other)."""
        ...

    async def teams_conversation(self, team: str) -> TeamsConversation | None:
        """The conversation a team's requests are posted to, if one is linked."""
        ...

    async def add_teams_card(self, card: TeamsCard) -> None:
        """Remember a card the bot posted (the same card twice is kept once)."""
        ...

    async def teams_cards(self, request_id: str) -> list[TeamsCard]:
        """The cards the bot posted about a request, oldest first."""
        ...


class AuditStore(Protocol):
    """The append-only audit trail, and a live feed of it."""

    async def list_events(
        self, *, run_id: str | None = None, request_id: str | None = None
    ) -> list[AuditEvent]:
        """Audit events in order."""
        ...

    def watch(self, *, after_id: int | None = None) -> AsyncGenerator[AuditEvent, None]:
        """Audit events as they commit, in any process, in commit order, until closed.

        With `after_id`, first every event after that id (a reconnecting client's catch-up).
        """
        ...

    async def last_event_id(self) -> int:
        """The id of the newest audit event (0 if none)."""
        ...


class Store(
    RunStore,
    RequestStore,
    JobStore,
    EffectStore,
    PeopleStore,
    OutboxStore,
    TeamsStore,
    AuditStore,
    Protocol,
):
    """Everything Baton keeps: the union of the Protocols above, and the database as a whole.

    A caller that needs one concept takes its Protocol; the wiring holds this.
    """

    async def setup(self) -> None:
        """Apply pending migrations, under a lock, idempotently."""
        ...

    async def close(self) -> None:
        """Release connections."""
        ...

    async def size_bytes(self) -> int:
        """Bytes the database takes on disk."""
        ...


def utcnow() -> datetime:
    """The current time, aware, in UTC."""
    from datetime import UTC

    return datetime.now(UTC)
