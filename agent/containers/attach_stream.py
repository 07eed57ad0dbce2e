"""Host side of a docker attach stream: demultiplex frames, read capped lines with a deadline.

With ``tty=False`` the daemon multiplexes the container's stdout and stderr on
the attach connection: every chunk is preceded by an 8-byte header
``[stream, 0, 0, 0, size (uint32, big endian)]`` (stream 1 = stdout, 2 = stderr).
Whatever the container writes to stdin is not echoed back.

``AttachStream`` owns the raw socket of an upgraded attach request
(``engine_api.EngineClient.attach``), plus the stream bytes that arrived with the
response headers: they are parsed first, so nothing the container wrote is lost.
It is used by one reader thread at a time (the client serialises calls);
``shutdown()`` may be called from any thread and wakes a blocked reader, which
then sees ``StreamClosed``.
"""

from __future__ import annotations

import contextlib
import select
import socket
import threading
import time
from collections import deque

STDIN, STDOUT, STDERR = 0, 1, 2
HEADER_SIZE = 8
RECV_SIZE = 256 * 1024


class StreamError(Exception):
    """Base class of the stream failures."""


class StreamClosed(StreamError):
    """The connection closed: the container exited, was killed, or the stream was shut down."""


class StreamDeadline(StreamError):
    """No complete line arrived before the deadline."""


class LineTooLong(StreamError):
    """The container sent a line longer than the cap (nothing past the cap is kept)."""


