"""What a run's executors may use: built fresh for every drive, in whatever process drives it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agent_framework import BaseChatClient

from executors.platform.transcript import Transcript
from human.effects import EffectLedger
from human.policy import Policy
from human.store.base import Store

if TYPE_CHECKING:
    from executors.platform.chat_clients import ProviderConfig


class ChatClientFactory:
    """Makes the chat client an agent persona runs on (`BATON_MODEL`), once per process."""

    def __init__(self, model: str, provider: ProviderConfig | None = None) -> None:
        from executors.platform.chat_clients import ProviderConfig

        self.provider = provider or ProviderConfig(model=model)
        self.model = self.provider.model
        self._clients: dict[str, BaseChatClient] = {}

    def check(self) -> None:
        """Raise `InvalidSettings` naming what the chosen provider lacks (at start-up)."""
        self.provider.check()

    def for_persona(self, persona: str) -> BaseChatClient:
        """A chat client for the named agent persona (clients hold no conversation: shared)."""
        from executors.platform.chat_clients import make_chat_client

        client = self._clients.get(persona)
        if client is None:
            client = self._clients[persona] = make_chat_client(self.provider, persona)
        return client


@dataclass(frozen=True)
class RunServices:
    """Per-run dependencies of executors: no SQL, no HTTP, only these interfaces."""

    run_id: str
    ledger: EffectLedger
    back_office: Store
    policy: Policy
    chat_clients: ChatClientFactory
    transcript: Transcript = field(default_factory=Transcript)
    run_input: dict[str, Any] = field(default_factory=dict)
