"""What a run's executors may use: made with the workflow a drive runs, in whatever process.

A workflow built for one drive gets new services; a reused one (`register(reuse=True)`) keeps
its services, which Baton points at each drive's run (`RunServices.rebind`).
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from agent_framework import BaseChatClient

from baton.errors import InvalidSettings, RunEnded, StoreError
from executors.platform.transcript import Transcript
from human.effects import EffectLedger
from human.policy import Policy
from human.store.base import NewEffect

if TYPE_CHECKING:
    from executors.platform.chat_clients import ProviderConfig


class ChatClientFactory:
    """Makes the chat client an agent persona runs on (`BATON_MODEL`).

    The provider's client (its HTTP connections, its credential) is made once per process and
    persona; each `for_persona` hands out a copy whose configuration is its own (`own_copy`).
    """

    def __init__(self, model: str, provider: ProviderConfig | None = None) -> None:
        from executors.platform.chat_clients import ProviderConfig

        self.provider = provider or ProviderConfig(model=model)
        self.model = self.provider.model
        self._clients: dict[str, BaseChatClient] = {}

    def check(self) -> None:
        """Raise `InvalidSettings` naming what the chosen provider lacks (at start-up)."""
        self.provider.check()

    def for_persona(self, persona: str) -> BaseChatClient:
        """A chat client for the named agent persona, for the caller to configure as it likes.

        MAF keeps a client's tool-loop configuration and middleware on the client object: a
        builder that sets `function_invocation_configuration["max_function_calls"]` changes its
        own copy, never another workflow's (or another build's) client of the same persona. The
        copies share the process's connection to the provider.
        """
        from executors.platform.chat_clients import make_chat_client, own_copy

        client = self._clients.get(persona)
        if client is None:
            client = self._clients[persona] = make_chat_client(self.provider, persona)
        return own_copy(client)


class Resource(Protocol):
    """A connection to a system a workflow's tools call: opened once per process, then shared."""

    async def close(self) -> None:
        """Let go of the connection (the process stops)."""
        ...


R = TypeVar("R", bound=Resource)
T = TypeVar("T")

Opener = Callable[[str], Awaitable[R]]
"""Opens a resource, given Baton's database URL (a system may keep its tables beside Baton's)."""


class Resources:
    """The systems a process's workflows call (a payment API, a CRM, a mail relay), by opener.

    A tool asks `await services.resources.get(Office.open)`: the first call in a process opens it,
    later ones share it, `close()` closes all when the process stops. Baton keeps nothing of them
    in its store: a workflow's systems are its own.
    """

    def __init__(self, database_url: str | None = None) -> None:
        self._database_url = database_url
        self._open: dict[Any, Resource] = {}
        self._lock = asyncio.Lock()
        self._shared: dict[Any, Any] = {}

    async def get(self, opener: Opener[R]) -> R:
        """The resource `opener` makes, opened on first use.

        It is opened in a task of its own, in a context of its own: the resource is the
        process's, not the run's that first asked for it, so nothing of that run's drive (MAF
        cancels every task a functional workflow's run made when it pauses) reaches the tasks
        the resource keeps. A caller cancelled while it opens leaves it to finish, kept.
        """
        found = self._open.get(opener)
        if found is None:
            async with self._lock:
                found = self._open.get(opener)
                if found is None:
                    if self._database_url is None:
                        raise InvalidSettings("this runtime was given no database URL to open with")
                    found = await asyncio.shield(self._opening(opener, self._database_url))
        return found  # type: ignore[return-value]

    def _opening(self, opener: Opener[R], database_url: str) -> asyncio.Task[R]:
        async def opened() -> R:
            resource = await opener(database_url)
            self._open[opener] = resource
            return resource

        return asyncio.get_running_loop().create_task(opened(), context=contextvars.Context())

    def shared(self, make: Callable[[Resources], T]) -> T:
        """What `make` makes of this process's resources, made once per process and then shared.

        For a tool whose function reaches nothing of a run (only the process's systems): built
        once, like a module-level `@tool`, rather than with the workflow on every drive. MAF
        works out a tool's argument schema once per tool object (a pydantic model rebuilt and
        its JSON schema generated), and every agent run asks for it. MAF also counts a tool
        object's calls: a `max_invocations` on a shared tool counts every run's calls together.
        """
        found = self._shared.get(make)
        if found is None:
            found = self._shared[make] = make(self)
        return found

    async def close(self) -> None:
        """Close every resource opened."""
        opened, self._open = list(self._open.values()), {}
        for resource in opened:
            await resource.close()


