"""One wiring: `open_parts(settings)` opens what the web app, the CLI, the bench and tests run on.

It loads the workflows (the shipped ones, then `BATON_WORKFLOWS`), reads the policy, opens the
store, and wires the runtime, the request and people services, the worker (drives, `notify` jobs
through the outbox dispatcher, `timer` jobs through the timer runner) and the notification
channels the settings configure (`BATON_WEBHOOK_URL`, `BATON_SLACK_WEBHOOK_URL`,
`BATON_SMTP_URL`, `BATON_TEAMS_WEBHOOK_URL`, `BATON_TEAMS_APP_ID`); links in messages are signed
with `BATON_SECRET_KEY`.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from baton.clock import clock_of
from baton.errors import InvalidSettings
from baton.settings import SHIPPED_WORKFLOWS, Settings
from executors.platform.chat_clients import ProviderConfig
from executors.platform.services import Resources
from human.channels import Channel
from human.channels.email import EmailChannel, SmtpRelay
from human.channels.links import LinkSigner
from human.channels.webhook import WebhookChannel
from human.notify import Dispatcher
from human.people import PeopleService
from human.policy import Policy, load_policy
from human.service import RequestService, fixed_arguments
from human.store import open_store
from human.store.base import Store
from human.timers import TimerRunner
from workflows.platform import registry
from workflows.platform.ask import AskService
from workflows.platform.runtime import Runtime
from workflows.platform.worker import JobHandler, Worker

if TYPE_CHECKING:
    # Slack's and Teams' libraries (slack_sdk, microsoft_agents, azure.identity) are imported
    # where a setting asks for their channel: together they were about 40 % of a process's start.
    from human.channels.slack import SlackActions
    from human.channels.teams import BotConnector
    from human.channels.teams_bot import TeamsBot


def policy_of(settings: Settings) -> Policy:
    """The policy `BATON_POLICIES` names, else the shipped workflows' `policies.yaml`, validated.

    A file that does not validate raises `InvalidPolicy` naming the lines of its mistakes.
    """
    shipped = resources.files(SHIPPED_WORKFLOWS).joinpath("policies.yaml")
    return load_policy(Path(settings.policies or str(shipped)))


def link_signer(settings: Settings) -> LinkSigner:
    """Signs deep links to request pages under `BATON_BASE_URL`."""
    return LinkSigner(settings.secret_key.get_secret_value(), settings.base_url)


def teams_connector(settings: Settings) -> BotConnector | None:
    """The Bot Connector as Baton's bot, when `BATON_TEAMS_APP_ID` is set.

    With `BATON_TEAMS_APP_PASSWORD` the bot's tokens come from its app registration's client
    secret in `BATON_TEAMS_TENANT_ID`; without it, from the managed identity whose client id is
    the app id (an Azure Bot of type user-assigned managed identity).
    """
    app_id = settings.teams_app_id
    if not app_id:
        return None
    from azure.identity.aio import ClientSecretCredential, ManagedIdentityCredential

    from human.channels.teams import BotConnector

    password = settings.teams_app_password.get_secret_value() if settings.teams_app_password else ""
    if not password:
        return BotConnector(ManagedIdentityCredential(client_id=app_id))
    if not settings.teams_tenant_id:
        raise InvalidSettings(
            "BATON_TEAMS_TENANT_ID is required with BATON_TEAMS_APP_PASSWORD (a single-tenant bot)"
        )
    return BotConnector(ClientSecretCredential(settings.teams_tenant_id, app_id, password))


def notification_channels(
    settings: Settings,
    store: Store,
    *,
    teams: BotConnector | None = None,
    policy: Policy | None = None,
) -> dict[str, Channel]:
    """The channels the settings configure, by name (none: no outbox rows are written)."""
    timeout = settings.notify_timeout_seconds
    channels: dict[str, Channel] = {}
    if settings.webhook_url:
        secret = settings.webhook_secret.get_secret_value() if settings.webhook_secret else None
        channels["webhook"] = WebhookChannel(settings.webhook_url, secret, timeout_s=timeout)
    if settings.slack_webhook_url:
        from human.channels.slack import SlackChannel

        bot = all(  # modals need Slack's Web API, and clicks a verified endpoint
            secret is not None and secret.get_secret_value()
            for secret in (settings.slack_bot_token, settings.slack_signing_secret)
        )
        channels["slack"] = SlackChannel(settings.slack_webhook_url, timeout_s=timeout, forms=bot)
    if settings.smtp_url:
        channels["email"] = EmailChannel(
            SmtpRelay.parse(settings.smtp_url),
            settings.smtp_from,
            members=store.team_members,
            person=store.get_user,
            links=link_signer(settings),
            timeout_s=timeout,
        )
    if settings.teams_webhook_url:
        from human.channels.teams import TeamsWebhookChannel

        channels["teams"] = TeamsWebhookChannel(
            settings.teams_webhook_url, link_signer(settings), timeout_s=timeout
        )
    if teams is not None:
        from human.channels.teams import TeamsBotChannel

        channels["teams-bot"] = TeamsBotChannel(
            store, teams, link_signer(settings), fixed=functools.partial(fixed_arguments, policy)
        )
    return channels


def job_handlers(
    settings: Settings,
    store: Store,
    channels: dict[str, Channel],
    *,
    on_change: Callable[[str, str], None] | None = None,
) -> dict[str, JobHandler]:
    """What the worker runs besides drives: notifications and timers."""
    dispatcher = Dispatcher(
        store,
        channels,
        link_signer(settings),
        max_attempts=settings.notify_max_attempts,
        backoff_s=settings.notify_backoff_seconds,
        deadline_s=settings.notify_timeout_seconds,
    )
    timers = TimerRunner(
        store,
        channels=dispatcher.channels,
        answer_channels=answer_channels(channels),
        on_change=on_change,
    )
    return {"notify": dispatcher.handle, "timer": timers.handle}


def answer_channels(channels: dict[str, Channel]) -> list[str]:
    """The channels that follow a request to its end (and replace what they posted about it)."""
    return sorted(name for name, channel in channels.items() if channel.follows_answers)


def slack_actions(
    settings: Settings, store: Store, requests: RequestService
) -> SlackActions | None:
    """The Slack buttons' endpoint logic, when `BATON_SLACK_SIGNING_SECRET` is set."""
    secret = settings.slack_signing_secret
    if secret is None or not secret.get_secret_value():
        return None
    from slack_sdk.web.async_client import AsyncWebClient

    from human.channels.slack import SlackActions

    token = settings.slack_bot_token.get_secret_value() if settings.slack_bot_token else ""
    web = (
        AsyncWebClient(
            token=token,
            base_url=settings.slack_api_url,
            timeout=max(1, round(settings.notify_timeout_seconds)),
        )
        if token
        else None
    )
    return SlackActions(
        store,
        requests,
        link_signer(settings),
        signing_secret=secret.get_secret_value(),
        web=web,
        timeout_s=settings.notify_timeout_seconds,
    )


