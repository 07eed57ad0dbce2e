"""The backend seam: what a sandbox backend offers (``Backend``), what one task's sandbox is
(``Session``) and a container started ahead of its task (``Prestarted``); what an environment
build asks of it is agent/sandboxes/build.py (``Builder``).

A backend is one module under agent/backends/ with one object that has these methods, listed
in agent.backends.registry; tests/conformance/ is the suite every backend and runtime passes.
Every method says what it raises; nothing else escapes (a bug aside).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:  # annotations only
    from agent.sandboxes.build import Builder
    from agent.sandboxes.config import SandboxConfig
    from agent.sandboxes.result import ToolResult


class Session(Protocol):
    """One task's sandbox: a read-only tool container, and a write container for the tools that
    write (sandbox.tools.catalog.WRITE_TOOLS), started on their first call. ``call`` is serialised;
    ``close`` may be called from any thread, also while a call runs."""

    task_id: str
    startup_s: float | None
    """Start to first answer of the last container started (None before the first)."""

    @property
    def container_ids(self) -> list[str]:
        """The running containers (the tool container first); empty before the start. Raises nothing."""
        ...

    @property
    def closed(self) -> bool: ...

    def start(self) -> None:
        """Start the tool container and wait for its server's first answer.

        Raises SandboxError (the engine does not answer, the image or runtime is missing, the
        container did not start or answer, the session is closed): nothing is left running."""
        ...

    def call(self, tool: str, args: dict[str, Any], timeout_s: float | None = None) -> ToolResult:
        """Run one tool (starting its container if there is none) and return its result.

        A hang, a crash, a garbled answer or a killed container is a result (outcome
        ``container_died`` or ``oom``), and the next call gets a fresh container. Raises
        SandboxError only when no container can be started, or the session is closed."""
        ...

    def close(self) -> None:
        """Remove every container of the session; gone on return. Idempotent, any thread, raises nothing."""
        ...


class Prestarted(Protocol):
    """A task's tool container launched in the background, before anything claims it: the pool's
    ``prestart`` and `codebox run`'s early start (no pydantic on that path)."""

    @property
    def error(self) -> Exception | None:
        """Why the launch failed, once it is over (a SandboxError); None if it did not, or is under way."""
        ...

    @property
    def closed(self) -> bool: ...

    def wait_sent(self, timeout_s: float) -> bool:
        """Wait until the create request has left this process (or the launch is over). False on timeout."""
        ...

    def wait(self, timeout_s: float | None = None) -> bool:
        """Wait until the launch is over (started or failed). False on timeout. Raises nothing."""
        ...

    def close(self) -> None:
        """Remove the container, started or being launched, unless a session adopted it. Raises nothing."""
        ...


class Backend(Protocol):
    """A container engine that runs sandboxes."""

    name: str

    def preflight(self, config: SandboxConfig) -> None:
        """Check, before a task spends anything, that sandboxes of ``config`` can start here: the
        engine answers, it has the runtime, the image is there and current.

        Raises SandboxError with what to do (how to start the engine, the lines that register
        the runtime, the command that builds the image)."""
        ...

    def session(
        self,
        repo: Path,
        config: SandboxConfig,
        task_id: str | None = None,
        labels: dict[str, str] | None = None,
        prestarted: Prestarted | None = None,
    ) -> Session:
        """A task's sandbox on ``repo`` (nothing starts yet). ``prestarted``: this backend's
        container launched ahead for the same repo and config; the session's start adopts it.
        Raises nothing."""
        ...

    def prestart(
        self, repo: Path, config: SandboxConfig, task_id: str, labels: dict[str, str] | None = None
    ) -> Prestarted:
        """Begin launching the tool container of a task in the background (create, attach, start;
        no first call). Raises nothing: a failure is the handle's ``error``."""
        ...

    def image_id(self, config: SandboxConfig) -> str | None:
        """The id (sha256:...) of the image sandboxes of ``config`` run; None when the engine does
        not say (not there, or not answering). Raises nothing."""
        ...

    def containers(self, config: SandboxConfig, task_id: str) -> list[str]:
        """The ids of a task's containers in any state (gone ones are not listed).

        Raises SandboxError when the engine does not answer."""
        ...

    def reap(self, log: Callable[[str], None], *, dry_run: bool = False, owner: int | None = None) -> list[str]:
        """Remove the containers left by dead owners or past their lifetime (`codebox gc`); their ids.
        ``dry_run``: remove none, say which would go (their ids are returned) and which stay, and why;
        ``owner``: only the containers of that process (on this host).

        Raises SandboxError when the engine does not answer."""
        ...

    def reap_runtimes(self, log: Callable[[str], None], *, dry_run: bool = False) -> list[Path]:
        """Remove the runtime folders of other codebox versions that no container of this engine mounts
        (`codebox gc`); the folders. ``dry_run``: remove none, say which would go and which stay.

        Raises SandboxError when the engine does not answer."""
        ...

    def reap_toolchains(self, log: Callable[[str], None], *, dry_run: bool = False) -> list[str]:
        """Remove the superseded toolchain images (an older image of a toolchain that has a newer one) that no
        image or container of this engine uses (`codebox gc`); their tags. ``dry_run``: remove none, say which
        would go, with their sizes, and which stay, and why.

        Raises SandboxError when the engine does not answer."""
        ...

    def builder(self) -> Builder:
        """This backend's build boxes and image store: environments are built, kept and found there, so
        its sandboxes run them (agent.sandboxes.build). The caller closes it.

        Raises SandboxError with what to do when the engine does not answer."""
        ...
