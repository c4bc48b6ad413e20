"""`GET /healthz`: the process serves and its database answers."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from web.deps import PartsDep

router = APIRouter()


@router.get("/healthz", tags=["health"])
async def healthz(parts: PartsDep) -> dict[str, Any]:
    """Liveness and database reachability."""
    await parts.store.get_run("healthz-probe")
    return {"status": "ok"}
