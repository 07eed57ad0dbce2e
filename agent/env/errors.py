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


_NO_RUST = ("cargo, the rust package manager, is not installed", "can't find rust compiler", "cargo: not found",
            "rustc: not found", "no such file or directory: 'cargo'", "no such file or directory: 'rustc'")


def why_it_failed(log: str) -> str:
    """What a failed offline build's log says that codebox can name, with what to do: ``""`` when nothing.

    Rust: maturin and setuptools-rust need cargo, which no build box has, and cargo would fetch the
    crates from the network, which no build box has either (found with pendulum 3.0.0, maturin)."""
    low = log.lower()
    if any(sign in low for sign in _NO_RUST):
        return ("it compiles Rust, and the build box has neither a Rust toolchain nor the network to fetch crates: "
                "run on an image that has it built and installed (--env IMAGE)")
    return ""
