"""schemathesis over the published `/openapi.json` of a real `baton serve`: bounded, seeded.

Every answer is checked against what the document publishes, not only for a 5xx: its status is
documented for the operation, its body fits the schema of that status, its content type and its
required headers are the documented ones (`CHECKS`). A short run here (each operation's examples,
a few fuzzed cases, and schemathesis's stateful phase: sequences that follow the links it infers
from the `Location` of what a call made, a user added then changed, a token made then revoked);
`make fuzz` runs a long one, with schemathesis's coverage phase too, with the same checks,
against either backend.
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
from pathlib import Path

import pytest

from tests.harness import baton_server

pytestmark = pytest.mark.process  # a real `baton serve`, on SQLite and on PostgreSQL

EXAMPLES = os.environ.get("BATON_FUZZ_EXAMPLES", "3")
PHASES = os.environ.get("BATON_FUZZ_PHASES", "examples,fuzzing,stateful")
SEED = os.environ.get("BATON_FUZZ_SEED", "20261203")  # `make fuzz FUZZ_SEED=…` explores anew

SCHEMATHESIS = Path(sys.executable).with_name("schemathesis")

CHECKS = (
    "not_a_server_error",
    "status_code_conformance",
    "response_schema_conformance",
    "content_type_conformance",
    "response_headers_conformance",
)


async def test_fuzzed_calls_to_every_published_operation_get_answers_it_publishes(
    db_url: str, tokens: dict[str, str], server_log: Path, tmp_path: Path
) -> None:
    async with baton_server(db_url, tokens, server_log) as server:
        fuzz = await asyncio.create_subprocess_exec(
            str(SCHEMATHESIS),
            "run",
            f"{server.base_url}/openapi.json",
            "--header",
            f"Authorization: Bearer {tokens['ada']}",
            "--checks",
            ",".join(CHECKS),
            "--phases",
            PHASES,
            "--max-examples",
            EXAMPLES,
            "--seed",
            SEED,
            "--no-color",
            cwd=tmp_path,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        output, _ = await asyncio.wait_for(fuzz.communicate(), timeout=3600)
        report = output.decode(errors="replace")

    summary = [line.strip() for line in report.splitlines() if re.search(r"\d+ generated", line)]
    print(f"schemathesis ({db_url.split(':')[0]}, seed {SEED}): {' '.join(summary)}")  # noqa: T201 (`make fuzz` shows it)
    assert fuzz.returncode == 0, report[-4000:]
    assert " passed" in report
    assert "Selected: " in report
    assert "generated" in report
