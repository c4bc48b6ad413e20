"""The bodies the JSON API answers with, as `/openapi.json` publishes them.

A stored record goes out as it is (`human.records`: `Run`, `HumanRequest`, `AuditEvent`, `User`,
`Team`, `ApiToken`); the models here are only the shapes the API puts together from them (a page,
a run with its requests, an answer's outcome), the workflow list, the health report, and
`ApiError`, the body of every refusal. Each field is in the order clients have always received.

The API's routers answer through `JSONResponse` (Python's `json`), as they did before they
declared these models, rather than FastAPI's direct pydantic encoding, which spells some numbers
otherwise (`1.5e-7` for `1.5e-07`): a client gets the bytes it always got.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.config import JsonDict
from pydantic.json_schema import SkipJsonSchema

from human.records import ApiToken, HumanRequest, Retrying, Run
from workflows.platform.worker import WorkerHealth


def _no_default(schema: JsonDict) -> None:
    """Publish a key that is absent when it does not apply without its (never sent) null."""
    schema.pop("default", None)


class FieldError(BaseModel):
    """One thing wrong with what was sent, and where (`["body", "decision"]`)."""

    model_config = ConfigDict(extra="allow")

    loc: list[str | int] = Field(description="Where: `body`, `query` or `header`, then the path.")
    msg: str


class ApiError(BaseModel):
    """Baton's error body: every refusal of the API, whatever its status, has this shape."""

    # Keys with a default are absent when they do not apply: published as optional, not required.
    model_config = ConfigDict(
        extra="allow",
        json_schema_mode_override="validation",
        json_schema_extra={
            "description": "Baton's error body. Besides `error`, `detail` and (for a 422) "
            "`errors`, a refusal may carry facts about it, such as `answered_by` for a 409.",
            "examples": [
                {"error": "request_not_found", "detail": "no request req_1"},
                {
                    "error": "invalid",
                    "detail": "body.decision: must be one of approve, edit, reject",
                    "errors": [{"loc": ["body", "decision"], "msg": "must be one of ..."}],
                },
            ],
        },
    )

    error: str = Field(description="A stable code: `request_not_found`, `invalid`, ...")
    detail: str = Field(description="What went wrong, for a person to read.")
    errors: list[FieldError] | SkipJsonSchema[None] = Field(
        None,
        description="For a 422: each problem and where it is.",
        json_schema_extra=_no_default,
    )


class Health(BaseModel):
    """`GET /healthz`: `ok`, or `failing` (a 503) with what fails this process's worker."""

    model_config = ConfigDict(json_schema_mode_override="validation")

    status: Literal["ok", "failing"]
    worker: WorkerHealth | SkipJsonSchema[None] = Field(
        None,
        description="Absent in a process that runs no worker (`baton serve --no-worker`).",
        json_schema_extra=_no_default,
    )


class Workflow(BaseModel):
    """A workflow that can start: its name, what it does, the JSON Schema of its input."""

    name: str
    description: str
    input_schema: dict[str, Any]
    available: Literal[True] = True


class UnavailableModule(BaseModel):
    """A workflow module that failed to import: none of its workflows starts or resumes."""

    module: str
    available: Literal[False] = False
    error: str


class RunPage(BaseModel):
    """A page of runs, newest first; `next_cursor` asks for the next one (null: none left)."""

    items: list[Run]
    next_cursor: str | None


class RequestPage(BaseModel):
    """A page of requests, newest first; `next_cursor` asks for the next one (null: none left)."""

    items: list[HumanRequest]
    next_cursor: str | None


class RunDetail(Run):
    """A run with its requests and its agent conversation (messages, tool calls, asks, answers)."""

    requests: list[HumanRequest]
    conversation: list[dict[str, Any]]
    continued_by: list[str] = Field(
        default_factory=list,
        description="The runs that continue this run's conversation (`continues` names this "
        "run), those the caller may see, oldest first.",
    )
    retrying: Retrying | None = Field(
        None,
        description="The run's drive that failed and is tried again (`RunHeld: ...` for a run "
        "paused on other code of its workflow than is deployed, which goes on when that code "
        "runs again); null when nothing of the run waits on a retry.",
    )


class Outcome(BaseModel):
    """What an answer or a takeover did (`closed`, `partial`, `repeated`), and the request after."""

    outcome: str
    request: HumanRequest


class NewApiToken(ApiToken):
    """A token just created: the only time `token` itself is shown."""

    token: str
