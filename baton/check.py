"""`baton check` and its test helper: a workflow's restart check, on parts of its own.

The check itself is `workflows.platform.check`. Here it gets what a run's executors use, built
the way the runtime builds it for every drive (`Runtime.services`), from parts opened on a
throwaway SQLite database (the effect ledger, the workflow's own systems) with the settings'
model provider and policy: checking never writes to Baton's database.
"""

from __future__ import annotations

import secrets
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from baton.settings import Settings
from baton.wiring import Prepared, open_parts
from executors.platform.services import RunServices
from workflows.platform import registry
from workflows.platform.check import CheckReport, check_spec, sample_input
from workflows.platform.runtime import typed_input


async def check_workflow(
    workflow: str,
    *,
    run_input: Any = None,
    answers: Mapping[str, Any] | None = None,
    max_pauses: int = 10,
    settings: Settings | None = None,
    prepared: Prepared | None = None,
) -> CheckReport:
    """Check that a registered workflow keeps its executors' state across restarts.

    The workflow runs as Baton drives it, each resume in a fresh instance restored from the
    pause's checkpoint; the report names every executor whose own attributes a restore did not
    bring back, every pause a restart would lose, every failure. In a test of your own:

        report = await check_workflow("expense", run_input={"employee": "ann", "amount": 12})
        assert report.clean, report.lines()

    Args:
        workflow: The registered name (its module imported, or named in `BATON_WORKFLOWS`).
        run_input: The run's input; None makes one up from the input model's schema.
        answers: By executor id or request type name, an answer (JSON) or a list of answers
            taken in order; requests without one get a made-up answer.
        max_pauses: How many pauses to go through at most.
        settings: The model provider and policy to run with (default: `Settings()`).
        prepared: What `baton.wiring.prepare(settings)` found, if that was done already.

    Raises:
        WorkflowNotFound: No workflow has that name.
        InvalidInput: The input does not fit (or none could be made up).
        InvalidAnswer: A given answer does not fit its request.
    """
    settings = settings or Settings()
    with tempfile.TemporaryDirectory(prefix="baton-check-") as directory:
        scratch = settings.model_copy(
            update={"database_url": f"sqlite:///{Path(directory) / 'check.db'}"}
        )
        async with open_parts(scratch, local_worker=False, prepared=prepared) as parts:
            spec = registry.get(workflow)
            typed = (
                typed_input(spec, run_input).model_dump(mode="json")
                if run_input is not None
                else sample_input(spec)
            )
            run_id = f"check_{secrets.token_urlsafe(8)}"

            def new_services() -> RunServices:
                return parts.runtime.services(spec, run_id, typed)

            return await check_spec(
                spec, new_services, run_input=typed, answers=answers, max_pauses=max_pauses
            )
