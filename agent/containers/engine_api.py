"""A small Docker Engine API client (stdlib only) for the task start and run path.

Why not docker-py here: it loads requests, urllib3 and their kin (~80-100 ms of imports and
~11 MB of RSS) before a task's first tool result, for a dozen plain HTTP calls. This client
speaks HTTP/1.1 by hand over the daemon's socket: one short connection per request (a unix
connect costs microseconds), JSON in and out, and for ``attach`` the HTTP upgrade, after which
the raw socket (and any bytes already read past the response headers) belongs to the caller.

Where the daemon is: ``DOCKER_HOST`` (default ``unix:///var/run/docker.sock``), a unix socket
or ``tcp://host:port`` (plain HTTP; TLS with ``DOCKER_TLS_VERIFY``/``DOCKER_CERT_PATH``, the
``ssl`` module loaded only then). Nothing else: codebox bind-mounts folders of this machine
into its containers, so the daemon must run on this machine anyway (no ``ssh://``).

The API version is the daemon's own (``/_ping`` tells it; asked once per process and
endpoint), as docker-py's ``from_env()`` does. Errors are ours: ``NotFound`` (404),
``Conflict`` (409), ``EngineError`` (any other status, or a broken answer) with the daemon's
message, and ``DaemonDown`` (nothing answers) with the ``DOCKER_DOWN`` text.

Streams for the rarer paths, read as they arrive and never held whole unless asked: an image
build from a tar context and a pull (their JSON progress messages, each capped), an image load
from a file and a save, a container's files as a tar (``get_archive``), and ``exec`` (its
output demultiplexed into stdout and stderr frames). Environment builds, ``codebox image
build`` and the Ray node's image shipping use them; the task path never does.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from types import TracebackType
from typing import IO, Any, NamedTuple
from urllib.parse import quote, urlencode

from agent.errors import CodeboxError

DEFAULT_HOST = "unix:///var/run/docker.sock"
DEFAULT_TIMEOUT_S = 60.0
FALLBACK_VERSION = "1.41"  # a daemon whose ping names no version (older than any we support)
_MAX_HEAD = 64 * 1024
_RECV = 64 * 1024
MAX_MESSAGE = 1024 * 1024  # one JSON progress message of a build, pull or load (a log line inside it)
NO_TIMEOUT = float("inf")  # a stream that may be silent for minutes (a build step); its owner ends it

DOCKER_DOWN = (
    "Docker is not answering ({detail}). Start the daemon (e.g. `systemctl start docker` "
    "or `service docker start`) and check that this user can reach its socket "
    "(DOCKER_HOST, or membership in the `docker` group)."
)


class EngineError(CodeboxError):
    """The daemon refused a request (``status``) or answered in a way we cannot read."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class NotFound(EngineError):
    """404: no such container or image."""


class Conflict(EngineError):
    """409: e.g. a name in use, or a removal already in progress."""


class DaemonDown(EngineError):
    """Nothing answers at DOCKER_HOST (or DOCKER_HOST names a transport codebox cannot use)."""


class Endpoint(NamedTuple):
    """Where the daemon listens: a unix socket path, or host:port (with TLS settings)."""

    url: str
    unix_path: str | None = None
    host: str = ""
    port: int = 0
    tls: bool = False
    tls_verify: bool = False
    cert_path: str | None = None


