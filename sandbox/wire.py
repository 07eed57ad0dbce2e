"""The JSON-lines protocol between the host client and the in-container server.

Stdlib only: the server imports this inside the container (python3 >= 3.9).

One request per line on the server's stdin, one response per line on its stdout:

    request:  {"id": 7, "tool": "read_file", "args": {...}, "timeout_s": 30.0}
    response: {"id": 7, "ok": true, "output": "...", "error": null,
               "outcome": "ok", "data": {...}}

- ``output`` is the text the model sees, already capped by the server.
- ``error`` is a one-line summary when ``ok`` is false (the model also sees ``output``).
- ``outcome`` tells results apart: see OUTCOMES.
- ``data`` holds structured fields (exit_code, duration_s, bytes_cut, killed, ...).

The host never trusts these fields: it caps the line length it reads and
checks the id and the types before using a response.
"""

from __future__ import annotations

PROTOCOL_VERSION = 1

# Tools the server answers. "ping" is the readiness probe; it returns {"version": ...}.
TOOLS = ("ping", "read_file", "search", "apply_patch", "run_test")

OUTCOMES = (
    "ok",  # the tool did its job (run_test: the command exited 0)
    "error",  # bad arguments, path refused, patch rejected, file missing ...
    "failed",  # run_test: the command ran and exited non-zero
    "timeout",  # run_test: killed at the deadline (data.killed lists what)
    "oom",  # run_test: killed by the kernel for memory (host checks the container state too)
    "container_died",  # set by the host: the server stopped answering or the container is gone
)

# The longest response line the host accepts; anything longer is refused as garbage.
MAX_RESPONSE_BYTES = 4 * 1024 * 1024
