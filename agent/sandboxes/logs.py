"""The sandbox's logger ("codebox.sandbox"), without importing ``logging`` until a line is logged.

`codebox run` sends its container's create request before the rest of codebox is imported
(agent.containers.launch); the modules on that path log through this instead of
``logging.getLogger`` (the import of logging is ~5 ms of that path).
"""

from __future__ import annotations

from typing import Any

NAME = "codebox.sandbox"


class LazyLogger:
    """``debug``, ``info`` and ``warning`` of a logging.Logger, which is made at the first line."""

    def __init__(self, name: str) -> None:
        self.name = name

    def _logger(self) -> Any:
        import logging

        return logging.getLogger(self.name)

    def debug(self, msg: str, *args: object) -> None:
        self._logger().debug(msg, *args)

    def info(self, msg: str, *args: object) -> None:
        self._logger().info(msg, *args)

    def warning(self, msg: str, *args: object) -> None:
        self._logger().warning(msg, *args)


log = LazyLogger(NAME)
