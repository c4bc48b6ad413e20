"""`/api/workflows` and `/api/runs`: start, read, list and cancel runs."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Header, Query, Response
from pydantic import BaseModel, ConfigDict, Field

from human.access import check_can_run
from human.store.base import RequestFilter
from web.deps import PartsDep, UserDep
from web.errors import sent_in
from workflows.platform import registry

router = APIRouter(prefix="/api", tags=["runs"])


class StartRun(BaseModel):
    """Body of `POST /api/runs`."""

    model_config = ConfigDict(extra="forbid")

    workflow: str = Field(min_length=1, max_length=200)
    input: dict[str, Any] = Field(default_factory=dict)


@router.get("/workflows")
async def list_workflows(user: UserDep) -> list[dict[str, Any]]:
    """Every workflow: name, description, input JSON Schema; then modules that failed to load.

    A workflow module that failed to import is listed as `{"module", "available": false,
    "error"}`: its workflows cannot start or resume until it imports again.
    """
    available = [
        {
            "name": s.name,
            "description": s.description,
            "input_schema": s.input_schema(),
            "available": True,
        }
        for s in registry.all_workflows()
    ]
    broken = [
        {"module": module, "available": False, "error": error}
        for module, error in sorted(registry.unavailable().items())
    ]
    return available + broken


@router.post("/runs", status_code=201)
async def start_run(
    body: StartRun,
    parts: PartsDep,
    user: UserDep,
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
) -> Any:
    """Start a run; the worker drives it to its first pause or its end."""
    check_can_run(user)
    replayed = False
    with sent_in("body"):
        if idempotency_key is None:
            run = await parts.runtime.start(body.workflow, body.input, actor=user.name)
        else:
            run, replayed = await parts.runtime.start_once(
                body.workflow, body.input, actor=user.name, key=idempotency_key
            )
    response.headers["Location"] = f"/api/runs/{run.id}"
    if replayed:
        response.headers["Idempotent-Replayed"] = "true"
    return run.model_dump(mode="json")


@router.get("/runs")
async def list_runs(
    parts: PartsDep,
    user: UserDep,
    status: str | None = None,
    workflow: str | None = None,
    cursor: str | None = None,
    limit: int = Query(50, ge=1, le=500),
) -> dict[str, Any]:
    """Runs, newest first: `{"items": [...], "next_cursor": ...}`."""
    with sent_in("query"):
        page = await parts.runtime.list_runs(
            status=status, workflow=workflow, cursor=cursor, limit=limit, viewer=user
        )
    return page.model_dump(mode="json")


@router.get("/runs/{run_id}")
async def get_run(run_id: str, parts: PartsDep, user: UserDep) -> dict[str, Any]:
    """A run with its requests and its agent conversation."""
    run = await parts.runtime.get(run_id, viewer=user)
    requests = await parts.requests.list(RequestFilter(run_id=run_id, limit=500))
    return run.model_dump(mode="json") | {
        "requests": [r.model_dump(mode="json") for r in requests.items],
        "conversation": await parts.runtime.conversation(run_id),
    }


@router.post("/runs/{run_id}/cancel")
async def cancel_run(run_id: str, parts: PartsDep, user: UserDep) -> dict[str, Any]:
    """Cancel a run that has not ended."""
    run = await parts.runtime.cancel(run_id, by=user)
    return run.model_dump(mode="json")


@router.get("/runs/{run_id}/events")
async def run_events(run_id: str, parts: PartsDep, user: UserDep) -> list[dict[str, Any]]:
    """The run's audit trail, oldest first."""
    events = await parts.runtime.events(run_id, viewer=user)
    return [e.model_dump(mode="json") for e in events]