class AttachStream:
    """Line-oriented, capped, deadline-aware reader/writer over one docker attach socket."""

    def __init__(self, sock: socket.socket, max_line: int, pre_read: bytes = b"", stderr_keep: int = 16 * 1024) -> None:
        self._sock = sock
        self._pending = bytes(pre_read)  # stream bytes read with the HTTP response headers
        self._max_line = max_line
        self._stderr_keep = stderr_keep
        self._buf = bytearray()  # frame bytes not yet parsed
        self._frame_stream = 0
        self._frame_left = 0  # payload bytes still to come in the current frame
        self._partial = bytearray()  # stdout bytes after the last newline
        self._lines: deque[bytes] = deque()
        self._stderr = bytearray()
        self._eof = False
        self._shut = False
        self._lock = threading.Lock()
        self.bytes_read = 0

    # -- writing -------------------------------------------------------------
    def send(self, data: bytes, deadline: float) -> None:
        """Write ``data`` to the container's stdin, giving up at ``deadline`` (monotonic)."""
        view = memoryview(data)
        while view:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise StreamDeadline("timed out writing the request to the sandbox")
            try:
                self._sock.settimeout(remaining)
                sent = self._sock.send(view)
            except TimeoutError as exc:
                raise StreamDeadline("timed out writing the request to the sandbox") from exc
            except OSError as exc:
                raise StreamClosed(f"the sandbox stream closed while writing: {exc}") from exc
            if sent == 0:
                raise StreamClosed("the sandbox stream closed while writing")
            view = view[sent:]

    # -- reading -------------------------------------------------------------
    def read_line(self, deadline: float) -> bytes:
        """The next complete stdout line (without the newline).

        Raises StreamDeadline, StreamClosed or LineTooLong; after LineTooLong the
        stream is unusable (the rest of the line is not read): kill the container.
        """
        self._take_pending()
        while not self._lines:
            if self._eof:
                raise StreamClosed("the sandbox closed its output stream")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise StreamDeadline("no answer from the sandbox before the deadline")
            try:
                self._sock.settimeout(remaining)
                chunk = self._sock.recv(RECV_SIZE)
            except TimeoutError as exc:
                raise StreamDeadline("no answer from the sandbox before the deadline") from exc
            except OSError as exc:
                self._eof = True
                raise StreamClosed(f"the sandbox stream failed: {exc}") from exc
            if not chunk:
                self._eof = True
                continue
            self.bytes_read += len(chunk)
            self._feed(chunk)
        return self._lines.popleft()

    def idle_ok(self) -> bool:
        """Between calls: True when the stream is open and holds no unexpected output.

        A closed stream (the container exited or was killed while idle) or a stray
        stdout line (the protocol is out of step) means the container must be replaced.
        Costs one non-blocking poll when nothing is pending.
        """
        try:
            self._take_pending()
        except LineTooLong:
            return False
        if self._eof or self._shut or self._lines or self._partial:
            return False
        while True:
            try:
                readable, _, _ = select.select([self._sock], [], [], 0)
            except (OSError, ValueError):
                return False
            pending = getattr(self._sock, "pending", None)  # a TLS socket may hold decrypted bytes
            if not readable and not (callable(pending) and pending() > 0):
                return True
            try:
                self._sock.settimeout(0.5)
                chunk = self._sock.recv(RECV_SIZE)
            except OSError:
                return False
            if not chunk:
                self._eof = True
                return False
            try:
                self._feed(chunk)
            except LineTooLong:
                return False
            if self._lines or self._partial:
                return False

    def _take_pending(self) -> None:
        if self._pending:
            data, self._pending = self._pending, b""
            self.bytes_read += len(data)
            self._feed(data)

    def _feed(self, chunk: bytes) -> None:
        self._buf += chunk
        pos = 0
        n = len(self._buf)
        while pos < n:
            if self._frame_left == 0:
                if n - pos < HEADER_SIZE:
                    break
                self._frame_stream = self._buf[pos]
                self._frame_left = int.from_bytes(self._buf[pos + 4 : pos + 8], "big")
                pos += HEADER_SIZE
                continue
            take = min(self._frame_left, n - pos)
            payload = bytes(self._buf[pos : pos + take])
            pos += take
            self._frame_left -= take
            if self._frame_stream == STDERR:
                self._add_stderr(payload)
            else:  # STDOUT (a stray stdin frame is treated as output, never happens)
                self._add_stdout(payload)
        del self._buf[:pos]

    def _add_stdout(self, payload: bytes) -> None:
        start = 0
        while True:
            nl = payload.find(b"\n", start)
            if nl < 0:
                break
            piece = payload[start:nl]
            if len(self._partial) + len(piece) > self._max_line:
                raise LineTooLong(f"the sandbox sent a line longer than {self._max_line} bytes")
            self._partial += piece
            self._lines.append(bytes(self._partial))
            self._partial.clear()
            start = nl + 1
        rest = payload[start:]
        if len(self._partial) + len(rest) > self._max_line:
            raise LineTooLong(f"the sandbox sent a line longer than {self._max_line} bytes")
        self._partial += rest

    def _add_stderr(self, payload: bytes) -> None:
        self._stderr += payload
        if len(self._stderr) > self._stderr_keep:
            del self._stderr[: len(self._stderr) - self._stderr_keep]

    def stderr_tail(self, limit: int = 2000) -> str:
        """The last bytes the container wrote to stderr (bounded), decoded leniently."""
        return bytes(self._stderr[-limit:]).decode("utf-8", "replace").strip()

    def drain_stderr(self, wait_s: float = 0.2) -> None:
        """After the stream closed or failed: read what is left (bounded) so stderr_tail is complete."""
        deadline = time.monotonic() + wait_s
        with contextlib.suppress(LineTooLong):
            self._take_pending()
        while not self._eof and time.monotonic() < deadline:
            try:
                self._sock.settimeout(max(0.001, deadline - time.monotonic()))
                chunk = self._sock.recv(RECV_SIZE)
            except OSError:
                return
            if not chunk:
                return
            self._lines.clear()
            self._partial.clear()
            try:
                self._feed(chunk)
            except LineTooLong:
                self._partial.clear()

    # -- closing -------------------------------------------------------------
    def shutdown(self) -> None:
        """Close both directions; safe from any thread and idempotent.

        The container sees EOF on stdin (its server exits); a reader blocked in
        ``read_line`` wakes up with StreamClosed.
        """
        with self._lock:
            if self._shut:
                return
            self._shut = True
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        """Shut down and release the socket (call from the thread that reads, or when no one reads)."""
        self.shutdown()
        with contextlib.suppress(OSError):
            self._sock.close()
