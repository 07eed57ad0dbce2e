"""Launch a sandbox container: create it (owner labels, expiry), attach to it, start it. No pydantic.

The one way a sandbox container starts. ``launch`` does it for ``Sandbox._launch``, which then
sends the container's first ping. ``PendingLaunch`` does it in a background thread, for
`codebox run`'s early start: the create request leaves the process before pydantic (and the
rest of codebox) is imported, and the ``Sandbox`` that claims the task adopts the started
container and sends only the first ping (agent.backends.pool).

Attach comes BEFORE start: nothing the server writes can be lost, and this process is the
container's only stdin client (StdinOnce: its disconnect is the server's EOF). A process killed
between create and start leaves a created container with its owner labels: the reaper
(agent.containers.leftovers) removes it.
"""

from __future__ import annotations

import atexit
import contextlib
import threading
import time
import weakref
from collections.abc import Callable
from pathlib import Path

from agent.containers.attach_stream import AttachStream, StreamError
from agent.containers.engine import DOCKER, Engine
from agent.containers.engine_api import EngineClient, EngineError, NotFound
from agent.containers.leftovers import LABEL_EXPIRES, reap_in_background, remove_container
from agent.containers.runtime import ensure_runtime
from agent.containers.spec import (
    ROLE_TOOLS,
    RepoAccessError,
    container_options,
    precompile_package,
)
from agent.errors import SandboxError
from agent.sandboxes.config import SandboxConfig
from agent.sandboxes.logs import log as _log
from sandbox import wire


def image_help(engine: Engine) -> str:
    """What to do about a missing sandbox image, on this engine."""
    suffix = "" if engine.name == DOCKER.name else f" --backend {engine.name}"
    return f"build it with: codebox image build{suffix}"


class Container:
    """One launched server container and its attach stream (None until attached)."""

    def __init__(self, role: str, container_id: str, name: str, expires: float, created_at: float) -> None:
        self.role = role
        self.id = container_id
        self.name = name
        self.expires = expires  # time.time() at which its lifetime ends
        self.created_at = created_at  # time.monotonic() when its create request went out
        self.stream: AttachStream | None = None
        self.dead = False


def discard(client: EngineClient | None, box: Container, release: bool = True) -> None:
    """Close the stream (the server gets EOF) and force-remove the container. Idempotent.

    ``release=False``: shut the stream down but leave its socket to the thread that may be
    reading it (or to the garbage collector), never closed under its feet."""
    box.dead = True
    stream = box.stream
    if stream is not None:
        stream.shutdown()
    if client is not None:
        remove_container(client, box.id)
    if stream is not None and release:
        stream.close()


def stderr_tail(box: Container, limit: int = 1500) -> str:
    """What the container wrote to stderr so far (the reason it did not start, often)."""
    if box.stream is None:
        return ""
    box.stream.drain_stderr()
    return box.stream.stderr_tail(limit)


def start_error(exc: BaseException, detail: str, closed: bool) -> SandboxError:
    """The error for a container that did not get as far as answering its first ping."""
    if closed:
        return SandboxError("the sandbox was closed while a container started")
    if isinstance(exc, SandboxError):
        return exc
    message = f"the sandbox container did not start ({type(exc).__name__}: {exc})"
    if detail:
        message += f"; its stderr: {detail}"
    return SandboxError(message)


def launch(
    client: EngineClient,
    config: SandboxConfig,
    repo: Path,
    role: str,
    task_id: str,
    labels: dict[str, str] | None = None,
    *,
    register: Callable[[Container], bool] | None = None,
    closed: Callable[[], bool] = lambda: False,
    on_sent: Callable[[], None] | None = None,
    engine: Engine = DOCKER,
) -> Container:
    """Create, attach and start one sandbox container; it runs, attached, not pinged yet.

    ``register(container)`` is called right after the create: its owner keeps it from then on
    (its ``close()`` removes it); False means the owner was closed meanwhile, and the container
    is removed here. ``closed()``: whether the owner was closed, to say so when a step fails.
    ``on_sent``: called when the create request has left the process. Raises SandboxError (the
    container, if one was created, removed).
    """
    if not repo.is_dir():
        raise SandboxError(f"the repository {repo} is not a directory")
    # No image lookup here: create answers NotFound itself (the runner has looked the image up
    # once, before the model's first token).
    try:
        runtime = ensure_runtime()
        name, options = container_options(config, repo, role, task_id, time.time(), labels, engine.host_config,
                                          runtime)
    except RepoAccessError as exc:
        raise SandboxError(str(exc)) from exc
    except ValueError as exc:  # a size the daemon would refuse
        raise SandboxError(f"cannot create the sandbox container: {exc}") from exc
    expires = float(options["Labels"][LABEL_EXPIRES])
    created_at = time.monotonic()
    try:
        container_id = client.create_container(options, name=name, on_sent=on_sent)
    except NotFound as exc:
        raise SandboxError(f"the sandbox image {config.image!r} is not there; {image_help(engine)}") from exc
    except EngineError as exc:
        raise SandboxError(f"cannot create the sandbox container: {exc}") from exc
    finally:
        # Once per process, beside the first start (after its create, not before it): leftovers,
        # and the in-container package's bytecode.
        reap_in_background(engine.name, engine.connect, log=_log.info, also=precompile_package)
    box = Container(role, container_id, name, expires, created_at)
    if register is not None and not register(box):
        discard(client, box)
        raise SandboxError("the sandbox is closed")
    try:
        sock, pre_read = client.attach(box.id)
        box.stream = AttachStream(sock, max_line=wire.MAX_RESPONSE_BYTES, pre_read=pre_read)
        client.start(box.id)
    except (StreamError, EngineError, OSError) as exc:
        detail = stderr_tail(box)
        discard(client, box)
        raise start_error(exc, detail, closed()) from exc
    return box


