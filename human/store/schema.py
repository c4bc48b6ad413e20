"""Numbered migrations, `sql/<dialect>/NNNN_<what>.sql`: applied in order, never edited."""

from __future__ import annotations

from importlib import resources


def migrations(dialect: str) -> list[tuple[int, str, str]]:
    """`(version, name, sql)` of every migration of a dialect, in order."""
    folder = resources.files("human.store") / "sql" / dialect
    found = []
    for entry in folder.iterdir():
        if entry.name.endswith(".sql"):
            number, _, name = entry.name.removesuffix(".sql").partition("_")
            found.append((int(number), name, entry.read_text(encoding="utf-8")))
    return sorted(found)
