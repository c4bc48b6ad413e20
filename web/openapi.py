"""`/openapi.json` as the API answers: every refusal a route can give, in Baton's error body.

FastAPI publishes each route's reply model and a 422 of its own shape; Baton's refusals are all
`ApiError` (`web/errors.py`). A route names the refusals that depend on what it does
(`responses=refusals(403, 404)`); `with_refusals` adds to every operation those that come from the
edge, so no route lists them by hand:

- 401 with `WWW-Authenticate: Bearer`, on an operation that needs a credential (its `security`);
- 403 on such an operation that writes: a browser session's write needs its CSRF token;
- 413 and 422 on an operation that takes a body: `web/guard.py` refuses an oversized body, and JSON
  that may not be stored, before any route (whatever the route reads);
- 422 on an operation with query or header parameters, or a body to validate;
- 503 on every operation: the store is out of reach (`Retry-After`), or, for `/healthz`, the
  worker's loop fails.
"""

from __future__ import annotations

from typing import Any, Final

from fastapi import FastAPI

from web.replies import ApiError

_SCHEMAS: Final = "#/components/schemas/"
_WRITES: Final = frozenset({"post", "put", "patch", "delete"})

_WHY: Final = {
    401: "No credential, or one that is not valid (`WWW-Authenticate: Bearer`).",
    403: "The caller may not do this (a write from a browser session also needs its CSRF token).",
    404: "No such thing, or none the caller may see.",
    409: "It contradicts what is stored (already answered, claimed, exists, ...).",
    410: "The request is closed: expired or cancelled.",
    413: "The body is larger than `BATON_MAX_BODY_BYTES`.",
    422: "What was sent is not valid; `errors` says where.",
    503: "The store is out of reach for now; try again (after `Retry-After` seconds, if given).",
}

_HEADERS: Final[dict[int, dict[str, Any]]] = {
    401: {
        "WWW-Authenticate": {
            "description": "`Bearer`: how to authenticate.",
            "required": True,
            "schema": {"type": "string"},
        }
    },
    503: {
        "Retry-After": {
            "description": "Seconds to wait before trying again.",
            "required": False,
            "schema": {"type": "string"},
        }
    },
}


def schema_ref(name: str) -> dict[str, str]:
    """A reference to the component schema `name`."""
    return {"$ref": _SCHEMAS + name}


def refusal(status: int) -> dict[str, Any]:
    """The OpenAPI response of a refusal with `status`: Baton's error body, and its headers."""
    response: dict[str, Any] = {
        "description": _WHY[status],
        "content": {"application/json": {"schema": schema_ref(ApiError.__name__)}},
    }
    if status in _HEADERS:
        response["headers"] = _HEADERS[status]
    return response


def refusals(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """A route's `responses=`: the refusals that depend on what it does (the edge's are added)."""
    return {status: refusal(status) for status in statuses}


def created(what: str, headers: dict[str, Any] | None = None) -> dict[int | str, dict[str, Any]]:
    """A route's `responses=` for its 201: `what`, created, at the URL in `Location`."""
    location = {"description": f"The {what}'s URL.", "required": True, "schema": {"type": "string"}}
    return {
        201: {
            "description": f"The {what}, created.",
            "headers": {"Location": location, **(headers or {})},
        }
    }


def with_refusals(document: dict[str, Any]) -> dict[str, Any]:
    """`document` with the edge's refusals on every operation, and no 422 of FastAPI's shape."""
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    error_schema = ApiError.model_json_schema(ref_template=_SCHEMAS + "{model}")
    schemas.update(error_schema.pop("$defs", {}))
    schemas[ApiError.__name__] = error_schema
    for operations in document.get("paths", {}).values():
        for method, operation in operations.items():
            responses = operation.setdefault("responses", {})
            if _is_fastapis_422(responses.get("422")):
                del responses["422"]
            for status in _edge_refusals(method, operation):
                responses.setdefault(str(status), refusal(status))
            operation["responses"] = dict(sorted(responses.items()))
    for name in ("HTTPValidationError", "ValidationError"):
        schemas.pop(name, None)
    return document


def _edge_refusals(method: str, operation: dict[str, Any]) -> list[int]:
    """The refusals an operation can get from the edge, whatever its route does."""
    found = []
    secured = bool(operation.get("security"))
    if secured:
        found.append(401)
    if method in _WRITES:
        found += [403, 413] if secured else [413]
    found += [422, 503]  # 422: a query parameter holding a NUL, declared or not (`web.guard`)
    return found


def _is_fastapis_422(response: dict[str, Any] | None) -> bool:
    if response is None:
        return False
    schema = response.get("content", {}).get("application/json", {}).get("schema", {})
    return bool(schema == schema_ref("HTTPValidationError"))


class BatonApi(FastAPI):
    """FastAPI whose `/openapi.json` documents Baton's refusals too (`with_refusals`)."""

    def openapi(self) -> dict[str, Any]:
        """The OpenAPI document, made once."""
        if self.openapi_schema is None:
            self.openapi_schema = with_refusals(super().openapi())
        return self.openapi_schema
