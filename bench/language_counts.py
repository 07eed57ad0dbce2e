"""Each real project's test counts in the sandbox against the host's, with codebox's defaults.

    python bench/language_counts.py [--whole] DIR [DIR ...]

Per project (a crate, a Go module, a Node package; its language found as codebox finds it): on the host, the
language's own test command in a scratch copy (cargo test with libtest's JSON events, go test -json, node
--test); in the sandbox, `codebox run --repo DIR` with a scripted model that calls run_test once and nothing
else: no --test-cmd, no --image, the environment codebox builds (network off in the box). The counts are read
from the runner's machine output on both sides. Printed: one row per project (passed/failed/skipped on each
side, equal or not, seconds), and `uptime` beside.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from agent.languages.registry import detect  # noqa: E402


def counts(language: str, output: str) -> dict[str, int]:
    """passed / failed / skipped, as the runner's machine output says them."""
    from agent.languages.go.gotest import counts as go
    from agent.languages.node.tap import counts as node
    from agent.languages.rust.libtest import counts as rust

    readers = {"rust": rust, "go": go, "node": node}
    return readers[language](output)


def on_host(repo: Path, command: list[str]) -> tuple[str, float]:
    """The command's output in a scratch copy of ``repo`` (the host's toolchain), and its seconds."""
    with tempfile.TemporaryDirectory(prefix="codebox-bench-host-") as tmp:
        copy = Path(tmp) / "repo"
        shutil.copytree(repo, copy, symlinks=True, ignore=shutil.ignore_patterns(".git", "target"))
        env = {**os.environ, "RUSTC_BOOTSTRAP": "1", "CARGO_TARGET_DIR": str(Path(tmp) / "target"),
               "CARGO_TERM_COLOR": "never", "GOFLAGS": "-mod=mod", "GOPROXY": "off", "GOTOOLCHAIN": "local"}
        if "--lockfile-path" in command:  # the sandbox's (read-only /repo); the host's copy is writable
            at = command.index("--lockfile-path")
            command = command[:at - 1] + command[at + 2:]
        started = time.monotonic()
        done = subprocess.run(command, cwd=copy, env=env, capture_output=True, text=True, check=False)
        return done.stdout + done.stderr, time.monotonic() - started


def in_sandbox(repo: Path) -> tuple[str, float, int]:
    """run_test's output through `codebox run` with defaults, its seconds, and the bytes its capture cut."""
    with tempfile.TemporaryDirectory(prefix="codebox-bench-box-") as tmp:
        script = Path(tmp) / "s.json"
        script.write_text(json.dumps({"turns": [{"tool_calls": [{"name": "run_test", "arguments": {}}]},
                                                {"message": "counted"}]}))
        events = Path(tmp) / "events.jsonl"
        started = time.monotonic()
        subprocess.run([sys.executable, "-m", "agent.cli", "run", "--repo", str(repo), "--model", f"scripted:{script}",
                        "--events", str(events), "--no-diff", "--test-timeout", "1800", "--max-test-timeout", "1800",
                        "count the tests"], capture_output=True, text=True, check=False)
        seconds = time.monotonic() - started
        for line in events.read_text().splitlines() if events.is_file() else []:
            event = json.loads(line)
            if event.get("type") == "tool.end" and event["data"].get("name") == "run_test":
                data = event["data"]
                return data.get("content", ""), seconds, int((data.get("data") or {}).get("bytes_cut") or 0)
    return "", seconds, 0


def in_sandbox_whole(repo: Path) -> tuple[str, float, int]:
    """The runner's whole machine output in the sandbox, as `codebox eval` gets it (a file under /tmp read back,
    not run_test's capped output): go test -json writes an event per output line, more than the capture keeps."""
    from agent.containers.sandbox import Sandbox
    from agent.env.cancel import NEVER
    from agent.languages.registry import choose_env, named_tests
    from agent.protocol import TaskSpec
    from agent.sandboxes.config import SandboxConfig

    started = time.monotonic()
    config = SandboxConfig()
    env = choose_env(TaskSpec(id="bench-counts", repo=str(repo), goal="count"), repo, config, lambda _: None, NEVER)
    language = named_tests(repo)
    assert env is not None and language is not None
    run = language.named_tests_run(repo, [], env)
    with Sandbox(repo, config.replace(image=env.run_image), task_id="bench-counts") as box:
        reply = box.call("run_test", {"argv": run.argv, "report_file": run.report_file, "timeout_s": 3600},
                         timeout_s=3600)
    text = reply.data.get("report_file_text")
    return (text if isinstance(text, str) else reply.output), time.monotonic() - started, 0


def main() -> None:
    print(f"# {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
    print("| project | language | host passed/failed/skipped | sandbox passed/failed/skipped | equal | host s "
          "| sandbox s |")
    print("|---|---|---|---|---|---|---|")
    whole = "--whole" in sys.argv  # the eval path: the whole machine output (go test -json's is large)
    for name in [a for a in sys.argv[1:] if a != "--whole"]:
        repo = Path(name).resolve()
        found = detect(repo)
        if found is None:
            print(f"| {repo.name} | ? | no test command found | | | | |")
            continue
        host_out, host_s = on_host(repo, found.command)
        box_out, box_s, cut = in_sandbox_whole(repo) if whole else in_sandbox(repo)
        host, box = counts(found.language, host_out), counts(found.language, box_out)
        show = lambda c: f"{c['passed']}/{c['failed']}/{c['skipped']}"  # noqa: E731
        equal = "yes" if host == box and sum(host.values()) else "NO" + (f" (output cut {cut} B)" if cut else "")
        print(f"| {repo.name} | {found.language} | {show(host)} | {show(box)} | {equal} | {host_s:.0f} | {box_s:.0f} |",
              flush=True)


if __name__ == "__main__":
    main()
