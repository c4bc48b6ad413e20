# Copyright (c) Microsoft. All rights reserved.

"""MAF's `02-agents/context_providers/simple_context_provider.py`, as MAF wrote it.

At agent-framework 5eb3eb745, less its `main()` (its three turns, their printing and the memory
it prints after them), its `load_dotenv()` and the imports only they used (`asyncio`, `os`,
`FoundryChatClient`, `AzureCliCredential`, `load_dotenv`): a context provider that keeps a
`UserInfo` (a pydantic model it registers as a state type) in the agent's session, tells the
model each turn what it knows of the user's name and age, and after each turn asks the same
client to extract them from the messages (`response_format=UserInfo`). Its agent (unnamed, as
`main()` makes it) and the provider are built as `main()` builds them, on one client of the model
Baton is configured with, registered as it is (`simple_context_provider`); a run's input is
`main()`'s first message, and its later two are runs that each continue the one before
(`continues`), as `main()` runs them in one session. The sample's agent has no tool:
`simple_context_provider_approval` is the same agent given one this module adds (`square_root`,
asking a person first, as `@tool(approval_mode="always_require")` makes a tool ask): it is called
at the third turn, whose extraction (the age) runs as the run pauses, so the age the provider
keeps goes through the pause and the restart in the session. On the scripted model the agent
declines until it knows the name and the age (from its instructions, or the user's last
message, as a model reads them), then answers the first question, addressing the user by the
name its instructions give; the extraction reads the user's messages.
"""

from contextlib import suppress
from typing import Any

from agent_framework import (
    Agent,
    AgentSession,
    ContextProvider,
    SessionContext,
    SupportsChatGetResponse,
    register_state_type,
)
from pydantic import BaseModel


class UserInfo(BaseModel):
    name: str | None = None
    age: int | None = None


# In order for the State to be serialized well, we need to make sure to register
# this class, and since this uses a Pydantic model, we do not need to tell the state
# how to serialize/deserialize the object. Default Python types do not need to be
# registered.
register_state_type(UserInfo, type_id="sample_user_info")


class UserInfoMemory(ContextProvider):
    DEFAULT_SOURCE_ID = "user_info_memory"

    def __init__(
        self, source_id: str = DEFAULT_SOURCE_ID, *, client: SupportsChatGetResponse, **kwargs: Any
    ):
        """Create the memory.

        If you pass in kwargs, they will be attempted to be used to create a UserInfo object.
        """
        super().__init__(source_id)
        self._chat_client = client

    async def after_run(
        self,
        *,
        agent: Any,
        session: AgentSession | None,
        context: SessionContext,
        state: dict[str, Any],
    ) -> None:
        """Extract user information from messages after each agent call."""
        # ensure you get all the messages you want to parse from, including the input in this case.
        request_messages = context.get_messages(include_input=True, include_response=True)
        # Check if we need to extract user info from user messages
        user_messages = [
            msg for msg in request_messages if hasattr(msg, "role") and msg.role == "user"
        ]  # type: ignore

        if (state["user_info"].name is None or state["user_info"].age is None) and user_messages:
            with suppress(Exception):
                # Use the chat client to extract structured information
                result = await self._chat_client.get_response(
                    messages=request_messages,  # type: ignore
                    options={
                        "instructions": "Extract the user's name and age from the message if present. "  # noqa: E501
                        "If not present return nulls.",
                        "response_format": UserInfo,
                    },
                )

                # Update user info with extracted data
                with suppress(Exception):
                    extracted = result.value
                    user_info = state["user_info"]
                    if not isinstance(extracted, UserInfo) or not isinstance(user_info, UserInfo):
                        return
                    if user_info.name is None and extracted.name:
                        user_info.name = extracted.name
                    if user_info.age is None and extracted.age:
                        user_info.age = extracted.age

    async def before_run(
        self,
        *,
        agent: Any,
        session: AgentSession | None,
        context: SessionContext,
        state: dict[str, Any],
    ) -> None:
        """Provide user information context before each agent call."""
        state.setdefault("user_info", UserInfo())

        context.extend_instructions(
            self.source_id,
            "Ask the user for their name and politely decline to answer any questions until they provide it."  # noqa: E501
            if state["user_info"].name is None
            else f"The user's name is {state['user_info'].name}.",
        )
        context.extend_instructions(
            self.source_id,
            "Ask the user for their age and politely decline to answer any questions until they provide it."  # noqa: E501
            if state["user_info"].age is None
            else f"The user's age is {state['user_info'].age}.",
        )


