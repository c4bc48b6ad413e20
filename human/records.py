"""The stored entities: runs, human requests, answers, audit events, users, jobs."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

RunStatus = Literal["running", "waiting", "completed", "failed", "cancelled"]
RequestStatus = Literal[
    "pending", "claimed", "answered", "resumed", "escalated", "expired", "cancelled"
]
Role = Literal["viewer", "responder", "admin"]

OPEN_STATUSES: tuple[str, ...] = ("pending", "claimed", "escalated")
TERMINAL_RUN: tuple[str, ...] = ("completed", "failed", "cancelled")


class Record(BaseModel):
    """Base of stored records: plain, serializable, unchanged after load."""

    model_config = ConfigDict(frozen=True)


FAULTS_DOC: Final = (
    "What of the stored record could not be read (a column that is not valid JSON, a value of "
    "the wrong shape), each as `field: why`; the record is given without it. Empty when whole."
)


class Run(Record):
    """One execution of a workflow."""

    id: str
    workflow: str
    input: dict[str, Any]
    status: RunStatus
    output: Any = None
    error: str | None = None
    created_by: str | None = None
    created_at: datetime
    updated_at: datetime
    checkpoint_id: str | None = None
    continues: str | None = Field(
        None,
        description="The ended run whose conversation this run continues: the workflow started "
        "on that run's messages (and those of the runs it continued), then this run's input.",
    )
    faults: list[str] = Field(default_factory=list, description=FAULTS_DOC)


NotificationStatus = Literal["queued", "sent", "failed", "skipped"]
# What a notification tells: a request waits, moved up its ladder, or was handed to someone else.
NotificationEvent = Literal["created", "escalated", "reassigned", "answered"]


class Notification(Record):
    """One message about a request on one channel, and how its delivery went."""

    id: str
    request_id: str
    run_id: str
    channel: str
    event: NotificationEvent
    status: NotificationStatus
    attempts: int = 0
    last_error: str | None = None
    parts_sent: list[str] = Field(
        default_factory=list,
        description="The parts of it already handed over by attempts that then failed (an "
        "email's message for each time zone among its recipients, by zone): a retry sends only "
        "the others.",
    )
    created_at: datetime
    updated_at: datetime


class AnswerRecord(Record):
    """One person's answer (or a system outcome) to a request."""

    request_id: str
    actor: str
    decision: str
    body: dict[str, Any]
    at: datetime
    faults: list[str] = Field(default_factory=list, description=FAULTS_DOC)


class Attachment(Record):
    """A file that came with a request (`human.attachments`): opened through the request."""

    id: str = Field(description="The SHA-256 of its bytes, in lowercase hex.")
    media_type: str = Field(description="Its media type, as the workflow gave it: `image/png`.")
    size: int = Field(description="Its size in bytes.")
    name: str = Field(description="It in words, as pages say it: `an image (PNG, 198 KB)`.")
    source: str = Field(
        description="Where it came: `the request` (the workflow's request data), `the user's "
        "message` or a tool's result (`file_expense's result`) in the run's conversation."
    )


class HumanRequest(Record):
    """A typed question to a person, durable while nobody answers it."""

    id: str
    run_id: str
    maf_request_id: str
    kind: str
    title: str
    reason: str
    context: dict[str, Any] = Field(default_factory=dict)
    proposed_action: dict[str, Any] | None = None
    payload: dict[str, Any] = Field(default_factory=dict)
    allowed_decisions: list[str]
    response_schema: dict[str, Any]
    team: str
    assignee: str | None = None
    priority: str = "normal"
    status: RequestStatus
    created_at: datetime
    expires_at: datetime | None = None
    approvals_required: int = 1
    policy_rule: str | None = None
    answer: dict[str, Any] | None = None
    answered_by: str | None = None
    answered_at: datetime | None = None
    answers: list[AnswerRecord] = Field(default_factory=list)
    claimed_by: str | None = None
    claimed_until: datetime | None = None
    escalation: list[dict[str, Any]] = Field(default_factory=list)
    escalation_level: int = 0
    notifications: list[Notification] = Field(default_factory=list)
    executor_id: str | None = Field(None, description="The workflow executor that asked.")
    attachments: list[Attachment] = Field(
        default_factory=list,
        description="The files that came with it (its data's, its conversation's so far), each "
        "opened at `/api/requests/{id}/attachments/{attachment id}`.",
    )
    faults: list[str] = Field(default_factory=list, description=FAULTS_DOC)


class AuditEvent(Record):
    """An append-only fact about a run or request."""

    id: int
    type: str
    at: datetime
    run_id: str | None
    request_id: str | None
    actor: str
    data: dict[str, Any] = Field(default_factory=dict)
    faults: list[str] = Field(default_factory=list, description=FAULTS_DOC)


class NewEvent(BaseModel):
    """An audit event about to be written."""

    type: str
    run_id: str | None = None
    request_id: str | None = None
    actor: str = "system"
    data: dict[str, Any] = Field(default_factory=dict)


class User(Record):
    """A person (or service) that acts in Baton."""

    id: str
    name: str
    role: Role
    teams: tuple[str, ...] = ()
    email: str | None = None
    slack_id: str | None = None
    entra_id: str | None = None
    time_zone: str | None = None
    """Their clock (an IANA name, `Europe/Berlin`): messages to them give times on it (UTC
    without one). An administrator sets it; else the browser's is kept at their first sign-in."""


JobLane = Literal["work", "delivery"]
"""Whose slots a job runs in: `delivery` for notifications, `work` for drives and timers."""
LANES: tuple[JobLane, ...] = ("work", "delivery")
DELIVERY_KINDS: tuple[str, ...] = ("notify",)
"""The jobs that wait on someone else's server, and so never take a drive's slot."""


class Job(Record):
    """Work for the background worker, leased so a dead process's job is picked up again."""

    id: int
    kind: Literal["start", "resume", "notify", "timer"]
    run_id: str | None
    request_id: str | None = None
    payload: dict[str, Any] = Field(default_factory=dict)
    attempts: int = 0

    @property
    def lane(self) -> JobLane:
        """`delivery` for a notification (as slow as its receiver), `work` for the rest."""
        return "delivery" if self.kind in DELIVERY_KINDS else "work"


class Retrying(Record):
    """A drive of a run that failed, kept to be tried again: the run waits on it, not on people."""

    kind: Literal["start", "resume"] = Field(description="What the drive was to do.")
    attempts: int = Field(description="How many times it was tried.")
    error: str = Field(description="Why the last try failed, as the worker recorded it.")
    next_attempt_at: datetime = Field(description="When it is tried next.")


class Page(Record):
    """One page of a keyset-paginated list."""

    items: list[Any]
    next_cursor: str | None = None


class Team(Record):
    """A team and the names of its members."""

    name: str
    description: str = ""
    members: tuple[str, ...] = ()


class TeamsConversation(Record):
    """The Microsoft Teams conversation (a channel) a Baton team's requests are posted to."""

    team: str
    service_url: str
    conversation_id: str
    tenant_id: str | None = None
    linked_by: str
    linked_at: datetime


class TeamsCard(Record):
    """A card the Teams bot posted about a request: where, and the activity to update."""

    request_id: str
    service_url: str
    conversation_id: str
    activity_id: str


class ApiToken(Record):
    """An API token as it may be shown after its creation: never the token itself."""

    id: str
    user: str
    label: str = ""
    hint: str = ""
    created_at: datetime
    revoked_at: datetime | None = None
