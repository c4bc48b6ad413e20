"""The `baton` command: wires settings, store, runtime, worker and web together."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import mimetypes
import os
import signal
import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TextIO, TypeVar, get_args

import click

from baton import eventloop, failpoints
from baton.clock import clock_of
from baton.errors import (
    AttachmentNotFound,
    BatonError,
    Invalid,
    RequestNotFound,
    RunNotFound,
    TokenNotFound,
    UserNotFound,
)
from baton.observability import configure_telemetry
from baton.request_text import answer_value, request_text, run_text
from baton.settings import Settings
from baton.telemetry import configure_logging
from human.access import View, view_filter, viewer_of
from human.attachments import Kept, named
from human.kinds import KINDS
from human.policy import Rule, load_policy
from human.records import Attachment, HumanRequest, NewEvent, RequestStatus, Run
from human.service import run_requests
from human.store import open_store
from human.store.base import RequestFilter, Store

if TYPE_CHECKING:  # the commands that drive workflows import MAF when they run, not at start
    from baton.wiring import Parts
    from workflows.platform.check import CheckReport

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])


def _settings() -> Settings:
    settings = Settings()
    configure_logging(settings.log_level)
    configure_telemetry(settings)
    failpoints.arm(settings.failpoints)
    return settings


def _run(coro: Awaitable[T]) -> T:
    try:
        return eventloop.run(coro)  # type: ignore[arg-type]
    except BatonError as exc:
        _fail(exc)


def _fail(exc: BatonError) -> NoReturn:
    click.echo(f"error: {exc}", err=True)
    for err in getattr(exc, "errors", []) or []:
        where = [f"line {err['line']}"] if err.get("line") else []
        where += [".".join(map(str, err["loc"]))] if err.get("loc") else []
        click.echo(f"  {': '.join([*where, str(err['msg'])])}", err=True)
    sys.exit(2)


_OUT: list[TextIO] = []
"""Where the command's own output goes while workflow code runs with stdout sent to stderr."""


def _say(text: str) -> None:
    """Print the command's own output (never mixed with what a workflow prints)."""
    click.echo(text, file=_OUT[-1] if _OUT else None)


@contextlib.contextmanager
def _workflow_prints_to_stderr() -> Iterator[None]:
    """While workflow code runs, its `print()` goes to stderr; the command's own to `_say`."""
    _OUT.append(sys.stdout)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        _OUT.pop()


def _warn_unavailable() -> None:
    from workflows.platform import registry

    for module, error in registry.unavailable().items():
        click.echo(f"warning: workflow module {module} is unavailable: {error}", err=True)


async def _with_parts(settings: Settings, work: Callable[[Parts], Awaitable[T]]) -> T:
    """Open the parts and do `work`; a workflow's `print()` goes to stderr, not the output."""
    from baton.wiring import open_parts

    with _workflow_prints_to_stderr():
        # its worker drives what it starts and answers: leased to it as they are queued, so a
        # worker beside it (`baton serve`'s) cannot take them first
        async with open_parts(settings) as parts:
            _warn_unavailable()
            return await work(parts)


async def _with_store(settings: Settings, work: Callable[[Store], Awaitable[T]]) -> T:
    """Open the store alone and do `work`: for commands that run no workflow (no MAF to load)."""
    store = await open_store(settings.database_url, clock=clock_of(settings.clock_file))
    try:
        return await work(store)
    finally:
        await store.close()


def _echo_json(value: Any) -> None:
    _say(json.dumps(value, indent=2, default=str))


@contextlib.contextmanager
def _starting() -> Iterator[None]:
    """A long-running command's start, with Python's cyclic garbage collector paused.

    A start makes a great many objects that live as long as the process (modules, classes,
    pydantic's models and schemas, routes, the registered workflows) and little garbage:
    collecting while they are made finds next to nothing to free. At the end they are put out of
    the collector's sight for good (`gc.freeze`: its next collections would walk them all and free
    none), and it runs as before. A `baton serve` start to its first answer took 0.76 CPU-s so,
    0.99 without (eight starts of each, interleaved, on the 2-core development machine).
    """
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()


