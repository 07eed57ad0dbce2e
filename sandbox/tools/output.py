"""Bounded capture: keep the head and the tail of a stream, count what is cut.

``HeadTail(limit)`` keeps the first ``limit // 2`` and the last
``limit - limit // 2`` bytes of everything fed to it, chunk by chunk: it never
holds more than about ``limit + chunk`` bytes whatever the stream's size.
``render()`` decodes as UTF-8 (invalid bytes become U+FFFD; a character split
by the cut is dropped and counted as cut) and puts ``... [N bytes cut] ...`` on
its own line where the middle was.
"""

from __future__ import annotations

# Not `from typing import ...` at run time (a first search would pay ~3 ms for it).
TYPE_CHECKING = False
if TYPE_CHECKING:
    pass


def cut_marker(n: int) -> str:
    return f"\n... [{n} bytes cut] ...\n"


def _incomplete_utf8_suffix(data: bytes) -> int:
    """Length of a multi-byte character cut short at the end of ``data``."""
    for i in range(1, min(4, len(data)) + 1):
        b = data[-i]
        if b & 0xC0 == 0x80:  # continuation byte: keep looking for the lead byte
            continue
        if b >= 0xC0:
            need = 2 if b < 0xE0 else 3 if b < 0xF0 else 4
            return i if need > i else 0
        return 0
    return 0


def _continuation_prefix(data: bytes) -> int:
    """Number of continuation bytes (the rest of a split character) at the start."""
    n = 0
    while n < min(3, len(data)) and data[n] & 0xC0 == 0x80:
        n += 1
    return n


class HeadTail:
    def __init__(self, limit: int) -> None:
        self.limit = max(0, int(limit))
        self.head_limit = self.limit // 2
        self.tail_limit = self.limit - self.head_limit
        self._head = bytearray()
        self._tail = bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        if not chunk:
            return
        self.total += len(chunk)
        room = self.head_limit - len(self._head)
        if room > 0:
            self._head += chunk[:room]
            chunk = chunk[room:]
        if not chunk or self.tail_limit == 0:
            return
        if len(chunk) >= self.tail_limit:
            self._tail = bytearray(chunk[-self.tail_limit :])
        else:
            self._tail += chunk
            if len(self._tail) > 2 * self.tail_limit:  # trim now and then, not on every chunk
                del self._tail[: len(self._tail) - self.tail_limit]

    def _parts(self) -> tuple[bytes, bytes]:
        tail = bytes(self._tail[-self.tail_limit :]) if self.tail_limit else b""
        return bytes(self._head), tail

    @property
    def cut(self) -> int:
        head, tail = self._parts()
        return self.total - len(head) - len(tail)

    def render(self) -> tuple[str, int]:
        """(text, bytes cut): the text has the cut marker when anything was cut."""
        head, tail = self._parts()
        cut = self.total - len(head) - len(tail)
        if cut == 0:
            return (head + tail).decode("utf-8", "replace"), 0
        h = _incomplete_utf8_suffix(head)
        t = _continuation_prefix(tail)
        head, tail = head[: len(head) - h], tail[t:]
        cut += h + t
        text = head.decode("utf-8", "replace") + cut_marker(cut) + tail.decode("utf-8", "replace")
        return text, cut


def cap_text(text: str, limit: int) -> tuple[str, int]:
    """Cap an already built text to ``limit`` UTF-8 bytes, head and tail kept."""
    data = text.encode("utf-8", "replace")
    if len(data) <= limit:
        return text, 0
    ht = HeadTail(limit)
    ht.feed(data)
    return ht.render()
