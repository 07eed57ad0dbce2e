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

OUTCOMES = (
    "ok",  # the tool did its job (run_test: the command exited 0)
    "error",  # bad arguments, path refused, patch rejected, file missing ...
    "failed",  # run_test: the command ran and exited non-zero
    "timeout",  # run_test: killed at the deadline (data.killed lists what)
    "oom",  # run_test: killed by the kernel for memory (host checks the container state too)
)
# The host adds its own outcomes (a dead container, a policy's refusal ...): agent.sandboxes.result.Outcome.

# The longest response line the host accepts; anything longer is refused as garbage.
MAX_RESPONSE_BYTES = 4 * 1024 * 1024

# --- Added with the server (sandbox/server.py, sandbox/tools/) ---------------------------

# The longest request line the server reads; a longer line gets an error response
# (id recovered from the line's start when it begins with {"id": ...}) and is skipped.
MAX_REQUEST_BYTES = 4 * 1024 * 1024

# Server exit codes: stdin EOF (or the host closed stdout) / --lifetime-s reached or
# SIGALRM / SIGTERM, SIGINT, SIGHUP or SIGQUIT. Bad command-line options exit 2 (argparse).
EXIT_EOF = 0
EXIT_LIFETIME = 3
EXIT_SIGNAL = 4

# Envelope rules the server applies: "id" is echoed (an integer, a string or null;
# malformed lines are answered with the id they carry if it can be read, else null);
# "args" defaults to {}; unknown argument names are refused; "timeout_s" > 0 is the
# request's deadline (search stops there; run_test uses min(args.timeout_s, timeout_s)).
#
# Per-tool args and data (fields marked ? are optional or may be null):
#
# ping {}                      -> data: version, python, rg (bool), literal_in_python (bool: a
#                                  literal search skips rg), root, pid, output_limit,
#                                  allow_shell, reap_all (as honoured), subreaper (bool),
#                                  undumpable (bool: /proc/<server>/fd closed to its children)
# read_file {path, start_line?, end_line?}
#                              -> data: path, total_lines (null when > 256 MiB), start_line,
#                                  end_line (last line shown), truncated, size_bytes
#                                 errors: directory (data: is_directory, entries, entry_count),
#                                  binary (data: binary, size_bytes, path)
# search {query, path?=".", glob? (string or array), regex?=false, max_results?=50 (cap 500)}
#                              -> data: count (results shown), truncated (more exist),
#                                  engine ("rg" | "python" | "none"), errors? (rg's stderr)
# apply_patch {patch} | {input}
#                              -> data: summary (list of "A/M/D path", "R old -> new"),
#                                  changed_paths, diff, diff_truncated
# run_test {argv | shell (only with --allow-shell), timeout_s?, env?, copy_repo?, cwd?, report_file?}
#                              -> data: command, exit_code? (null when killed by a signal),
#                                  signal? ("SIGKILL"...), duration_s, timed_out,
#                                  stdout_bytes, stderr_bytes, bytes_cut,
#                                  killed ([{pid, cmdline}], first 50), killed_count,
#                                  oom? ("confirmed": the cgroup oom_kill counter rose;
#                                  "suspected": SIGKILL, no timeout, no counter),
#                                  copy_dir?, copy_s?, copy_errors? (with copy_repo)
#                                 outcome: ok | failed | timeout | oom | error (not started)
