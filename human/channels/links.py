"""Signed deep links to a request's page (`/requests/{id}?sig=…`), made with `BATON_SECRET_KEY`.

The signature says the link was minted by this Baton, for this request and this delivery; the page
may check it (`LinkSigner.verify`) to record where a visit came from. It grants nothing: the page
still asks its visitor to sign in and applies the same access rules as the API.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from itsdangerous import BadSignature, URLSafeTimedSerializer

_SALT = "baton.request-link"


class LinkSigner:
    """Makes and checks signed links to request pages under one secret."""

    def __init__(self, secret: str, base_url: str) -> None:
        self._serializer = URLSafeTimedSerializer(secret, salt=_SALT)
        self._base = base_url.rstrip("/")

    def page(self, request_id: str) -> str:
        """The plain URL of a request's page."""
        return f"{self._base}/requests/{quote(request_id)}"

    def signed(self, request_id: str, delivery_id: str) -> str:
        """The page's URL with a signature binding it to this request and delivery."""
        token = self._serializer.dumps({"r": request_id, "d": delivery_id})
        return f"{self.page(request_id)}?sig={token}"

    def verify(self, request_id: str, sig: str, *, max_age_s: int | None = None) -> str | None:
        """The delivery id a valid signature for this request names, else None."""
        try:
            data: Any = self._serializer.loads(sig, max_age=max_age_s)
        except BadSignature:
            return None
        if not isinstance(data, dict) or data.get("r") != request_id:
            return None
        delivery = data.get("d")
        return delivery if isinstance(delivery, str) else None
