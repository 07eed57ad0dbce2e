"""Host side of the container boundary: start the sandbox containers, talk to their server.

One ``Sandbox`` per task. It runs up to two containers from the same image:

- the TOOL container (role ``tools``): the repository mounted READ-ONLY at /repo;
  read_file, search and run_test run here (the only place repository code runs);
- the WRITE container (role ``write``): started lazily on the first apply_patch,
  the repository mounted read-write with /repo/.git re-mounted read-only on top;
  the host only ever sends apply_patch to it.

Each container's main process is ``sandbox.server`` (the stdlib server, bind-mounted read-only
from this package, on codebox's own runtime at /.codebox: agent.containers.runtime) under a small
init (``sandbox.container_init``; it runs the server in its forked child, so one
interpreter boots, not two). The host talks to it over ONE persistent attach socket: JSON lines (see
``sandbox.wire``) on stdin, responses on stdout, multiplexed by docker with stderr
(``agent.containers.attach_stream``). No ``docker exec`` per call: a call costs a socket round
trip (well under a millisecond for a small read) instead of ~60-90 ms. The daemon is driven by
``agent.containers.engine_api`` (stdlib HTTP over its socket), not docker-py.

Why a container cannot leak, even if the host process is SIGKILLed:

1. The container is created with ``stdin_open`` + ``StdinOnce`` and this process is
   its only attached client. When this process dies, however it dies, the kernel
   closes its end of the attach connection, and because of StdinOnce docker closes
   the container's stdin. The server exits on stdin EOF; PID 1 exits with it; the
   kernel kills every other process of the container's PID namespace; and
   ``auto_remove`` makes the daemon delete the container. No host code has to run.
2. PID 1 is ``sandbox.container_init`` (our stdlib init; it replaces docker's
   ``--init``, doing the same reaping and signal forwarding). Repository code runs
   with the server's uid, so it could SIGSTOP or wedge the server, but it cannot
   touch PID 1: the kernel ignores SIGKILL/SIGSTOP sent to a namespace's init from
   inside, and init is non-dumpable (no ptrace, no /proc/1/fd). Init watches stdin
   for the hang-up (poll, never reading) and ends the container a moment after the
   host is gone even when the server does not exit; and it holds the lifetime cap
   as a kernel alarm (``lifetime_s`` + a margin; the server also exits by itself at
   ``lifetime_s``).
3. A container that was created but never started (the host died between the two
   API calls), or that survived anyway (e.g. a daemon restart), is removed by
   ``reap_leftovers``, which runs in the background at the first start of a process
   (again after ``REAP_INTERVAL_S`` in a long-lived one) and in ``codebox gc``: it
   removes codebox containers whose owner process (labels ``codebox.owner``/
   ``codebox.owner_start``/``codebox.host``) is dead on this host, or whose lifetime
   (label ``codebox.expires``) has passed.

While this process lives, ``close()`` (idempotent, any thread), the context
manager and an ``atexit`` hook remove both containers.

A container starts through ``agent.containers.launch`` (create, attach, start; pydantic-free);
a Sandbox made with ``launched=`` adopts a container launched ahead of it (`codebox run`'s early
start) and only sends its first ping.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import json
import logging
import secrets
import threading
import time
import uuid
import weakref
from pathlib import Path
from types import TracebackType
from typing import Any

from agent.containers.attach_stream import LineTooLong, StreamClosed, StreamDeadline, StreamError
from agent.containers.engine import DOCKER, Engine
from agent.containers.engine_api import EngineClient, EngineError, oom_killed_since
from agent.containers.launch import Container, PendingLaunch, discard, launch, start_error, stderr_tail
from agent.containers.leftovers import reap_leftovers
from agent.containers.spec import ROLE_TOOLS, ROLE_WRITE
from agent.errors import SandboxError
from agent.sandboxes.config import SandboxConfig
from agent.sandboxes.result import ToolResult
from sandbox import wire
from sandbox.tools.catalog import CODE_TOOLS, WRITE_TOOLS

__all__ = [
    "Sandbox",
    "SandboxConfig",
    "SandboxError",
    "reap_leftovers",
]

_log = logging.getLogger("codebox.sandbox")


# How long a fresh container may take to answer its first ping.
STARTUP_TIMEOUT_S = 30.0
_REPLACED = "the container was killed and will be replaced"


# --------------------------------------------------------------------------------------------------
# helpers


# Every live Sandbox; one atexit hook closes them all (a WeakSet does not keep them alive).
_LIVE: weakref.WeakSet[Sandbox] = weakref.WeakSet()
_LIVE_LOCK = threading.Lock()


def _close_all_at_exit() -> None:
    with _LIVE_LOCK:
        live = list(_LIVE)
    for sandbox in live:
        with contextlib.suppress(Exception):
            sandbox.close()


atexit.register(_close_all_at_exit)


class _Failure(Exception):
    """A call could not get a valid answer: the container is killed and replaced."""

    def __init__(self, message: str, oom: bool = False) -> None:
        super().__init__(message)
        self.oom = oom


class Sandbox:
    """A task's sandbox: a read-only tool container and, on demand, a write container.

    ``call`` is serialised (one request at a time); ``close`` may
    be called from any thread, also while a call runs (the call then returns a
    ``container_died`` reply).
    """

    def __init__(
        self,
        repo: Path,
        config: SandboxConfig | None = None,
        task_id: str | None = None,
        client: EngineClient | None = None,
        labels: dict[str, str] | None = None,
        launched: PendingLaunch | None = None,
        engine: Engine = DOCKER,
    ) -> None:
        """``launched``: the tool container, launched ahead for this repo and config (the caller
        checked that they match): its first start adopts it and only sends the first ping."""
        self.repo = Path(repo).resolve()
        self.config: SandboxConfig = config or SandboxConfig()
        self.task_id = task_id or uuid.uuid4().hex[:12]
        self._client = client
        self.engine = engine
        self._labels = dict(labels or {})  # extra container labels (e.g. codebox.pool)
        self._pending = launched
        self.startup_s: float | None = None  # start-to-ready (ping answered) of the last container started
        self._boxes: dict[str, Container] = {}
        self._call_lock = threading.Lock()
        # Reentrant: close() may run in a signal handler on a thread that holds it.
        self._state_lock = threading.RLock()
        self._closed = False
        with _LIVE_LOCK:
            _LIVE.add(self)

    # -- public API ----------------------------------------------------------------------------
    @property
    def container_ids(self) -> list[str]:
        """Ids of the running containers (tool container first)."""
        with self._state_lock:
            boxes = sorted(self._boxes.values(), key=lambda b: b.role != ROLE_TOOLS)
            return [b.id for b in boxes if not b.dead]

    @property
    def closed(self) -> bool:
        return self._closed

    def start(self) -> None:
        """Start the read-only tool container and wait until its server answers a ping."""
        with self._call_lock:
            self._ensure(ROLE_TOOLS, needed_s=0.0)

    def call(self, tool: str, args: dict[str, Any], timeout_s: float | None = None) -> ToolResult:
        """Run read_file / search / run_test (ping too) in the read-only tool container.

        A tool that writes (``sandbox.tools.catalog.WRITE_TOOLS``: apply_patch) is routed to
        the write container.
        A hang, a crash or a garbled answer gives ``ok=False, outcome="container_died"``
        and the next call runs in a fresh container. Raises SandboxError only when no
        container can be started (or the sandbox is closed).
        """
        if tool in WRITE_TOOLS:
            return self._request(ROLE_WRITE, tool, dict(args), self._timeout(timeout_s))
        args = dict(args)
        timeout = self._timeout(timeout_s)
        if tool in CODE_TOOLS:
            # The request's timeout bounds the run (the server uses the smaller of the two);
            # without an explicit one, the run's own timeout_s is the deadline.
            inner = args.get("timeout_s")
            if isinstance(inner, int | float) and not isinstance(inner, bool) and inner > 0:
                if timeout_s is None:
                    timeout = float(inner)
            else:
                args["timeout_s"] = timeout
        return self._request(ROLE_TOOLS, tool, args, timeout)

    def close(self) -> None:
        """Remove both containers. Idempotent; safe from any thread (and from a signal handler)."""
        with self._state_lock:
            if self._closed:
                return
            self._closed = True
            boxes = list(self._boxes.values())
            self._boxes.clear()
            pending, self._pending = self._pending, None
        if pending is not None:
            pending.close()  # a container launched ahead and not adopted yet
        # Another thread may be reading a stream: shut it down but leave the socket to be released
        # by that thread (or the garbage collector), never under its feet. Both containers are
        # removed at once (a forced removal waits for the kill: tens of ms each), gone on return.
        others = [threading.Thread(target=self._discard, args=(b, False), daemon=True) for b in boxes[1:]]
        for thread in others:
            thread.start()
        for box in boxes[:1]:
            self._discard(box, release=False)
        for thread in others:
            thread.join()
        with _LIVE_LOCK:
            _LIVE.discard(self)

    def __enter__(self) -> Sandbox:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Sandbox(repo={str(self.repo)!r}, task_id={self.task_id!r}, containers={self.container_ids})"

    # -- calls ---------------------------------------------------------------------------------
    def _timeout(self, timeout_s: float | None) -> float:
        if timeout_s is None or timeout_s <= 0:
            return self.config.default_timeout_s
        return float(timeout_s)

    def _request(self, role: str, tool: str, args: dict[str, Any], timeout_s: float) -> ToolResult:
        with self._call_lock:
            wait_s = timeout_s + self.config.call_grace_s
            box = self._ensure(role, needed_s=wait_s)
            # Unpredictable ids: a line forged into the server's stream by repo code (it runs as
            # the server's uid) cannot pass as the answer to a later call; a mismatch kills the container.
            request_id = secrets.randbits(52) + 1
            started = time.monotonic()
            started_wall = time.time()
            try:
                response = self._exchange(box, request_id, tool, args, timeout_s, wait_s, started_wall)
            except _Failure as failure:
                return self._died(box, str(failure), time.monotonic() - started, oom=failure.oom)
            reply = self._to_reply(response, time.monotonic() - started)
            failed = tool in CODE_TOOLS and reply.outcome in ("failed", "timeout")
            if failed and oom_killed_since(self._docker(), box.id, started_wall):
                message = (
                    "out of memory: the kernel killed a process of the test "
                    f"(sandbox memory limit {self.config.memory})"
                )
                data = {**reply.data, "oom": True}
                reply = dataclasses.replace(reply, ok=False, outcome="oom", error=message, data=data)
            return reply

    def _exchange(
        self,
        box: Container,
        request_id: int,
        tool: str,
        args: dict[str, Any],
        timeout_s: float,
        wait_s: float,
        started_wall: float,
    ) -> dict[str, Any]:
        """Send one request and read its response; raise _Failure when the container cannot answer."""
        stream = box.stream
        if stream is None:  # closed under us
            raise _Failure("the sandbox was closed")
        request = {"id": request_id, "tool": tool, "args": args, "timeout_s": timeout_s}
        line = (json.dumps(request, separators=(",", ":")) + "\n").encode()
        deadline = time.monotonic() + wait_s
        try:
            stream.send(line, deadline)
            while True:
                raw = stream.read_line(deadline)
                if raw.strip():
                    break
        except StreamDeadline as exc:
            raise _Failure(
                f"sandbox did not answer within {wait_s:g} s ({timeout_s:g} s timeout + "
                f"{self.config.call_grace_s:g} s grace); {_REPLACED}"
            ) from exc
        except LineTooLong as exc:
            raise _Failure(f"sandbox sent a response larger than {wire.MAX_RESPONSE_BYTES} bytes; {_REPLACED}") from exc
        except StreamClosed as exc:
            if self._closed:
                raise _Failure("the sandbox was closed while the call ran") from exc
            stream.drain_stderr()
            oom = oom_killed_since(self._docker(), box.id, started_wall)
            what = "ran out of memory and was killed" if oom else "exited or was killed"
            detail = stream.stderr_tail(500)
            raise _Failure(
                f"the sandbox container {what} during the call; a fresh container will be started "
                f"for the next call" + (f" (container stderr: {detail})" if detail else ""),
                oom=oom,
            ) from exc
        try:
            response = json.loads(raw)
        except ValueError as exc:
            shown = raw[:200].decode("utf-8", "replace")
            raise _Failure(f"sandbox sent a line that is not JSON ({shown!r}); {_REPLACED}") from exc
        problem = _check_response(response, request_id)
        if problem:
            raise _Failure(f"sandbox sent an invalid response ({problem}); {_REPLACED}")
        assert isinstance(response, dict)
        return response

    @staticmethod
    def _to_reply(response: dict[str, Any], duration_s: float) -> ToolResult:
        return ToolResult(
            ok=response["ok"],
            output=response["output"],
            error=response.get("error"),
            outcome=response["outcome"],
            data=response.get("data") or {},
            duration_s=duration_s,
        )

    def _died(self, box: Container, message: str, duration_s: float, oom: bool) -> ToolResult:
        """Kill and forget a container that failed a call; the next call starts a fresh one."""
        self._drop(box)
        return ToolResult(
            ok=False,
            output=message,
            error=message,
            outcome="oom" if oom else "container_died",
            duration_s=duration_s,
        )

    # -- containers ----------------------------------------------------------------------------
    def _docker(self) -> EngineClient:
        if self._client is None:
            self._client = self.engine.connect(SandboxError)
        return self._client

    def _ensure(self, role: str, needed_s: float) -> Container:
        """The running container for ``role``; start one if there is none or it expires too soon."""
        with self._state_lock:
            if self._closed:
                raise SandboxError("the sandbox is closed")
            box = self._boxes.get(role)
        if box is not None and not box.dead and not (box.stream is not None and box.stream.idle_ok()):
            # It died while idle (killed from outside, reached its lifetime) or its stream is out of step.
            _log.info("sandbox %s container %s is gone or out of step: replacing it", role, box.name)
            self._drop(box)
            box = None
        if box is not None and not box.dead:
            # Replace a container that would reach its lifetime during this call, unless even
            # a fresh one could not live that long (then only when most of its life is gone).
            remaining = box.expires - time.time()
            if remaining >= min(needed_s, self.config.lifetime_s / 2):
                return box
            _log.info("sandbox %s container %s reaches its lifetime: replacing it", role, box.name)
            self._drop(box)
        return self._launch(role)

    def _launch(self, role: str) -> Container:
        with self._state_lock:
            pending = self._pending if role == ROLE_TOOLS else None
        if pending is not None:
            box = self._adopt(pending)
        else:
            try:
                box = launch(self._docker(), self.config, self.repo, role, self.task_id, self._labels,
                             register=self._register, closed=lambda: self._closed, engine=self.engine)
            except SandboxError:
                self._forget_dead(role)
                raise
        try:
            assert box.stream is not None
            deadline = time.monotonic() + STARTUP_TIMEOUT_S
            box.stream.send(b'{"id":0,"tool":"ping","args":{},"timeout_s":10}\n', deadline)
            raw = box.stream.read_line(deadline)
            while not raw.strip():
                raw = box.stream.read_line(deadline)
            response = json.loads(raw)
            problem = _check_response(response, 0)
            if problem:
                raise SandboxError(f"the sandbox server answered its first ping wrongly ({problem})")
            version = (response.get("data") or {}).get("version")
            if response.get("ok") is not True or version != wire.PROTOCOL_VERSION:
                raise SandboxError(
                    f"the sandbox server speaks protocol {version!r}, this client {wire.PROTOCOL_VERSION}"
                )
        except (StreamError, EngineError, OSError, ValueError, SandboxError) as exc:
            detail = stderr_tail(box)
            self._drop(box)
            error = start_error(exc, detail, self._closed)
            if error is exc:
                raise
            raise error from exc
        self.startup_s = time.monotonic() - box.created_at
        _log.debug("sandbox %s container %s ready in %.3f s", role, box.name, self.startup_s)
        return box

    def _adopt(self, pending: PendingLaunch) -> Container:
        """The tool container launched ahead: this sandbox's from now on (or the launch's error)."""
        try:
            box = pending.take()
        finally:
            with self._state_lock:
                if self._pending is pending:
                    self._pending = None
        if self._client is None:
            self._client = pending.client
        if not self._register(box):
            discard(self._client, box)
            raise SandboxError("the sandbox is closed")
        return box

    def _register(self, box: Container) -> bool:
        """Keep a container just created (close() removes it from now on); False if closed."""
        with self._state_lock:
            if self._closed:
                return False
            self._boxes[box.role] = box
            return True

    def _forget_dead(self, role: str) -> None:
        with self._state_lock:
            box = self._boxes.get(role)
            if box is not None and box.dead:
                del self._boxes[role]

    def _drop(self, box: Container) -> None:
        """Forget a container (if it is still the one for its role) and remove it."""
        with self._state_lock:
            if self._boxes.get(box.role) is box:
                del self._boxes[box.role]
        self._discard(box)

    def _discard(self, box: Container, release: bool = True) -> None:
        """Close the stream (the server gets EOF) and force-remove the container. Idempotent."""
        discard(self._client, box, release)


def _check_response(response: Any, request_id: int) -> str | None:
    """What is wrong with a decoded response line, or None."""
    if not isinstance(response, dict):
        return "not a JSON object"
    if response.get("id") != request_id or isinstance(response.get("id"), bool):
        return f"id {response.get('id')!r} instead of {request_id}"
    if not isinstance(response.get("ok"), bool):
        return "'ok' is not a boolean"
    if not isinstance(response.get("output"), str):
        return "'output' is not a string"
    if response.get("error") is not None and not isinstance(response.get("error"), str):
        return "'error' is not a string"
    if response.get("outcome") not in wire.OUTCOMES:
        return f"unknown outcome {response.get('outcome')!r}"
    if response.get("data") is not None and not isinstance(response.get("data"), dict):
        return "'data' is not an object"
    return None
