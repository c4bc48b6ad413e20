"""Real servers that receive what Baton sends: HTTP receivers (webhooks, Slack, Teams) and SMTP.

Both run in a thread of the test process on a loopback port, so a `baton serve` child process
talks to them over real sockets. The HTTP receiver answers each request with the next status of
its script (then 200), with the JSON body set for its path if any (a Web API's answer); the SMTP
server speaks STARTTLS with a certificate made for the test and requires a login once the
connection is encrypted. The stalling receiver and a paused SMTP server are the slow ends a
delivery deadline is for: an answer dripped a byte at a time, none at all, a relay slow to answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import ipaddress
import json
import select
import ssl
import threading
import time
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from email import message_from_bytes, policy
from email.message import EmailMessage
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Literal
from urllib.parse import parse_qs

import jwt
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, AuthResult, Envelope, LoginPassword, Session
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID

from tests.harness import free_port


@dataclass
class Received:
    """One HTTP request as the receiver saw it."""

    path: str
    headers: dict[str, str]
    body: bytes
    status: int

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Loopback:
    """Where a receiver listens."""

    port: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


class _Quiet(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        return


@contextlib.contextmanager
def _serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[int]:
    """A threaded HTTP server on a loopback port (yielded) for `handler`; stopped after."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield int(server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@dataclass
class HttpReceiver(Loopback):
    """A loopback HTTP server recording every POST; `script` holds the statuses to answer."""

    script: list[int] = field(default_factory=list)
    received: list[Received] = field(default_factory=list)

    def at(self, path: str) -> list[Received]:
        return [r for r in list(self.received) if r.path == path]


@contextlib.contextmanager
def http_receiver(
    script: list[int] | None = None, answers: dict[str, Any] | None = None
) -> Iterator[HttpReceiver]:
    """A running receiver; stopped when the block ends. `answers`: a JSON body by path."""
    receiver = HttpReceiver(script=list(script or []))
    bodies = dict(answers or {})
    lock = threading.Lock()

    class Handler(_Quiet):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            if len(body) < length:  # the sender died mid-request (a test's kill -9): not received
                return
            with lock:
                status = receiver.script.pop(0) if receiver.script else 200
                headers = {k.lower(): v for k, v in self.headers.items()}
                receiver.received.append(Received(self.path, headers, body, status))
            path = self.path.split("?", 1)[0]
            self.send_response(status)
            if path in bodies:
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(json.dumps(bodies[path]).encode())
                return
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            self.wfile.write(b"ok" if status < 300 else b"the receiver says no")

    with _serving(Handler) as receiver.port:
        yield receiver


@dataclass
class StallingReceiver(Loopback):
    """A loopback HTTP server that takes each POST whole, then stalls its answer.

    `drip`: a 200 whose body comes one byte every `drip_s` (no read ever waits long enough to
    time out); `silent`: no answer at all. `arrived` and `hung_up` are `time.monotonic()` when
    each request came in and when its sender gave up on it (closed the connection).
    """

    arrived: list[float] = field(default_factory=list)
    hung_up: list[float] = field(default_factory=list)

    @property
    def in_flight(self) -> int:
        return len(self.arrived) - len(self.hung_up)


@contextlib.contextmanager
def stalling_receiver(
    how: Literal["drip", "silent"], *, drip_s: float = 1.0, body_bytes: int = 600
) -> Iterator[StallingReceiver]:
    """A running stalling receiver; its stalled answers end when the block ends."""
    receiver = StallingReceiver()
    lock = threading.Lock()
    closing = threading.Event()

    class Handler(_Quiet):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            with lock:
                receiver.arrived.append(time.monotonic())
            try:
                if how == "drip":
                    self.send_response(200)
                    self.send_header("Content-Type", "text/plain")
                    self.send_header("Content-Length", str(body_bytes))
                    self.end_headers()
                    self.wfile.flush()
                for _ in range(body_bytes):
                    if self._sender_left(drip_s):
                        break
                    if how == "drip":
                        self.wfile.write(b".")
                        self.wfile.flush()
            except OSError:  # the sender reset the connection as it left
                pass
            with lock:
                receiver.hung_up.append(time.monotonic())
            self.close_connection = True

        def _sender_left(self, within_s: float) -> bool:
            """Whether the sender closes its end within `within_s` (or the receiver stops)."""
            until = time.monotonic() + within_s
            while not closing.is_set() and (left := until - time.monotonic()) > 0:
                readable, _, _ = select.select([self.connection], [], [], min(left, 0.05))
                if readable and self.connection.recv(1) == b"":
                    return True
            return closing.is_set()

    with _serving(Handler) as receiver.port:
        try:
            yield receiver
        finally:
            closing.set()  # before the server stops: it waits for no stalled answer


