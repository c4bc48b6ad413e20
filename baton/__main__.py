"""`python -m baton` is the `baton` command."""

from baton.cli import main

main()
