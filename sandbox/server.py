"""The in-container tool server: JSON lines on stdin / stdout (see sandbox.wire).

    python3 -m sandbox.server --root /repo [--lifetime-s S] [--output-limit N]
                              [--allow-shell] [--reap-all] [--wipe-tmp]
                              [--max-request-bytes N] [--search-engine auto|rg|python|literal]
                              [--runtime DIR]

Stdlib only, python3 >= 3.9. One request at a time: a line in, one line out,
flushed. A malformed line (bad JSON, unknown tool, wrong types, too long) gets
``ok: false`` with the reason, and the server goes on. EOF on stdin: exit 0
(that is how the container dies with its owner). ``--lifetime-s`` or SIGALRM:
exit EXIT_LIFETIME, answering the request in flight with an error.
SIGTERM / SIGINT / SIGHUP / SIGQUIT: kill what run_test started, exit EXIT_SIGNAL.

The real stdin and stdout are moved to private descriptors at start; fd 0
becomes /dev/null and fd 1 a copy of stderr, so nothing but the response lines
can reach the host's stream, whatever a tool or a child does. Logs go to stderr.
The server makes itself non-dumpable, so processes of its uid (the tests)
cannot open /proc/<server>/fd/* to read requests or forge responses. Whatever
runs as PID 1 holds the container's stdin/stdout too and must be non-dumpable
as well (sandbox.container_init is; docker's --init is NOT: a test can open
/proc/1/fd/1 and inject lines into the host's stream). The server can also be
PID 1 itself: it reaps orphans after every run_test and handles SIGTERM.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import sys
import threading
import time

from sandbox import flags, wire
from sandbox.tools import Context, ToolError, ToolResult, catalog, check_names
from sandbox.tools.procs import become_subreaper, in_host_pid_namespace, set_undumpable, tmp_is_private_tmpfs

# Not `from typing import ...` at run time: typing is the largest import of the server's boot
# (~2 MB of an idle sandbox); mypy reads these names, the interpreter never needs them.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, BinaryIO, Mapping, Optional, Sequence

    from sandbox.tools.catalog import Handler

DEFAULT_ROOT = "/repo"
DEFAULT_OUTPUT_LIMIT = 32000
MAX_OUTPUT_LIMIT = 1_000_000  # two streams of this, plus data, stay under wire.MAX_RESPONSE_BYTES

_ID_PREFIX = re.compile(rb'^\s*\{\s*"id"\s*:\s*(-?\d{1,30}|"(?:[^"\\]|\\.){0,200}")')


def log(message: str) -> None:
    with contextlib.suppress(OSError, ValueError):
        print(f"codebox-server[{os.getpid()}]: {message}", file=sys.stderr, flush=True)


class _Terminate(BaseException):
    """Raised in the main thread by SIGTERM / SIGINT (not an Exception: no tool catches it)."""


class Server:
    def __init__(
        self,
        ctx: Context,
        reader: BinaryIO,
        out_fd: int,
        *,
        max_request_bytes: int = wire.MAX_REQUEST_BYTES,
        subreaper: bool = False,
        undumpable: bool = False,
        tools: Optional[Sequence[str]] = None,
    ) -> None:
        self.ctx = ctx
        self.reader = reader
        self.out_fd = out_fd
        self.max_request_bytes = max_request_bytes
        self.subreaper = subreaper
        self.undumpable = undumpable
        self.lock = threading.Lock()
        self.inflight: Optional[tuple[Any]] = None  # (id,) of the request being handled
        self.closed = False  # set once the lifetime ended: nothing more is written
        # e.g. the write container serves only ping and apply_patch
        served = [name for name in catalog.NAMES if tools is None or name in tools]
        # A tool's module is imported at its first call (catalog.load), not at boot: an idle
        # sandbox holds only what the first request needs (each tool module pulls in more of
        # the stdlib: subprocess, shutil, tempfile, difflib ...).
        self.handlers: dict[str, Optional[Handler]] = {"ping": self.ping}
        self.handlers.update((name, None) for name in served)

    # -- tools of the server itself -------------------------------------------------------
    def ping(self, ctx: Context, args: Mapping[str, Any], timeout_s: Optional[float]) -> ToolResult:
        check_names("ping", args, set())
        return ToolResult(
            output=f"codebox sandbox server, protocol {wire.PROTOCOL_VERSION}",
            data={
                "version": wire.PROTOCOL_VERSION,
                "python": sys.version,
                "rg": ctx.rg is not None,
                "literal_in_python": ctx.literal_in_python,
                "root": ctx.root,
                "pid": os.getpid(),
                "output_limit": ctx.output_limit,
                "allow_shell": ctx.allow_shell,
                "reap_all": ctx.reap_all,
                "wipe_tmp": ctx.wipe_tmp,
                "subreaper": self.subreaper,
                "undumpable": self.undumpable,
                "tools_loaded": sorted(name for name, h in self.handlers.items() if h is not None and name != "ping"),
            },
        )

    # -- the loop -------------------------------------------------------------------------
    def serve(self) -> int:
        limit = self.max_request_bytes
        while True:
            line = self.reader.readline(limit + 1)
            if not line:
                return wire.EXIT_EOF
            if len(line) - line.endswith(b"\n") > limit:  # the limit is on the line without its newline
                rid = _id_from_prefix(line)
                while not line.endswith(b"\n"):  # discard the rest of the line
                    line = self.reader.readline(1 << 20)
                    if not line:
                        break
                resp = _error_response(rid, f"malformed request: line longer than {limit} bytes; discarded")
            else:
                resp = self.handle(line)
            if not self.write(resp):
                return wire.EXIT_EOF  # the host closed our stdout: it is gone

    def handle(self, line: bytes) -> dict[str, Any]:
        if not line.strip():
            return _error_response(None, "malformed request: empty line")
        try:
            req = json.loads(line)
        except (ValueError, RecursionError) as e:
            return _error_response(_id_from_prefix(line), f"malformed request: not valid JSON ({_short(e)})")
        if not isinstance(req, dict):
            return _error_response(None, "malformed request: not a JSON object")
        rid = req.get("id")
        if isinstance(rid, bool) or not (rid is None or isinstance(rid, (int, str))):
            return _error_response(None, "malformed request: 'id' must be an integer or a string")
        tool = req.get("tool")
        if not isinstance(tool, str) or tool not in self.handlers:
            shown = repr(tool) if isinstance(tool, str) else "missing"
            return _error_response(rid, f"unknown tool {shown[:100]}; this server runs: {', '.join(self.handlers)}")
        args = req.get("args")
        if args is None:
            args = {}
        if not isinstance(args, dict):
            return _error_response(rid, f"malformed request: 'args' of {tool} must be an object")
        timeout_s = req.get("timeout_s")
        if timeout_s is not None:
            if isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)):
                return _error_response(rid, "malformed request: 'timeout_s' must be a number")
            if not (0 < timeout_s < float("inf")):
                return _error_response(rid, "malformed request: 'timeout_s' must be > 0")
            timeout_s = float(timeout_s)

        with self.lock:
            self.inflight = (rid,)  # cleared when its response is written
        try:
            handler = self.handlers[tool]
            if handler is None:
                handler = self.handlers[tool] = catalog.load(tool)
            result = handler(self.ctx, args, timeout_s)
        except ToolError as e:
            result = ToolResult(output=e.message, ok=False, outcome="error", error=_one_line(e.message), data=e.data)
        except Exception as e:
            import traceback  # only here: the server's boot does not pay for it

            log(f"internal error in {tool}:\n{traceback.format_exc()}")
            msg = f"internal error in {tool}: {type(e).__name__}: {_short(e)}"
            result = ToolResult(output=msg, ok=False, outcome="error", error=msg)
        return _response(rid, result)

    def write(self, resp: dict[str, Any]) -> bool:
        data = _encode(resp)
        with self.lock:
            if self.closed:
                return True
            self.inflight = None
            return self._write_locked(data)

    def _write_locked(self, data: bytes) -> bool:
        try:
            view = memoryview(data)
            while view:
                n = os.write(self.out_fd, view)
                view = view[n:]
        except (BrokenPipeError, ConnectionResetError):
            return False
        return True

    def expire(self, why: str) -> None:
        """Lifetime over (timer or SIGALRM): answer the request in flight, kill the tests, exit.

        Exactly one response per request: the in-flight id is cleared only when its
        response is written, under the same lock, and nothing is written after this.
        """
        log(f"{why}: exiting")
        try:
            with self.lock:
                if self.inflight is not None:
                    msg = f"the sandbox server stopped: {why}"
                    self._write_locked(_encode(_error_response(self.inflight[0], msg)))
                self.closed = True
            shutdown()
        finally:
            os._exit(wire.EXIT_LIFETIME)


# -- responses ------------------------------------------------------------------------------


def _short(e: BaseException, limit: int = 300) -> str:
    text = str(e)
    return text if len(text) <= limit else text[:limit] + "..."


def _one_line(message: str, limit: int = 500) -> str:
    first = message.strip().splitlines()[0] if message.strip() else message
    return first if len(first) <= limit else first[:limit] + "..."


def _id_from_prefix(line: bytes) -> Any:
    m = _ID_PREFIX.match(line)
    if not m:
        return None
    try:
        value = json.loads(m.group(1))
    except ValueError:
        return None
    return value if isinstance(value, (int, str)) else None


def _response(rid: Any, result: ToolResult) -> dict[str, Any]:
    return {
        "id": rid,
        "ok": bool(result.ok),
        "output": result.output,
        "error": None if result.ok else (result.error or _one_line(result.output) or "error"),
        "outcome": result.outcome,
        "data": result.data,
    }


def _error_response(rid: Any, message: str) -> dict[str, Any]:
    return _response(rid, ToolResult(output=message, ok=False, outcome="error", error=message))


def _encode(resp: dict[str, Any]) -> bytes:
    try:
        text = json.dumps(resp, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=str)
    except (TypeError, ValueError) as e:
        log(f"cannot encode a response: {e!r}")
        text = json.dumps(_error_response(resp.get("id"), f"internal error: response not encodable ({e})"))
    data = text.encode("utf-8", "replace") + b"\n"
    if len(data) > wire.MAX_RESPONSE_BYTES:
        log(f"response of {len(data)} bytes is over the limit")
        msg = f"internal error: the response ({len(data)} bytes) is over the protocol limit"
        data = json.dumps(_error_response(resp.get("id"), msg)).encode() + b"\n"
    return data


# -- start ----------------------------------------------------------------------------------


def shutdown() -> None:
    """Kill what the code-running tools started, those that ever ran (a module loads on first use)."""
    for name in sorted(catalog.CODE_TOOLS):
        module = sys.modules.get(catalog.TOOL_MODULES[name])
        if module is not None:
            module.shutdown()


def _which(name: str) -> Optional[str]:
    """``shutil.which`` without importing shutil at boot."""
    for folder in os.environ.get("PATH", os.defpath).split(os.pathsep):
        path = os.path.join(folder or ".", name)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


def _ripgrep(runtime: Optional[str]) -> tuple[Optional[str], list[str]]:
    """(rg's path, the argv it starts through): the injected runtime's own, else the image's on PATH.

    The runtime's rg is linked against the runtime's libraries: its own loader starts it, with
    ``--library-path`` (nothing in the environment, so nothing reaches what rg might start)."""
    if runtime:
        try:
            with open(os.path.join(runtime, "runtime.json"), encoding="utf-8") as f:
                manifest = json.load(f)
            if manifest.get("rg"):
                loader = os.path.join(runtime, manifest["loader"])
                return os.path.join(runtime, manifest["rg"]), [loader, "--library-path", os.path.join(runtime, "lib")]
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            log(f"--runtime {runtime!r}: no usable runtime.json ({exc}); ripgrep from PATH")
    return _which("rg"), []


def _take_stdio() -> tuple[BinaryIO, int]:
    """Keep the real stdin/stdout for the protocol only; fd 0 = /dev/null, fd 1 = stderr."""
    in_fd = os.dup(0)  # new descriptors are not inherited by children
    out_fd = os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return os.fdopen(in_fd, "rb", buffering=1 << 16), out_fd


USAGE = """usage: python3 -m sandbox.server [--root DIR] [--lifetime-s S] [--output-limit N]
                              [--allow-shell] [--reap-all] [--wipe-tmp] [--max-request-bytes N]
                              [--tools NAME,...] [--search-engine auto|rg|python|literal]
                              [--runtime DIR]

  --root DIR             the repository root (default /repo)
  --lifetime-s S         exit after this many seconds
  --output-limit N       bytes kept per output stream (default 32000)
  --allow-shell          run_test accepts {"shell": "..."}
  --reap-all             in a container the server owns: after run_test, kill every process but the
                         server and its ancestors (ignored in the host's pid namespace)
  --wipe-tmp             in a container: run_test empties /tmp and /dev/shm before and after each run
                         (honoured only with --reap-all, in a container whose /tmp is a tmpfs of its own)
  --max-request-bytes N  longest request line accepted (default 4194304)
  --tools NAME,...       the tools this server runs (default: all); the write container: apply_patch
  --search-engine E      auto: ripgrep when on PATH, else the pure-Python search; rg; python;
                         literal: as auto, but a literal query is searched in Python (under gVisor
                         starting a process costs more than the walk)
  --runtime DIR          the runtime this server runs on, injected by the host (its runtime.json): its
                         ripgrep is started through its own loader, so the image needs none"""

ENGINES = ("auto", "rg", "python", "literal")

_FLAGS: flags.Spec = {
    "--root": (str, DEFAULT_ROOT),
    "--lifetime-s": (float, None),
    "--output-limit": (int, DEFAULT_OUTPUT_LIMIT),
    "--allow-shell": (None, False),
    "--reap-all": (None, False),
    "--wipe-tmp": (None, False),
    "--max-request-bytes": (int, wire.MAX_REQUEST_BYTES),
    "--tools": (str, None),
    "--search-engine": (str, "auto"),
    "--runtime": (str, None),
}


def _parse_args(argv: Sequence[str]) -> dict[str, Any]:
    """The options; flags.FlagError (one line) or flags.HelpWanted."""
    ns, _ = flags.parse(list(argv), _FLAGS)
    if not 0 < ns["output_limit"] <= MAX_OUTPUT_LIMIT:
        raise flags.FlagError(f"--output-limit must be in 1..{MAX_OUTPUT_LIMIT}")
    if ns["lifetime_s"] is not None and not ns["lifetime_s"] > 0:
        raise flags.FlagError("--lifetime-s must be > 0")
    if ns["max_request_bytes"] < 1024:
        raise flags.FlagError("--max-request-bytes must be >= 1024")
    if ns["search_engine"] not in ENGINES:
        raise flags.FlagError(f"--search-engine: {ns['search_engine']!r} is not one of {', '.join(ENGINES)}")
    return ns


def main(argv: Optional[Sequence[str]] = None) -> int:
    try:
        ns = _parse_args(sys.argv[1:] if argv is None else argv)
    except flags.HelpWanted:
        print(USAGE)
        return 0
    except flags.FlagError as exc:
        print(f"python3 -m sandbox.server: {exc}\n{USAGE.splitlines()[0]}", file=sys.stderr)
        return 2
    root = os.path.realpath(ns["root"])
    if not os.path.isdir(root):
        log(f"--root {ns['root']!r} is not a directory")
        return 2
    rg, rg_via = _ripgrep(ns["runtime"]) if ns["search_engine"] != "python" else (None, [])
    if ns["search_engine"] == "rg" and rg is None:
        log("--search-engine rg: rg is not on PATH")
        return 2
    reap_all = bool(ns["reap_all"])
    if reap_all and in_host_pid_namespace():
        log("--reap-all ignored: this is the host's pid namespace, not a container")
        reap_all = False

    wipe_tmp = bool(ns["wipe_tmp"])
    if wipe_tmp and not (reap_all and tmp_is_private_tmpfs()):
        log("--wipe-tmp ignored: not a container (with --reap-all) whose /tmp is a tmpfs of its own")
        wipe_tmp = False

    reader, out_fd = _take_stdio()
    ctx = Context(
        root=root,
        output_limit=ns["output_limit"],
        allow_shell=bool(ns["allow_shell"]),
        reap_all=reap_all,
        rg=rg,
        wipe_tmp=wipe_tmp,
        literal_in_python=ns["search_engine"] == "literal",
        rg_via=rg_via,
    )
    server = Server(
        ctx,
        reader,
        out_fd,
        max_request_bytes=ns["max_request_bytes"],
        subreaper=become_subreaper(),
        undumpable=set_undumpable(),
        tools=ns["tools"].split(",") if ns["tools"] else None,
    )

    def on_signal(signum: int, frame: Any) -> None:
        raise _Terminate(signum)

    lifetime_end = None if ns["lifetime_s"] is None else time.monotonic() + ns["lifetime_s"]

    def on_alarm(signum: int, frame: Any) -> None:
        # Our own --lifetime-s timer, or the host's alarm() armed before exec'ing us as a
        # last-resort cap (as PID 1 a SIGALRM without a handler would be ignored). Not in
        # the handler itself: expire() takes the lock the main thread may hold.
        why = "SIGALRM (lifetime cap)"
        if lifetime_end is not None and time.monotonic() >= lifetime_end - 0.05:
            why = f"lifetime of {ns['lifetime_s']:g} s reached"
        threading.Thread(target=server.expire, args=(why,), daemon=True).start()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    signal.signal(signal.SIGQUIT, on_signal)
    signal.signal(signal.SIGALRM, on_alarm)
    if ns["lifetime_s"] is not None:
        # A kernel timer, not a threading.Timer: an idle server holds no second thread (its
        # stack and malloc arena were about 1 MB of an idle sandbox).
        signal.setitimer(signal.ITIMER_REAL, ns["lifetime_s"])
    try:
        return server.serve()
    except _Terminate as t:
        log(f"signal {t.args[0]}: exiting")
        return wire.EXIT_SIGNAL
    finally:
        shutdown()


if __name__ == "__main__":
    sys.exit(main())
