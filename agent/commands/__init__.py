"""The `codebox` subcommands, one module per family; agent/cli.py is the parser that routes to them."""