# SMTP ---------------------------------------------------------------------------------------


def self_signed(directory: Path) -> tuple[Path, Path]:
    """A certificate and key for 127.0.0.1 (and localhost), made for one test."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "baton-test-smtp")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "smtp-cert.pem", directory / "smtp-key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


@dataclass
class Mail:
    """One message the SMTP server accepted."""

    sender: str
    recipients: list[str]
    message: EmailMessage
    tls: bool
    login: str | None
    connection: int
    """Which of the server's connections (`SmtpServer.sessions`) it came in."""


@dataclass
class SmtpServer:
    """What the test's SMTP server accepted, and how to reach it."""

    port: int
    cafile: Path
    username: str
    password: str
    mails: list[Mail] = field(default_factory=list)
    refusals: list[str] = field(default_factory=list)
    sessions: list[Any] = field(default_factory=list)
    """The connections that sent mail, in order (kept: their ids stay theirs)."""
    data_commands: int = 0
    """The DATA commands it was given, those it refused among them."""

    def url(self, **params: str) -> str:
        query = "&".join(f"{k}={v}" for k, v in {"cafile": str(self.cafile), **params}.items())
        return f"smtp://{self.username}:{self.password}@127.0.0.1:{self.port}?{query}"


@contextlib.contextmanager
def smtp_server(
    directory: Path, *, pause_s: float = 0.0, refuse_data: Collection[int] = ()
) -> Iterator[SmtpServer]:
    """aiosmtpd with STARTTLS required before AUTH, and AUTH required before mail.

    `pause_s`: a slow relay, taking that long to answer each MAIL and RCPT command.
    `refuse_data`: which of its DATA commands (0 the first, counted over the server's life) it
    answers with a temporary failure (451), taking nothing.
    """
    cert, key = self_signed(directory)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    server = SmtpServer(port=free_port(), cafile=cert, username="baton", password="s3cret pass")

    def authenticate(
        smtp: SMTP, session: Session, envelope: Envelope, mechanism: str, data: Any
    ) -> AuthResult:
        ok = isinstance(data, LoginPassword) and (data.login, data.password) == (
            server.username.encode(),
            server.password.encode(),
        )
        if not ok:
            server.refusals.append(f"bad login by {mechanism}")
        return AuthResult(success=ok, auth_data=server.username if ok else None)

    class Handler:
        async def handle_MAIL(  # noqa: N802 - aiosmtpd's hook name
            self, smtp: SMTP, session: Session, envelope: Envelope, address: str, options: list[str]
        ) -> str:
            await asyncio.sleep(pause_s)
            envelope.mail_from = address
            envelope.mail_options.extend(options)
            return "250 OK"

        async def handle_RCPT(  # noqa: N802 - aiosmtpd's hook name
            self, smtp: SMTP, session: Session, envelope: Envelope, address: str, options: list[str]
        ) -> str:
            await asyncio.sleep(pause_s)
            envelope.rcpt_tos.append(address)
            envelope.rcpt_options.extend(options)
            return "250 OK"

        async def handle_DATA(  # noqa: N802 - aiosmtpd's hook name
            self, smtp: SMTP, session: Session, envelope: Envelope
        ) -> str:
            server.data_commands += 1
            if server.data_commands - 1 in refuse_data:
                return "451 4.3.0 Try again later"
            raw = envelope.original_content or b""
            login = session.auth_data if session.authenticated else None
            if not any(seen is session for seen in server.sessions):
                server.sessions.append(session)
            server.mails.append(
                Mail(
                    sender=str(envelope.mail_from),
                    recipients=list(envelope.rcpt_tos),
                    message=message_from_bytes(raw, policy=policy.default),  # type: ignore[arg-type]
                    tls=session.ssl is not None,
                    login=login if isinstance(login, str) else None,
                    connection=next(i for i, seen in enumerate(server.sessions) if seen is session),
                )
            )
            return "250 OK"

    controller = Controller(
        Handler(),
        hostname="127.0.0.1",
        port=server.port,
        tls_context=context,
        require_starttls=True,
        authenticator=authenticate,
        auth_required=True,
        auth_require_tls=True,
    )
    controller.start()
    try:
        yield server
    finally:
        controller.stop()


# Microsoft Teams: the Bot Connector --------------------------------------------------------

BOT_ISSUER = "https://api.botframework.com"
IDENTITY_HEADER = "identity-header-for-tests"