@click.group()
def main() -> None:
    """Baton: durable human-in-the-loop handoffs for Microsoft Agent Framework workflows."""


@main.command()
@click.option("--host", default=None, help="Interface to bind (default BATON_HOST, 127.0.0.1).")
@click.option("--port", default=None, type=int, help="Port (default BATON_PORT, 8000).")
@click.option("--no-worker", is_flag=True, help="Serve HTTP only; run `baton worker` beside it.")
def serve(host: str | None, port: int | None, no_worker: bool) -> None:
    """Serve the API (and, by default, resume jobs, deadlines and notifications)."""
    with _starting():
        import uvicorn

        from web.app import create_app

        settings = _settings()
        if settings.dev_secret_refused(host or settings.host):
            raise click.UsageError(
                f"refusing to serve on {host or settings.host} with the development "
                "BATON_SECRET_KEY: anyone could forge a sign-in. Set BATON_SECRET_KEY to a long "
                'random value (e.g. python -c "import secrets; print(secrets.token_urlsafe(48))"),'
                " or bind to 127.0.0.1."
            )
        try:
            app = create_app(settings, worker=not no_worker)
        except BatonError as exc:  # refuse to start: a missing setting, a bad policies file
            _fail(exc)
    uvicorn.run(
        app,
        host=host or settings.host,
        port=port or settings.port,
        log_config=None,
        access_log=False,
    )


@main.command()
def worker() -> None:
    """Run only the background parts: resume jobs, deadlines, notifications.

    SIGTERM or SIGINT stops it as `baton serve` stops: it leases nothing more, lets its drives
    under way reach their next commit (`BATON_SHUTDOWN_GRACE_SECONDS`), then cancels the rest.
    """
    settings = _settings()

    async def work(parts: Parts) -> None:
        running = asyncio.create_task(parts.worker.run_forever())
        stopped = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stopped.set)
        waiting = asyncio.create_task(stopped.wait())
        await asyncio.wait({running, waiting}, return_when=asyncio.FIRST_COMPLETED)
        if not running.done():
            await parts.worker.stop(settings.shutdown_grace_seconds)
            running.cancel()
        waiting.cancel()
        await asyncio.gather(running, waiting, return_exceptions=True)

    _run(_with_parts(settings, work))


@main.command()
def migrate() -> None:
    """Apply database migrations (serve does this on start too)."""
    settings = _settings()

    async def work(store: Store) -> None:
        _say(f"database ready: {settings.database_url}")

    _run(_with_store(settings, work))


@main.command()
@click.option("--demo", is_flag=True, required=True, help="Seed the demo teams, people, orders.")
def seed(demo: bool) -> None:
    """Seed demo data (idempotent)."""
    from baton.demo import PEOPLE, seed_demo, set_demo_passwords

    settings = _settings()

    async def work(store: Store) -> None:
        await seed_demo(store, settings.database_url)
        _say(
            "demo seeded: teams " + ", ".join(sorted({t for _, ts in PEOPLE.values() for t in ts}))
        )
        _say("people: " + ", ".join(f"{n} ({r})" for n, (r, _) in PEOPLE.items()))
        passwords = await set_demo_passwords(store)
        _say("demo sign-ins (demo only: new passwords at every `baton seed --demo`):")
        for name, (role, teams) in PEOPLE.items():
            _say(f"  {name:<4} {passwords[name]:<14} {role} of {', '.join(teams)}")

    _run(_with_store(settings, work))


@main.group()
def users() -> None:
    """Manage people."""


