"""Workflow modules load one by one: a broken one fails alone; their prints stay out of output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from workflows.platform import registry

ROOT = Path(__file__).resolve().parents[2]


def baton(tmp_path: Path, *args: str, workflows: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "BATON_DATABASE_URL": f"sqlite:///{tmp_path / 'baton.db'}",
        "BATON_WORKFLOWS": workflows,
    }
    return subprocess.run(
        [sys.executable, "-m", "baton", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_module_that_fails_to_import_is_unavailable_and_the_rest_loads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(registry, "_UNAVAILABLE", {})  # this process's other tests never see it
    failed = registry.load("tests.fixtures.broken_workflow, tests.fixtures.twin_workflow")

    assert failed == {
        "tests.fixtures.broken_workflow": "RuntimeError: the broken workflow's own bug"
    }
    assert registry.unavailable()["tests.fixtures.broken_workflow"].startswith("RuntimeError")
    assert registry.get("twin").name == "twin"


def test_admin_commands_work_beside_a_broken_workflow_and_warn_of_it(tmp_path: Path) -> None:
    broken = "tests.fixtures.broken_workflow"
    done = baton(tmp_path, "migrate", workflows=broken)  # the store alone: no workflow loaded
    seeded = baton(tmp_path, "seed", "--demo", workflows=broken)
    ran = baton(  # a command that drives workflows loads them, and says which it could not
        tmp_path,
        "run",
        "refund",
        "--input",
        '{"order_id": "A-1001", "amount": 5, "reason": "late"}',
        workflows=broken,
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("database ready:")
    assert seeded.returncode == 0, seeded.stderr
    assert "demo sign-ins" in seeded.stdout
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.startswith("refund run run_")
    assert "warning: workflow module tests.fixtures.broken_workflow is unavailable" in ran.stderr
    assert "the broken workflow's own bug" in ran.stderr


def test_a_workflows_prints_go_to_stderr_and_baton_run_prints_only_json(tmp_path: Path) -> None:
    assert baton(tmp_path, "migrate", workflows="").returncode == 0

    done = baton(
        tmp_path,
        "run",
        "chatty",
        "--input",
        '{"text": "hi"}',
        "--json",
        workflows="tests.fixtures.chatty_workflow",
    )

    assert done.returncode == 0, done.stderr
    run = json.loads(done.stdout)  # the whole of stdout is the run, nothing else
    assert (run["status"], run["output"]) == ("completed", "HI")
    assert "chatty: imported" in done.stderr
    assert "chatty: heard hi" in done.stderr
