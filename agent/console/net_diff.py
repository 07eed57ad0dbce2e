"""The run's changes, once per file: composed from what each apply_patch reported.

The write container keeps each file's content from before the run's first patch to it, and
every apply_patch result carries, for the files it touched, the diff from that first content
to the file now (``data.net_diffs``; "" once a file is back as it was). The latest one per
file is the run's net change to it, in the order the run first touched the files. Results
without ``net_diffs`` (events written by an older codebox) fall back to the patches' own
diffs, one after the other. Pure data in, text out: the console and the viewer both use it.
"""

from __future__ import annotations

from typing import Any


class NetDiff:
    """Feed it apply_patch results' ``data`` (``add``); ``text()`` is the run's diff."""

    def __init__(self) -> None:
        self.files: dict[str, str | None] = {}  # path -> its net diff; None: not known (too large to keep)
        self.patches: list[str] = []  # patch by patch, for results without net diffs
        self.truncated = False

    def add(self, data: Any) -> None:
        if not isinstance(data, dict):
            return
        nets = data.get("net_diffs")
        if isinstance(nets, dict):
            for path, diff in nets.items():
                self.files[str(path)] = diff if isinstance(diff, str) else None
            self.truncated = self.truncated or bool(data.get("net_truncated"))
            return
        diff = data.get("diff")
        if isinstance(diff, str) and diff.strip():
            self.patches.append(diff if diff.endswith("\n") else diff + "\n")
            self.truncated = self.truncated or bool(data.get("diff_truncated"))

    def add_event(self, event_type: str, data: Any) -> None:
        """An event (its type and data): the results of applied patches count, nothing else."""
        if event_type != "tool.end" or not isinstance(data, dict) or data.get("name", "apply_patch") != "apply_patch":
            return
        if data.get("decision", "allow") != "allow" or data.get("is_error"):
            return
        self.add(data.get("data"))

    @property
    def unknown(self) -> list[str]:
        """Files whose first content the sandbox could not keep: their net change is not shown."""
        return [path for path, diff in self.files.items() if diff is None]

    @property
    def by_patch(self) -> bool:
        """True when the diff is the patches' own, one after the other (older event files)."""
        return bool(self.patches) and not self.files

    def text(self) -> str:
        nets = "".join(d if d.endswith("\n") else d + "\n" for d in self.files.values() if d)
        return nets + "".join(self.patches)
