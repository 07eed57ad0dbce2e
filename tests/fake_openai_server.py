"""An OpenAI-compatible HTTP server for tests: scripted replies, every request recorded.

It runs a stdlib ``ThreadingHTTPServer`` on 127.0.0.1 (port 0) in a thread. Each POST
(``/v1/chat/completions``, ``/v1/responses``, anything) takes the next reply from a queue;
``GET /v1/models`` lists one model. Use it with the real ``openai`` SDK::

    with FakeOpenAIServer([chat_reply(tool_calls=[("search", {"query": "x"})]),
                           chat_reply("done")]) as server:
        client = OpenAIChatClient(OpenAIConfig(model="m", base_url=server.url))
        ...
        assert server.requests[0].json["model"] == "m"

A reply is a ``Reply`` (JSON body, status, headers, optional delay before answering), or a
callable ``(RecordedRequest) -> Reply`` for replies that depend on the request. When the
queue is empty the server answers with ``default`` if given, otherwise with a 400 error
that says the script ran out (400 is not retried by the client, so a test fails fast).

A request with ``stream: true`` gets a scripted chat.completion as a stream of chunks; a
``stream_reply`` is a stream as written (chunks split anywhere, cut in the middle).
``behaviour`` makes the server as strict and slow as a real one (``LLAMA_CPP_PYTHON``, see
``fake_openai_behaviour``): chat requests are checked before any scripted reply is used, and a
streamed request with tools to a server that cannot stream them is refused as that server does.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

from tests.fake_openai_behaviour import (
    LENIENT,
    NO_STREAMING_WITH_TOOLS,
    PROSE_WITHOUT_TOOLS,
    ServerBehaviour,
    cannot_stream,
    completion_chunks,
    forge_usage,
    generate,
    ignores_tools,
    requested_max_tokens,
    sse,
    validation_message,
    validation_problems,
)

FAKE_MODEL = "fake-model"


@dataclass
class Reply:
    """One scripted answer. ``body``: a dict/list is sent as JSON, str/bytes as they are."""

    body: Any = None
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0  # sleep before answering (longer than the client timeout: a timeout)
    # A stream: these chunks as server-sent events (dicts as JSON, str as they are), whatever the
    # request asked for; then ``data: [DONE]``. ``cut``: stop after ``cut_after`` chunks, "reset"
    # (close the connection in the middle of the body) or "eof" (end the body properly, early).
    stream: list[dict[str, Any] | str] | None = None
    chunk_delay_s: float = 0.0
    cut: Literal["reset", "eof"] | None = None
    cut_after: int = 0


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]  # as received; use header() for a case-insensitive lookup
    body: bytes
    time: float

    @property
    def json(self) -> Any:
        return json.loads(self.body) if self.body else None

    def header(self, name: str) -> str | None:
        lname = name.lower()
        for key, value in self.headers.items():
            if key.lower() == lname:
                return value
        return None


ReplySource = Reply | Callable[[RecordedRequest], Reply]

# --- reply builders ------------------------------------------------------------------------------

ToolCallSpec = tuple[str, Any] | tuple[str, Any, str]


def tool_call_dict(name: str, arguments: Any, call_id: str | None = None, index: int = 0) -> dict[str, Any]:
    """A Chat Completions tool call. ``arguments``: a dict (sent as a JSON string) or a str
    sent exactly (for bad JSON, a list, double-encoded strings...). ``call_id`` None → call_<index>."""
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {
        "id": call_id if call_id is not None else f"call_{index}",
        "type": "function",
        "function": {"name": name, "arguments": args},
    }


def usage_dict(prompt_tokens: int = 10, completion_tokens: int = 5) -> dict[str, int]:
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }


def chat_completion(
    text: str | None = None,
    tool_calls: Sequence[ToolCallSpec | dict[str, Any]] | None = None,
    finish_reason: str | None = None,
    usage: tuple[int, int] | dict[str, Any] | None = (10, 5),
    model: str = FAKE_MODEL,
) -> dict[str, Any]:
    """A chat.completion body. ``tool_calls`` items: ``(name, args)``, ``(name, args, id)`` or a
    full dict. ``finish_reason`` None → "tool_calls" when there are calls, else "stop"."""
    calls: list[dict[str, Any]] = []
    for i, spec in enumerate(tool_calls or []):
        if isinstance(spec, dict):
            calls.append(spec)
        elif len(spec) == 3:
            calls.append(tool_call_dict(spec[0], spec[1], spec[2], index=i))
        else:
            calls.append(tool_call_dict(spec[0], spec[1], index=i))
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = calls
    body: dict[str, Any] = {
        "id": f"chatcmpl-fake-{time.monotonic_ns()}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": finish_reason or ("tool_calls" if calls else "stop"),
            }
        ],
    }
    if isinstance(usage, tuple):
        body["usage"] = usage_dict(*usage)
    elif usage is not None:
        body["usage"] = usage
    return body


def chat_reply(
    text: str | None = None,
    tool_calls: Sequence[ToolCallSpec | dict[str, Any]] | None = None,
    finish_reason: str | None = None,
    usage: tuple[int, int] | dict[str, Any] | None = (10, 5),
    *,
    headers: Mapping[str, str] | None = None,
    delay_s: float = 0.0,
) -> Reply:
    """A 200 reply with a chat.completion body (see chat_completion)."""
    return Reply(
        body=chat_completion(text, tool_calls, finish_reason, usage),
        headers=dict(headers or {}),
        delay_s=delay_s,
    )


def error_reply(
    status: int,
    message: str = "scripted error",
    *,
    headers: Mapping[str, str] | None = None,
    error_type: str | None = None,
    code: str | None = None,
) -> Reply:
    """An error in OpenAI's shape: ``{"error": {"message", "type", "param", "code"}}``."""
    body = {
        "error": {
            "message": message,
            "type": error_type or ("server_error" if status >= 500 else "invalid_request_error"),
            "param": None,
            "code": code,
        }
    }
    return Reply(body=body, status=status, headers=dict(headers or {}))


