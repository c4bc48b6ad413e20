"""The import-linter contracts of pyproject.toml hold: layers import down, never up."""

from __future__ import annotations

import ast
import itertools
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_import_contracts_hold() -> None:
    lint_imports = Path(sys.executable).parent / "lint-imports"

    done = subprocess.run(
        [str(lint_imports), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )

    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


DEMO_WORDS = re.compile(r"(?i)(?<![a-z])(orders?|refunds?|customers?|purchases?)(?![a-z])")
"""The shipped workflows' business: the platform's code names none of it."""

SQL_ORDER = re.compile(r"(?i)\border\s+by\b")

PLATFORM = ["human", "web", "workflows/platform", "executors/platform"]


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the string constants that are docstrings (prose with examples, not code)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
        if isinstance(node, ast.Module | ast.ClassDef):  # attribute docstrings: a string after
            for before, after in itertools.pairwise(node.body):
                if isinstance(before, ast.Assign | ast.AnnAssign) and isinstance(after, ast.Expr):
                    found.add(id(after.value))
    return found


def _demo_names(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    prose = _docstrings(tree)
    named = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            # SQL's ORDER BY is not the business's order
            words = [] if id(node) in prose else [SQL_ORDER.sub("", node.value)]
        elif isinstance(node, ast.Name):
            words = [node.id]
        elif isinstance(node, ast.Attribute):
            words = [node.attr]
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            words = [node.name]
        elif isinstance(node, ast.arg):
            words = [node.arg]
        elif isinstance(node, ast.alias):
            words = [node.name]
        else:
            continue
        for word in words:
            spaced = word.replace("_", " ")
            for hit in DEMO_WORDS.finditer(spaced):
                named.append(f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', '?')}: {hit[0]}")
    return named


def test_the_platform_names_no_shipped_workflows_business() -> None:
    """Orders, refunds, customers and purchases are the shipped workflows' own (docstrings aside).

    Code and the strings it holds are read, not the prose of docstrings and comments.
    """
    files = sorted(f for folder in PLATFORM for f in (ROOT / folder).rglob("*.py"))
    assert len(files) > 40, files  # the folders are where this test thinks they are

    named = [hit for f in files for hit in _demo_names(f)]

    assert named == []
