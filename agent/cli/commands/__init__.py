"""The `codebox` subcommands, one module per family; agent/cli/parser.py is the parser that routes to them."""
