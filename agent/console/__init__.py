"""The terminal side of codebox: escaping, the live run console, the batch view, the end-of-run summary."""