def stream_reply(
    chunks: Sequence[dict[str, Any] | str],
    *,
    chunk_delay_s: float = 0.0,
    cut: Literal["reset", "eof"] | None = None,
    cut_after: int = 0,
) -> Reply:
    """A streamed reply made of exactly these chunks (see ``completion_chunks`` for a whole reply)."""
    return Reply(stream=list(chunks), chunk_delay_s=chunk_delay_s, cut=cut, cut_after=cut_after)


def timeout_reply(delay_s: float, then: Reply | None = None) -> Reply:
    """Answer only after ``delay_s`` (make it longer than the client's timeout)."""
    reply = then or chat_reply("too late")
    return Reply(body=reply.body, status=reply.status, headers=dict(reply.headers), delay_s=delay_s)


def responses_reply(
    text: str | None = None,
    tool_calls: Sequence[ToolCallSpec] | None = None,
    status: str = "completed",
    incomplete_reason: str | None = None,
    usage: tuple[int, int] | None = (10, 5),
    model: str = FAKE_MODEL,
) -> Reply:
    """A 200 reply with a Responses API ``response`` body: an output message and function calls."""
    output: list[dict[str, Any]] = []
    if text is not None:
        output.append(
            {
                "type": "message",
                "id": "msg_fake",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        )
    for i, spec in enumerate(tool_calls or []):
        args = spec[1] if isinstance(spec[1], str) else json.dumps(spec[1])
        call_id = spec[2] if len(spec) == 3 else f"call_{i}"
        output.append(
            {
                "type": "function_call",
                "id": f"fc_{i}",
                "call_id": call_id,
                "name": spec[0],
                "arguments": args,
                "status": "completed",
            }
        )
    body: dict[str, Any] = {
        "id": f"resp_fake_{time.monotonic_ns()}",
        "object": "response",
        "created_at": int(time.time()),
        "model": model,
        "status": status,
        "incomplete_details": {"reason": incomplete_reason} if incomplete_reason else None,
        "output": output,
    }
    if usage is not None:
        body["usage"] = {
            "input_tokens": usage[0],
            "output_tokens": usage[1],
            "total_tokens": usage[0] + usage[1],
        }
    return Reply(body=body)


# --- the server ----------------------------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    server: _HTTPServer
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # a chunk a token: no small write may wait for an ACK

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        self._record(b"")
        if self.path.rstrip("/").endswith("/models"):
            model = {"id": FAKE_MODEL, "object": "model", "created": 0, "owned_by": "fake"}
            self._send(Reply(body={"object": "list", "data": [model]}))
        else:
            self._send(Reply(body={"error": {"message": f"no route {self.path}"}}, status=404))

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        request = self._record(self.rfile.read(length) if length else b"")
        owner = self.server.owner
        reply = owner._reply_for(request)
        try:
            body = request.json
        except ValueError:
            body = None
        streamed = isinstance(body, dict) and bool(body.get("stream"))
        generation_s = 0.0
        if _is_completion(reply):  # the model "generates" it: max_tokens and slow generation apply
            completion, tokens = generate(reply.body, requested_max_tokens(body))
            completion = forge_usage(completion, owner.behaviour)
            reply = Reply(body=completion, headers=reply.headers, delay_s=reply.delay_s)
            generation_s = tokens * owner.behaviour.seconds_per_token
            if streamed:
                options = body.get("stream_options") if isinstance(body, dict) else None
                usage = isinstance(options, dict) and bool(options.get("include_usage"))
                chunks: list[dict[str, Any] | str] = list(completion_chunks(completion, usage))
                reply = Reply(stream=chunks, headers=reply.headers, delay_s=reply.delay_s,
                              chunk_delay_s=owner.behaviour.seconds_per_token)
                generation_s = 0.0
        if reply.delay_s + generation_s and owner._closing.wait(reply.delay_s + generation_s):
            return
        if reply.stream is not None:
            self._send_stream(reply)
        else:
            self._send(reply)

    def _record(self, body: bytes) -> RecordedRequest:
        request = RecordedRequest(
            method=self.command,
            path=self.path,
            headers=dict(self.headers.items()),
            body=body,
            time=time.monotonic(),
        )
        self.server.owner._add_request(request)
        return request

    def _send(self, reply: Reply) -> None:
        if isinstance(reply.body, bytes | str):
            data = reply.body.encode() if isinstance(reply.body, str) else reply.body
            content_type = "text/plain"
        else:
            data = json.dumps(reply.body).encode()
            content_type = "application/json"
        try:
            self.send_response(reply.status)
            headers = {"Content-Type": content_type, **reply.headers}
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout)
            pass


    def _send_stream(self, reply: Reply) -> None:
        """Server-sent events, one HTTP chunk each; a cut reply stops where it was told to."""
        chunks = list(reply.stream or [])
        try:
            self.send_response(reply.status)
            for key, value in {"Content-Type": "text/event-stream", **reply.headers}.items():
                self.send_header(key, value)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            started, made = time.monotonic(), 0
            for number, chunk in enumerate(chunks, start=1):
                if number > 1 and _carries_output(chunk):  # the role, finish and usage chunks cost nothing
                    made += 1
                    # Against the clock, not a sleep per chunk: late wake-ups on a busy machine do not add up.
                    due = started + made * reply.chunk_delay_s - time.monotonic()
                    if due > 0 and self.server.owner._closing.wait(due):
                        return
                self._chunk(sse(chunk))
                if reply.cut is not None and number >= reply.cut_after:
                    break
            if reply.cut == "reset":
                self.close_connection = True  # the socket closes with the body unfinished
                return
            if reply.cut is None:
                self._chunk(sse("[DONE]"))
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (hung up mid-stream)
            self.close_connection = True
            self.server.owner.hangups += 1

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


