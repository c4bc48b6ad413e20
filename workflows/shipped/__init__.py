"""The workflows Baton ships, written against the public developer API like any user's.

`refund`, `support` and `purchase` register themselves when their modules are imported; Baton
loads them by name (`baton.settings.SHIPPED_WORKFLOWS`) beside the modules `BATON_WORKFLOWS`
names. Their rules are `policies.yaml` beside this file, the policy Baton runs when
`BATON_POLICIES` names no file of your own.
"""

from __future__ import annotations

from pathlib import Path

MODULES = ("workflows.shipped.refund", "workflows.shipped.support", "workflows.shipped.purchase")
"""The modules that register the shipped workflows."""

POLICIES = Path(__file__).with_name("policies.yaml")
"""The shipped workflows' rules (SPEC §3)."""


def load() -> None:
    """Import the shipped workflows so that they register."""
    import importlib

    for module in MODULES:
        importlib.import_module(module)


load()
