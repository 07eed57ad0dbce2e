"""The page as a file: self-contained, a CSP that admits exactly its own blocks, data that cannot
leave its JSON block; and the command that writes or serves it."""

from __future__ import annotations

import base64
import hashlib
import html
import http.client
import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from view_fixtures import XSS, XSS_ID

from agent.cli.parser import main
from agent.view import load, render
from agent.view.render import content_security_policy, embed_json
from agent.view.serve import make_server

DATA_BLOCK = re.compile(r'<script id="codebox-data" type="application/json">(.*?)</script>', re.S)


def test_embedded_json_cannot_close_its_block_and_reads_back_the_same() -> None:
    value = {"s": XSS + "<!-- ]]> & \u2028\u2029 \ud800", "n": [1, 2.5, None]}
    text = embed_json(value)
    assert not set("<>&\u2028\u2029") & set(text)
    assert text.isascii()
    assert json.loads(text) == value


def test_the_page_has_no_markup_from_the_data(xss_out: Path) -> None:
    page = render(load(xss_out))
    # the only tags are the page's own: every payload is inside the JSON block, escaped
    tags = re.findall(r"<(/?[a-zA-Z][a-zA-Z0-9]*)", page)
    assert sorted(set(tags)) == sorted(
        {"html", "/html", "head", "/head", "meta", "link", "title", "/title", "style", "/style", "body", "/body",
         "div", "/div", "noscript", "/noscript", "script", "/script"}
    )
    assert page.count("<script") == 2
    data = DATA_BLOCK.search(page)
    assert data is not None
    tasks = json.loads(data.group(1))["tasks"]
    xss_task = next(t for t in tasks if t["id"] == XSS_ID)
    assert xss_task["goal"] == XSS and xss_task["files_changed"] == ["src/<script>window.__xss=5</script>.py"]


def test_the_title_is_escaped(tmp_path: Path, batch_out: Path) -> None:
    hostile = batch_out.rename(tmp_path / '<b id="x">runs&')
    page = render(load(hostile))
    assert "<title>codebox · &lt;b id=&quot;x&quot;&gt;runs&amp;</title>" in page


def _sha(block: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(block.encode()).digest()).decode() + "'"


def test_the_csp_admits_exactly_the_inline_script_and_style(batch_out: Path) -> None:
    page = render(load(batch_out))
    meta = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">', page)
    assert meta is not None
    content = html.unescape(meta.group(1))
    policy = {d.partition(" ")[0]: d.partition(" ")[2] for d in content.split("; ")}
    assert policy["default-src"] == "'none'"
    script = re.findall(r"<script>(.*?)</script>", page, re.S)
    style = re.findall(r"<style>(.*?)</style>", page, re.S)
    assert len(script) == 1 and len(style) == 1
    assert policy["script-src"] == _sha(script[0])
    assert policy["style-src"] == _sha(style[0])
    assert policy["require-trusted-types-for"] == "'script'"
    assert "http" not in content and "unsafe" not in content
    assert "src=" not in page.replace('href="data:,"', "")  # nothing loaded from anywhere


# --- the command ---------------------------------------------------------------------------------


def test_view_writes_the_page_next_to_the_input(batch_out: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["view", str(batch_out)]) == 0
    page = (batch_out / "view.html").read_text()
    assert page.startswith("<!doctype html>") and "fix-stopped" in page
    assert "wrote" in capsys.readouterr().out


def test_view_out_file(batch_out: Path, tmp_path: Path) -> None:
    out = tmp_path / "one.html"
    assert main(["view", str(batch_out / "fix-ok" / "events.jsonl"), "--out", str(out)]) == 0
    assert '"kind":"run"' in out.read_text()


def test_view_of_nothing_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["view", str(tmp_path / "nope")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["view", str(tmp_path)]) == 2
    assert main(["view", str(tmp_path), "--out", str(tmp_path / "no" / "dir" / "x.html")]) == 2


@pytest.fixture
def server(batch_out: Path) -> Iterator[tuple[int, Path]]:
    srv = make_server(lambda: render(load(batch_out)), 0)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield srv.server_port, batch_out
    finally:
        srv.shutdown()
        srv.server_close()
        thread.join(timeout=5)


def _get(port: int, path: str = "/", host: str | None = None) -> http.client.HTTPResponse:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", path, headers={"Host": host or f"127.0.0.1:{port}"})
    response = conn.getresponse()
    response.read()
    return response


def test_serve_answers_on_loopback_with_the_csp_header(server: tuple[int, Path]) -> None:
    port, _ = server
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", "/")
    response = conn.getresponse()
    body = response.read().decode()
    assert response.status == 200
    assert response.getheader("Content-Security-Policy") == content_security_policy() + "; frame-ancestors 'none'"
    assert response.getheader("X-Content-Type-Options") == "nosniff"
    assert "fix-ok" in body


def test_serve_rereads_the_runs_at_each_request(server: tuple[int, Path]) -> None:
    port, out = server
    (out / "fix-late").mkdir()
    (out / "fix-late" / "report.json").write_text('{"task_id": "fix-late", "status": "completed"}')
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", "/")
    assert "fix-late" in conn.getresponse().read().decode()


def test_serve_refuses_other_paths_and_foreign_hosts(server: tuple[int, Path]) -> None:
    port, _ = server
    assert _get(port, "/etc/passwd").status == 404
    assert _get(port, "/../report.json").status == 404
    assert _get(port, "/", host=f"attacker.example:{port}").status == 403  # DNS rebinding
    assert _get(port, "/", host=f"localhost:{port}").status == 200


def test_view_serve_from_the_command_line(batch_out: Path) -> None:
    root = Path(__file__).resolve().parents[3]
    proc = subprocess.Popen(
        [sys.executable, "-m", "agent.cli", "view", str(batch_out), "--serve", "--port", "0"],
        cwd=root, env={**os.environ, "PYTHONPATH": str(root)}, stdout=subprocess.PIPE, text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        match = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        assert match, line
        assert _get(int(match.group(1))).status == 200
        assert not (batch_out / "view.html").exists()  # --serve alone writes no file
    finally:
        proc.terminate()
        proc.wait(timeout=10)
