"""schemathesis over the published `/openapi.json` of a real `baton serve`: bounded, seeded.

Every answer is checked against what the document publishes, not only for a 5xx: its status is
documented for the operation, its body fits the schema of that status, its content type and its
required headers are the documented ones (`CHECKS`). A short run here (each operation's examples,
a few fuzzed cases, and schemathesis's stateful phase: sequences that follow the links it infers
from the `Location` of what a call made, a user added then changed, a token made then revoked);
`make fuzz` runs a long one, with schemathesis's coverage phase too, with the same checks,
against either backend.

Ids schemathesis makes up name nothing stored, so most calls on a run or a request would only
ever meet the 404 of a missing one. Before it starts, the test starts real runs (refunds that
wait for an approval, a purchase that waits for two, a support case that waits on a person), and
schemathesis draws a path's `run_id` and `request_id`, and a new run's `workflow`, from what is
stored most of the time (`schemathesis.toml`'s dictionaries, written beside it): answers, claims,
takeovers, reassignments and cancellations are then fuzzed on records that exist.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from pathlib import Path

import pytest

from tests.harness import CHAIRS, LATE_PURCHASE, REFUND_120, REFUND_1500, Server, baton_server
from tests.supportkit import MANAGER

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
        runs, requests = await stored_records(server)
        (tmp_path / "schemathesis.toml").write_text(drawn_from(runs, requests))
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

    # the stored records were met: schemathesis read the dictionaries, and no call on a run or a
    # request stopped at a 404 every time
    assert "3 dictionaries" in report, report[:2000]
    assert not warned_404(report) & MET, report[-4000:]
    summary = [line.strip() for line in report.splitlines() if re.search(r"\d+ generated", line)]
    print(f"schemathesis ({db_url.split(':')[0]}, seed {SEED}): {' '.join(summary)}")  # noqa: T201 (`make fuzz` shows it)
    assert fuzz.returncode == 0, report[-4000:]
    assert " passed" in report
    assert "Selected: " in report
    assert "generated" in report


MET = {
    "/api/runs/{run_id}",
    "/api/runs/{run_id}/events",
    "/api/runs/{run_id}/cancel",
    "/api/requests/{request_id}",
    "/api/requests/{request_id}/respond",
    "/api/requests/{request_id}/claim",
    "/api/requests/{request_id}/release",
    "/api/requests/{request_id}/takeover",
    "/api/requests/{request_id}/reassign",
    "/api/requests/{request_id}/events",
}
"""Operations on a stored run or request: schemathesis warns of those that only met 404s."""


def warned_404(report: str) -> set[str]:
    """The paths of the operations schemathesis warns returned 404 again and again."""
    found = re.search(
        r"^Missing test data:.*?(?=^(?:These operations|Schema validation|=)|\Z)",
        report,
        re.S | re.M,
    )
    return set(re.findall(r"^  - [A-Z]+ (\S+)$", found[0], re.M)) if found else set()


async def stored_records(server: Server) -> tuple[list[str], list[str]]:
    """Runs started for the fuzzer to find, each waiting on a person: their ids, their requests'."""
    runs = [
        await server.start_run(body) for body in (REFUND_120, REFUND_1500, LATE_PURCHASE, CHAIRS)
    ]
    runs.append(await server.start_run(MANAGER, user="sue"))
    requests = [(await server.wait_for_request(run["id"]))["id"] for run in runs]
    return [run["id"] for run in runs], requests


def drawn_from(runs: list[str], requests: list[str]) -> str:
    """A `schemathesis.toml` that draws ids and workflow names from what is stored, mostly."""
    listed = json.dumps  # a list of plain strings in JSON is one in TOML too
    return (
        "[dictionaries]\n"
        f"runs = {{ values = {listed(runs)} }}\n"
        f"requests = {{ values = {listed(requests)} }}\n"
        f"workflows = {{ values = {listed(['refund', 'purchase', 'support'])} }}\n"
        "[parameters]\n"
        '"path.run_id" = { dictionary = "runs", probability = 0.8 }\n'
        '"path.request_id" = { dictionary = "requests", probability = 0.8 }\n'
        '"body.workflow" = { dictionary = "workflows", probability = 0.8 }\n'
    )
