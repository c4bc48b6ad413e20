"""The Teams bot's check of the Bot Connector's JWT, against a stand-in's metadata and keys."""

from __future__ import annotations

import time
from typing import Any

import jwt
import pytest

from baton.errors import Unauthenticated
from human.channels.teams_bot import BotTokenValidator
from tests.receivers import BOT_ISSUER, BotConnectorStandIn, bot_connector

APP_ID = "bot-app-id"


def _signed(connector: BotConnectorStandIn, drop: str = "", **claims: Any) -> str:
    now = int(time.time())
    body = {
        "iss": BOT_ISSUER,
        "aud": APP_ID,
        "exp": now + 600,
        "nbf": now - 60,
        "serviceUrl": connector.service_url,
    } | claims
    body.pop(drop, None)
    return jwt.encode(body, connector.key, algorithm="RS256", headers={"kid": connector.kid})


async def _check(
    validator: BotTokenValidator,
    connector: BotConnectorStandIn,
    token: str,
    channel: str = "msteams",
) -> dict[str, Any]:
    return await validator.validate(
        f"Bearer {token}", service_url=connector.service_url, channel_id=channel
    )


async def test_a_token_is_checked_whole() -> None:
    with bot_connector() as connector:
        validator = BotTokenValidator(APP_ID, connector.metadata_url)
        claims = await _check(validator, connector, _signed(connector))
        assert (claims["aud"], claims["iss"]) == (APP_ID, BOT_ISSUER)

        refusals = {
            "another channel": (_signed(connector), "slack"),
            "no expiry": (_signed(connector, drop="exp"), "msteams"),
            "no serviceUrl": (_signed(connector, drop="serviceUrl"), "msteams"),
            "another issuer": (_signed(connector, iss="https://sts.example/"), "msteams"),
            "expired beyond the skew": (_signed(connector, exp=int(time.time()) - 301), "msteams"),
            "not yet valid": (_signed(connector, nbf=int(time.time()) + 3600), "msteams"),
            "unsigned": (
                jwt.encode({"aud": APP_ID}, "", algorithm="none", headers={"kid": connector.kid}),
                "msteams",
            ),
            "unknown key": (
                jwt.encode(
                    {"aud": APP_ID}, connector.key, algorithm="RS256", headers={"kid": "other"}
                ),
                "msteams",
            ),
        }
        said = {}
        for name, (token, channel) in refusals.items():
            with pytest.raises(Unauthenticated) as refused:
                await _check(validator, connector, token, channel)
            said[name] = str(refused.value)
        # within the skew, an expired token still passes (as the Bot Framework allows)
        await _check(validator, connector, _signed(connector, exp=int(time.time()) - 60))

    assert "not endorsed for channel slack" in said["another channel"]
    assert "serviceUrl" in said["no serviceUrl"]
    assert "RS256" in said["unsigned"]
    assert "signing key" in said["unknown key"]
    assert "expired" in said["expired beyond the skew"]


async def test_nothing_is_accepted_while_the_keys_cannot_be_fetched() -> None:
    with bot_connector() as connector:
        token = _signed(connector)
        gone = BotTokenValidator(APP_ID, "http://127.0.0.1:9/openid", timeout_s=2)
        with pytest.raises(Unauthenticated, match="could not be fetched"):
            await _check(gone, connector, token)
