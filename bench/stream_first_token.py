"""Time to the first visible token, streamed vs not, against a slow model.

The real openai client against the local test server (tests/fake_openai_server.py) that
"generates" a reply of --tokens tokens at --per-token seconds each: streamed, a chunk per
token as it is generated; not streamed, the whole reply when the last token is done. The
first visible token is the first ``message.delta`` event (streamed) or the reply itself (not
streamed). Streamed and whole requests alternate, --reps of each; medians are printed.

    python bench/stream_first_token.py [--tokens 40] [--per-token 0.05] [--reps 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from fake_openai_behaviour import ServerBehaviour  # noqa: E402
from fake_openai_server import FakeOpenAIServer, chat_reply  # noqa: E402

from agent.model.config import OpenAIConfig  # noqa: E402
from agent.model.openai_client import OpenAIChatClient  # noqa: E402
from agent.protocol import UserMessage  # noqa: E402


def one(server: FakeOpenAIServer, stream: bool) -> tuple[float, float]:
    """(seconds to the first visible text, seconds to the whole reply)."""
    client = OpenAIChatClient(OpenAIConfig(model="fake", base_url=server.url, api_key_env="NO_KEY", stream=stream))
    started = time.monotonic()
    first: list[float] = []

    def emit(kind: str, data: dict[str, Any]) -> None:
        if kind == "message.delta" and not first:
            first.append(time.monotonic() - started)

    out = client.complete("", [UserMessage(content="talk")], [], emit)
    whole = time.monotonic() - started
    assert out.message, "no reply"
    return (first[0] if first else whole), whole


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokens", type=int, default=40)
    parser.add_argument("--per-token", type=float, default=0.05)
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    text = " ".join(f"word{i}" for i in range(args.tokens))
    slow = ServerBehaviour(seconds_per_token=args.per_token)
    results: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
    with FakeOpenAIServer(default=chat_reply(text), behaviour=slow) as server:
        one(server, True)  # warm-up: imports, the first connection
        for _ in range(args.reps):
            for stream in (True, False):  # interleaved: drift in the machine's load hits both alike
                results[stream].append(one(server, stream))
    first_s = statistics.median(r[0] for r in results[True])
    first_w = statistics.median(r[0] for r in results[False])
    whole_s = statistics.median(r[1] for r in results[True])
    whole_w = statistics.median(r[1] for r in results[False])
    print(f"reply: {args.tokens} tokens at {args.per_token:g} s/token; medians of {args.reps} interleaved reps")
    print(f"first visible token: streamed {first_s:.3f} s, not streamed {first_w:.3f} s "
          f"(streamed / not: {first_s / first_w:.3f}x)")
    print(f"whole reply:         streamed {whole_s:.3f} s, not streamed {whole_w:.3f} s "
          f"(streamed / not: {whole_s / whole_w:.3f}x)")


if __name__ == "__main__":
    main()
