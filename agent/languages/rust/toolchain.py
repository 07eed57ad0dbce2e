"""Which Rust toolchain a crate's environment stands on, said in one line: the user's ``--image``; else the
host's rustup toolchain copied into an image (rustup.py) when this machine has one, because its rustc is the
one the user builds with and spends a third of the CPU of Debian's (a hello world: 60 ms against 180 ms; rustdoc
recompiles every doc test on every run, so a cached ``cargo test`` pays it each time); else Debian trixie's
rustc and cargo packages, which any machine that reaches Debian's mirror can build.

``CODEBOX_RUST_TOOLCHAIN=debian`` (or ``rustup``) forces one of the two.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from agent.env.cancel import NEVER, Cancel
from agent.env.errors import EnvError
from agent.env.install import images
from agent.languages.rust import rustup
from agent.languages.toolchain_store import toolchain_image

SUITE = "trixie"  # rustc 1.85: bookworm's 1.63 cannot read version-4 lock files
PACKAGES = ["cargo", "rustc", "libc6-dev"]  # libc-dev, a virtual package debootstrap cannot choose
CHOICE_VARIABLE = "CODEBOX_RUST_TOOLCHAIN"
CHOICES = ("rustup", "debian")
Log = Callable[[str], None]


class Chosen(NamedTuple):
    image: str
    note: str  # "rust toolchain: ... because ..." (one line)


def choose(image: str | None, engine: images.EngineImages, log: Log, cancel: Cancel = NEVER,
           prefer: str | None = None) -> Chosen:
    """The toolchain image a crate's environment is built on, and why (``prefer``: "rustup" or "debian",
    else CODEBOX_RUST_TOOLCHAIN, else rustup's when the host has it)."""
    if image:
        return Chosen(image, f"rust toolchain: the image {image}, because --image names it")
    prefer = prefer or os.environ.get(CHOICE_VARIABLE, "").strip().lower() or None
    if prefer not in (None, *CHOICES):
        raise EnvError(f"{CHOICE_VARIABLE}={prefer!r}: it is one of {', '.join(CHOICES)}", usage=True)
    if prefer != "debian":
        found, why = rustup.find_host_toolchain()
        if found is not None:
            tag = rustup_image(found, engine, log, cancel)
            return Chosen(tag, f"rust toolchain: the host's rustup {found.name} copied into {tag}, because "
                               f"{why} is on this machine (its rustc spends a third of the CPU of Debian's)")
        if prefer == "rustup":
            raise EnvError(f"{CHOICE_VARIABLE}=rustup, but {why}", usage=True)
        reason = why
    else:
        reason = f"{CHOICE_VARIABLE}=debian"
    return Chosen(debian_image(engine, log, cancel),
                  f"rust toolchain: Debian {SUITE}'s rustc and cargo, because {reason}")


def debian_image(engine: images.EngineImages, log: Log, cancel: Cancel = NEVER) -> str:
    """Debian trixie's rustc and cargo (built once per machine, in ``engine``'s store)."""
    return toolchain_image(engine, "rust", SUITE, PACKAGES, log, cancel=cancel)


def rustup_image(toolchain: rustup.HostToolchain, engine: images.EngineImages, log: Log,
                 cancel: Cancel = NEVER) -> str:
    """The tag of the image holding ``toolchain`` on Debian's gcc, made now in ``engine``'s store unless it is there
    (its tag names the rustc version and a hash of the toolchain's files and of the linker image, whose copy in
    Podman's store keeps Docker's id: one tag in both)."""
    linker = toolchain_image(engine, "rust-linker", rustup.LINKER_SUITE, rustup.LINKER_PACKAGES, log, cancel=cancel)
    attrs = engine.inspect(linker)
    if attrs is None:
        raise EnvError(f"the image {linker} is not in {engine.name}'s image store", usage=True)
    key = hashlib.sha256(f"{toolchain.stamp()}\n{attrs.get('Id', '')}".encode()).hexdigest()[:12]
    tag = f"{rustup.REPOSITORY}:rustup-{toolchain.version_word()}-{key}"
    if engine.inspect(tag) is not None:
        return tag
    from agent.containers.image import build_lock
    from agent.env.install.layer import load_image

    with build_lock(log):
        if engine.inspect(tag) is not None:
            return tag
        version, commit = rustup.rustc_version(toolchain)
        log(f"copying the host's rustup toolchain {toolchain.name} ({version}) into an image, once")
        with rustup.scratch() as tmp:
            layer, files = rustup.write_layer(toolchain, Path(tmp) / "toolchain.tar", cancel)
            labels = {rustup.LABEL_SOURCE: f"rustup {toolchain.name}", rustup.LABEL_VERSION: version,
                      rustup.LABEL_COMMIT: commit, rustup.LABEL_FILES: files}
            load_image(engine.store, linker, [layer], tag, labels, cancel)
    return tag

