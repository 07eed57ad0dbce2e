"""The page in headless Chromium: it renders, links lead to the task pages, filters filter,
sorting sorts, and hostile data stays text (no script of its own ever runs). Each page's
screenshot is kept under test-artifacts/view/."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from view_fixtures import XSS, XSS_FILE, XSS_ID

from agent.view import load, render
from agent.view.serve import make_server

pytestmark = pytest.mark.browser


class Page:
    """A browser page that records every console error and uncaught exception."""

    def __init__(self, browser: Any) -> None:
        self.context = browser.new_context(viewport={"width": 1280, "height": 900})
        self.page = self.context.new_page()
        self.problems: list[str] = []
        self.page.on("console", lambda m: m.type in ("error", "warning") and self.problems.append(m.text))
        self.page.on("pageerror", lambda e: self.problems.append(f"pageerror: {e}"))

    def rows(self) -> list[str]:
        ids: list[str] = self.page.eval_on_selector_all("#tasks tbody tr", "rows => rows.map(r => r.dataset.task)")
        return ids

    def shot(self, folder: Path, name: str) -> None:
        self.page.screenshot(path=str(folder / f"{name}.png"), full_page=True)


@pytest.fixture
def page(chromium: Any) -> Iterator[Page]:
    p = Page(chromium)
    try:
        yield p
    finally:
        p.context.close()


def _write(out: Path) -> str:
    html = out / "view.html"
    html.write_text(render(load(out)), encoding="utf-8")
    return html.as_uri()


def test_batch_page_renders_sorts_and_filters(page: Page, batch_out: Path, artifacts: Path) -> None:
    page.page.goto(_write(batch_out))
    p = page.page
    assert p.title() == "codebox · runs"
    assert page.rows() == ["fix-ok", "fix-stopped", "fix-error", "fix-running"]
    assert p.text_content("#shown") == "4 of 4 tasks"
    assert "1,700" in (p.text_content("#summary") or "")
    page.shot(artifacts, "batch")

    p.click("th[data-key=duration_s] button")
    assert page.rows() == ["fix-error", "fix-running", "fix-ok", "fix-stopped"]
    assert p.get_attribute("th[data-key=duration_s]", "aria-sort") == "ascending"
    p.click("th[data-key=duration_s] button")
    assert page.rows() == ["fix-stopped", "fix-ok", "fix-running", "fix-error"]
    p.click("th[data-key=tokens] button")  # tasks without tokens go last
    assert page.rows()[:2] == ["fix-stopped", "fix-ok"]

    p.fill("#filter", "subtraction")  # matches the goal
    assert page.rows() == ["fix-stopped"]
    assert p.text_content("#shown") == "1 of 4 tasks"
    p.fill("#filter", "")
    p.select_option("#status-filter", "error")
    assert page.rows() == ["fix-error"]
    p.select_option("#status-filter", "")
    p.select_option("#reason-filter", "max_steps")
    assert page.rows() == ["fix-stopped"]
    page.shot(artifacts, "batch-filtered")
    assert page.problems == []


def test_the_batch_table_has_an_error_column(page: Page, batch_out: Path, artifacts: Path) -> None:
    page.page.goto(_write(batch_out))
    p = page.page
    assert p.locator("#tasks th").last.text_content() == "error"
    cells = dict(zip(page.rows(), p.locator("#tasks td.error-cell").all_text_contents(), strict=True))
    none = "\u2013"  # the table's dash for "nothing"
    assert cells == {"fix-ok": none, "fix-stopped": "stopped after 2 model steps", "fix-error": "no model given",
                     "fix-running": none}
    assert "bad" in (p.get_attribute("tr[data-task=fix-error] td.error-cell", "class") or "")
    assert p.get_attribute("tr[data-task=fix-error] td.error-cell", "title") == "no model given"
    p.click("th[data-key=error] button")
    assert page.rows()[:2] == ["fix-error", "fix-stopped"]  # by text; the tasks without one last
    page.shot(artifacts, "batch-errors")
    assert page.problems == []


def test_links_lead_to_task_pages_and_back(page: Page, batch_out: Path, artifacts: Path) -> None:
    page.page.goto(_write(batch_out))
    p = page.page
    p.fill("#filter", "fix-")
    p.click("a[href='#/task/fix-ok']")
    p.wait_for_selector("main[data-page=task]")
    assert p.url.endswith("#/task/fix-ok")
    assert (p.text_content("h1") or "").startswith("fix-ok")
    for section in ("goal", "timeline", "steps", "final", "test", "diff", "environment"):
        assert p.is_visible(f"#{section}"), section
    assert p.text_content("#final pre") == "Fixed add()."
    assert p.locator(".d-add").count() == 2 and p.locator(".d-del").count() == 2 and p.locator(".d-hunk").count() == 1
    assert p.locator(".trow").count() == 4
    assert p.locator(".track .bar.tool").count() == 3
    env = p.text_content("#environment") or ""
    assert "abc1234" in env and "codebox-env:1f2e" in env
    # a tool bar opens its call
    assert not p.get_attribute("#call-2", "open")
    p.click(".track .bar.tool >> nth=2")
    assert p.get_attribute("#call-2", "open") is not None
    assert "4 passed" in (p.text_content("#call-2 pre.result") or "")
    page.shot(artifacts, "task-completed")

    p.click("nav a.next")
    p.wait_for_selector("h1:has-text('fix-stopped')")
    assert p.locator(".failing li").all_text_contents() == [
        "tests/test_app.py::test_add",
        "tests/test_app.py::test_sub[1-2]",
    ]
    assert p.is_visible(".badge.decision-deny")
    page.shot(artifacts, "task-stopped")

    p.click("#back")
    p.wait_for_selector("#tasks")
    assert p.input_value("#filter") == "fix-"  # the table comes back as it was left
    p.go_back()
    p.wait_for_selector("h1:has-text('fix-stopped')")
    assert page.problems == []


def test_hostile_strings_show_as_text_and_run_nothing(page: Page, xss_out: Path, artifacts: Path) -> None:
    page.page.goto(_write(xss_out))
    p = page.page
    assert XSS_ID in page.rows()
    page.shot(artifacts, "batch-xss")
    p.locator("#tasks a", has_text="onerror").click()
    p.wait_for_selector("main[data-page=task]")
    for details in p.locator("details").all():
        details.evaluate("d => { d.open = true; }")
    assert p.text_content("h1 span.badge") == "completed"
    assert (p.text_content("h1") or "").startswith(XSS_ID)
    assert p.text_content("#goal pre") == XSS
    assert p.text_content("#final pre") == XSS + "\u2028\u2029 the end"
    assert p.text_content("#error") == XSS
    assert XSS_FILE in (p.text_content("#diff") or "")
    assert XSS in (p.text_content("#test") or "")
    assert XSS in (p.text_content("#environment") or "")
    assert p.locator(".failing li").all_text_contents() == [f"tests/test_x.py::{XSS}"]
    assert p.evaluate("document.querySelectorAll('img, iframe, object, embed').length") == 0
    assert p.evaluate("document.scripts.length") == 2
    p.wait_for_timeout(200)  # an onerror would fire by now
    assert p.evaluate("typeof window.__xss") == "undefined"
    page.shot(artifacts, "task-xss")
    assert page.problems == []


def test_a_single_run_opens_on_its_task_page(page: Page, batch_out: Path, artifacts: Path) -> None:
    html = batch_out / "fix-ok" / "events.html"
    html.write_text(render(load(batch_out / "fix-ok" / "events.jsonl")), encoding="utf-8")
    page.page.goto(html.as_uri())
    assert (page.page.text_content("h1") or "").startswith("fix-ok")
    assert page.page.locator("nav").count() == 0  # no batch to go back to
    page.shot(artifacts, "run")
    assert page.problems == []


def test_the_served_page_works_under_its_csp_header(page: Page, batch_out: Path, artifacts: Path) -> None:
    server = make_server(lambda: render(load(batch_out)), 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        page.page.goto(f"http://127.0.0.1:{server.server_port}/#/task/fix-running")
        page.page.wait_for_selector("h1:has-text('fix-running')")
        assert "torn last line" in (page.page.text_content(".warnings") or "")
        page.shot(artifacts, "served-running")
        page.page.goto(f"http://127.0.0.1:{server.server_port}/")
        assert len(page.rows()) == 4
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
    assert page.problems == []


def test_a_test_error_shows_its_reason_in_the_table_and_on_the_task_page(
    page: Page, tmp_path: Path, artifacts: Path
) -> None:
    from view_fixtures import RunWriter, _report, _write_report

    from agent.protocol import TestRun

    out = tmp_path / "out"
    (out / "untested").mkdir(parents=True)
    why = "No test command: the task names none and the repository shows no tests codebox recognises"
    run = RunWriter(out / "untested" / "events.jsonl", "untested")
    run.emit("turn.start", 0, 0.0, goal="Test it", repo="/repos/app", model="gpt-test", policy="read-only",
             test_cmd=[], tests="none found")
    run.call(1, 0.5, "run_test", {}, 0.0, why, is_error=True, outcome="error")
    run.close()
    _write_report(out / "untested", _report("untested", "Test it", steps=2,
                                            last_test=TestRun(command=[], outcome="error", error=why)))
    p = page.page
    p.goto(_write(out))
    assert p.locator("#summary").text_content() and "completed, tests not passing" in (
        p.locator("#summary").text_content() or "")
    cell = p.locator("tr[data-task=untested] td.error-cell")
    assert (cell.text_content() or "").startswith("last test error: No test command: the task names none")
    assert "warn" in (cell.get_attribute("class") or "") and cell.get_attribute("title") == f"last test error: {why}"
    p.click("tr[data-task=untested] a")
    facts = dict(zip(p.locator("#test dt").all_text_contents(), p.locator("#test dd").all_text_contents(),
                     strict=True))
    assert facts["why"] == why and facts["chosen"] == "none found" and facts["command"] == "none"
    page.shot(artifacts, "test-error-reason")
    assert page.problems == []
