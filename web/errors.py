"""BatonError categories to HTTP statuses, decided once, here."""

from __future__ import annotations

from typing import Any, Final

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from baton.errors import (
    BatonError,
    Closed,
    Conflict,
    Invalid,
    NotFound,
    NotPermitted,
    Unauthenticated,
)

_STATUS: Final = (
    (Unauthenticated, 401),
    (NotFound, 404),
    (NotPermitted, 403),
    (Conflict, 409),
    (Closed, 410),
    (Invalid, 422),
)


async def on_baton_error(request: Request, exc: Exception) -> JSONResponse:
    """Answer a BatonError with its status and a JSON body naming it."""
    assert isinstance(exc, BatonError)
    status = next((code for cls, code in _STATUS if isinstance(exc, cls)), 500)
    body: dict[str, Any] = {"error": exc.code, "detail": str(exc)}
    if isinstance(exc, Invalid) and exc.errors:
        body["errors"] = exc.errors
    body.update({k: v for k, v in exc.facts.items() if v is not None})
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return JSONResponse(body, status_code=status, headers=headers)


async def on_validation_error(request: Request, exc: Exception) -> JSONResponse:
    """FastAPI's own parsing errors, in Baton's error shape, naming each field."""
    assert isinstance(exc, RequestValidationError)
    errors = [
        {"loc": ["body"], "msg": f"the body is not valid JSON: {e.get('ctx', {}).get('error', '')}"}
        if e["type"] == "json_invalid"
        else {"loc": [str(p) for p in e["loc"]], "msg": e["msg"]}
        for e in exc.errors()
    ]
    first = errors[0] if errors else {"loc": [], "msg": "invalid request"}
    return JSONResponse(
        {
            "error": "invalid",
            "detail": f"{'.'.join(first['loc'])}: {first['msg']}",
            "errors": errors,
        },
        status_code=422,
    )