def parse_docker_host(environ: Mapping[str, str] | None = None) -> Endpoint:
    """The endpoint DOCKER_HOST names; DaemonDown (one line) for a transport codebox cannot use."""
    env = os.environ if environ is None else environ
    url = (env.get("DOCKER_HOST") or "").strip() or DEFAULT_HOST
    scheme, sep, rest = url.partition("://")
    scheme = scheme.lower() if sep else ""
    if scheme == "unix":
        if not rest:
            raise DaemonDown(f"DOCKER_HOST={url} names no socket path (e.g. unix:///var/run/docker.sock)")
        return Endpoint(url=url, unix_path=rest)
    if scheme in ("tcp", "http", "https"):
        verify = (env.get("DOCKER_TLS_VERIFY") or "") not in ("", "0")
        cert_path = env.get("DOCKER_CERT_PATH") or None
        tls = scheme == "https" or verify or cert_path is not None
        hostport = rest.split("/", 1)[0]
        host, colon, port_text = hostport.rpartition(":")
        if not colon:
            host, port_text = hostport, ""
        host = host.strip("[]")
        try:
            port = int(port_text) if port_text else (2376 if tls else 2375)
        except ValueError:
            port = -1
        if not host or not 0 < port < 65536:
            raise DaemonDown(f"DOCKER_HOST={url} is not tcp://HOST:PORT")
        return Endpoint(url=url, host=host, port=port, tls=tls, tls_verify=verify, cert_path=cert_path)
    shown = f"{scheme}://" if scheme else "a bare address"
    raise DaemonDown(
        f"DOCKER_HOST={url}: {shown} is not supported; codebox needs the Docker daemon of this machine "
        "(it bind-mounts local folders into the sandbox): use unix:///var/run/docker.sock or tcp://HOST:PORT"
    )


class Response(NamedTuple):
    status: int
    headers: dict[str, str]  # names in lower case
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body) if self.body.strip() else None


# The API version of each endpoint (its url), from one ping per process.
_VERSIONS: dict[str, str] = {}
_VERSIONS_LOCK = threading.Lock()


