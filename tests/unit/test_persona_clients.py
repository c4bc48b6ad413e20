"""`ChatClientFactory.for_persona`: each build's client is configured on its own, one connection.

MAF keeps a client's tool-loop configuration, middleware and properties on the client object; a
builder may change them. The provider's client (its HTTP connection pool, its credential) is
made once per process and persona and shared by every copy; nothing more is opened per build.
"""

from __future__ import annotations

import pytest
from agent_framework import ChatContext, FunctionTool

from executors.platform.chat_clients import ProviderConfig
from executors.platform.services import ChatClientFactory
from tests.fixtures import persona_clients  # noqa: F401  (its scripted play for "research")

OPENAI = ProviderConfig(model="openai", openai_api_key="sk-test", openai_base_url="http://x.test")


async def tidy(context: ChatContext, call_next: object) -> None:
    """A chat middleware a builder adds to its client."""


@pytest.mark.parametrize("provider", [ProviderConfig(), OPENAI], ids=["scripted", "openai"])
def test_a_build_s_configuration_is_its_own_and_its_connection_the_process_s(
    provider: ProviderConfig,
) -> None:
    clients = ChatClientFactory(provider.model, provider)
    mine, theirs = clients.for_persona("research"), clients.for_persona("research")
    extra = FunctionTool(name="extra", description="", func=None, input_model={})

    mine.function_invocation_configuration["max_function_calls"] = 4
    mine.function_invocation_configuration["additional_tools"].append(extra)
    mine.chat_middleware.append(tidy)
    mine.additional_properties["tenant"] = "a"

    assert mine is not theirs
    assert theirs.function_invocation_configuration["max_function_calls"] is None
    assert theirs.function_invocation_configuration["additional_tools"] == []
    assert (theirs.chat_middleware, theirs.additional_properties) == ([], {})
    assert clients.for_persona("research").function_invocation_configuration == (
        theirs.function_invocation_configuration
    )
    if provider.model == "openai":
        assert mine.client is theirs.client  # one HTTP client, its connections shared