def _carries_output(chunk: dict[str, Any] | str) -> bool:
    if not isinstance(chunk, dict):
        return True
    choices = chunk.get("choices") or [{}]
    delta = choices[0].get("delta") or {} if isinstance(choices[0], dict) else {}
    return bool(delta.get("content") or delta.get("tool_calls"))


def _is_completion(reply: Reply) -> bool:
    body = reply.body
    return (reply.status == 200 and reply.stream is None and isinstance(body, dict)
            and body.get("object") == "chat.completion" and bool(body.get("choices")))


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    owner: FakeOpenAIServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away (a timeout, a dropped SDK client) is no error of the server's."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class FakeOpenAIServer:
    """Scripted OpenAI-compatible server on 127.0.0.1. ``url`` ends in ``/v1`` (the SDK's base_url)."""

    def __init__(
        self,
        replies: Iterable[ReplySource] = (),
        default: ReplySource | None = None,
        behaviour: ServerBehaviour = LENIENT,
    ) -> None:
        self._replies: deque[ReplySource] = deque(replies)
        self.default = default
        self.behaviour = behaviour
        self.hangups = 0  # streams the client closed before their end
        self.requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- script --------------------------------------------------------------------------------

    def add(self, *replies: ReplySource) -> None:
        with self._lock:
            self._replies.extend(replies)

    @property
    def remaining(self) -> int:
        """Scripted replies not yet served."""
        with self._lock:
            return len(self._replies)

    @property
    def posts(self) -> list[RecordedRequest]:
        """The POST requests (the model calls), in order."""
        with self._lock:
            return [r for r in self.requests if r.method == "POST"]

    def _add_request(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def _reply_for(self, request: RecordedRequest) -> Reply:
        """A validation error, the prose of a server that ignored the tools, or the next scripted reply."""
        if request.path.rstrip("/").endswith("/chat/completions"):
            try:
                body = request.json
            except ValueError:
                body = None
            problems = validation_problems(body, self.behaviour)
            if problems:
                status = self.behaviour.validation_status
                kind = "internal_server_error" if status >= 500 else "invalid_request_error"
                return error_reply(status, validation_message(problems), error_type=kind)
            if cannot_stream(body, self.behaviour):  # before the script: the request never reaches a model
                if self.behaviour.stream_with_tools == "error":
                    return error_reply(500, NO_STREAMING_WITH_TOOLS, error_type="internal_server_error")
                return Reply(stream=[], cut="eof")  # 200, text/event-stream, and not one event
            if ignores_tools(body, self.behaviour):
                return chat_reply(PROSE_WITHOUT_TOOLS, usage=(198, 14))
        return self._next_reply(request)

    def _next_reply(self, request: RecordedRequest) -> Reply:
        with self._lock:
            source = self._replies.popleft() if self._replies else self.default
            number = sum(1 for r in self.requests if r.method == "POST")
        if source is None:
            return error_reply(400, f"fake server: no scripted reply left for request #{number}")
        return source(request) if callable(source) else source

    # -- lifecycle -----------------------------------------------------------------------------

    @property
    def url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("FakeOpenAIServer is not started")
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def start(self) -> FakeOpenAIServer:
        self._httpd = _HTTPServer(("127.0.0.1", 0), _Handler)
        self._httpd.owner = self
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-openai", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._closing.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class Events:
    """The model events a client emits, recorded for a test (the emit callback of ModelClient.complete)."""

    def __init__(self) -> None:
        self.items: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, event_type: str, data: dict[str, Any]) -> None:
        self.items.append((event_type, data))

    def of(self, event_type: str) -> list[dict[str, Any]]:
        return [d for t, d in self.items if t == event_type]