@users.command("add")
@click.argument("name")
@click.option("--team", "teams", multiple=True, help="Team (repeatable).")
@click.option("--role", type=click.Choice(["viewer", "responder", "admin"]), default="responder")
@click.option("--password-stdin", is_flag=True, help="Read a password for sign-in from stdin.")
@click.option("--email", default=None, help="Where email notifications go ('' clears it).")
@click.option("--slack-id", default=None, help="Their Slack user id, U… ('' clears it).")
@click.option(
    "--entra-id",
    default=None,
    help="Their Entra object id, for answers from Microsoft Teams ('' clears it).",
)
@click.option(
    "--time-zone",
    default=None,
    help="Their clock, an IANA name such as Europe/Berlin: emails to them give times on it "
    "('' clears it).",
)
def users_add(
    name: str,
    teams: tuple[str, ...],
    role: str,
    password_stdin: bool,
    email: str | None,
    slack_id: str | None,
    entra_id: str | None,
    time_zone: str | None,
) -> None:
    """Create or update a person and set their teams (ids, email and zone kept unless given)."""
    from human.zones import is_zone

    if time_zone and not is_zone(time_zone):
        raise click.BadParameter(
            f"{time_zone!r} is not a time zone the zone database knows (an IANA name: "
            "Europe/Berlin)",
            param_hint="--time-zone",
        )
    settings = _settings()
    password_hash = None
    if password_stdin:
        from argon2 import PasswordHasher

        password = sys.stdin.readline().rstrip("\n")
        if len(password) < 8:
            raise click.BadParameter("a password needs at least 8 characters")
        password_hash = PasswordHasher().hash(password)

    async def work(store: Store) -> None:
        user = await store.add_user(
            name,
            role=role,
            teams=teams,
            password_hash=password_hash,
            email=email,
            slack_id=slack_id,
            entra_id=entra_id,
            time_zone=time_zone,
        )
        if password_hash is not None:
            await store.clear_failed_sign_ins(user.name)  # a new password lifts a lockout
        _say(f"{user.name} ({user.role}) in {', '.join(user.teams) or 'no team'}")

    _run(_with_store(settings, work))


@users.command("list")
def users_list() -> None:
    """List people: name, role, teams, email, Slack id, Entra object id, time zone."""
    settings = _settings()

    async def work(store: Store) -> None:
        for u in await store.list_users():
            _say(
                f"{u.name:<12} {u.role:<9} {','.join(u.teams) or '-':<30} {u.email or '-'} "
                f"{u.slack_id or '-'} {u.entra_id or '-'} {u.time_zone or '-'}"
            )

    _run(_with_store(settings, work))


@main.group()
def teams() -> None:
    """Manage teams."""


@teams.command("add")
@click.argument("name")
@click.option("--description", default="")
def teams_add(name: str, description: str) -> None:
    """Create a team."""
    settings = _settings()

    async def work(store: Store) -> None:
        await store.add_team(name, description)
        _say(f"team {name}")

    _run(_with_store(settings, work))


@main.group()
def tokens() -> None:
    """Manage API tokens."""


@tokens.command("create")
@click.argument("user")
@click.option("--label", default="")
def tokens_create(user: str, label: str) -> None:
    """Create an API token for USER; prints only the token (it is not shown again)."""
    from human.people import new_token, token_hash, token_hint

    settings = _settings()

    async def work(store: Store) -> str:
        found = await store.get_user(user)
        if found is None:
            raise UserNotFound(f"no user {user}; add one with `baton users add`")
        token = new_token()
        await store.add_token(found.id, token_hash(token), label, hint=token_hint(token))
        return token

    click.echo(_run(_with_store(settings, work)))


@tokens.command("list")
@click.argument("user", required=False)
def tokens_list(user: str | None) -> None:
    """List API tokens (of USER, or everyone's): id, user, label, hint, created, revoked."""
    settings = _settings()

    async def work(store: Store) -> None:
        owner = None
        if user is not None:
            found = await store.get_user(user)
            if found is None:
                raise UserNotFound(f"no user {user}")
            owner = found.id
        for t in await store.list_tokens(owner):
            revoked = f"revoked {t.revoked_at:%Y-%m-%d %H:%M}" if t.revoked_at else "active"
            _say(
                f"{t.id}  {t.user:<12} {t.hint:<8} {t.created_at:%Y-%m-%d %H:%M}  {revoked}  "
                f"{t.label}"
            )

    _run(_with_store(settings, work))


@tokens.command("revoke")
@click.argument("token_id")
def tokens_revoke(token_id: str) -> None:
    """Revoke the API token TOKEN_ID (from `baton tokens list`); audited as done by `cli`."""
    settings = _settings()

    async def work(store: Store) -> None:
        token = await store.get_token(token_id)
        if token is None:
            raise TokenNotFound(f"no token {token_id}")
        event = NewEvent(
            type="token.revoked", actor="cli", data={"token_id": token_id, "user": token.user}
        )
        revoked = await store.revoke_token(token_id, events=[event])
        assert revoked is not None
        _say(f"{token_id} of {revoked.user} revoked at {revoked.revoked_at}")

    _run(_with_store(settings, work))


