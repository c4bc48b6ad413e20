"""`/api/workflows` and `/api/runs`: start, read, list and cancel runs."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Header, Query, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from human.records import AuditEvent, Run
from web.deps import CancellerDep, PartsDep, RunnerDep, UserDep
from web.errors import sent_in
from web.openapi import created, refusals
from web.replies import RunDetail, RunPage, UnavailableModule, Workflow
from workflows.platform import registry
from workflows.platform.runtime import CANCEL_REASON_MAX

router = APIRouter(prefix="/api", tags=["runs"], default_response_class=JSONResponse)

_REPLAYED = {
    "Idempotent-Replayed": {
        "description": "`true` when an `Idempotency-Key` returned the first run again.",
        "schema": {"type": "string", "enum": ["true"]},
    }
}


class StartRun(BaseModel):
    """Body of `POST /api/runs`."""

    model_config = ConfigDict(extra="forbid")

    workflow: str = Field(min_length=1, max_length=200)
    input: dict[str, Any] = Field(default_factory=dict)
    continues: str | None = Field(
        None,
        min_length=1,
        max_length=200,
        description="An ended run whose conversation this run carries on: the workflow (one "
        "that starts on a conversation, such as an agent registered as it is) starts on that "
        "run's messages, and those of the runs it continued, then on this run's input as the "
        "user's next message. 409 while that run has not ended.",
    )


@router.get("/workflows")
async def list_workflows(user: UserDep) -> list[Workflow | UnavailableModule]:
    """Every workflow: name, description, input JSON Schema; then modules that failed to load.

    A workflow module that failed to import is listed as `{"module", "available": false,
    "error"}`: its workflows cannot start or resume until it imports again.
    """
    available: list[Workflow | UnavailableModule] = [
        Workflow(name=s.name, description=s.description, input_schema=s.input_schema())
        for s in registry.all_workflows()
    ]
    broken = [
        UnavailableModule(module=module, error=error)
        for module, error in sorted(registry.unavailable().items())
    ]
    return available + broken


@router.post(
    "/runs",
    status_code=201,
    responses=created("run", _REPLAYED) | refusals(403, 404, 409),
)
async def start_run(
    body: StartRun,
    parts: PartsDep,
    user: RunnerDep,
    response: Response,
    idempotency_key: str | None = Header(
        None,
        alias="Idempotency-Key",
        min_length=1,
        max_length=200,
        pattern=r"^[\x21-\x7e]+$",
        description="Retry safely: the same key and body return the first run (with "
        "`Idempotent-Replayed: true`); the same key with another body is a 409.",
    ),
) -> Run:
    """Start a run; the worker drives it to its first pause or its end.

    403 for a viewer; 404 for a workflow that is not registered; 409 for an `Idempotency-Key`
    used before with another body, or a `continues` run that has not ended; 422 for a
    `continues` that names no run the caller may see, or a workflow that takes no conversation.
    """
    replayed = False
    with sent_in("body"):
        if idempotency_key is None:
            run = await parts.runtime.start(
                body.workflow, body.input, actor=user.name, continues=body.continues, viewer=user
            )
        else:
            run, replayed = await parts.runtime.start_once(
                body.workflow,
                body.input,
                actor=user.name,
                key=idempotency_key,
                continues=body.continues,
                viewer=user,
            )
    response.headers["Location"] = f"/api/runs/{run.id}"
    if replayed:
        response.headers["Idempotent-Replayed"] = "true"
    return run


@router.get("/runs")
async def list_runs(
    parts: PartsDep,
    user: UserDep,
    status: str | None = None,
    workflow: str | None = None,
    cursor: str | None = None,
    limit: int = Query(50, ge=1, le=500),
) -> RunPage:
    """Runs, newest first: `{"items": [...], "next_cursor": ...}`."""
    with sent_in("query"):
        page = await parts.runtime.list_runs(
            status=status, workflow=workflow, cursor=cursor, limit=limit, viewer=user
        )
    return RunPage(items=page.items, next_cursor=page.next_cursor)


@router.get("/runs/{run_id}", responses=refusals(404))
async def get_run(run_id: str, parts: PartsDep, user: UserDep) -> RunDetail:
    """A run with its requests and its agent conversation."""
    run = await parts.runtime.get(run_id, viewer=user)
    requests = await parts.requests.of_run(run_id)
    conversation = await parts.runtime.conversation(run_id)
    retrying = await parts.store.run_retrying(run_id)
    return RunDetail(
        **dict(run),
        requests=requests,
        conversation=conversation,
        continued_by=[r.id for r in await parts.runtime.continued_by(run_id, viewer=user)],
        retrying=retrying,
    )


class CancelRun(BaseModel):
    """Body of `POST /api/runs/{id}/cancel`, optional: why the run is cancelled."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    reason: str | None = Field(
        None,
        min_length=1,
        max_length=CANCEL_REASON_MAX,
        description="Why: kept in the `run.cancelled` event (and each `request.cancelled` "
        "one), and shown on the pages of the run and of the requests it closed.",
    )


@router.post("/runs/{run_id}/cancel", responses=refusals(403, 404, 409))
async def cancel_run(
    run_id: str, parts: PartsDep, user: CancellerDep, body: CancelRun | None = None
) -> Run:
    """Cancel a run that has not ended, with an optional reason (409 for one that has ended)."""
    reason = body.reason if body is not None else None
    return await parts.runtime.cancel(run_id, by=user, reason=reason)


@router.get("/runs/{run_id}/events", responses=refusals(404))
async def run_events(run_id: str, parts: PartsDep, user: UserDep) -> list[AuditEvent]:
    """The run's audit trail, oldest first."""
    return await parts.runtime.events(run_id, viewer=user)
