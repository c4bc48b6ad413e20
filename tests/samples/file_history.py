# Copyright (c) Microsoft. All rights reserved.

"""MAF's `02-agents/conversations/file_history_provider_conversation_persistence.py`, as written.

At agent-framework 5eb3eb745, less its `main()` (its two questions, its printing, and its reading
the JSON Lines file back), the "Sample output" string after it, its `load_dotenv()`, its
`# ruff: noqa: T201` (its prints went with `main()`) and the imports only they used (`asyncio`,
`json`, `FoundryChatClient`, `AzureCliCredential`, `load_dotenv`): an agent whose conversation
MAF's experimental `FileHistoryProvider` keeps, one JSON Lines file per session id, its tool
calls and results among them. Its agent is built as `main()` builds it (`store: False`), on the
model Baton is configured with, registered as it is (`file_history`); its files go in
`SAMPLE_FILE_HISTORY_DIR` (else the system's temporary directory's `af-file-history`), one
directory every process shares, where `main()` uses `sessions/` beside the sample. `main()`'s
second question in the same session is a run that continues the first (`continues`): the
session goes on under its id, so the provider loads the first turn from its file, and the
model is handed what it is on MAF alone (the first turn's four messages, then the question),
the file holding 4 lines, then 8, as `main()` prints. `file_history_approval` is the same agent
with `get_weather` asking a person first (`asking`). On the scripted model the agent asks for
the weather in the city the last user message names and answers with the tool's result and
how many messages it was handed.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

# Uncomment this filter to suppress the experimental FileHistoryProvider warning
# before running the sample.
# import warnings  # isort: skip
# warnings.filterwarnings("ignore", message=r"\[FILE_HISTORY\].*", category=FutureWarning)
from agent_framework import Agent, FileHistoryProvider, tool
from pydantic import Field

"""
File History Provider Conversation Persistence

This sample demonstrates persisting a tool-driven conversation with the
experimental `FileHistoryProvider`, reading the stored JSONL file back from
disk, and then continuing the same conversation with another city.

Environment variables:
    FOUNDRY_PROJECT_ENDPOINT: Microsoft Foundry project endpoint.
    FOUNDRY_MODEL: Foundry model deployment name.

Key components:
- `FileHistoryProvider`: Stores one message JSON object per line in a local
  `.jsonl` file for each session using msgspec JSON by default.
- `get_weather`: A function tool that makes the persisted file show the
  assistant function call and tool result records.
- `json.dumps(..., indent=2)`: Pretty-prints a few persisted JSONL records
  while keeping the on-disk file compact and valid.
- `load_dotenv()`: Loads `.env` values up front so the sample can stay focused
  on history persistence instead of manual environment variable plumbing.

Security posture:
- The history file is plaintext JSONL on disk, so use a trusted storage
  directory and treat it as conversation logging, not as secure secret storage.
- Path safety checks protect the filename derived from the session id, but they
  do not redact message contents or encrypt the file.
"""

USE_TEMP_DIRECTORY = False
"""When True, store JSONL files in a temporary directory for this run only."""

LOCAL_SESSIONS_DIRECTORY_NAME = "sessions"
"""Folder name used when persisting history next to this sample file."""


@tool(approval_mode="never_require")
def get_weather(
    city: Annotated[str, Field(description="The city to get the weather for.")],
) -> str:
    """Return a deterministic weather report for a city."""
    weather_reports = {
        "Seattle": "Seattle is rainy with a high of 13C.",
        "Amsterdam": "Amsterdam is cloudy with a high of 16C.",
    }
    return weather_reports.get(city, f"{city} is sunny with a high of 20C.")


@contextmanager
def _resolve_storage_directory() -> Iterator[Path]:
    """Yield the configured storage directory for the sample run."""
    if USE_TEMP_DIRECTORY:
        with tempfile.TemporaryDirectory(prefix="af-file-history-resume-") as temp_directory:
            yield Path(temp_directory)
        return

    storage_directory = Path(__file__).resolve().parent / LOCAL_SESSIONS_DIRECTORY_NAME
    storage_directory.mkdir(parents=True, exist_ok=True)
    yield storage_directory


# --- Baton --------------------------------------------------------------------------------------

import json  # noqa: E402
import os  # noqa: E402
from collections.abc import Sequence  # noqa: E402
from typing import Any  # noqa: E402

from agent_framework import Content, FunctionTool, Message  # noqa: E402
from pydantic import BaseModel  # noqa: E402

from baton.api import RunServices, register, scripted_plays  # noqa: E402
from tests.plays import asking  # noqa: E402

QUERIES = [
    "Use the get_weather tool and tell me the weather in Seattle.",
    "Now use the get_weather tool for Amsterdam.",
]
"""`main()`'s two questions, in order, in one session."""


class Turn(BaseModel):
    """The run's input: `main()`'s first question, unless another is given (its second)."""

    text: str = QUERIES[0]


def storage_directory() -> Path:
    """Where the history files go: one directory every process of Baton shares.

    `main()` keeps them in `sessions/` beside the sample (`_resolve_storage_directory`); here
    that would be inside the test suite, so `SAMPLE_FILE_HISTORY_DIR`, or the system's temporary
    directory's `af-file-history`.
    """
    return Path(
        os.environ.get("SAMPLE_FILE_HISTORY_DIR") or Path(tempfile.gettempdir()) / "af-file-history"
    )


def _agent(services: RunServices, weather: FunctionTool) -> Agent:
    """`main()`'s agent, on the model Baton is configured with."""
    # 1. Create the client, history provider, and tool-enabled agent.
    agent = Agent(
        client=services.chat_clients.for_persona("weather-history"),
        name="WeatherHistoryAgent",
        instructions=(
            "You are a helpful assistant. Use the get_weather tool for weather questions "
            "and answer in one sentence using the tool result."
        ),
        tools=[weather],
        context_providers=[FileHistoryProvider(storage_directory())],
        default_options={"store": False},
    )
    return agent


@register("file_history", input_model=Turn)
def build_agent(services: RunServices) -> Agent:
    """`main()`'s agent: its conversation kept in a JSON Lines file per session."""
    return _agent(services, get_weather)


@register("file_history_approval", input_model=Turn)
def build_asking_agent(services: RunServices) -> Agent:
    """`main()`'s agent, its `get_weather` asking a person first."""
    return _agent(services, asking(get_weather))


CITIES = ("Seattle", "Amsterdam")


def weather_play(messages: Sequence[Message], options: dict[str, Any]) -> list[Content]:
    """Ask for the weather in the city the last user message names; then say what it is, and
    how many messages the model was handed (the history, the question, the call, its result)."""
    last = max(i for i, m in enumerate(messages) if m.role == "user")
    results = [c for m in messages[last:] for c in m.contents if c.type == "function_result"]
    if results:
        said = results[-1].result
        if isinstance(said, list):
            said = "".join(part.text or "" for part in said)
        return [Content.from_text(f"{said} (I was handed {len(messages)} messages.)")]
    city = next(c for c in CITIES if c in messages[last].text)
    arguments = json.dumps({"city": city})
    return [Content.from_function_call(f"call-{city}", "get_weather", arguments=arguments)]


scripted_plays({"weather-history": weather_play})
