"""The store Protocols every backend implements (SQLite now, PostgreSQL later).

Each method that must be atomic is one transaction in every backend: a pause (`record_progress`),
an answer (`record_answer`), an effect (`record_effect`), a run's creation and its cancellation.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from datetime import datetime
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from human.records import (
    AnswerRecord,
    AuditEvent,
    HumanRequest,
    Job,
    NewEvent,
    Page,
    Run,
    RunStatus,
    User,
)


class NewCheckpoint(BaseModel):
    """An encoded MAF checkpoint to persist with the progress it belongs to."""

    model_config = ConfigDict(frozen=True)

    id: str
    body: bytes


class Progress(BaseModel):
    """What one drive of a run produced, committed at once or not at all.

    The write is fenced: it applies only while the run still points at `expected_checkpoint_id`,
    so a worker that lost its lease cannot overwrite the progress of the one that took over.
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
    transcript: Sequence[dict[str, Any]] = Field(
        default=(), description="Conversation entries of this drive, appended to the run's."
    )


class Lease(BaseModel):
    """A worker that takes the job a write queues, in the same transaction."""

    model_config = ConfigDict(frozen=True)

    owner: str
    seconds: float


class AnswerOutcome(BaseModel):
    """What `record_answer` did: closed the request, counted one approval, or nothing."""

    model_config = ConfigDict(frozen=True)

    result: Literal["closed", "partial", "repeated", "not_open"]
    request: HumanRequest
    job: Job | None = None


class LocalWorker(Protocol):
    """The worker in this process, which takes the jobs this process queues (see `Lease`)."""

    @property
    def lease(self) -> Lease:
        """Owner and duration for jobs leased to this worker."""
        ...

    def accept(self, job: Job) -> None:
        """Run a job already leased to this worker."""
        ...


class Viewer(BaseModel):
    """Whose eyes a list is for: the runs they started and the runs their teams take part in."""

    model_config = ConfigDict(frozen=True)

    name: str
    teams: tuple[str, ...] = ()


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
    limit: int = Field(50, ge=1, le=500)
    cursor: str | None = None