@main.command("mcp")
@click.option(
    "--token",
    default=None,
    help="The API token of the person the agent asks for (default BATON_TOKEN); checked at "
    "every call.",
)
@click.option(
    "--as", "actor", default=None, help="Or the name of that person (as `baton run --as`)."
)
@click.option(
    "--no-worker",
    is_flag=True,
    help="Only ask; a `baton serve` or `baton worker` on the same database drives the asks.",
)
def mcp(token: str | None, actor: str | None, no_worker: bool) -> None:
    """Serve MCP on stdin/stdout: an agent asks people through Baton's inbox (README: MCP)."""
    from baton.wiring import open_parts
    from web.mcp import named_caller, serve_stdio, token_caller

    settings = _settings()
    given = token or (settings.mcp_token.get_secret_value() if settings.mcp_token else "")
    if given and actor:
        raise click.UsageError("give --token (or BATON_TOKEN) or --as, not both")
    if not given and not actor:
        raise click.UsageError(
            "who does the agent ask for? give --token (or BATON_TOKEN: an API token from "
            "`baton tokens create NAME`) or --as NAME"
        )

    async def work() -> None:
        async with open_parts(settings, local_worker=not no_worker) as parts:
            _warn_unavailable()
            identify = token_caller(parts, given) if given else named_caller(parts, str(actor))
            await identify(None)  # a wrong token or an unknown name: refuse before serving
            task = None if no_worker else asyncio.create_task(parts.worker.run_forever())
            try:
                await serve_stdio(parts, identify)
            finally:
                if task is not None:
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await task

    _run(work())


@main.command("run")
@click.argument("workflow")
@click.option("--input", "input_json", required=True, help="The run's input as JSON.")
@click.option("--as", "actor", default="cli", help="Who starts the run (audit).")
@click.option(
    "--continues",
    default=None,
    metavar="RUN",
    help="An ended run whose conversation this run carries on (the input is the next message).",
)
@click.option("--json", "as_json", is_flag=True, help="The run as JSON, with its pending requests.")
def run_workflow(
    workflow: str, input_json: str, actor: str, continues: str | None, as_json: bool
) -> None:
    """Start a run and drive it to its first pause or its end; prints the run."""
    settings = _settings()
    run_input = _json_option("--input", input_json)

    async def work(parts: Parts) -> tuple[Run, list[HumanRequest]]:
        run = await parts.runtime.start(workflow, run_input, actor=actor, continues=continues)
        await parts.worker.run_until_idle()
        return await _run_and_requests(parts.store, run.id)

    run, asked = _run(_with_parts(settings, work))
    if not as_json:
        _say("\n".join(run_text(run, asked)))
        return
    pending = [r for r in asked if r.status == "pending"]
    _echo_json(
        run.model_dump(mode="json")
        | {
            "pending_requests": [
                {"id": r.id, "kind": r.kind, "team": r.team, "title": r.title} for r in pending
            ]
        }
    )


async def _run_and_requests(store: Store, run_id: str) -> tuple[Run, list[HumanRequest]]:
    run = await store.get_run(run_id)
    if run is None:
        raise RunNotFound(f"no run {run_id}")
    return run, await run_requests(store, run_id)


@main.group()
def runs() -> None:
    """Read runs: their state, output and requests."""


@runs.command("list")
@click.option("--status", default=None, help="running, waiting, completed, failed, cancelled.")
@click.option("--workflow", default=None)
@click.option("--limit", default=50, type=click.IntRange(1, 200))
def runs_list(status: str | None, workflow: str | None, limit: int) -> None:
    """List runs, newest first."""
    settings = _settings()

    async def work(store: Store) -> None:
        page = await store.list_runs(status=status, workflow=workflow, cursor=None, limit=limit)
        for run in page.items:
            started = run.created_at.strftime("%Y-%m-%d %H:%M")
            _say(f"{run.id}  {run.status:<9} {run.workflow:<15} {run.created_by:<8} {started}")

    _run(_with_store(settings, work))


