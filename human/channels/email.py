"""Email over SMTP: an HTML and plain-text message to the members of the request's team.

`BATON_SMTP_URL` names the relay: `smtp://user:password@host:port?starttls=true` (STARTTLS on a
plain connection; `starttls=false` never upgrades, and without the parameter the connection is
upgraded when the server offers it), or `smtps://…` for TLS from the first byte. `cafile=/path`
trusts a private CA (a relay with a self-signed certificate). `BATON_SMTP_FROM` is the sender.

Recipients are the team's members with an email address (`baton users add NAME --email …`, or
the users API); a team without any is recorded as skipped, not as a failure. The message carries a
signed deep link to the request's page (`links.py`), which asks for sign-in like any page. Its
times (the deadline, an escalation) are on its recipients' clocks: one message for each time zone
among them (`User.time_zone`; UTC for those without one), sent in one connection. A retry after an
attempt that failed part way sends the zones' messages the relay had not taken.
"""

from __future__ import annotations

import contextlib
import html
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from email.message import EmailMessage
from email.utils import make_msgid
from urllib.parse import parse_qs, unquote, urlsplit

import aiosmtplib

from baton.errors import NotificationFailed
from human.channels import Notice, key_context, timing
from human.channels.links import LinkSigner
from human.records import User
from human.zones import DEFAULT_ZONE

_TRUE = ("1", "true", "yes", "on")


@dataclass(frozen=True)
class SmtpRelay:
    """Where and how to hand mail over, parsed from `BATON_SMTP_URL`."""

    host: str
    port: int
    username: str | None
    password: str | None
    use_tls: bool
    start_tls: bool | None
    cafile: str | None

    @classmethod
    def parse(cls, url: str) -> SmtpRelay:
        """The relay a `smtp://` or `smtps://` URL names; `ValueError` says what is wrong."""
        parts = urlsplit(url)
        if parts.scheme not in ("smtp", "smtps") or not parts.hostname:
            raise ValueError("BATON_SMTP_URL must look like smtp://user:pass@host:port")
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        unknown = set(query) - {"starttls", "cafile"}
        if unknown:
            raise ValueError(f"BATON_SMTP_URL: unknown parameter {sorted(unknown)[0]!r}")
        use_tls = parts.scheme == "smtps"
        start_tls = None if "starttls" not in query else query["starttls"].lower() in _TRUE
        if use_tls and start_tls:
            raise ValueError("BATON_SMTP_URL: smtps:// is TLS already; drop starttls=true")
        return cls(
            host=parts.hostname,
            port=parts.port or (465 if use_tls else 25),
            username=unquote(parts.username) if parts.username else None,
            password=unquote(parts.password) if parts.password else None,
            use_tls=use_tls,
            start_tls=False if use_tls else start_tls,
            cafile=query.get("cafile"),
        )


