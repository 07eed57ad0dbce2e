"""The viewer on what a real batch leaves (scripted model, real sandbox): the formats the viewer
reads are the ones codebox writes today, not only the ones its fixtures imitate."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from agent.cli.parser import main

pytestmark = [pytest.mark.docker, pytest.mark.browser]
ROOT = Path(__file__).resolve().parents[3]


def test_a_real_batch_in_the_browser(tmp_path: Path, chromium: Any, artifacts: Path) -> None:
    from agent.containers.image import ensure_sandbox_image

    ensure_sandbox_image()
    repo = tmp_path / "repo"
    shutil.copytree(ROOT / "agent" / "cli" / "demo_data" / "repo", repo)
    task = {"id": "demo", "repo": str(repo), "goal": "Fix the retry delays", "policy": "workspace-write",
            "test_cmd": ["python3", "-m", "pytest", "-q"]}
    (tmp_path / "tasks.jsonl").write_text(json.dumps(task) + "\n")
    out = tmp_path / "out"
    script = f"scripted:{ROOT / 'agent' / 'cli' / 'demo_data' / 'script.json'}"
    assert main(["batch", str(tmp_path / "tasks.jsonl"), "--out", str(out), "--model", script]) == 0
    assert main(["view", str(out)]) == 0

    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    problems: list[str] = []
    try:
        page = context.new_page()
        page.on("console", lambda m: m.type == "error" and problems.append(m.text))
        page.on("pageerror", lambda e: problems.append(str(e)))
        page.goto((out / "view.html").as_uri() + "#/task/demo")
        page.wait_for_selector("main[data-page=task]")
        assert (page.text_content("h1") or "").startswith("demo")
        names = page.locator("details.call .tool").all_text_contents()
        assert names == ["search", "read_file", "apply_patch", "apply_patch", "run_test", "apply_patch", "run_test"]
        assert page.locator(".trow").count() == 8
        assert "Failed to find expected lines" in (page.text_content("#call-2 pre.result") or "")
        assert "test_first_delay_is_the_base" in (page.text_content("#call-4 pre.result") or "")
        assert page.text_content("#test .badge") == "ok"
        assert "range(attempts)" in (page.text_content("#final") or "")
        # the task's own, not the batch's "no cap" sentinel
        assert page.locator(".env tr", has_text="max_steps").locator("td").text_content() == "30"
        page.screenshot(path=str(artifacts / "real-demo-task.png"), full_page=True)
    finally:
        context.close()
    assert problems == []


def test_a_real_run_in_place_shows_its_net_diff_and_its_true_max_steps(
    tmp_path: Path, chromium: Any, artifacts: Path
) -> None:
    """`codebox run` edits in place and leaves no patch.diff: its page shows the net change its
    patches made (the demo patches backoff.py twice), and the max_steps that applied."""
    from agent.containers.image import ensure_sandbox_image

    ensure_sandbox_image()
    repo = tmp_path / "repo"
    shutil.copytree(ROOT / "agent" / "cli" / "demo_data" / "repo", repo)
    events = tmp_path / "run.jsonl"
    script = f"scripted:{ROOT / 'agent' / 'cli' / 'demo_data' / 'script.json'}"
    assert main(["run", "--repo", str(repo), "--model", script, "--policy", "workspace-write", "--quiet",
                 "--test-cmd", "python3 -m pytest -q", "--events", str(events), "Fix the retry delays"]) == 0
    assert main(["view", str(events)]) == 0

    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    problems: list[str] = []
    try:
        page = context.new_page()
        page.on("console", lambda m: m.type == "error" and problems.append(m.text))
        page.on("pageerror", lambda e: problems.append(str(e)))
        page.goto(events.with_suffix(".html").as_uri())
        page.wait_for_selector("main[data-page=task]")
        diff = page.text_content("#diff") or ""
        assert "-    for n in range(1, attempts):" in diff and "+    for n in range(attempts):" in diff
        assert "attempts + 1" not in diff  # the state between the two patches is not the change
        assert page.locator("#diff .d-add").count() == 1 and page.locator("#diff .d-del").count() == 1
        assert "net change" in diff
        assert page.locator(".env tr", has_text="max_steps").locator("td").text_content() == "30"
        page.screenshot(path=str(artifacts / "real-run-net-diff.png"), full_page=True)
    finally:
        context.close()
    assert problems == []
