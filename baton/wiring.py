"""The background parts `baton serve` (web/app.py) and the `baton` commands (cli.py) both wire.

Notification channels exist for the settings that name them (`BATON_WEBHOOK_URL`,
`BATON_SLACK_WEBHOOK_URL`, `BATON_SMTP_URL`); the worker runs `notify` jobs through the outbox
dispatcher and `timer` jobs through the timer runner; links in messages are signed with
`BATON_SECRET_KEY`.
"""

from __future__ import annotations

from collections.abc import Callable

from slack_sdk.web.async_client import AsyncWebClient

from baton.settings import Settings
from human.channels import Channel
from human.channels.email import EmailChannel, SmtpRelay
from human.channels.links import LinkSigner
from human.channels.slack import SlackActions, SlackChannel
from human.channels.webhook import WebhookChannel
from human.notify import Dispatcher
from human.service import RequestService
from human.store.base import Store
from human.timers import TimerRunner
from workflows.worker import JobHandler


def link_signer(settings: Settings) -> LinkSigner:
    """Signs deep links to request pages under `BATON_BASE_URL`."""
    return LinkSigner(settings.secret_key.get_secret_value(), settings.base_url)


def notification_channels(settings: Settings, store: Store) -> dict[str, Channel]:
    """The channels the settings configure, by name (none: no outbox rows are written)."""
    timeout = settings.notify_timeout_seconds
    channels: dict[str, Channel] = {}
    if settings.webhook_url:
        secret = settings.webhook_secret.get_secret_value() if settings.webhook_secret else None
        channels["webhook"] = WebhookChannel(settings.webhook_url, secret, timeout_s=timeout)
    if settings.slack_webhook_url:
        channels["slack"] = SlackChannel(settings.slack_webhook_url, timeout_s=timeout)
    if settings.smtp_url:
        channels["email"] = EmailChannel(
            SmtpRelay.parse(settings.smtp_url),
            settings.smtp_from,
            members=store.team_members,
            person=store.get_user,
            links=link_signer(settings),
            timeout_s=timeout,
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
    )
    timers = TimerRunner(store, channels=dispatcher.channels, on_change=on_change)
    return {"notify": dispatcher.handle, "timer": timers.handle}


def slack_actions(
    settings: Settings, store: Store, requests: RequestService
) -> SlackActions | None:
    """The Slack buttons' endpoint logic, when `BATON_SLACK_SIGNING_SECRET` is set."""
    secret = settings.slack_signing_secret
    if secret is None or not secret.get_secret_value():
        return None
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