# Every PendingLaunch not closed or handed over; one atexit hook removes their containers.
_PENDING: weakref.WeakSet[PendingLaunch] = weakref.WeakSet()
_PENDING_LOCK = threading.Lock()


def _close_all_at_exit() -> None:
    with _PENDING_LOCK:
        pending = list(_PENDING)
    for launch_ in pending:
        with contextlib.suppress(Exception):
            launch_.close()


atexit.register(_close_all_at_exit)


class PendingLaunch:
    """A tool container launched in a background thread (create, attach, start; no ping).

    Its owner either hands it to a ``Sandbox`` (``take``), which sends the first ping and owns the
    container from then on, or closes it: ``close()`` (idempotent, any thread) removes the
    container, also while the launch is under way (the launch then removes it itself).
    """

    def __init__(
        self, config: SandboxConfig, repo: Path, task_id: str, labels: dict[str, str] | None = None,
        engine: Engine = DOCKER,
    ) -> None:
        self.engine = engine
        self.config = config
        self.repo = repo
        self.task_id = task_id
        self.labels = dict(labels or {})
        self.client: EngineClient | None = None
        self._lock = threading.RLock()  # close() may run in a signal handler on a thread that holds it
        self._closed = False  # closed, or handed over
        self._box: Container | None = None
        self._error: SandboxError | None = None
        self._sent = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"codebox-launch-{task_id}", daemon=True)
        with _PENDING_LOCK:
            _PENDING.add(self)

    def begin(self) -> PendingLaunch:
        self._thread.start()
        return self

    def wait_sent(self, timeout_s: float) -> bool:
        """Wait until the create request has left (or the launch is over); False on timeout."""
        return self._sent.wait(timeout_s)

    def wait(self, timeout_s: float | None = None) -> bool:
        """Wait until the launch is over (started or failed); False on timeout."""
        self._thread.join(timeout_s)
        return not self._thread.is_alive()

    @property
    def error(self) -> SandboxError | None:
        """Why the launch failed (once it is over), or None."""
        return None if self._thread.is_alive() else self._error

    @property
    def closed(self) -> bool:
        return self._closed

    def take(self) -> Container:
        """Hand the started container over (its stream attached, no ping sent yet): the caller owns
        it now, and ``close()`` leaves it alone. Waits for the launch; SandboxError with the
        launch's own message if it failed, or if this launch was closed."""
        self.wait()
        with self._lock:
            if self._closed:
                raise SandboxError("the sandbox is closed")
            self._closed = True
            box, error = self._box, self._error
            self._box = None
        self._forget()
        if error is not None:
            raise error
        if box is None:
            raise SandboxError("the sandbox container did not start")
        return box

    def close(self) -> None:
        """Remove the container (started, or being launched); nothing if it was handed over."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            box = self._box
            self._box = None
        if box is not None:
            discard(self.client, box, release=False)  # the launch thread may still use the stream
        self._forget()

    def _forget(self) -> None:
        with _PENDING_LOCK:
            _PENDING.discard(self)

    def _register(self, box: Container) -> bool:
        with self._lock:
            if self._closed:
                return False
            self._box = box
            return True

    def _run(self) -> None:
        try:
            self.client = self.engine.connect(SandboxError)
            launch(self.client, self.config, self.repo, ROLE_TOOLS, self.task_id, self.labels,
                   register=self._register, closed=lambda: self._closed, on_sent=self._sent.set, engine=self.engine)
        except SandboxError as exc:
            self._error = exc
        except Exception as exc:  # never a traceback in a thread: the claiming Sandbox reports it
            self._error = start_error(exc, "", self._closed)
        finally:
            self._sent.set()
        if self._error is not None and not self._closed:
            _log.info("the early sandbox of %s did not start: %s", self.task_id, self._error)
