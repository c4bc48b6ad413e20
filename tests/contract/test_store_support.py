"""The Store contract for a run's conversation, every backend."""

from __future__ import annotations

from human.store.base import Progress, Store
from tests.contract.conftest import Backend
from tests.contract.test_store import a_request, checkpoint, started


def progress(run_id: str, **fields: object) -> Progress:
    return Progress.model_validate(
        {"run_id": run_id, "expected_checkpoint_id": None, "job_id": None, **fields}
    )


async def test_a_runs_conversation_grows_with_each_committed_progress_in_order(
    store: Store,
) -> None:
    run = await started(store, workflow="support")
    other = await started(store, workflow="support")
    first = [{"type": "message", "role": "user", "text": "hello"}, {"type": "handoff", "to": "b"}]
    assert await store.record_progress(
        progress(
            run.id,
            status="waiting",
            checkpoint=checkpoint("cp-a"),
            new_requests=[a_request(run.id)],
            transcript=first,
        )
    )
    assert await store.record_progress(
        progress(other.id, status="completed", transcript=[{"type": "message", "text": "other"}])
    )
    second = [{"type": "tool_result", "result": "ok", "nested": {"n": [1, 2]}}]
    assert await store.record_progress(
        progress(run.id, expected_checkpoint_id="cp-a", status="completed", transcript=second)
    )

    assert await store.list_transcript(run.id) == [*first, *second]
    assert await store.list_transcript(other.id) == [{"type": "message", "text": "other"}]
    assert await store.list_transcript("run_unknown") == []


async def test_the_entries_one_commit_appends_carry_its_time_once(
    store: Store, backend: Backend
) -> None:
    run = await started(store, workflow="support")
    first = [{"type": "message", "text": "one"}, {"type": "message", "text": "two"}]
    second = [{"type": "message", "text": "three"}, {"type": "message", "text": "four"}]
    assert await store.record_progress(
        progress(run.id, status="waiting", checkpoint=checkpoint("cp-t"), transcript=first)
    )
    assert await store.record_progress(
        progress(run.id, expected_checkpoint_id="cp-t", status="completed", transcript=second)
    )

    assert await store.list_transcript(run.id) == [*first, *second]
    stored = backend.fetch(
        f"SELECT seq, at IS NOT NULL FROM run_transcript WHERE run_id = '{run.id}' ORDER BY seq"
    )
    assert [(seq, bool(timed)) for seq, timed in stored] == [
        (1, True),
        (2, False),
        (3, True),
        (4, False),
    ]


async def test_a_fenced_off_progress_adds_nothing_to_the_conversation(store: Store) -> None:
    run = await started(store, workflow="support")
    stale = progress(
        run.id,
        expected_checkpoint_id="cp-elsewhere",
        status="completed",
        transcript=[{"type": "message", "text": "lost"}],
    )

    assert await store.record_progress(stale) is False
    assert await store.list_transcript(run.id) == []
