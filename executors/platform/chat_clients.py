"""Chat clients by `BATON_MODEL`: the offline scripted model or a real provider.

The scripted client composes MAF's own function-invocation, middleware and telemetry layers over a
`BaseChatClient`, so its tool calls run through MAF's real tool loop exactly as a provider's would.
A *play* decides each turn from the conversation: deterministic, offline, reading only messages.

`openai`, `azure-openai` and `ollama` use MAF's Chat Completions client
(`agent_framework_openai.OpenAIChatCompletionClient`): OpenAI or any compatible server, Azure
OpenAI through `azure.identity.aio.DefaultAzureCredential` (managed identity on Azure, `az login`
locally; an API key only when one is configured), and Ollama's OpenAI-compatible endpoint. Every
value is passed explicitly from `ProviderConfig`, so MAF reads nothing from the environment itself.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from agent_framework import (
    BaseChatClient,
    ChatMiddlewareLayer,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    FunctionInvocationLayer,
    Message,
)
from agent_framework.observability import ChatTelemetryLayer

from baton.errors import InvalidSettings
from baton.settings import Settings

Play = Callable[[Sequence[Message], dict[str, Any]], list[Content]]
"""One scripted turn: the model's contents, decided from the messages and the chat options."""

PLAYS: dict[str, Play] = {}
"""The scripted model's plays, by agent persona (`scripted_plays` adds a workflow's)."""


def scripted_plays(plays: dict[str, Play]) -> None:
    """Give the offline scripted model a play for each agent persona (a workflow's module does).

    A persona another module's play has is refused (`ValueError` naming both), where it would
    silently take the other's place in every workflow of the process: give each module's agents
    personas of their own. The same module giving its plays again (a reload) replaces them.
    """
    for persona, play in plays.items():
        held = PLAYS.get(persona)
        if held is not None and _module_of(held) != _module_of(play):
            raise ValueError(
                f"the scripted persona {persona!r} has a play of {_module_of(held)} already; "
                f"{_module_of(play)} gives another: name its agents' personas apart"
            )
    PLAYS.update(plays)


def _module_of(play: Play) -> str:
    return str(getattr(play, "__module__", None) or type(play).__module__)


