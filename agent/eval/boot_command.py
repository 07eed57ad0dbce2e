"""Runs INSIDE the sandbox, never imported on the host: a test runner's command, its whole log out in a bundle.

runner_run.py sends this file's text as the program of `python3 -c` (python3 >= 3.9) for runners that have no
report of their own (sympy's bin/test, Django's runtests.py, unittest): their verbose lines are the report. The
command's stdout and stderr go, interleaved as a terminal shows them, into the log and on to this program's own
stdout (so a run killed at its timeout still shows, in run_test's output, where it was); its exit status and the
log go into the same gzip-compressed, base64 bundle boot_pytest.py writes (no JUnit), which run_test's report_file
brings back; a bundle over the limit keeps the log's head and its tail.
"""

from __future__ import annotations

import base64
import gzip
import json
import os
import subprocess
import sys
from typing import BinaryIO

BUNDLE = os.environ.get("_CODEBOX_EVAL_BUNDLE", "/tmp/codebox-eval-bundle.txt")
LOG = os.environ.get("_CODEBOX_EVAL_LOG", "/tmp/codebox-eval-log.txt")
LIMIT = int(os.environ.get("_CODEBOX_EVAL_BUNDLE_LIMIT", "2000000"))
NOT_STARTED = 127


def pack(code: int, log: str) -> bytes:
    data = json.dumps({"exit": code, "junit": None, "log": log}).encode("utf-8", "replace")
    return base64.b64encode(gzip.compress(data, compresslevel=6))


def write_bundle(code: int) -> None:
    with open(LOG, encoding="utf-8", errors="replace") as handle:
        log = handle.read()
    data = pack(code, log)
    while len(data) > LIMIT and len(log) > 2000:  # keep a quarter from the head, the rest from the tail
        keep = len(log) // 2
        cut = len(log) - keep
        log = log[: keep // 4] + f"\n... [{cut} characters cut] ...\n" + log[-(keep - keep // 4):]
        data = pack(code, log)
    with open(BUNDLE, "wb") as handle:
        handle.write(data)


def run(argv: list[str], log: BinaryIO) -> int:
    """The command, its output teed into the log and this program's stdout; its exit status."""
    out = sys.stdout.buffer
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    except OSError as exc:  # the runner's program is not there
        log.write(f"codebox: cannot run {argv[0]!r}: {exc}\n".encode())
        return NOT_STARTED
    assert proc.stdout is not None
    while True:
        chunk = os.read(proc.stdout.fileno(), 65536)
        if not chunk:
            break
        log.write(chunk)
        out.write(chunk)
        out.flush()
    return proc.wait()


def main() -> None:
    with open(LOG, "wb") as log:
        code = run(sys.argv[1:], log)
    write_bundle(code)
    sys.exit(code)


if __name__ == "__main__":  # `python3 -c`, in the sandbox
    main()