@runs.command("show")
@click.argument("run_id")
@click.option("--json", "as_json", is_flag=True, help="The run and its requests as JSON.")
def runs_show(run_id: str, as_json: bool) -> None:
    """Show one run: its state, output or error, and each of its requests."""
    settings = _settings()
    run, asked = _run(_with_store(settings, lambda store: _run_and_requests(store, run_id)))
    if as_json:
        _echo_json(run.model_dump(mode="json") | {"requests": [_json(r) for r in asked]})
    else:
        _say("\n".join(run_text(run, asked)))


def _json(record: HumanRequest) -> dict[str, Any]:
    return record.model_dump(mode="json")


@main.command("check")
@click.argument("workflow")
@click.option(
    "--input", "input_json", default=None, help="The run's input as JSON (default: made up)."
)
@click.option(
    "--answers",
    "answers_json",
    default=None,
    help='JSON {"<executor id or request type>": answer or [answers in order]}; else made up.',
)
@click.option("--max-pauses", default=10, type=click.IntRange(min=1), help="Pauses to go through.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def check(
    workflow: str, input_json: str | None, answers_json: str | None, max_pauses: int, as_json: bool
) -> None:
    """Find executors that lose state across a restart: exit 0 clean, 1 findings, 2 usage.

    Runs WORKFLOW as Baton drives it, on a throwaway database: each resume in a fresh instance
    restored from the pause's checkpoint, every executor's own attributes compared with the
    instance that paused, requests answered with --answers or made-up answers.
    """
    settings = _settings()
    run_input = None if input_json is None else _json_option("--input", input_json)
    answers = None if answers_json is None else _json_option("--answers", answers_json)
    if answers is not None and not isinstance(answers, dict):
        raise click.BadParameter("--answers must be a JSON object")

    from baton.check import check_workflow
    from baton.wiring import prepare

    async def work() -> CheckReport:
        with _workflow_prints_to_stderr():
            prepared = prepare(settings)
            _warn_unavailable()
            return await check_workflow(
                workflow,
                run_input=run_input,
                answers=answers,
                max_pauses=max_pauses,
                settings=settings,
                prepared=prepared,
            )

    report = _run(work())
    if as_json:
        _echo_json(report.to_dict())
    else:
        for line in report.lines():
            _say(line)
    sys.exit(0 if report.clean else 1)


