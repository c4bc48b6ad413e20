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

router = APIRouter()


@router.get("/healthz", tags=["health"], responses={503: {"description": "Not healthy"}})
async def healthz(request: Request, parts: PartsDep) -> Any:
    """Liveness, database reachability and, where this process runs it, the worker's loop."""
    await parts.store.get_run("healthz-probe")
    if not getattr(request.app.state, "runs_worker", False):
        return {"status": "ok"}
    worker = parts.worker.health()
    body = {"status": "ok" if worker.ok else "failing", "worker": asdict(worker)}
    return body if worker.ok else JSONResponse(body, status_code=503)