@dataclass
class BotConnectorStandIn(Loopback):
    """What the bot's side of Teams sees: the Bot Connector's OpenID metadata and signing keys
    (`/openid`, `/keys`), its conversations API (`/v3/conversations/...`: posts, updates,
    members) and a managed-identity token endpoint (`/msi/token`). `key` signs the tokens a test
    sends as the Bot Connector would; the keys served endorse it for `msteams`.
    """

    key: rsa.RSAPrivateKey = field(default_factory=lambda: rsa.generate_private_key(65537, 2048))
    kid: str = "baton-test-key"
    members: dict[str, dict[str, Any]] = field(default_factory=dict)
    received: list[Received] = field(default_factory=list)
    tokens_asked: list[dict[str, str]] = field(default_factory=list)

    @property
    def metadata_url(self) -> str:
        return f"{self.url}/openid"

    @property
    def service_url(self) -> str:
        return f"{self.url}/teams/"

    def jwks(self) -> dict[str, Any]:
        public = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key()))
        return {"keys": [public | {"kid": self.kid, "use": "sig", "endorsements": ["msteams"]}]}

    def posts(self) -> list[Received]:
        return [r for r in list(self.received) if r.status == 201]

    def updates(self) -> list[Received]:
        return [r for r in list(self.received) if r.path.count("/activities/") == 1]


@contextlib.contextmanager
def bot_connector() -> Iterator[BotConnectorStandIn]:
    """A running Bot Connector stand-in; stopped when the block ends."""
    stand_in = BotConnectorStandIn()
    lock = threading.Lock()
    counter = iter(range(1, 1_000_000))

    class Handler(_Quiet):
        def _answer(self, status: int, body: Any) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(json.dumps(body).encode())

        def _record(self, status: int) -> Received:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            headers = {k.lower(): v for k, v in self.headers.items()}
            received = Received(self.path, headers, body, status)
            with lock:
                stand_in.received.append(received)
            return received

        def do_GET(self) -> None:
            path, _, query = self.path.partition("?")
            if path == "/openid":
                self._answer(200, {"issuer": BOT_ISSUER, "jwks_uri": f"{stand_in.url}/keys"})
            elif path == "/keys":
                self._answer(200, stand_in.jwks())
            elif path == "/msi/token":
                headers = {k.lower(): v for k, v in self.headers.items()}
                stand_in.tokens_asked.append({"query": query, **headers})
                if headers.get("x-identity-header") != IDENTITY_HEADER:
                    self._answer(401, {"error": "bad identity header"})
                    return
                self._answer(
                    200,
                    {
                        "access_token": "bot-connector-token",
                        "expires_on": str(int(time.time()) + 3600),
                        "resource": "https://api.botframework.com",
                        "token_type": "Bearer",
                    },
                )
            elif "/members/" in path:
                self._record(200)
                member = stand_in.members.get(path.rsplit("/", 1)[1].replace("%3A", ":"))
                self._answer(200 if member else 404, member or {"error": "no such member"})
            else:
                self._answer(404, {"error": "not here"})

        def do_POST(self) -> None:
            self._record(201)
            self._answer(201, {"id": f"activity-{next(counter)}"})

        def do_PUT(self) -> None:
            self._record(200)
            self._answer(200, {"id": self.path.rsplit("/", 1)[1]})

    with _serving(Handler) as stand_in.port:
        yield stand_in


@dataclass
class TokenEndpoint(Loopback):
    """An Entra token endpoint over TLS (a certificate made for the test, `cafile`): what the
    client-credentials grant asks (`asked`: each form), and the token it is given."""

    cafile: Path = Path()
    token: str = "bot-token-from-the-secret"
    asked: list[dict[str, str]] = field(default_factory=list)

    @property
    def authority(self) -> str:
        return f"https://127.0.0.1:{self.port}"


@contextlib.contextmanager
def token_endpoint(directory: Path) -> Iterator[TokenEndpoint]:
    """A running HTTPS token endpoint (`/{tenant}/oauth2/v2.0/token`); stopped after the block."""
    cert, key = self_signed(directory)
    endpoint = TokenEndpoint(cafile=cert)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)

    class Handler(_Quiet):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
            form = {k: v[-1] for k, v in parse_qs(body).items()}
            endpoint.asked.append({"path": self.path, **form})
            self.send_response(200 if self.path.endswith("/oauth2/v2.0/token") else 404)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            answer = {"token_type": "Bearer", "expires_in": 3600, "access_token": endpoint.token}
            self.wfile.write(json.dumps(answer).encode())

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    endpoint.port = int(server.server_address[1])
    try:
        yield endpoint
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