def _json_option(name: str, text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise click.BadParameter(f"{name} is not JSON: {exc}") from exc


@main.group()
def requests() -> None:
    """Read and answer human requests."""


@requests.command("list")
@click.option(
    "--view",
    type=click.Choice(get_args(View)),
    default=None,
    help="A saved view, as the inbox's tabs list it (needs --as): mine, unassigned, claimed (by "
    "them), overdue, answered (by them), all.",
)
@click.option(
    "--as",
    "actor",
    default=None,
    help="List as this person: only what they may see (else everything), and their --view.",
)
@click.option("--status", type=click.Choice(get_args(RequestStatus)), default=None)
@click.option("--team", default=None)
@click.option("--kind", type=click.Choice(tuple(KINDS)), default=None)
@click.option("--workflow", default=None, help="Only requests of runs of this workflow.")
@click.option(
    "--search",
    default=None,
    help="Only requests whose title, reason or context holds this text (any case), or whose "
    "id or run id it is.",
)
@click.option("--limit", default=50, type=click.IntRange(1, 500))
def requests_list(
    view: View | None,
    actor: str | None,
    status: str | None,
    team: str | None,
    kind: str | None,
    workflow: str | None,
    search: str | None,
    limit: int,
) -> None:
    """List requests, newest first (a view of open requests: the most urgent first)."""
    settings = _settings()
    if search is not None and not 1 <= len(search) <= 200:
        raise click.BadParameter("1 to 200 characters", param_hint="--search")
    if view is not None and actor is None:
        raise click.UsageError("--view lists a person's view: give --as too")

    async def work(store: Store) -> None:
        flt = RequestFilter(
            status=status, team=team, kind=kind, workflow=workflow, search=search, limit=limit
        )
        if actor is not None:
            user = await store.get_user(actor)
            if user is None:
                raise UserNotFound(f"no user {actor}")
            flt = flt.model_copy(update={"visible_to": viewer_of(user)})
            if view is not None:
                now = clock_of(settings.clock_file)()
                statuses = (status,) if status else None
                flt = flt.model_copy(update=view_filter(view, user, now, statuses))
        page = await store.list_requests(flt)
        for r in page.items:
            _say(f"{r.id}  {r.status:<9} {r.kind:<9} {r.team:<15} {r.title}")
        if not page.items:
            _say("No requests.")

    _run(_with_store(settings, work))


@requests.command("show")
@click.argument("request_id")
@click.option("--json", "as_json", is_flag=True, help="The whole record as JSON.")
def requests_show(request_id: str, as_json: bool) -> None:
    """Show one request: what is asked, its context, and what the answer must be."""
    settings = _settings()

    async def work(store: Store) -> HumanRequest:
        request = await store.get_request(request_id)
        if request is None:
            raise RequestNotFound(f"no request {request_id}")
        return request

    request = _run(_with_store(settings, work))
    if as_json:
        _echo_json(request.model_dump(mode="json"))
    else:
        _say("\n".join(request_text(request)))


@requests.command("file")
@click.argument("request_id")
@click.argument("file_id")
@click.option(
    "--out",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    default=None,
    help="Where to save it (default: attachment-<its id>.<its kind> in this folder).",
)
def requests_file(request_id: str, file_id: str, out: Path | None) -> None:
    """Save a file a request came with, named by its id or the first 8 or more characters of it.

    As `baton requests show` lists them; a file already at `--out` is left as it is.
    """
    settings = _settings()

    async def work(store: Store) -> tuple[Attachment, Kept]:
        request = await store.get_request(request_id)
        if request is None:
            raise RequestNotFound(f"no request {request_id}")
        listed = named(request.attachments, file_id)
        kept = await store.load_attachment(listed.id) if listed else None
        if listed is None or kept is None:
            raise AttachmentNotFound(f"request {request_id} has no attachment {file_id}")
        return listed, kept

    listed, kept = _run(_with_store(settings, work))
    extension = mimetypes.guess_extension(kept.media_type, strict=False) or ".bin"
    path = out or Path(f"attachment-{kept.id[:12]}{extension}")
    try:
        with path.open("xb") as saved:  # never over a file that is there
            saved.write(kept.data)
    except FileExistsError:
        _fail(Invalid(f"{path} is there already: give another --out"))
    _say(f"Saved {listed.name}, from {listed.source}, to {path}")


@requests.command("answer")
@click.argument("request_id")
@click.option("--decision", default=None, help="approve, edit, reject, answer, ... (see show).")
@click.option("--as", "actor", required=True, help="The person answering (a Baton user).")
@click.option("--body", "body_json", default="{}", help="Other answer fields as JSON.")
@click.option(
    "--answer",
    "answer_json",
    default=None,
    help="The answer's value as JSON (decision answer); plain text where the answer is text.",
)
@click.option("--json", "as_json", is_flag=True, help="The outcome and the request as JSON.")
def requests_answer(
    request_id: str,
    decision: str | None,
    actor: str,
    body_json: str,
    answer_json: str | None,
    as_json: bool,
) -> None:
    """Answer a request as a person, then drive its run on."""
    settings = _settings()
    extra = _json_option("--body", body_json)
    if not isinstance(extra, dict):
        raise click.BadParameter("--body must be a JSON object")
    if decision is None and answer_json is None:
        raise click.UsageError("give --decision, or --answer for an answer")

    async def work(parts: Parts) -> tuple[str, Run, list[HumanRequest]]:
        user = await parts.store.get_user(actor)
        if user is None:
            raise UserNotFound(f"no user {actor}")
        body = extra | {"decision": decision or "answer"}
        if answer_json is not None:
            body["answer"] = answer_value(await parts.requests.get(request_id), answer_json)
        result = await parts.requests.respond(request_id, body, responder=user)
        await parts.worker.run_until_idle()
        return result.outcome, *await _run_and_requests(parts.store, result.request.run_id)

    outcome, run, asked = _run(_with_parts(settings, work))
    if as_json:
        [request] = [r for r in asked if r.id == request_id]
        _echo_json({"outcome": outcome, "request": _json(request)})
    else:
        _say("\n".join([f"{request_id}: {_OUTCOMES[outcome]}", "", *run_text(run, asked)]))


_OUTCOMES = {
    "closed": "answered; the run went on.",
    "partial": "approval counted; more approvers are needed.",
    "repeated": "you had given this answer already; nothing changed.",
}


@main.group()
def policies() -> None:
    """Check policies files."""


@policies.command("check")
@click.argument("file", type=click.Path(dir_okay=False))
def policies_check(file: str) -> None:
    """Validate a policies file: exit 0 with a summary, or 2 with line-numbered errors.

    A file that names invariants is checked against those the workflows register (the shipped
    ones and `BATON_WORKFLOWS`'), which loads them.
    """
    try:
        policy = load_policy(file)
        if policy.invariant_names():  # named by workflows: load them (MAF) only then
            from workflows.platform import registry

            registry.load((*registry.PLATFORM_WORKFLOWS, *_settings().workflow_modules()))
            policy.check_invariants(registry.invariant_names(), file)
    except BatonError as exc:
        _fail(exc)
    _say(f"{file}: ok, {policy.summary()}")
    for rule in policy.rules:
        when = " and ".join(f"{c.arg} {c.op} {c.value!r}" for c in rule.when) or "always"
        team = f"({rule.team}{f', approvals={rule.approvals}' if rule.approvals > 1 else ''})"
        action = rule.action + (team if rule.team else "")
        _say(f"  line {rule.line}: {rule.id}: {rule.tool} when {when} -> {action}")
        if rule.why:
            _say(f"    why: {rule.why}")
        if rule.action == "approval":
            _say(f"    {_edits(rule)}")
        if rule.standing:
            _say("    an approval may stand for the run's later calls this rule decides")


def _edits(rule: Rule) -> str:
    """What an approver's edit may change under `rule`, in one line."""
    if rule.editable is None:
        said = "an edit may change any argument"
    else:
        said = f"an edit may change only {', '.join(rule.editable) or 'nothing'}"
    if rule.keep:
        said += f", never {', '.join(rule.keep)}"
    if rule.invariants:
        said += f"; it must keep {', '.join(rule.invariants)}"
    return said


def _workload_option(flag: str, dest: str, said: str) -> Callable[[F], F]:
    """A repeatable choice of the benchmarks' workloads (`bench_peers.WORKLOADS`), default both."""
    return click.option(
        flag,
        dest,
        multiple=True,
        type=click.Choice(["minimal", "refund"]),
        help=f"{said} (repeatable; default: both).",
    )


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object as the last line.")
@click.option("--runs", default=1000, type=int, help="Cycles for the throughput figure.")
@click.option("--paused", default=10_000, type=int, help="Paused runs for memory and listing.")
@click.option(
    "--postgres/--no-postgres", default=True, help="Measure the pg_ figures too (default: yes)."
)
@click.option(
    "--pg-url", default=None, help="PostgreSQL server (default BATON_BENCH_POSTGRES_URL, else own)."
)
@click.option("--pg-runs", default=500, type=int, help="--runs on PostgreSQL.")
@click.option("--pg-paused", default=4000, type=int, help="--paused on PostgreSQL.")
@click.option(
    "--scale-cycles", default=300, type=int, help="Timed cycles per worker count and round."
)
@click.option(
    "--peers/--no-peers", default=True, help="Beside LangGraph and bare MAF too (default: yes)."
)
@click.option("--peer-cycles", default=300, type=click.IntRange(1), help="Cycles per peer round.")
@_workload_option("--peer-workload", "peer_workloads", "Beside its peers on this workload only")
@click.option("--http-cycles", default=200, type=int, help="Timed answers over HTTP (serve).")
@click.option(
    "--rss/--no-rss",
    default=True,
    help="Memory over 10,000 completed drives, in child processes (minutes; default: yes).",
)
@click.option(
    "--rss-drives",
    default=10_000,
    type=click.IntRange(2),
    help="Drives of the --rss figure (a fifth as many of refund's).",
)
@click.option(
    "--concurrent-cycles",
    default=640,
    type=click.IntRange(1),
    help="Cycles per child with 32 runs in flight, Baton's and its peers' (with --peers).",
)
def bench(
    as_json: bool,
    runs: int,
    paused: int,
    postgres: bool,
    pg_url: str | None,
    pg_runs: int,
    pg_paused: int,
    scale_cycles: int,
    peers: bool,
    peer_cycles: int,
    peer_workloads: tuple[str, ...],
    http_cycles: int,
    rss: bool,
    rss_drives: int,
    concurrent_cycles: int,
) -> None:
    """Measure pause, resume, throughput, size and listing, on SQLite and PostgreSQL (README)."""
    from baton.bench import run_bench, scratch_root
    from baton.bench_concurrent import IN_FLIGHT, concurrent_figures
    from baton.bench_memory import rss_figures
    from baton.bench_peers import (
        WORKLOADS,
        bytes_vs_langgraph,
        peer_figures,
        peers_available,
        reporting,
        say,
    )

    configure_logging("WARNING")
    settings = Settings()
    configure_telemetry(settings)
    load1 = round(os.getloadavg()[0], 2)
    with reporting(lambda line: click.echo(f"bench: {line}", err=True)):
        say(f"{'SQLite and PostgreSQL' if postgres else 'SQLite'} figures (load {load1})")
        figures = eventloop.run(
            run_bench(
                runs=runs,
                paused=paused,
                postgres=postgres,
                pg_url=pg_url or settings.bench_postgres_url or None,  # '' (from .env): none
                pg_runs=pg_runs,
                pg_paused=pg_paused,
                scale_cycles=scale_cycles,
                http_cycles=http_cycles,
            )
        )
        if rss:
            say(f"memory over {rss_drives:,} drives (load {os.getloadavg()[0]:.2f})")
            refund_drives = max(2, rss_drives // 5)  # the agent's drives take about 5 times longer
            figures |= rss_figures(
                drives=rss_drives, refund_drives=refund_drives, root=scratch_root()
            )
        if peers and (missing := peers_available()):
            figures["peers_unavailable"] = missing
        elif peers:
            workloads = peer_workloads or tuple(WORKLOADS)
            figures |= peer_figures(peer_cycles, root=scratch_root(), workloads=workloads)
            figures |= peer_figures(
                concurrent_cycles, root=scratch_root(), workloads=workloads, in_flight=IN_FLIGHT
            )
            figures |= bytes_vs_langgraph(figures)
        if peers:  # Baton alone, with 32 runs in flight: needs no peer installed
            figures |= concurrent_figures(concurrent_cycles, root=scratch_root())
    figures["event_loop"] = eventloop.kind()  # Baton's, and every benchmark child's
    figures["load1"] = load1  # at the start; `load1_end` at the end
    figures["load1_end"] = round(os.getloadavg()[0], 2)
    for what in ("pg", "peers"):
        if why := figures.get(f"{what}_unavailable"):
            click.echo(f"warning: {what} figures missing: {why}", err=True)
    if not as_json:
        for key, value in figures.items():
            _say(f"{key:>28}: {value}")
    _say(json.dumps(figures))


@main.command("bench-instructions")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object as the last line.")
@click.option(
    "--cycles", default=50, type=click.IntRange(1), help="Counted cycles per system (after 5)."
)
@_workload_option("--workload", "workloads", "This workload only")
def bench_instructions(as_json: bool, cycles: int, workloads: tuple[str, ...]) -> None:
    """Count a cycle's instructions, Baton beside LangGraph and bare MAF (valgrind; minutes)."""
    from baton.bench_instructions import instruction_figures, instructions_unavailable
    from baton.bench_peers import WORKLOADS

    if missing := instructions_unavailable():
        raise click.ClickException(f"cannot count instructions here: {missing}")
    figures = instruction_figures(cycles, workloads=workloads or tuple(WORKLOADS))
    if not as_json:
        for key, value in figures.items():
            _say(f"{key:>36}: {value}")
    _say(json.dumps(figures))