class EngineClient:
    """One daemon endpoint. Thread-safe: every request opens its own connection."""

    def __init__(self, endpoint: Endpoint | None = None, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.endpoint = endpoint or parse_docker_host()
        self.timeout_s = timeout_s
        self._ssl_context: Any = None

    @classmethod
    def from_env(cls, timeout_s: float = DEFAULT_TIMEOUT_S) -> EngineClient:
        return cls(parse_docker_host(), timeout_s)

    def close(self) -> None:
        """Nothing to release (no connection outlives its request)."""

    # -- operations ------------------------------------------------------------------------------
    def ping(self) -> str:
        """Ask the daemon for its API version (always a round trip); remember it for this endpoint."""
        response = self._call("GET", "/_ping", versioned=False)
        version = response.headers.get("api-version") or FALLBACK_VERSION
        with _VERSIONS_LOCK:
            _VERSIONS[self.endpoint.url] = version
        return version

    @property
    def version(self) -> str:
        with _VERSIONS_LOCK:
            known = _VERSIONS.get(self.endpoint.url)
        return known or self.ping()

    def create_container(
        self, body: dict[str, Any], name: str | None = None, on_sent: Callable[[], None] | None = None
    ) -> str:
        """Create a container; its id. ``on_sent``: called once the request has left, before the
        daemon answers (`codebox run`'s early start lets its main thread go on then)."""
        query = {"name": name} if name else None
        created = self._call("POST", "/containers/create", query, body, on_sent=on_sent).json()
        return str(created["Id"])

    def attach(self, container_id: str) -> tuple[socket.socket, bytes]:
        """Attach to stdin, stdout and stderr (HTTP upgrade); the raw socket and the bytes of the
        stream that came with the response headers (hand both to the reader: none may be lost)."""
        path = f"/containers/{_q(container_id)}/attach"
        query = {"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1}
        sock, response, extra = self._exchange("POST", path, query, None, upgrade=True)
        if response.status not in (101, 200):
            sock.close()
            raise _error(response, f"attach to {container_id[:12]}")
        sock.settimeout(None)
        return sock, extra

    def start(self, container_id: str) -> None:
        self._call("POST", f"/containers/{_q(container_id)}/start")  # 304: already started, fine

    def remove(self, container_id: str, force: bool = True) -> None:
        """Remove (force: kill first). NotFound: already gone; Conflict: a removal is under way."""
        self._call("DELETE", f"/containers/{_q(container_id)}", {"force": 1 if force else 0})

    def wait(self, container_id: str, timeout_s: float) -> int:
        """Wait for the container to exit; its exit status."""
        answer = self._call("POST", f"/containers/{_q(container_id)}/wait", timeout_s=timeout_s).json()
        return int((answer or {}).get("StatusCode", -1))

    def info(self) -> dict[str, Any]:
        """The daemon's ``GET /info``: its runtimes (``Runtimes``), default runtime, version ..."""
        return dict(self._call("GET", "/info").json() or {})

    def inspect_container(self, container_id: str) -> dict[str, Any]:
        return dict(self._call("GET", f"/containers/{_q(container_id)}/json").json())

    def inspect_image(self, name: str) -> dict[str, Any]:
        return dict(self._call("GET", f"/images/{_q(name)}/json").json())

    def containers(self, all: bool = True, filters: dict[str, list[str]] | None = None) -> list[dict[str, Any]]:
        query: dict[str, Any] = {"all": 1 if all else 0}
        if filters:
            query["filters"] = json.dumps(filters)
        return list(self._call("GET", "/containers/json", query).json() or [])

    def events(self, since: str, until: str, filters: dict[str, list[str]] | None = None) -> list[dict[str, Any]]:
        """The events between ``since`` and ``until`` ("seconds.nanoseconds"); returns once
        ``until`` has passed (the daemon ends the stream then)."""
        query: dict[str, Any] = {"since": since, "until": until}
        if filters:
            query["filters"] = json.dumps(filters)
        body = self._call("GET", "/events", query).body
        decoder = json.JSONDecoder()
        found: list[dict[str, Any]] = []
        pos, text = 0, body.decode("utf-8", "replace")
        while True:
            while pos < len(text) and text[pos].isspace():
                pos += 1
            if pos >= len(text):
                return found
            event, pos = decoder.raw_decode(text, pos)
            found.append(event)

    def kill(self, container_id: str, signal: str = "KILL") -> None:
        self._call("POST", f"/containers/{_q(container_id)}/kill", {"signal": signal})

    def logs(self, container_id: str, stdout: bool = True, stderr: bool = False, limit: int = 16 << 20) -> bytes:
        """What a container (without a tty) wrote so far to the streams asked for, at most ``limit`` bytes
        (EngineError beyond: a log is never read whole into memory unbounded)."""
        kept = bytearray()
        with self._stream("GET", f"/containers/{_q(container_id)}/logs",
                          {"stdout": int(stdout), "stderr": int(stderr)}) as body:
            for _stream, data in frames(body):
                kept += data
                if len(kept) > limit:
                    raise EngineError(f"the log of {container_id[:12]} is over {limit} bytes")
        return bytes(kept)

    # -- exec and archives (environment builds) -----------------------------------------------------
    def exec_create(self, container_id: str, argv: list[str], user: str = "", env: Mapping[str, str] | None = None,
                    workdir: str = "") -> str:
        """An exec of ``argv`` in a running container (not started yet); its id."""
        body: dict[str, Any] = {"AttachStdin": False, "AttachStdout": True, "AttachStderr": True, "Tty": False,
                                "Cmd": list(argv), "Env": [f"{k}={v}" for k, v in (env or {}).items()]}
        if user:
            body["User"] = user
        if workdir:
            body["WorkingDir"] = workdir
        return str(self._call("POST", f"/containers/{_q(container_id)}/exec", body=body).json()["Id"])

    def exec_start(self, exec_id: str) -> Iterator[tuple[int, bytes]]:
        """Start an exec; its output as it comes, frame by frame: (1 stdout | 2 stderr, bytes). The stream
        ends when the process does (or its container goes); it has no timeout of its own."""
        sock, response, extra = self._exchange("POST", f"/exec/{_q(exec_id)}/start", None,
                                               {"Detach": False, "Tty": False}, upgrade=True, timeout_s=NO_TIMEOUT)
        if response.status not in (101, 200):
            sock.close()
            raise _error(response, f"start exec {exec_id[:12]}")
        return frames(_received(sock, extra))

    def exec_inspect(self, exec_id: str) -> dict[str, Any]:
        """The exec's state: ``ExitCode`` (None while it runs), ``Running``."""
        return dict(self._call("GET", f"/exec/{_q(exec_id)}/json").json() or {})

    def get_archive(self, container_id: str, path: str) -> Body:
        """The file or folder at ``path`` in the container, as a tar stream (NotFound: no such path)."""
        return self._stream("GET", f"/containers/{_q(container_id)}/archive", {"path": path})

    # -- images ---------------------------------------------------------------------------------------
    def load_image(self, archive: bytes | IO[bytes], timeout_s: float | None = None) -> list[str]:
        """``docker load`` of a tar (bytes, or a file from its position on); the engine's lines ("Loaded
        image: ..."). EngineError with the engine's words when it refuses the archive."""
        with self._stream("POST", "/images/load", {"quiet": 1}, raw=archive, timeout_s=timeout_s) as body:
            return [str(m.get("stream", "")).strip() for m in messages(body, "image load")]

    def save_image(self, name: str, timeout_s: float | None = None) -> Body:
        """``docker save`` of one image (its tags, when ``name`` is a tag) as a tar stream."""
        return self._stream("GET", f"/images/{_q(name)}/get", timeout_s=timeout_s)

    def disk_usage(self) -> dict[str, Any]:
        """``docker system df -v``: each image's ``Size``, ``SharedSize`` ... (``Images``), containers, volumes."""
        return dict(self._call("GET", "/system/df", timeout_s=max(self.timeout_s, 600.0)).json() or {})

    def images(self, filters: dict[str, list[str]] | None = None) -> list[dict[str, Any]]:
        """The engine's images (``docker images``), those ``filters`` select (e.g. {"label": ["k=v"]})."""
        query = {"filters": json.dumps(filters)} if filters else None
        return list(self._call("GET", "/images/json", query).json() or [])

    def remove_image(self, name: str, force: bool = False, timeout_s: float | None = None) -> None:
        """Remove an image (untag it, and delete it when nothing else names it). NotFound: not there;
        Conflict: a container or a child image uses it (and not ``force``)."""
        self._call("DELETE", f"/images/{_q(name)}", {"force": 1 if force else 0}, timeout_s=timeout_s)

    def tag_image(self, name: str, repository: str, tag: str = "latest") -> None:
        self._call("POST", f"/images/{_q(name)}/tag", {"repo": repository, "tag": tag})

    def build(self, context: bytes | IO[bytes], query: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
        """``docker build`` of a tar context: its progress messages as they come (a build's ``error``
        message is EngineError). ``query``: the build's options (t, dockerfile, buildargs, networkmode ...)."""
        options = {k: json.dumps(v) if isinstance(v, dict) else v for k, v in query.items()}
        with self._stream("POST", "/build", options, raw=context, timeout_s=NO_TIMEOUT) as body:
            yield from messages(body, "build")

    def pull(self, image: str, tag: str) -> Iterator[dict[str, Any]]:
        """Pull ``image:tag`` from its registry: the progress messages (an ``error`` one is EngineError)."""
        with self._stream("POST", "/images/create", {"fromImage": image, "tag": tag}, timeout_s=NO_TIMEOUT) as body:
            yield from messages(body, f"pull of {image}:{tag}")

    # -- HTTP --------------------------------------------------------------------------------------
    def _call(
        self,
        method: str,
        path: str,
        query: Mapping[str, Any] | None = None,
        body: Any = None,
        timeout_s: float | None = None,
        versioned: bool = True,
        on_sent: Callable[[], None] | None = None,
    ) -> Response:
        sock, response, _extra = self._exchange(
            method, path, query, body, timeout_s=timeout_s, versioned=versioned, on_sent=on_sent)
        sock.close()
        if response.status >= 400:
            raise _error(response, f"{method} {path}")
        return response

    def _stream(self, method: str, path: str, query: Mapping[str, Any] | None = None,
                raw: bytes | IO[bytes] | None = None, timeout_s: float | None = None) -> Body:
        """A request whose answer is read as it arrives (an error status raises here, its body read)."""
        sock, response, rest = self._exchange(method, path, query, None, timeout_s=timeout_s, raw=raw, stream=True)
        if response.status >= 400:
            try:
                error = _error(response._replace(body=_read_body(sock, method, response.status, response.headers,
                                                                 rest)), f"{method} {path}")
            except EngineError as exc:
                error = exc
            finally:
                sock.close()
            raise error
        return Body(sock, response.headers, rest, f"{method} {path}")

    def _exchange(
        self,
        method: str,
        path: str,
        query: Mapping[str, Any] | None,
        body: Any,
        upgrade: bool = False,
        timeout_s: float | None = None,
        versioned: bool = True,
        on_sent: Callable[[], None] | None = None,
        raw: bytes | IO[bytes] | None = None,
        stream: bool = False,
    ) -> tuple[socket.socket, Response, bytes]:
        """Send one request; the open socket, the response (its body read unless it upgraded or
        ``stream``), and the bytes read past the headers of an upgraded or streamed response.
        ``raw``: a tar sent as it is instead of ``body``'s JSON (a file: from its position to its
        end, by sendfile). ``on_sent``: called when the request has been written."""
        target = (f"/v{self.version}" if versioned else "") + path
        if query:
            target += "?" + urlencode(query, doseq=True)
        data = b"" if body is None else json.dumps(body, separators=(",", ":")).encode()
        head = [f"{method} {target} HTTP/1.1", "Host: docker", "User-Agent: codebox"]
        if raw is not None:
            head += ["Content-Type: application/x-tar", f"Content-Length: {_size(raw)}"]
        elif body is not None:
            head.append("Content-Type: application/json")
        if raw is None and (body is not None or method in ("POST", "PUT")):
            head.append(f"Content-Length: {len(data)}")
        head += ["Connection: Upgrade", "Upgrade: tcp"] if upgrade else ["Connection: close"]
        sock = self._connect(self.timeout_s if timeout_s is None else timeout_s)
        try:
            sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + data)
            if isinstance(raw, bytes):
                sock.sendall(raw)
            elif raw is not None:
                sock.sendfile(raw, offset=raw.tell())  # sendfile starts at 0 unless told
            if on_sent is not None:
                on_sent()
            status, headers, rest = _read_head(sock)
            if (upgrade and status in (101, 200)) or stream:
                return sock, Response(status, headers, b""), rest
            return sock, Response(status, headers, _read_body(sock, method, status, headers, rest)), b""
        except TimeoutError as exc:
            sock.close()
            raise EngineError(f"Docker did not answer {method} {path} in time ({exc})") from exc
        except OSError as exc:
            sock.close()
            raise EngineError(f"the connection to Docker failed during {method} {path}: {exc}") from exc
        except BaseException:
            sock.close()
            raise

    def _connect(self, timeout_s: float) -> socket.socket:
        ep = self.endpoint
        sock: socket.socket | None = None
        try:
            connecting = min(timeout_s, DEFAULT_TIMEOUT_S)  # a stream with no timeout still connects in time
            if ep.unix_path is not None:
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                sock.settimeout(connecting)
                sock.connect(ep.unix_path)
            else:
                sock = socket.create_connection((ep.host, ep.port), timeout=connecting)
                if ep.tls:
                    sock = self._tls().wrap_socket(sock, server_hostname=ep.host)
            if timeout_s != connecting:
                sock.settimeout(None if timeout_s == NO_TIMEOUT else timeout_s)
            return sock
        except OSError as exc:
            if sock is not None:
                sock.close()
            detail = exc.strerror or str(exc) or type(exc).__name__
            raise DaemonDown(DOCKER_DOWN.format(detail=f"cannot connect to {ep.url}: {detail}")) from exc

    def _tls(self) -> Any:
        """The TLS context of a tcp endpoint (ca.pem, cert.pem, key.pem in DOCKER_CERT_PATH)."""
        if self._ssl_context is None:
            import ssl  # only for a TLS endpoint: unix and plain tcp never load it

            ep = self.endpoint
            folder = Path(ep.cert_path or Path.home() / ".docker")
            ca = folder / "ca.pem"
            if ep.tls_verify:
                context = ssl.create_default_context(cafile=str(ca) if ca.is_file() else None)
            else:
                context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
                context.check_hostname = False
                context.verify_mode = ssl.CERT_NONE
            cert, key = folder / "cert.pem", folder / "key.pem"
            if cert.is_file() and key.is_file():
                context.load_cert_chain(str(cert), str(key))
            self._ssl_context = context
        return self._ssl_context


def _q(part: str) -> str:
    return quote(part, safe="/:@")


def _read_head(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """Status, headers (lower-case names) and whatever came after the blank line."""
    buf = b""
    while True:
        end = buf.find(b"\r\n\r\n")
        if end >= 0:
            break
        if len(buf) > _MAX_HEAD:
            raise EngineError("Docker sent response headers larger than 64 KiB")
        chunk = sock.recv(_RECV)
        if not chunk:
            raise EngineError("Docker closed the connection before it answered")
        buf += chunk
    lines = buf[:end].decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
        raise EngineError(f"Docker answered something that is not HTTP: {lines[0][:100]!r}")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(parts[1]), headers, buf[end + 4 :]


def _read_body(sock: socket.socket, method: str, status: int, headers: dict[str, str], rest: bytes) -> bytes:
    if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
        return b""
    return b"".join(_body_chunks(sock, headers, rest))


def _body_chunks(sock: socket.socket, headers: dict[str, str], rest: bytes) -> Iterator[bytes]:
    """A response body's bytes as they arrive: chunked, of a length, or up to the connection's end."""
    if "chunked" in headers.get("transfer-encoding", "").lower():
        yield from _chunked(sock, rest)
        return
    length = headers.get("content-length")
    if length is not None and length.isdigit():
        left = int(length)
        if rest:
            yield rest[:left]
            left -= min(left, len(rest))
        while left > 0:
            chunk = sock.recv(min(_RECV, left))
            if not chunk:
                raise EngineError("Docker closed the connection in the middle of an answer")
            left -= len(chunk)
            yield chunk
        return
    yield from _received(sock, rest)  # no length: the body ends with the connection (we asked for Connection: close)


def _received(sock: socket.socket, first: bytes = b"") -> Iterator[bytes]:
    """What arrives on ``sock`` until the peer closes it (``first``: bytes read already)."""
    if first:
        yield first
    while chunk := sock.recv(_RECV):
        yield chunk


def _chunked(sock: socket.socket, buf: bytes) -> Iterator[bytes]:
    pos = 0

    def fill(need: int) -> None:
        nonlocal buf
        while len(buf) - pos < need:
            chunk = sock.recv(_RECV)
            if not chunk:
                raise EngineError("Docker closed the connection in the middle of an answer")
            buf += chunk

    while True:
        while buf.find(b"\r\n", pos) < 0:
            fill(len(buf) - pos + 1)
        line_end = buf.find(b"\r\n", pos)
        size_text = buf[pos:line_end].split(b";", 1)[0].strip()
        try:
            size = int(size_text, 16)
        except ValueError:
            raise EngineError(f"Docker sent a broken chunk size {size_text[:20]!r}") from None
        pos = line_end + 2
        if size == 0:
            return  # trailers, if any, are not read: the connection closes
        fill(size + 2)
        yield buf[pos : pos + size]
        pos += size + 2
        if pos > _RECV:  # keep the buffer small on a long stream
            buf, pos = buf[pos:], 0


class Body:
    """A response body read as it arrives (iterate it once); closing it closes the connection.
    A context manager."""

    def __init__(self, sock: socket.socket, headers: dict[str, str], rest: bytes, what: str) -> None:
        self._sock = sock
        self._chunks = _body_chunks(sock, headers, rest)
        self.what = what

    def __iter__(self) -> Iterator[bytes]:
        try:
            yield from self._chunks
        except TimeoutError as exc:
            raise EngineError(f"Docker stopped answering {self.what} ({exc})") from exc
        except OSError as exc:
            raise EngineError(f"the connection to Docker failed during {self.what}: {exc}") from exc

    def close(self) -> None:
        self._sock.close()

    def __enter__(self) -> Body:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


def frames(chunks: Iterable[bytes]) -> Iterator[tuple[int, bytes]]:
    """Demultiplex a stream of a container without a tty: every frame is an 8-byte header
    ``[stream, 0, 0, 0, size (uint32, big endian)]`` and its payload; (stream, payload) each."""
    buf = b""
    for chunk in chunks:
        buf += chunk
        while len(buf) >= 8:
            size = int.from_bytes(buf[4:8], "big")
            if len(buf) < 8 + size:
                break
            yield buf[0], buf[8 : 8 + size]
            buf = buf[8 + size :]


def messages(chunks: Iterable[bytes], what: str, limit: int = MAX_MESSAGE) -> Iterator[dict[str, Any]]:
    """The JSON messages of a build, pull or load stream, one by one; EngineError for an ``error``
    message (the engine's words), a message over ``limit`` bytes, or one that is not JSON."""
    decoder = json.JSONDecoder()
    pending = ""
    for chunk in chunks:
        pending += chunk.decode("utf-8", "replace")
        while True:
            text = pending.lstrip()
            if not text:
                pending = ""
                break
            try:
                message, end = decoder.raw_decode(text)
            except ValueError:
                if len(text) > limit:
                    raise EngineError(f"Docker sent a message over {limit} bytes during the {what}") from None
                pending = text
                break
            pending = text[end:]
            if not isinstance(message, dict):
                raise EngineError(f"Docker sent something that is not a message during the {what}: {text[:100]!r}")
            if message.get("error") or message.get("errorDetail"):
                detail = (message.get("errorDetail") or {}).get("message") or message.get("error")
                raise EngineError(f"the {what} failed: {str(detail).strip()}")
            yield message
    if pending.strip():
        raise EngineError(f"Docker ended the {what} in the middle of a message: {pending.strip()[:100]!r}")


def _size(data: bytes | IO[bytes]) -> int:
    """The bytes a raw body sends: all of ``bytes``; a file's from its position to its end."""
    if isinstance(data, bytes):
        return len(data)
    here = data.tell()
    end = data.seek(0, os.SEEK_END)
    data.seek(here)
    return end - here


def _error(response: Response, what: str) -> EngineError:
    """The exception for an error status, with the daemon's own message."""
    message = ""
    try:
        decoded = response.json()
        if isinstance(decoded, dict):
            message = str(decoded.get("message") or "")
    except ValueError:
        pass
    message = message or response.body.decode("utf-8", "replace").strip()[:500] or f"{what}: HTTP {response.status}"
    kind = {404: NotFound, 409: Conflict}.get(response.status, EngineError)
    return kind(message, response.status)


def connect_engine(error: type[CodeboxError] = CodeboxError, timeout_s: float = DEFAULT_TIMEOUT_S) -> EngineClient:
    """A client of the daemon at DOCKER_HOST that has answered (once per process); else ``error``
    with what to do (the DOCKER_DOWN text, or why DOCKER_HOST cannot be used)."""
    try:
        client = EngineClient(parse_docker_host(), timeout_s)
        client.version  # noqa: B018 -- the first use in this process pings
    except EngineError as exc:
        raise error(str(exc)) from exc
    return client


def oom_killed_since(client: EngineClient, container_id: str, since_wall: float, until_wall: float | None = None,
                     ) -> bool:
    """Did the kernel OOM-kill a process of this container between the two times (time.time(); until: now)?

    Docker 20.10 sets State.OOMKilled only when the container's main process is the victim;
    a killed test child shows only as an ``oom`` event. Ask for both.
    """
    try:
        filters = {"container": [container_id], "event": ["oom"]}
        until = time.time() if until_wall is None else until_wall
        if client.events(f"{since_wall - 0.05:.9f}", f"{until + 0.05:.9f}", filters):
            return True
    except (EngineError, ValueError):
        pass
    try:
        state = client.inspect_container(container_id).get("State") or {}
    except EngineError:
        return False  # already removed (auto_remove)
    return bool(state.get("OOMKilled"))
