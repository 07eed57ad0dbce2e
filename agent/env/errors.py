"""The error type of dependency environments: a one-line message a person can act on."""

from __future__ import annotations

from agent.errors import CodeboxError


class EnvError(CodeboxError):
    """An environment could not be read, resolved or built; the message says why and what to do.

    ``usage`` marks errors the input caused (a bad or unresolvable declaration): the CLI
    exits 2 for those, 1 for the rest (Docker down, a failed offline build).
    """

    def __init__(self, message: str, *, usage: bool = False) -> None:
        super().__init__(message)
        self.usage = usage


class ProjectBuildFailed(EnvError):
    """The project's own build (its PEP 517 hooks, setup.py) exited with ``status``: the tree does not build.

    An eval tells it apart: after the model's patch, that is the patch's doing, graded, not an error."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status
