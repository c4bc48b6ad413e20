"""`baton.api` is the developer API: one import, an `__all__` that holds, the shipped use it."""

from __future__ import annotations

import ast
from pathlib import Path

import baton.api

ROOT = Path(__file__).resolve().parents[2]


def test_every_name_of_all_is_there_once_and_in_order() -> None:
    names = baton.api.__all__

    assert names == sorted(names, key=lambda n: (n[0].islower(), n))
    assert len(set(names)) == len(names)
    missing = [n for n in names if not hasattr(baton.api, n)]
    assert missing == []


def test_the_api_exports_what_it_imports_and_nothing_stray() -> None:
    tree = ast.parse(Path(baton.api.__file__).read_text(encoding="utf-8"))
    imported = {
        alias.asname or alias.name
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and node.module != "__future__"
        for alias in node.names
    }

    assert imported == set(baton.api.__all__)


def test_the_shipped_workflows_take_all_they_need_from_the_api_alone() -> None:
    shipped = [*ROOT.glob("workflows/shipped/**/*.py"), *ROOT.glob("executors/shipped/**/*.py")]
    taken: set[str] = set()
    for path in shipped:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "baton.api":
                taken |= {alias.name for alias in node.names}

    assert len(shipped) > 8
    assert taken  # they do use it
    assert taken <= set(baton.api.__all__)
