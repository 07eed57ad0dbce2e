"""The version of a toolchain image's cargo (``cargo -V``'s line), asked once per image id in a network-none box
that runs nothing as root and mounts nothing of the repository; kept in the cache folder (an image's cargo does
not change). Which form of the lock path a crate without a Cargo.lock gets follows from it (lockpath.py).
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from agent.env.cancel import NEVER, Cancel
from agent.env.errors import EnvError
from agent.env.install.box import Box, BuildLimits, Deadline, StepFailed
from agent.env.resolve.fetch import cache_dir

if TYPE_CHECKING:
    from agent.sandboxes.build import Builder

TIMEOUT_S = 120.0
FOLDER = "cargo-version-v1"
_MAX_LINE = 200
Log = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


def cargo_version(client: Builder, image: str, image_id: str, cancel: Cancel = NEVER, log: Log = _quiet) -> str:
    """``cargo -V``'s first line in ``image`` (whose id is ``image_id``); EnvError in one line when it has no cargo
    that runs."""
    saved = cache_dir() / FOLDER / f"{image_id.replace(':', '-')}.txt"
    with contextlib.suppress(OSError, UnicodeDecodeError):
        line = saved.read_text(encoding="utf-8").strip()
        if line:
            return line
    log(f"asking the cargo of {image} its version (cargo -V), once per image")
    line = _ask(client, image, cancel)
    with contextlib.suppress(OSError):  # whole or not at all
        saved.parent.mkdir(parents=True, exist_ok=True)
        partial = saved.with_name(f"{saved.name}.{os.getpid()}-{threading.get_ident()}.part")
        partial.write_text(line + "\n", encoding="utf-8")
        os.replace(partial, saved)
    return line


def _ask(client: Builder, image: str, cancel: Cancel) -> str:
    with Box(client, image, "cargo-version", [], BuildLimits(), Deadline(TIMEOUT_S), cancel, caps=[],
             root_steps=False) as box:
        try:
            output = box.run("cargo -V", "cargo -V")
        except StepFailed as exc:
            said = next((line for line in reversed(exc.tail.splitlines()) if line.strip()), "no output")
            raise EnvError(f"the toolchain image {image}'s cargo did not run (`cargo -V` exited {exc.status}: "
                           f"{said.strip()[:_MAX_LINE]})", usage=True) from None
    line = next((line.strip() for line in output.splitlines() if line.startswith("cargo ")), "")
    if not line:
        said = next((line for line in output.splitlines() if line.strip()), "nothing")
        raise EnvError(f"the toolchain image {image}'s `cargo -V` said {said.strip()[:_MAX_LINE]!r}, not its version",
                       usage=True)
    return line[:_MAX_LINE]
