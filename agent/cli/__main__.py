"""`python -m agent.cli`: the `codebox` command."""

from agent.cli.parser import entry

entry()
