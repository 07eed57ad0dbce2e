"""How much of a task's time is NOT the model's, with a model that takes time to answer.

The real openai client against a local OpenAI-compatible server (tests/fake_openai_server.py)
that answers each request after --delay seconds: a read_file call, then the final message.
The sandbox container starts while the first request is in flight, so the task should cost
little more than the model's own time.

    python bench/model_latency_overlap.py [--delay 0.5] [--runs 6]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from fake_openai_server import FakeOpenAIServer, chat_reply  # noqa: E402

from agent.console.render import summary_text  # noqa: E402
from agent.containers.image import ensure_sandbox_image  # noqa: E402
from agent.model.openai_client import OpenAIChatClient, OpenAIConfig  # noqa: E402
from agent.protocol import TaskSpec  # noqa: E402
from agent.task.events import MemorySink  # noqa: E402
from agent.task.runner import run_task  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--delay", type=float, default=0.5)
    parser.add_argument("--runs", type=int, default=6)
    args = parser.parse_args()
    ensure_sandbox_image()
    work = Path(tempfile.mkdtemp(prefix="codebox-bench-overlap-"))
    repo = work / "repo"
    shutil.copytree(ROOT / "agent" / "cli" / "demo_data" / "repo", repo)
    times = []
    try:
        for _ in range(args.runs + 1):  # the first run warms up
            replies = [
                chat_reply(tool_calls=[("read_file", {"path": "backoff.py"})], delay_s=args.delay),
                chat_reply("done", delay_s=args.delay),
            ]
            with FakeOpenAIServer(replies) as server:
                model = OpenAIChatClient(OpenAIConfig(model="fake", base_url=server.url))
                started = time.monotonic()
                report = run_task(TaskSpec(repo=str(repo), goal="read"), model, MemorySink())
                times.append(time.monotonic() - started)
            assert report.status == "completed", summary_text(report)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    task = statistics.median(times[1:])
    model_time = 2 * args.delay
    print(f"task (run_task whole) median of {args.runs}: {task:.3f} s; model time {model_time:.3f} s")
    print(f"task / model time: {task / model_time:.2f}x; codebox's own share: {task - model_time:.3f} s")


if __name__ == "__main__":
    main()
