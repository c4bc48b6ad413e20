"""The files a request came with, at the command line: `baton requests show` lists them and
`baton requests file` saves one, named by a beginning of its id, its bytes whole, never over a
file that is there. Child processes of `baton` on each backend (PostgreSQL keeps the bytes as
`bytea`, SQLite as a blob)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.samples import chart_review

pytestmark = pytest.mark.process


async def baton(db_url: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`baton ARGS` in a child process on `db_url`, serving the chart review sample."""
    env = os.environ | {
        "BATON_DATABASE_URL": db_url,
        "BATON_WORKFLOWS": "tests.samples.chart_review",
        "BATON_LOG_LEVEL": "WARNING",
        "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
    }
    command = [sys.executable, "-m", "baton", *args]
    return await asyncio.to_thread(
        subprocess.run,
        command,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
        cwd=cwd,
    )


async def test_the_cli_lists_a_request_s_files_and_saves_one_whole(
    db_url: str, tmp_path: Path
) -> None:
    started = await baton(
        db_url, "run", "chart_review", "--input", '{"topic": "sales"}', "--json", cwd=tmp_path
    )
    assert started.returncode == 0, started.stderr
    [pending] = json.loads(started.stdout)["pending_requests"]
    shown = await baton(db_url, "requests", "show", pending["id"], cwd=tmp_path)
    listed = await baton(db_url, "requests", "show", "--json", pending["id"], cwd=tmp_path)
    image, document = json.loads(listed.stdout)["attachments"]

    saved = await baton(db_url, "requests", "file", pending["id"], image["id"][:8], cwd=tmp_path)
    named = tmp_path / "report.pdf"
    report = await baton(
        db_url, "requests", "file", pending["id"], document["id"], "--out", str(named), cwd=tmp_path
    )
    again = await baton(
        db_url, "requests", "file", pending["id"], document["id"], "--out", str(named), cwd=tmp_path
    )
    unknown = await baton(db_url, "requests", "file", pending["id"], "0123456789ab", cwd=tmp_path)
    too_short = await baton(
        db_url, "requests", "file", pending["id"], image["id"][:4], cwd=tmp_path
    )

    assert shown.returncode == 0, shown.stderr
    assert f"  {image['id'][:12]}  an image (PNG, 198 KB), from the request" in shown.stdout
    assert f"  {document['id'][:12]}  a document (PDF, 59 KB), from the request" in shown.stdout
    assert saved.returncode == 0, saved.stderr
    assert (tmp_path / f"attachment-{image['id'][:12]}.png").read_bytes() == chart_review.png()
    assert saved.stdout.startswith("Saved an image (PNG, 198 KB), from the request, to ")
    assert report.returncode == 0, report.stderr
    assert named.read_bytes() == chart_review.pdf()
    assert again.returncode == 2
    assert "is there already" in again.stderr
    assert named.read_bytes() == chart_review.pdf()  # left as it was
    for refused in (unknown, too_short):
        assert refused.returncode == 2
        assert "has no attachment" in refused.stderr