class ScriptedChatClient(
    FunctionInvocationLayer[Any],
    ChatMiddlewareLayer[Any],
    ChatTelemetryLayer[Any],
    BaseChatClient[Any],
):
    """A deterministic offline model: each turn is `play(messages, options)`."""

    OTEL_PROVIDER_NAME = "scripted"

    def __init__(self, play: Play, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._play = play

    def _inner_get_response(
        self, *, messages: Sequence[Message], stream: bool, options: Any, **kwargs: Any
    ) -> Any:
        opts = dict(options or {})
        if stream:

            async def updates() -> Any:
                contents = self._play(messages, opts)
                yield ChatResponseUpdate(
                    contents=contents,
                    role="assistant",
                    response_id=f"scripted-{len(messages)}",
                    finish_reason=_finish(contents),
                )

            return self._build_response_stream(
                updates(), response_format=opts.get("response_format")
            )

        async def respond() -> ChatResponse:
            contents = self._play(messages, opts)
            return ChatResponse(
                messages=[Message("assistant", contents)],
                response_id=f"scripted-{len(messages)}",
                finish_reason=_finish(contents),
                response_format=opts.get("response_format"),  # `.value`, as a provider parses it
            )

        return respond()


def _finish(contents: Sequence[Content]) -> Literal["tool_calls", "stop"]:
    return "tool_calls" if any(c.type == "function_call" for c in contents) else "stop"


@dataclass(frozen=True)
class ProviderConfig:
    """Which model the agents run on, and what its provider needs (from `Settings`)."""

    model: str = "scripted"
    openai_api_key: str | None = None
    openai_base_url: str | None = None
    openai_model: str = "gpt-4o-mini"
    azure_endpoint: str | None = None
    azure_deployment: str | None = None
    azure_api_key: str | None = field(default=None, repr=False)
    azure_api_version: str | None = None
    ollama_base_url: str = "http://127.0.0.1:11434/v1"
    ollama_model: str = "llama3.1"

    @classmethod
    def from_settings(cls, settings: Settings) -> ProviderConfig:
        """The provider settings names."""
        return cls(
            model=settings.model,
            openai_api_key=_secret(settings.openai_api_key),
            openai_base_url=settings.openai_base_url or None,
            openai_model=settings.openai_model,
            azure_endpoint=settings.azure_openai_endpoint or None,
            azure_deployment=settings.azure_openai_deployment or None,
            azure_api_key=_secret(settings.azure_openai_api_key),
            azure_api_version=settings.azure_openai_api_version or None,
            ollama_base_url=settings.ollama_base_url,
            ollama_model=settings.ollama_model,
        )

    def missing(self) -> list[str]:
        """The settings this provider needs that are not set (by their environment names)."""
        needs: dict[str, list[tuple[str, str | None]]] = {
            "openai": [("OPENAI_API_KEY", self.openai_api_key)],
            "azure-openai": [
                ("AZURE_OPENAI_ENDPOINT", self.azure_endpoint),
                ("AZURE_OPENAI_DEPLOYMENT", self.azure_deployment),
            ],
        }
        return [name for name, value in needs.get(self.model, []) if not value]

    def check(self) -> None:
        """Raise `InvalidSettings` naming every missing setting of the chosen provider."""
        if self.model not in ("scripted", "openai", "azure-openai", "ollama"):
            raise InvalidSettings(
                f"BATON_MODEL={self.model} is not a model provider Baton knows",
                [{"loc": ["BATON_MODEL"], "msg": "scripted | openai | azure-openai | ollama"}],
            )
        missing = self.missing()
        if missing:
            raise InvalidSettings(
                f"BATON_MODEL={self.model} needs {', '.join(missing)}",
                [{"loc": [name], "msg": "required by BATON_MODEL"} for name in missing],
            )


def _secret(value: Any) -> str | None:
    found = value.get_secret_value() if value is not None else None
    return found or None


def own_copy(client: BaseChatClient) -> BaseChatClient:
    """`client` for one build: the same connection, a configuration of its own.

    MAF keeps a client's configuration on the client object (`function_invocation_configuration`,
    its chat and function middleware, `additional_properties`), and a builder may change what it
    is given (MAF's `control_total_tool_executions.py` sets `max_function_calls`): every dict and
    list the client holds is copied, and the lists in those dicts (the tool loop's
    `additional_tools`); the rest is shared (the provider's HTTP client and its connections, its
    credential, a play, the telemetry instruments). A shallow copy: microseconds, nothing opened.
    """
    copied = copy.copy(client)
    for name, value in list(vars(copied).items()):
        if isinstance(value, dict):
            setattr(copied, name, {k: _copied(v) for k, v in value.items()})
        elif isinstance(value, list):
            setattr(copied, name, list(value))
    return copied


def _copied(value: Any) -> Any:
    return list(value) if isinstance(value, list) else value


def make_chat_client(config: ProviderConfig | str, persona: str) -> BaseChatClient:
    """The chat client `config.model` names for an agent persona."""
    if isinstance(config, str):
        config = ProviderConfig(model=config)
    config.check()
    if config.model == "scripted":
        play = PLAYS.get(persona)
        if play is None:
            raise InvalidSettings(
                f"the scripted model (BATON_MODEL=scripted, the offline default) has no play for "
                f"agent {persona!r}: set BATON_MODEL to a provider (see .env.example), or give it "
                f"one with baton.api.scripted_plays({{{persona!r}: play}})"
            )
        return ScriptedChatClient(play)
    from agent_framework_openai import OpenAIChatCompletionClient

    if config.model == "azure-openai":
        if config.azure_api_key:
            return OpenAIChatCompletionClient(
                model=config.azure_deployment,
                azure_endpoint=config.azure_endpoint,
                api_key=config.azure_api_key,
                api_version=config.azure_api_version,
            )
        from azure.identity.aio import DefaultAzureCredential

        return OpenAIChatCompletionClient(
            model=config.azure_deployment,
            azure_endpoint=config.azure_endpoint,
            credential=DefaultAzureCredential(),
            api_version=config.azure_api_version,
        )
    if config.model == "ollama":
        # Ollama ignores the key, but the OpenAI SDK will not send a request without one.
        return OpenAIChatCompletionClient(
            model=config.ollama_model, api_key="ollama", base_url=config.ollama_base_url
        )
    return OpenAIChatCompletionClient(
        model=config.openai_model,
        api_key=config.openai_api_key,
        base_url=config.openai_base_url,
    )