class Store(Protocol):
    """Everything Baton keeps."""

    async def setup(self) -> None:
        """Apply pending migrations, under a lock, idempotently."""
        ...

    async def close(self) -> None:
        """Release connections."""
        ...

    # runs
    async def create_run(
        self, run: Run, events: Sequence[NewEvent], *, lease: Lease | None = None
    ) -> Job | None:
        """Store a new run, its audit events and its start job (leased at once with `lease`)."""
        ...

    async def get_run(self, run_id: str) -> Run | None:
        """A run by id."""
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

    async def cancel_run(self, run_id: str, actor: str) -> Run | None:
        """Cancel an unfinished run and its open requests; None if it had already ended."""
        ...

    async def load_checkpoint(self, checkpoint_id: str) -> bytes | None:
        """An encoded checkpoint body."""
        ...

    # requests
    async def get_request(self, request_id: str) -> HumanRequest | None:
        """A request with its answers."""
        ...

    async def list_requests(self, flt: RequestFilter) -> Page:
        """Requests, newest first, keyset-paginated."""
        ...

    async def count_requests(self, flt: RequestFilter) -> dict[str, int]:
        """How many requests match `flt` per status (its status, cursor and limit ignored)."""
        ...

    async def answered_requests(self, run_id: str) -> list[HumanRequest]:
        """A run's requests answered but not yet delivered, in answer order."""
        ...

    async def open_requests(self, run_id: str) -> list[HumanRequest]:
        """A run's requests still waiting for a person."""
        ...

    async def record_answer(
        self,
        answer: AnswerRecord,
        *,
        final: dict[str, Any],
        lease: Lease | None = None,
        audit: dict[str, Any] | None = None,
    ) -> AnswerOutcome:
        """Apply an answer if the request is open: first answer wins, approvals are counted.

        `audit` is added to the `request.answered` event's data (e.g. an edit's diff).
        """
        ...

    # audit
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

    # jobs
    async def wait_for_jobs(self, timeout_s: float) -> None:
        """Return when another process may have queued a job, or after `timeout_s`."""
        ...

    async def lease_jobs(self, owner: str, *, limit: int, lease_s: float) -> list[Job]:
        """Lease due jobs, never two drive jobs of one run at once."""
        ...

    async def renew_leases(self, owner: str, job_ids: Sequence[int], *, lease_s: float) -> None:
        """Extend the leases this owner holds."""
        ...

    async def finish_job(self, job_id: int, owner: str) -> None:
        """Delete a done job."""
        ...

    async def retry_job(self, job_id: int, owner: str, *, delay_s: float, error: str) -> None:
        """Release a failed job for a later attempt."""
        ...

    # effects
    async def get_effect(self, key: str) -> dict[str, Any] | None:
        """The recorded result of an effect."""
        ...

    async def record_effect(
        self, *, key: str, run_id: str, tool: str, arguments: dict[str, Any], result: Any
    ) -> bool:
        """Record an effect and its `effect.executed` event once; False if already recorded."""
        ...

    # people
    async def add_team(self, name: str, description: str = "") -> None:
        """Create a team if missing."""
        ...

    async def add_user(
        self, name: str, *, role: str, teams: Sequence[str], password_hash: str | None = None
    ) -> User:
        """Create or update a user and set their teams."""
        ...

    async def get_user(self, name: str) -> User | None:
        """A user by name."""
        ...

    async def credentials(self, name: str) -> tuple[User, str | None] | None:
        """A user and their password hash (None: no password set), for sign-in."""
        ...

    async def add_token(self, user_id: str, token_hash: str, label: str = "") -> None:
        """Store an API token's hash."""
        ...

    async def user_for_token(self, token_hash: str) -> User | None:
        """The user of an unrevoked token."""
        ...

    # demo back office
    async def seed_orders(self, orders: Sequence[dict[str, Any]]) -> None:
        """Insert demo orders if missing."""
        ...

    async def get_order(self, order_id: str) -> dict[str, Any] | None:
        """A demo order."""
        ...

    async def issue_refund(
        self, *, idempotency_key: str, order_id: str, amount: float
    ) -> dict[str, Any]:
        """Refund once per idempotency key; a repeat returns the first refund."""
        ...

    async def list_refunds(self) -> list[dict[str, Any]]:
        """All refunds, oldest first."""
        ...

    async def size_bytes(self) -> int:
        """Bytes the database takes on disk."""
        ...

    # conversations (written by `record_progress`)
    async def list_transcript(self, run_id: str) -> list[dict[str, Any]]:
        """A run's conversation entries, in order."""
        ...

    # the support demo's back office
    async def seed_customers(self, customers: Sequence[dict[str, Any]]) -> None:
        """Insert demo customers (`id`, `name`, `email`) if missing."""
        ...

    async def get_customer(self, customer_id: str) -> dict[str, Any] | None:
        """A demo customer with the ids of their orders."""
        ...

    async def close_account(self, *, idempotency_key: str, customer_id: str) -> dict[str, Any]:
        """Close a customer's account once per idempotency key; a repeat returns the first."""
        ...

    async def send_customer_message(
        self, *, idempotency_key: str, customer_id: str, subject: str, body: str
    ) -> dict[str, Any]:
        """Send a message to a customer once per idempotency key; a repeat returns the first."""
        ...

    async def list_customer_messages(self) -> list[dict[str, Any]]:
        """Every message sent to customers, oldest first."""
        ...

    async def list_account_closures(self) -> list[dict[str, Any]]:
        """Every account closure, oldest first."""
        ...


def utcnow() -> datetime:
    """The current time, aware, in UTC."""
    from datetime import UTC

    return datetime.now(UTC)
