"""`codebox view --serve`: the page on 127.0.0.1 with the standard library's HTTP server.

Each request renders the page afresh, so a reload shows a batch that is still running. Only
`/` is served; a request whose Host header is not this loopback address is refused, so a web
page elsewhere cannot read the runs through DNS rebinding.
"""

from __future__ import annotations

from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from agent.view.render import content_security_policy

PageFn = Callable[[], str]


def make_server(page: PageFn, port: int = 0) -> ThreadingHTTPServer:
    """A server bound to 127.0.0.1 (port 0: any free port); serve_forever() runs it."""
    hosts: set[str] = set()  # filled once the port is known

    class Handler(BaseHTTPRequestHandler):
        server_version = "codebox-view"
        sys_version = ""

        def do_GET(self) -> None:
            self._answer(body=True)

        def do_HEAD(self) -> None:
            self._answer(body=False)

        def _answer(self, body: bool) -> None:
            if self.headers.get("Host", "") not in hosts:
                self._send(403, b"forbidden: ask for this page at 127.0.0.1\n", "text/plain", body)
                return
            if self.path.split("?")[0] not in ("/", "/index.html"):
                self._send(404, b"not found\n", "text/plain", body)
                return
            try:
                html = page().encode("utf-8")
            except Exception as exc:  # the page must say what went wrong, the server keeps going
                self._send(500, f"codebox view: {exc}\n".encode(), "text/plain", body)
                return
            self._send(200, html, "text/html; charset=utf-8", body)

        def _send(self, status: int, payload: bytes, kind: str, body: bool) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(payload)))
            # frame-ancestors only works as a header: no other site may frame the page
            self.send_header("Content-Security-Policy", content_security_policy() + "; frame-ancestors 'none'")
            self.send_header("X-Content-Type-Options", "nosniff")
            self.send_header("Referrer-Policy", "no-referrer")
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            if body:
                self.wfile.write(payload)

        def log_message(self, format: str, *args: object) -> None:
            pass  # quiet: the command prints its address once

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    hosts.update({f"127.0.0.1:{server.server_port}", f"localhost:{server.server_port}"})
    return server
