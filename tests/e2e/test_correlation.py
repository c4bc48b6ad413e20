"""One grep follows an answer to its resume: the client's X-Request-ID reaches the worker's logs."""

from __future__ import annotations

import json
from pathlib import Path

from tests.harness import REFUND_120, baton_server


async def test_resume_logs_carry_the_answer_request_id(
    db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    async with baton_server(db_url, tokens, server_log) as server:
        run = await server.start_run(REFUND_120)
        pending = await server.wait_for_request(run["id"])
        async with server.client("lee") as lee:
            reply = await lee.post(
                f"/api/requests/{pending['id']}/respond",
                json={"decision": "approve"},
                headers={"X-Request-ID": "trace-answer-7"},
            )
        assert reply.headers["x-request-id"] == "trace-answer-7"
        await server.wait_for_run(run["id"], status="completed")

    lines = [
        json.loads(line) for line in server_log.read_text().splitlines() if line.startswith("{")
    ]
    progressed = [
        line
        for line in lines
        if line["message"] == "run progressed" and line.get("status") == "completed"
    ]
    assert len(progressed) == 1
    assert progressed[0]["correlation_id"].startswith("trace-answer-7/job-")
    answered = [line for line in lines if line["message"] == "request answered"]
    assert answered[0]["correlation_id"] == "trace-answer-7"
