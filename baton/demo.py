"""The demo's teams, people and orders (`baton seed --demo`): idempotent, and demo only."""

from __future__ import annotations

import secrets

from argon2 import PasswordHasher

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

ORDERS = [
    {
        "id": f"A-{1000 + n}",
        "customer": f"customer-{n:02d}",
        "total": 2000.0 + 75 * n,
        "currency": "EUR",
    }
    for n in range(1, 21)
]

# The support demo's customers: each has the order of the same number.
CUSTOMERS = [
    {
        "id": f"customer-{n:02d}",
        "name": f"Customer {n:02d}",
        "email": f"customer-{n:02d}@example.com",
    }
    for n in range(1, 21)
]


async def seed_demo(store: Store) -> None:
    """Create the demo teams, people and orders if missing."""
    for name, description in TEAMS.items():
        await store.add_team(name, description)
    for name, (role, teams) in PEOPLE.items():
        # example.com never receives mail: with BATON_SMTP_URL set, point it at a test relay.
        await store.add_user(name, role=role, teams=teams, email=f"{name}@example.com")
    await store.seed_orders(ORDERS)
    await store.seed_customers(CUSTOMERS)


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