CaseContext = Callable[["RunServices"], Awaitable[dict[str, Any]]]
"""What a workflow adds to what people see of a case (beside the conversation), if anything."""


@dataclass(frozen=True)
class RunServices:
    """Per-run dependencies of executors: no SQL, no HTTP, only these interfaces."""

    run_id: str
    ledger: EffectLedger
    policy: Policy
    chat_clients: ChatClientFactory
    resources: Resources = field(default_factory=Resources)
    transcript: Transcript = field(default_factory=Transcript)
    run_input: dict[str, Any] = field(default_factory=dict)
    case_context: CaseContext | None = None
    party: str = "user"
    """What the workflow calls the person it serves, in the words people read (`register`)."""
    started_by: str | None = None
    """Who started the run (its `created_by`): the caller, as Baton authenticated them."""
    outcome_schema: dict[str, Any] = field(default_factory=dict)
    """The JSON Schema of a takeover's resolved outcome (`register(outcome=...)`; {}: free-form)."""
    effects: list[NewEffect] = field(default_factory=list)
    """The effects this drive performed (`EffectLedger.perform`): committed with its progress."""
    store_failures: list[StoreError] = field(default_factory=list)
    """The store's failures a tool call met in this drive: MAF hands a tool's exception to the
    model as the call's result, where the runtime must see it and try the drive again."""
    run_ended: list[RunEnded] = field(default_factory=list)
    """The calls the ledger refused because the run ended (was cancelled) under this drive: the
    runtime then commits nothing of the drive, which would be fenced off anyway."""
    baton_calls: frozenset[str] = frozenset()
    """The executors whose agents carry Baton's `BatonCalls` middleware (`install_calls`): only
    a call of theirs may get Baton's result in MAF's approval response (`tool_adapters`)."""
    invocation_kwargs: Mapping[str, Any] = field(default_factory=dict)
    """MAF's `function_invocation_kwargs` this drive gives `run` (`register(run_kwargs=...)`),
    for the tools Baton runs itself."""

    def kwargs_for(self, agent: str) -> dict[str, Any]:
        """The `function_invocation_kwargs` a tool of `agent` gets: its own entry, else all."""
        own = self.invocation_kwargs.get(agent)
        return dict(own) if isinstance(own, Mapping) else dict(self.invocation_kwargs)

    def using(self, **changes: Any) -> None:
        """Set what one drive gives its instance's adapters and tools (`baton_calls`, ...)."""
        for name, value in changes.items():
            object.__setattr__(self, name, value)

    def rebind(self, run_id: str, run_input: dict[str, Any], started_by: str | None) -> None:
        """Point these services at a drive of another run (a reused workflow's: Baton's pool).

        What belongs to a run is replaced, never cleared in place: the last drive's progress may
        still hold its lists. The transcript stays the same object (agents' middleware holds it)
        with new lists. Executors see the change because they read `services` when they run.
        """
        object.__setattr__(self, "run_id", run_id)
        object.__setattr__(self, "run_input", dict(run_input))
        object.__setattr__(self, "started_by", started_by)
        object.__setattr__(self, "effects", [])
        object.__setattr__(self, "store_failures", [])
        object.__setattr__(self, "run_ended", [])
        self.transcript.history = []
        self.transcript.entries = []
        self.transcript.kept = {}  # (the files of the last run's entries)


DRIVING_SERVICES: contextvars.ContextVar[RunServices | None] = contextvars.ContextVar(
    "baton_driving_services", default=None
)
"""The services of the drive this task runs in (set by the drive, as `transcript.DRIVING`): what
middleware on an agent that serves many runs (`tool_adapters.BatonCalls`) uses for this one."""