class EmailChannel:
    """Sends one message per notice to the request's team."""

    name = "email"
    follows_answers = False

    def __init__(
        self,
        relay: SmtpRelay,
        sender: str,
        *,
        members: Callable[[str], Awaitable[list[User]]],
        person: Callable[[str], Awaitable[User | None]],
        links: LinkSigner,
        timeout_s: float = 10.0,
    ) -> None:
        self._relay = relay
        self._sender = sender
        self._members = members
        self._person = person
        self._links = links
        self._timeout_s = timeout_s
        self._tls = ssl.create_default_context(cafile=relay.cafile) if relay.cafile else None

    async def send(self, notice: Notice) -> str | None:
        """Mail the team (or the person it was handed to); why not, if nobody has an address.

        `NotificationFailed` on errors worth a retry.
        """
        request = notice.request
        team = request.team
        if notice.event == "reassigned" and request.assignee:
            person = await self._person(request.assignee)
            if person is None or not person.email:
                return f"{request.assignee} has no email address"
            people = [person]
        else:
            people = [u for u in await self._members(team) if u.email]
            if not people:
                return f"no member of team {team} has an email address"
        by_zone: dict[str, list[str]] = {}
        for person in people:
            assert person.email is not None
            by_zone.setdefault(person.time_zone or DEFAULT_ZONE, []).append(person.email)
        await self._send(
            notice,
            {
                zone: self.message(notice, recipients, zone=zone, part=part)
                for part, (zone, recipients) in enumerate(sorted(by_zone.items()))
                if zone not in notice.parts_sent
            },
        )
        return None

    async def _send(self, notice: Notice, messages: dict[str, EmailMessage]) -> None:
        """Hand the messages to the relay, in one connection, each zone's noted as it is taken.

        `NotificationFailed` on errors worth a retry, which sends the zones' messages the relay
        had not taken (`Notice.parts_sent`): one it took as the attempt failed is sent again.
        """
        relay = self._relay
        client = aiosmtplib.SMTP(
            hostname=relay.host,
            port=relay.port,
            username=relay.username,
            password=relay.password,
            use_tls=relay.use_tls,
            start_tls=relay.start_tls,
            tls_context=self._tls,
            timeout=self._timeout_s,
        )
        # Not `aiosmtplib.send`: its exit says QUIT and waits for the answer even when the
        # attempt was cancelled at its deadline, so a stalled relay would hold it a timeout more.
        # A failed or cancelled attempt drops the connection at once instead.
        try:
            await client.connect()
            for zone, message in messages.items():
                await client.send_message(message)
                notice.parts_sent.add(zone)
            with contextlib.suppress(aiosmtplib.SMTPException, OSError):
                await client.quit()  # the relay has the message: a failed goodbye is no failure
        except (aiosmtplib.SMTPException, OSError) as exc:
            raise NotificationFailed(f"email: {type(exc).__name__}: {exc}") from exc
        finally:
            client.close()

    def message(
        self, notice: Notice, recipients: list[str], *, zone: str | None = None, part: int = 0
    ) -> EmailMessage:
        """The message: a plain-text part and an HTML part, each with the signed link.

        Its times are on `zone`'s clock, its recipients' (`send` sends one message a zone; `part`
        tells their ids apart).
        """
        request = notice.request
        link = self._links.signed(request.id, notice.delivery_id)
        facts = [("Team", request.team), ("Priority", request.priority)]
        facts += [(due.name.capitalize(), due.said(zone)) for due in timing(request)]
        facts += key_context(request)
        article = "An" if request.kind[0] in "aeiou" else "A"
        leads = {
            "escalated": f"This {request.kind} request was escalated to {request.team}.",
            "reassigned": f"This {request.kind} request was reassigned to "
            + (f"{request.assignee} ({request.team})." if request.assignee else f"{request.team}."),
        }
        lead = leads.get(
            notice.event, f"{article} {request.kind} request waits for {request.team}."
        )
        message = EmailMessage()
        message["Subject"] = f"[Baton] {notice.headline}"
        message["From"] = self._sender
        message["To"] = ", ".join(recipients)
        idstring = f"{notice.delivery_id}.{part}" if part else notice.delivery_id
        message["Message-ID"] = make_msgid(idstring=idstring, domain="baton")
        message["X-Baton-Delivery"] = notice.delivery_id
        text_facts = "\n".join(f"  {k}: {v}" for k, v in facts)
        message.set_content(
            f"{lead}\n\n{request.title}\n\n{request.reason}\n\n{text_facts}\n\n"
            f"Open it (sign-in required):\n{link}\n"
        )
        rows = "".join(
            f"<tr><th align='left'>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>"
            for k, v in facts
        )
        message.add_alternative(
            "<!doctype html><html><body>"
            f"<p>{html.escape(lead)}</p>"
            f"<h2>{html.escape(request.title)}</h2>"
            f"<p>{html.escape(request.reason)}</p>"
            f"<table>{rows}</table>"
            f'<p><a href="{html.escape(link)}">Open the request</a> (sign-in required)</p>'
            "</body></html>",
            subtype="html",
        )
        return message
