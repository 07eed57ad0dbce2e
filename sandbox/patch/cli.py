"""The ``apply_patch`` command line (``python -m sandbox.patch``), worded like Codex's standalone tool."""

from __future__ import annotations

import argparse
import sys
from typing import Optional, Sequence

from sandbox.patch.apply import DEFAULT_MAX_DIFF_CHARS, DEFAULT_MAX_FILE_BYTES, DEFAULT_MAX_PATCH_BYTES, apply_patch
from sandbox.patch.errors import PatchError, invalid_patch, rejected


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python -m sandbox.patch --root DIR``: apply the patch on standard input."""
    parser = argparse.ArgumentParser(
        prog="python -m sandbox.patch",
        description="Apply a Codex apply_patch-format patch read from standard input, atomically.",
    )
    parser.add_argument("--root", required=True, help="directory the patch paths are relative to")
    parser.add_argument("--diff", action="store_true", help="also print the unified diff")
    parser.add_argument("--max-patch-bytes", type=int, default=DEFAULT_MAX_PATCH_BYTES)
    parser.add_argument("--max-file-bytes", type=int, default=DEFAULT_MAX_FILE_BYTES)
    parser.add_argument("--max-diff-chars", type=int, default=DEFAULT_MAX_DIFF_CHARS)
    args = parser.parse_args(argv)
    raw = sys.stdin.buffer.read(args.max_patch_bytes + 1)
    try:
        if len(raw) > args.max_patch_bytes:
            raise rejected(
                "patch rejected: the patch is over apply_patch's limit of %d bytes. "
                "Split it into several smaller patches." % args.max_patch_bytes
            )
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise invalid_patch("the patch is not valid UTF-8 (%s)" % exc) from None
        result = apply_patch(
            text,
            args.root,
            max_patch_bytes=args.max_patch_bytes,
            max_file_bytes=args.max_file_bytes,
            max_diff_chars=args.max_diff_chars,
        )
    except PatchError as exc:
        sys.stderr.write(exc.cli_message.rstrip("\n") + "\n")
        return 1
    except Exception as exc:  # an engine bug must still leave a clear message and exit 1
        sys.stderr.write("apply_patch failed: %s: %s\n" % (type(exc).__name__, exc))
        return 1
    output = (
        result.text()
        if args.diff
        else "Success. Updated the following files:\n" + "".join(line + "\n" for line in result.summary)
    )
    sys.stdout.write(output)
    return 0
