"""The demo's teams, people, orders and customers (`baton seed --demo`): idempotent, demo only."""

from __future__ import annotations

import secrets

from argon2 import PasswordHasher

from executors.shipped.back_office import BackOffice
from human.store.base import Store

TEAMS = {
    "support-agents": "First line: talks to customers",
    "support-leads": "Approves refunds from 50 and account deletions",
    "finance": "Approves refunds from 1000, two people each",
    "legal": "Reviews contracts and purchases",
    "managers": "Where escalations go",
}

# name -> (role, teams)
PEOPLE: dict[str, tuple[str, tuple[str, ...]]] = {
    "sam": ("responder", ("support-agents",)),
    "sue": ("responder", ("support-agents",)),  # a second agent: four-eyes on support reviews
    "lee": ("responder", ("support-leads",)),
    "fay": ("responder", ("finance",)),
    "fin": ("responder", ("finance",)),
    "val": ("viewer", ("support-leads", "finance")),
    "ada": ("admin", tuple(TEAMS)),
    "lex": ("responder", ("legal",)),
    "liv": ("responder", ("legal",)),
    "max": ("responder", ("managers",)),
    "mia": ("responder", ("managers",)),
}


async def seed_demo(store: Store, database_url: str) -> None:
    """Create the demo teams and people, and the back office's orders and customers, if missing."""
    for name, description in TEAMS.items():
        await store.add_team(name, description)
    for name, (role, teams) in PEOPLE.items():
        # example.com never receives mail: with BATON_SMTP_URL set, point it at a test relay.
        await store.add_user(name, role=role, teams=teams, email=f"{name}@example.com")
    office = await BackOffice.open(database_url)
    try:
        await office.seed_demo()
    finally:
        await office.close()


async def set_demo_passwords(store: Store) -> dict[str, str]:
    """Give every demo person a new random password, for signing in to the pages (demo only).

    Returns:
        Each demo person's name and new password (only their argon2 hashes are stored).
    """
    hasher = PasswordHasher()
    passwords = {name: secrets.token_urlsafe(9) for name in PEOPLE}
    for name, (role, teams) in PEOPLE.items():
        await store.add_user(
            name, role=role, teams=teams, password_hash=hasher.hash(passwords[name])
        )
    return passwords