def teams_bot(
    settings: Settings, store: Store, requests: RequestService, connector: BotConnector | None
) -> TeamsBot | None:
    """The Teams bot's endpoint logic, when `BATON_TEAMS_APP_ID` is set."""
    if connector is None or not settings.teams_app_id:
        return None
    from human.channels.teams_bot import BotTokenValidator, TeamsBot

    validator = BotTokenValidator(
        settings.teams_app_id,
        settings.teams_openid_metadata_url,
        timeout_s=settings.notify_timeout_seconds,
    )
    return TeamsBot(store, store, requests, link_signer(settings), validator, connector)


@dataclass
class Parts:
    """What one process runs on: opened by `open_parts`, closed when its block ends."""

    settings: Settings
    store: Store
    runtime: Runtime
    requests: RequestService
    people: PeopleService
    worker: Worker
    asks: AskService
    slack: SlackActions | None = None
    teams: TeamsBot | None = None


Prepared = tuple[ProviderConfig, Policy]
"""What `prepare` found: the model provider and the policy."""


def prepare(settings: Settings) -> Prepared:
    """Load the workflows and check what must hold before anything opens or serves.

    A model provider missing a setting, or a policies file that does not validate (or names an
    invariant no workflow registers), raises `InvalidSettings` / `InvalidPolicy` here.
    """
    registry.load((*registry.PLATFORM_WORKFLOWS, *settings.workflow_modules()))
    provider = ProviderConfig.from_settings(settings)
    provider.check()
    policy = policy_of(settings)
    policy.check_invariants(registry.invariant_names(), settings.policies or "policies.yaml")
    return provider, policy


@contextlib.asynccontextmanager
async def open_parts(
    settings: Settings, *, local_worker: bool = True, prepared: Prepared | None = None
) -> AsyncIterator[Parts]:
    """Open the store and wire everything on it; the store closes when the block ends.

    The worker is built either way (the CLI drives runs through it); `local_worker` hands the runs
    this process starts straight to it, for a process that runs it (`baton serve` without
    `--no-worker`, the bench, in-process tests). `prepared` is `prepare(settings)` done already
    (the app prepares before it serves, then opens its parts).
    """
    provider, policy = prepared or prepare(settings)
    clock = clock_of(settings.clock_file)
    store = await open_store(settings.database_url, clock=clock)
    resources = Resources(settings.database_url)
    connector: BotConnector | None = None
    runtime: Runtime | None = None
    try:
        connector = teams_connector(settings)
        channels = notification_channels(settings, store, teams=connector, policy=policy)
        wake: list[Worker] = []

        def on_change(kind: str, ident: str) -> None:
            for worker in wake:
                worker.wake()

        runtime = Runtime(
            store,
            model=settings.model,
            provider=provider,
            policy=policy,
            clock=clock,
            notify_channels=sorted(channels),
            answer_channels=answer_channels(channels),
            resources=resources,
            kept_per_workflow=settings.worker_concurrency,  # as many as drive at once here
        )
        worker = Worker(
            store,
            runtime,
            concurrency=settings.worker_concurrency,
            delivery_concurrency=settings.notify_concurrency,
            poll_s=settings.worker_poll_ms / 1000,
            lease_s=settings.job_lease_seconds,
            handlers=job_handlers(settings, store, channels, on_change=on_change),
        )
        if local_worker:
            runtime.attach_worker(worker)
            wake.append(worker)
        requests = RequestService(
            store,
            clock=clock,
            on_change=on_change,
            worker=worker if local_worker else None,
            claim_s=settings.claim_seconds,
            notify_channels=sorted(channels),
            answer_channels=answer_channels(channels),
            policy=policy,
            invariants=registry.invariants(resources),
        )
        yield Parts(
            settings=settings,
            store=store,
            runtime=runtime,
            requests=requests,
            people=PeopleService(store),
            worker=worker,
            asks=AskService(runtime, requests, base_url=settings.base_url),
            slack=slack_actions(settings, store, requests),
            teams=teams_bot(settings, store, requests, connector),
        )
    finally:
        try:
            if runtime is not None:  # the agents' MCP tools close their connections
                await runtime.pool.close()
        finally:
            try:
                if connector is not None:
                    await connector.close()
            finally:
                try:
                    await resources.close()
                finally:
                    await store.close()
