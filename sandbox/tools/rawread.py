"""Reading an open regular file with os-level calls only.

A buffered file object costs system calls of its own before the first byte (``fstat`` for its
buffer size, ``ioctl`` to ask whether it is a tty, ``lseek`` for its position), and a read of
more than the file holds asks the kernel again to see the end. Under gVisor each of those is a
trip through its user-space kernel, so a small file is read here in one ``read``: the size the
caller already knows, plus one byte to see that nothing was added since.
"""

from __future__ import annotations

import os

# Not `from typing import ...` at run time (a first call would pay ~3 ms for it).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import List

CHUNK = 1 << 16


def read_up_to(fd: int, size: int, limit: int) -> bytes:
    """The file's bytes from the current position, at most ``limit + 1`` of them (more than
    ``limit``: the file is bigger than that). ``size`` is what fstat said: a short read then
    means the end (a regular file reads short only there), so a file that did not change is
    read with one call."""
    want = min(size, limit) + 1
    first = os.read(fd, want)
    if len(first) < want:
        return first
    parts: List[bytes] = [first]
    got = len(first)
    while got <= limit:  # it grew since the fstat, or is bigger than ``limit``
        piece = os.read(fd, min(CHUNK, limit + 1 - got))
        if not piece:
            break
        parts.append(piece)
        got += len(piece)
    return b"".join(parts)
