"""What the console costs: an event through the run console (styled on a pty, plain on a pipe)
next to the JSONL sink (what --events costs); and the test-program probe on first start vs cached — in one run.

    python bench/console_cost.py [--events 2000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agent.console.live import RunConsole  # noqa: E402
from agent.protocol import AgentEvent  # noqa: E402
from agent.task.events import JsonlSink  # noqa: E402


def events(n: int) -> list[AgentEvent]:
    out = []
    for i in range(n):
        start = {"name": "read_file", "decision": "allow", "summary": f"src/mod_{i}.py"}
        end = {**start, "is_error": i % 5 == 0, "outcome": "failed" if i % 5 == 0 else "ok",
               "duration_s": 0.01, "content": "FAILED tests/t.py::test_x - boom\x1b]0;t\x07"}
        out += [AgentEvent(type="tool.start", task_id="b", seq=2 * i, step=i, data=start),
                AgentEvent(type="tool.end", task_id="b", seq=2 * i + 1, step=i, data=end)]
    return out


def per_event(sink: object, batch: list[AgentEvent]) -> float:
    started = time.perf_counter()
    for event in batch:
        sink.emit(event)  # type: ignore[attr-defined]
    return (time.perf_counter() - started) / len(batch)


def drained(fd: int) -> threading.Thread:
    def run() -> None:
        while True:
            try:
                if not os.read(fd, 1 << 16):
                    return
            except OSError:
                return

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    batch = events(args.events // 2)
    master, slave = os.openpty()
    drained(master)
    read, write = os.pipe()
    drained(read)
    jread, jwrite = os.pipe()
    drained(jread)
    jsonl = JsonlSink.to_stream(open(jwrite, "w", encoding="utf-8"))  # noqa: SIM115
    tty = open(slave, "w", encoding="utf-8")  # noqa: SIM115
    pipe = open(write, "w", encoding="utf-8")  # noqa: SIM115
    os.environ.pop("NO_COLOR", None)
    times: dict[str, list[float]] = {"jsonl (pipe)": [], "plain (pipe)": [], "styled (pty, status line)": []}
    for _ in range(args.rounds):  # interleaved, so a busy moment hits each kind alike
        times["jsonl (pipe)"].append(per_event(jsonl, batch))
        console = RunConsole(pipe)
        times["plain (pipe)"].append(per_event(console, batch))
        console.close()
        styled = RunConsole(tty, styled=True)
        styled.emit(AgentEvent(type="turn.start", task_id="b", seq=0, step=0, data={"goal": "g"}))
        times["styled (pty, status line)"].append(per_event(styled, batch))
        styled.close()
    base = statistics.median(times["jsonl (pipe)"])
    print(f"per event, median of {args.rounds} rounds of {len(batch)} events:")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"  {name:28s} {median * 1e6:8.1f} µs   {median / base:6.1f}x the JSONL sink")
    probe()


def probe() -> None:
    """The test-program probe: a short container the first time, the cache after."""
    from agent.containers.image import image_exists
    from agent.containers.probe import program_in_image

    image = "codebox-sandbox:latest"
    if not image_exists(image):
        print(f"probe: skipped ({image} is not built)")
        return
    with tempfile.TemporaryDirectory() as cache:
        os.environ["XDG_CACHE_HOME"] = cache
        started = time.perf_counter()
        assert program_in_image(image, "python3") is True
        first = time.perf_counter() - started
        cached = []
        for _ in range(20):
            started = time.perf_counter()
            program_in_image(image, "python3")
            cached.append(time.perf_counter() - started)
        del os.environ["XDG_CACHE_HOME"]
    hit = statistics.median(cached)
    print(f"probe of the test program: first start {first * 1000:.0f} ms, cached {hit * 1000:.1f} ms "
          f"({first / hit:.0f}x)")


if __name__ == "__main__":
    main()