# --- Baton --------------------------------------------------------------------------------------

import json  # noqa: E402
import re  # noqa: E402
from collections.abc import Sequence  # noqa: E402
from typing import Annotated  # noqa: E402

from agent_framework import Content, FunctionTool, Message, tool  # noqa: E402

from baton.api import RunServices, register, scripted_plays  # noqa: E402
from tests.plays import asking  # noqa: E402

USER_MESSAGES = ["Hello, what is the square root of 9?", "My name is Ruaidhrí", "I am 20 years old"]
"""`main()`'s turns, in order, in one session."""


class Turn(BaseModel):
    """The run's input: `main()`'s first message, unless another is given (its next ones)."""

    text: str = USER_MESSAGES[0]


@tool(approval_mode="never_require")
def square_root(number: Annotated[float, "The number"]) -> str:
    """The square root of a number (Baton's: the sample's agent has no tool)."""
    return str(number**0.5)


def _agent(services: RunServices, tools: Sequence[FunctionTool] = ()) -> Agent:
    """`main()`'s agent and memory, on one client of the model Baton is configured with."""
    client = services.chat_clients.for_persona("user-info-memory")

    context_name = UserInfoMemory.DEFAULT_SOURCE_ID

    # Create the memory provider
    memory_provider = UserInfoMemory(context_name, client=client)

    # Create the agent with memory
    return Agent(
        client=client,
        instructions="You are a friendly assistant. Always address the user by their name.",
        context_providers=[memory_provider],
        tools=list(tools),
    )


@register("simple_context_provider", input_model=Turn)
def build_agent(services: RunServices) -> Agent:
    """`main()`'s agent: what it knows of the user kept in its session."""
    return _agent(services)


@register("simple_context_provider_approval", input_model=Turn)
def build_asking_agent(services: RunServices) -> Agent:
    """`main()`'s agent, given a tool that asks a person first."""
    return _agent(services, [asking(square_root)])


NAME = re.compile(r"(?:My name is|The user's name is) (\w+)")
AGE = re.compile(r"(?:I am|The user's age is) (\d+)")


def memory_play(messages: Sequence[Message], options: dict[str, Any]) -> list[Content]:
    """The agent's turns, and the provider's extraction (asked for a `UserInfo`)."""
    users = [m.text for m in messages if m.role == "user" and m.text]
    if options.get("response_format") is UserInfo:
        names = [found for said in users for found in NAME.findall(said)]
        ages = [int(found) for said in users for found in AGE.findall(said)]
        extracted = {"name": names[-1] if names else None, "age": ages[-1] if ages else None}
        return [Content.from_text(json.dumps(extracted))]
    told = f"{options.get('instructions')}\n{users[-1]}"
    name, age = NAME.search(told), AGE.search(told)
    if name is None:
        return [Content.from_text("Happy to help once I know your name: what is it?")]
    if age is None:
        return [Content.from_text(f"Thanks, {name[1]}! And how old are you?")]
    offered = {t.name for t in options.get("tools") or ()}
    results = [c for m in messages for c in m.contents if c.type == "function_result"]
    if "square_root" in offered and not results:
        arguments = json.dumps({"number": 9})
        return [Content.from_function_call("call-root", "square_root", arguments=arguments)]
    said = f" (the tool said {results[-1].result})" if results else ""
    memory = re.findall(r"The user's \w+ is \w+\.", str(options.get("instructions")))
    return [
        Content.from_text(
            f"{name[1]}, you are {age[1]}: the square root of 9 is 3{said}. "
            f"What my instructions said: {' '.join(memory) or 'nothing yet'}"
        )
    ]


scripted_plays({"user-info-memory": memory_play})
# mypy: disable-error-code="unused-ignore"
