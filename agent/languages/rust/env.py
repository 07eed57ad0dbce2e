"""A Rust repository's environment: a toolchain image (the user's ``--image``, else the host's rustup toolchain
copied in, else Debian trixie's rustc and cargo: toolchain.py says which and why) plus one layer holding the
crates its Cargo.lock pins, vendored on the host (crates.py) and read offline by cargo in the box, and the
variables that point cargo at them. The toolchain's cargo says its version once per image (cargo_version.py):
a repository without a Cargo.lock gets the lock path in the form that cargo takes (lockpath.py), and the
version is recorded (EnvInfo.toolchain) for the test command to follow.

The image is kept and recorded like Python's environments (agent/env/install/images.py): a second run on the
same lock and toolchain finds it by one record file and one inspect, with no network.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from agent.env.cancel import NEVER, Cancel
from agent.env.errors import EnvError
from agent.env.info import EnvInfo
from agent.env.install import images
from agent.env.install.layer import load_image
from agent.languages.rust import crates, lockpath, manifest
from agent.languages.rust.cargo_version import cargo_version
from agent.languages.rust.toolchain import CHOICE_VARIABLE, SUITE, choose

FORMAT = "rust-1"
BUILD_CACHE = "/tmp/codebox-cache"  # kept between test runs by the sandbox (sandbox/tools/run_test.py)
# cargo in the box: crates from the vendored copy (CARGO_HOME's config.toml), build output outside the
# read-only /repo, libtest's JSON output on a stable toolchain, never the network.
CARGO_ENV = {
    "CARGO_HOME": crates.CARGO_HOME,
    "CARGO_TARGET_DIR": f"{BUILD_CACHE}/cargo-target",
    "CARGO_NET_OFFLINE": "true",
    "CARGO_INCREMENTAL": "0",
    "CARGO_TERM_COLOR": "never",
    "RUSTC_BOOTSTRAP": "1",
}
Log = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


def toolchain_image(image: str | None, log: Log, backend: str = "docker", prefer: str | None = None) -> str:
    """The image cargo runs in (toolchain.py chooses it and says why)."""
    engine = images.EngineImages.connect(backend)
    try:
        return choose(image, engine, log, NEVER, prefer).image
    finally:
        engine.close()


def ensure_rust_env(repo: Path, image: str | None, backend: str, log: Log = _quiet, cancel: Cancel = NEVER,
                    repo_name: str = "") -> EnvInfo:
    """The environment image of the Rust repository ``repo`` (``image``: the user's toolchain image, None:
    codebox's); EnvError in one line for a dependency codebox will not fetch or a crate it cannot."""
    started = time.monotonic()
    why = manifest.refusal(repo)
    if why:
        raise EnvError(why, usage=True)
    pinned = crates.read_lock(repo)
    lockless = pinned is None
    if pinned is None:  # resolved today by the host's cargo, in a scratch copy (lockfile.py)
        from agent.languages.rust.lockfile import generate

        log("the repository has no Cargo.lock: resolving one on the host (cargo generate-lockfile, in a copy)")
        pinned = crates.parse_lock(generate(repo), "the resolved Cargo.lock")
    engine = images.EngineImages.connect(backend)
    try:
        chosen = choose(image, engine, log, cancel)
        log(chosen.note)
        base = chosen.image
        attrs = engine.inspect(base)
        if attrs is None:
            raise EnvError(f"the image {base} is not in {backend}'s image store", usage=True)
        base_id = str(attrs.get("Id", ""))
        toolchain = cargo_version(engine.store, base, base_id, cancel, log)
        notes = [chosen.note]
        env = dict(CARGO_ENV)
        if lockless:
            form = lockpath.lock_path(toolchain)
            if form is None:  # codebox's choice was the host's rustup toolchain (Debian's cargo takes the flag)
                other = "" if image else f"{CHOICE_VARIABLE}=debian chooses Debian {SUITE}'s cargo 1.85"
                raise EnvError(lockpath.refusal(toolchain, other), usage=True)
            env.update(form.env)
            notes.append(_lock_note(toolchain, form))
            log(notes[-1])
        # The toolchain is the base image's id; a lockless repository adds its lock path's variables, if any.
        key = hashlib.sha256(json.dumps({"format": FORMAT, "base": base_id, "crates": sorted(pinned),
                                         "env": env, **images.engine_part(engine.name)},
                                        sort_keys=True).encode()).hexdigest()[:32]
        with images.building("env", key, cancel):
            entry = images.lookup(engine, "env", key)
            if entry is None:
                entry = _build(engine, base, base_id, key, pinned, env, toolchain, log, cancel, repo_name)
                built = True
            else:
                built = False
    finally:
        engine.close()
    return EnvInfo(image=entry.tag, image_id=entry.id, base_image=base, built=built,
                   installed=list(entry.packages), notes=[*entry.notes, *notes], toolchain=toolchain,
                   duration_s=round(time.monotonic() - started, 3))


def _lock_note(toolchain: str, form: lockpath.LockPath) -> str:
    how = ("resolver.lockfile-path, set in the image's environment" if form.env
           else "--lockfile-path on the test command")
    return f"rust: no Cargo.lock committed: {toolchain.split(' (')[0]} writes it to {lockpath.LOCK} ({how})"


def _build(engine: images.EngineImages, base: str, base_id: str, key: str, pinned: list[crates.Crate],
           env: dict[str, str], toolchain: str, log: Log, cancel: Cancel, repo_name: str) -> images.Entry:
    log(f"vendoring the {len(pinned)} crates Cargo.lock pins (from crates.io, or codebox's cache)")
    files = crates.download(pinned, cancel)
    with tempfile.TemporaryDirectory(prefix="codebox-crates-") as tmp:
        layer = crates.write_layer(Path(tmp) / "crates.tar", files, cancel)
        tag = f"{images.REPOSITORY}:rust-{key[:16]}"
        labels = {images.LABEL_KIND: "env-rust", images.LABEL_REPO: repo_name}
        image_id = load_image(engine.store, base, [layer], tag, labels, cancel, env=env)
    note = f"rust: {len(pinned)} crates vendored from Cargo.lock, toolchain {base}"
    entry = images.Entry(kind="env", key=key, id=image_id, tag=tag, repo=repo_name, base=base, base_id=base_id,
                         packages=[f"{c.name}=={c.version}" for c in pinned], notes=[note], engine=engine.name,
                         toolchain=toolchain)
    images.write(entry)
    return entry
