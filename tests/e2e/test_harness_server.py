"""The test harness's `baton serve` child: ready only when it is the one answering on its port."""

from __future__ import annotations

import socket
from pathlib import Path

import httpx
import pytest

from tests.harness import Server, listens

pytestmark = [pytest.mark.process, pytest.mark.backends("sqlite")]


async def test_a_server_whose_port_is_taken_starts_on_another(
    tmp_path: Path, db_url: str, tokens: dict[str, str], server_log: Path
) -> None:
    with socket.socket() as taken:  # another test's server, already on the port this one picked
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        server = Server(db_url, tokens, server_log, {})
        server.port, server.base_url = busy, f"http://127.0.0.1:{busy}"
        try:
            await server.start()
            assert server.port != busy
            assert server.proc is not None
            assert listens(server.proc.pid, server.port)
            async with httpx.AsyncClient(base_url=server.base_url) as client:
                assert (await client.get("/healthz")).status_code == 200
            assert "address already in use" in server_log.read_text().lower()
        finally:
            await server.stop()
