"""Security headers on every response, decided once, here.

Every response: `X-Content-Type-Options: nosniff`, `Referrer-Policy: same-origin`, and no framing
(`X-Frame-Options: DENY`; `frame-ancestors 'none'`). HTML pages get a Content Security Policy that
allows scripts, styles, images and connections from this origin only: no inline script runs (the
pages have none; htmx, its SSE extension and Swagger UI for `/docs` are vendored files); ReDoc
(`/redoc`) styles itself with inline `<style>` elements, so its page alone also allows inline
styles (never scripts) and its blob worker. A
response to a caller who sent credentials (a bearer token or a session cookie) is never cached:
`Cache-Control: no-store`, unless the route set its own; static files are revalidated by their
ETag (`no-cache`), for anyone.
"""

from __future__ import annotations

from typing import Final

from starlette.types import Message, Receive, Scope, Send

from web.asgi import HttpMiddleware
from web.auth import SESSION_COOKIE

CSP: Final = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'self'; "
    "form-action 'self'; frame-ancestors 'none'"
)
REDOC_CSP: Final = (
    CSP.replace("style-src 'self'", "style-src 'self' 'unsafe-inline'") + "; worker-src blob:"
)
_ALWAYS: Final = (
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),
)


class SecurityHeaders(HttpMiddleware):
    """ASGI middleware: add the security headers to each response's start."""

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on; add the headers as the response starts."""
        path = str(scope.get("path", ""))
        sent = {k.lower() for k, _ in scope["headers"]}
        cookie = b"".join(v for k, v in scope["headers"] if k.lower() == b"cookie")
        credentialed = b"authorization" in sent or SESSION_COOKIE.encode() + b"=" in cookie

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                present = {k.lower() for k, _ in headers}
                headers += [(k, v) for k, v in _ALWAYS if k not in present]
                media = next((v for k, v in headers if k.lower() == b"content-type"), b"")
                if media.startswith(b"text/html"):
                    policy = REDOC_CSP if path == "/redoc" else CSP
                    headers.append((b"content-security-policy", policy.encode()))
                elif b"content-security-policy" not in present:
                    headers.append((b"content-security-policy", b"frame-ancestors 'none'"))
                if b"cache-control" not in present and path.startswith("/static/"):
                    headers.append((b"cache-control", b"no-cache"))  # revalidated by its ETag
                elif credentialed and b"cache-control" not in present:
                    headers.append((b"cache-control", b"no-store"))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)
