"""`GET /healthz`: the process serves, its database answers, and its worker goes round.

In a process that runs the worker (`baton serve` without `--no-worker`), a lease loop that has
stopped, is stuck, or keeps failing (the store refusing its writes, say) makes this a 503 naming
why, while the loop itself waits the failure out and carries on.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from web.deps import PartsDep
from web.openapi import schema_ref
from web.replies import ApiError, Health

router = APIRouter()

_UNHEALTHY = {
    "description": "Not healthy: the worker's loop fails (`failing`), or the store is out of "
    "reach (Baton's error body, with `Retry-After`).",
    "content": {
        "application/json": {
            "schema": {"anyOf": [schema_ref(Health.__name__), schema_ref(ApiError.__name__)]}
        }
    },
}


@router.get(
    "/healthz",
    tags=["health"],
    response_model=None,
    responses={200: {"model": Health, "description": "Healthy."}, 503: _UNHEALTHY},
)
async def healthz(request: Request, parts: PartsDep) -> Any:
    """Liveness, database reachability and, where this process runs it, the worker's loop."""
    await parts.store.get_run("healthz-probe")
    if not getattr(request.app.state, "runs_worker", False):
        return {"status": "ok"}
    worker = parts.worker.health()
    body = {"status": "ok" if worker.ok else "failing", "worker": asdict(worker)}
    return body if worker.ok else JSONResponse(body, status_code=503)
