"""A PEP 503 simple index over HTTPS on 127.0.0.1, serving a folder of wheels and logging every request.

codebox downloads only over https, so the test index has a certificate: a CA made for the test
(``openssl``), trusted through SSL_CERT_FILE (a bundle of the usual roots plus that CA), which
both uv and Python's urllib read.
"""

from __future__ import annotations

import hashlib
import html
import http.server
import os
import shutil
import ssl
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from packaging.utils import canonicalize_name, parse_wheel_filename


def openssl_problem() -> str | None:
    return None if shutil.which("openssl") else "no openssl command to make test certificates"


def make_ca(folder: Path) -> tuple[Path, Path, Path]:
    """A CA and a server certificate for 127.0.0.1: (ca.pem, server-cert.pem, server-key.pem)."""
    folder.mkdir(parents=True, exist_ok=True)

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=folder, check=True, capture_output=True, timeout=60)

    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca-key.pem", "-out", "ca.pem", "-days", "2",
            "-subj", "/CN=codebox-test-index-ca", "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    (folder / "server.ext").write_text("subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server-key.pem", "-out", "server.csr",
            "-subj", "/CN=127.0.0.1")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca-key.pem", "-CAcreateserial",
            "-out", "server-cert.pem", "-days", "2", "-extfile", "server.ext")
    return folder / "ca.pem", folder / "server-cert.pem", folder / "server-key.pem"


def trust_bundle(ca: Path, folder: Path) -> Path:
    """The roots this machine trusts, plus ``ca``: a file for SSL_CERT_FILE."""
    bundle = folder / "bundle.pem"
    existing = os.environ.get("SSL_CERT_FILE") or ssl.get_default_verify_paths().cafile
    text = Path(existing).read_text() if existing and Path(existing).is_file() else ""
    bundle.write_text(text + "\n" + ca.read_text())
    return bundle


class IndexServer:
    """``https://127.0.0.1:PORT/simple/`` for the wheels in ``folder``; ``requests`` lists the paths asked."""

    def __init__(self, folder: Path, cert: Path, key: Path) -> None:
        self.folder = folder
        self.requests: list[str] = []
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.answer(with_body=True)

            def do_HEAD(self) -> None:
                self.answer(with_body=False)

            def answer(self, with_body: bool) -> None:
                server.requests.append(self.path)
                body, kind = server.page(self.path)
                if body is None:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if with_body:
                    self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(cert), str(key))
        self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        self.url = f"https://127.0.0.1:{self.httpd.server_address[1]}/simple"

    def page(self, path: str) -> tuple[bytes | None, str]:
        parts = [p for p in path.split("?")[0].split("/") if p]
        wheels = sorted(self.folder.glob("*.whl"))
        if parts == ["simple"]:
            names = sorted({canonicalize_name(parse_wheel_filename(w.name)[0]) for w in wheels})
            links = "".join(f'<a href="/simple/{n}/">{n}</a>\n' for n in names)
            return f"<!DOCTYPE html><html><body>\n{links}</body></html>".encode(), "text/html"
        if len(parts) == 2 and parts[0] == "simple":
            name = canonicalize_name(parts[1])
            mine = [w for w in wheels if canonicalize_name(parse_wheel_filename(w.name)[0]) == name]
            if not mine:
                return None, ""
            links = "".join(f'<a href="/files/{html.escape(w.name)}#sha256={_sha256(w)}">{html.escape(w.name)}</a>\n'
                            for w in mine)
            return f"<!DOCTYPE html><html><body>\n{links}</body></html>".encode(), "text/html"
        if len(parts) == 2 and parts[0] == "files" and (self.folder / parts[1]).is_file():
            return (self.folder / parts[1]).read_bytes(), "application/octet-stream"
        return None, ""

    def asked_for(self, name: str) -> bool:
        """Whether anyone asked this index about ``name`` (its page or one of its files)."""
        key = canonicalize_name(name)
        return any(f"/simple/{key}/" in p or f"/files/{key.replace('-', '_')}-" in p for p in self.requests)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@contextmanager
def serving(folder: Path, cert: Path, key: Path) -> Iterator[IndexServer]:
    server = IndexServer(folder, cert, key)
    thread = threading.Thread(target=server.httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.httpd.shutdown()
        server.httpd.server_close()
