"""The Docker backend: today's container driver (agent/containers/, the stdlib Engine API client)
behind the seam, with any runtime the daemon lists (runc by default, runsc for gVisor).

No docker-py and no pydantic here: `codebox run`'s early start goes through ``prestart``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from agent.containers.engine import DOCKER, Engine
from agent.containers.engine_api import EngineClient, EngineError
from agent.errors import SandboxError

if TYPE_CHECKING:  # annotations only: an environment's cache hit loads no sandbox model
    from agent.sandboxes.base import Prestarted, Session
    from agent.sandboxes.build import Builder
    from agent.sandboxes.config import SandboxConfig

# How gVisor is registered with an engine: what preflight says when a runtime is missing.
GVISOR_PATH = "/usr/bin/runsc"


class EngineBackend:
    """A backend over an engine that speaks Docker's Engine API (Docker; Podman's service too)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine  # the runc one; engine_for says which serves a runtime
        self.name = engine.name
        self._runtimes: dict[str, frozenset[str]] = {}  # endpoint -> the runtimes it listed
        self._lock = threading.Lock()

    # -- the seam -------------------------------------------------------------------------------
    def preflight(self, config: SandboxConfig) -> None:
        from agent.containers.image import ImageError, image_problem

        client = self.connect()  # the default runtime's engine: it answers for every runtime and image
        self.check_runtime(client, config.runtime)
        self.connect(config.runtime)  # and the one that will run the containers answers too
        try:
            problem = image_problem(config.image, client, build=self.build_command())
        except ImageError as exc:
            problem = str(exc)
        if problem:
            raise SandboxError(problem)

    def session(
        self,
        repo: Path,
        config: SandboxConfig,
        task_id: str | None = None,
        labels: dict[str, str] | None = None,
        prestarted: Prestarted | None = None,
    ) -> Session:
        from agent.containers.launch import PendingLaunch
        from agent.containers.sandbox import Sandbox

        if prestarted is not None and not isinstance(prestarted, PendingLaunch):
            raise TypeError("a container prestarted by another backend")
        engine = self.engine_for(config.runtime)
        return Sandbox(repo, config, task_id=task_id, labels=labels, launched=prestarted, engine=engine)

    def prestart(
        self, repo: Path, config: SandboxConfig, task_id: str, labels: dict[str, str] | None = None
    ) -> Prestarted:
        from agent.containers.launch import PendingLaunch

        return PendingLaunch(config, repo, task_id, labels, engine=self.engine_for(config.runtime)).begin()

    def image_id(self, config: SandboxConfig) -> str | None:
        try:
            client = self.connect(config.runtime)
            try:
                found = client.inspect_image(config.image).get("Id")
            finally:
                client.close()
        except (SandboxError, EngineError, OSError):
            return None
        return str(found) if found else None

    def containers(self, config: SandboxConfig, task_id: str) -> list[str]:
        from agent.containers.leftovers import LABEL_TASK

        try:
            found = self.connect(config.runtime).containers(all=True, filters={"label": [f"{LABEL_TASK}={task_id}"]})
        except EngineError as exc:
            raise SandboxError(f"{self.name} did not list its containers: {exc}") from exc
        return [str(info["Id"]) for info in found]

    def reap(self, log: Callable[[str], None], *, dry_run: bool = False, owner: int | None = None) -> list[str]:
        from agent.containers.leftovers import reap_leftovers

        return reap_leftovers(self.connect(), log=log, dry_run=dry_run, owner=owner)

    def reap_runtimes(self, log: Callable[[str], None], *, dry_run: bool = False) -> list[Path]:
        from agent.containers.runtime_gc import remove_old_runtimes

        return remove_old_runtimes(self.connect(), log=log, dry_run=dry_run)

    def reap_toolchains(self, log: Callable[[str], None], *, dry_run: bool = False) -> list[str]:
        from agent.containers.toolchain_gc import remove_superseded

        return remove_superseded(self.connect(), log=log, dry_run=dry_run)

    def builder(self) -> Builder:
        from agent.containers.builds import EngineBuilder

        engine = self.engine_for(self.engine_runtime())  # build boxes run with the engine's default runtime
        return EngineBuilder(engine.connect(SandboxError), self.name, engine.host_config)

    # -- this engine ----------------------------------------------------------------------------
    def engine_for(self, runtime: str) -> Engine:
        """The engine that runs containers of ``runtime`` (Docker: one daemon, the runtime per container)."""
        return self.engine

    def connect(self, runtime: str | None = None) -> EngineClient:
        """A client (of the engine that serves ``runtime``) that has answered; SandboxError with what to do."""
        return self.engine_for(runtime or self.engine_runtime()).connect(SandboxError)

    def engine_runtime(self) -> str:
        from agent.defaults import DEFAULT_RUNTIME

        return DEFAULT_RUNTIME

    def build_command(self) -> str:
        return "codebox image build"

    def runtimes(self, client: EngineClient) -> frozenset[str]:
        """The runtimes the engine lists (asked once per process and endpoint: a registration needs
        a reload, which a run does not wait for)."""
        with self._lock:
            known = self._runtimes.get(client.endpoint.url)
        if known is None:
            try:
                known = frozenset((client.info().get("Runtimes") or {}).keys())
            except EngineError as exc:
                raise SandboxError(f"{self.name} did not say which runtimes it has: {exc}") from exc
            with self._lock:
                self._runtimes[client.endpoint.url] = known
        return known

    def check_runtime(self, client: EngineClient, runtime: str) -> None:
        """SandboxError, saying exactly how to register it, when the engine lacks ``runtime``."""
        known = self.runtimes(client)
        if runtime not in known:
            listed = ", ".join(sorted(known)) or "none"
            hint = self.register_hint(runtime)
            raise SandboxError(f"{self.name} has no runtime {runtime!r} (it has: {listed}); {hint}")

    def register_hint(self, runtime: str) -> str:
        """How to register ``runtime`` with this engine (gVisor's lines for a runsc name)."""
        path = GVISOR_PATH if runtime.startswith("runsc") else f"/path/to/{runtime}"
        args = ', "runtimeArgs": ["--network=none"]' if runtime.startswith("runsc") else ""
        install = "install gVisor (apt-get install runsc), then " if runtime.startswith("runsc") else ""
        return (
            f'{install}add to /etc/docker/daemon.json (merged with what is there): '
            f'"runtimes": {{"{runtime}": {{"path": "{path}"{args}}}}}, '
            "and reload the daemon (running containers keep running): sudo kill -HUP $(pidof dockerd)"
        )


BACKEND = EngineBackend(DOCKER)
