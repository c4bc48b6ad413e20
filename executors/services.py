"""What a run's executors may use: built fresh for every drive, in whatever process drives it."""

from __future__ import annotations

from dataclasses import dataclass

from agent_framework import BaseChatClient

from human.effects import EffectLedger
from human.policy import Policy
from human.store.base import Store


class ChatClientFactory:
    """Makes the chat client an agent persona runs on (`BATON_MODEL`)."""

    def __init__(self, model: str) -> None:
        self.model = model

    def for_persona(self, persona: str) -> BaseChatClient:
        """A chat client for the named agent persona."""
        from executors.chat_clients import make_chat_client

        return make_chat_client(self.model, persona)


@dataclass(frozen=True)
class RunServices:
    """Per-run dependencies of executors: no SQL, no HTTP, only these interfaces."""

    run_id: str
    ledger: EffectLedger
    back_office: Store
    policy: Policy
    chat_clients: ChatClientFactory
