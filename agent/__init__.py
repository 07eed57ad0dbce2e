"""codebox's host side: the agent loop, models, policy, events, the Docker driver and the CLI."""

__version__ = "0.2.0"
