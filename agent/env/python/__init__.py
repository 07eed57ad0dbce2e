"""A task's Python: the version it runs on (choice.py), from the project's words (requires.py) and the calendar."""
