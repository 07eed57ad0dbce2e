"""The `codebox` command: the parser (parser.py), its subcommands (commands/), the up-front checks and signals."""
