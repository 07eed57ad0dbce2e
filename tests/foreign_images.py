"""Images that are not codebox's, built offline from Debian's own packages (no registry), for the
"any image" tests: the tools must run in each, on codebox's injected runtime.

- busybox: ``FROM scratch`` with Debian's busybox-static and nothing else (no python, no libc,
  no /repo, no /usr);
- musl: the busybox one plus Debian's musl (its loader /lib/ld-musl-x86_64.so.1): a musl image;
- bullseye: ``debootstrap --variant=minbase bullseye`` with python3 (CPython 3.9, glibc 2.31): codebox's
  offline bullseye base, which its Python images use too (no /repo in it);
- pypy: codebox's own base with Debian's pypy3 as the only python3 (CPython removed);

and three that codebox must refuse before the first model request: /repo a file, no /bin/sh, arm64.

Each is tagged ``codebox-test-<name>:<key>``, the key a hash of its builder's source (and BUILD_FORMAT,
for the helpers they share): a second build finds the tag and reuses it (CI builds each once per change). Needs root
(debootstrap), apt-get (``apt-get download``: a few packages) and the docker CLI.
"""

from __future__ import annotations

import fcntl
import hashlib
import inspect
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path

BUILD_FORMAT = "1"  # bump when a helper the builders share changes what they make
FOREIGN = ("busybox", "musl", "bullseye", "pypy")
LABEL = "codebox.test-image=foreign"


class Unbuildable(Exception):
    """This machine cannot build the image (no root, no apt, no Debian mirror): the message says which."""


def tag_of(name: str) -> str:
    source = inspect.getsource(BUILDERS[name])
    return f"codebox-test-{name}:{hashlib.sha256((BUILD_FORMAT + source).encode()).hexdigest()[:12]}"


def _run(argv: list[str], **kwargs: object) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, **kwargs)  # type: ignore[call-overload]
    if done.returncode != 0:
        raise Unbuildable(f"{' '.join(argv[:3])} … failed ({done.returncode}): {(done.stderr or done.stdout)[-600:]}")
    return str(done.stdout)


def _exists(tag: str) -> bool:
    return subprocess.run(["docker", "image", "inspect", tag], capture_output=True).returncode == 0


def _debs(folder: Path, *packages: str) -> list[Path]:
    """Debian's .deb files of ``packages`` (this host's apt sources), downloaded into ``folder``."""
    if shutil.which("apt-get") is None:
        raise Unbuildable("no apt-get on this machine: the foreign images are made of Debian packages")
    try:
        _run(["apt-get", "download", *packages], cwd=folder)
    except Unbuildable:
        _run(["apt-get", "update", "-qq"])
        _run(["apt-get", "download", *packages], cwd=folder)
    return sorted(folder.glob("*.deb"))


def _unpack(deb: Path, root: Path) -> None:
    _run(["dpkg-deb", "-x", str(deb), str(root)])


def _import(root: Path, tag: str, *changes: str) -> None:
    """``docker import`` a folder as an image, with PATH and a label."""
    argv = ["docker", "import", "--change", "ENV PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
            "--change", f"LABEL {LABEL}"]
    for change in changes:
        argv += ["--change", change]
    tar = subprocess.Popen(["tar", "--numeric-owner", "-C", str(root), "-c", "."], stdout=subprocess.PIPE)
    try:
        _run([*argv, "-", tag], stdin=tar.stdout)
    finally:
        if tar.stdout is not None:
            tar.stdout.close()
        tar.wait()


def _busybox_root(work: Path) -> Path:
    """A root with busybox-static at /bin/busybox and a link for each of its applets in /bin."""
    debs = work / "debs"
    debs.mkdir()
    (deb,) = _debs(debs, "busybox-static")
    unpacked = work / "unpacked"
    _unpack(deb, unpacked)
    root = work / "root"
    (root / "bin").mkdir(parents=True)
    shutil.copy2(unpacked / "bin" / "busybox", root / "bin" / "busybox")
    applets = _run([str(root / "bin" / "busybox"), "--list"]).split()
    for applet in applets:
        if applet != "busybox":
            (root / "bin" / applet).symlink_to("busybox")
    (root / "tmp").mkdir(mode=0o1777)
    (root / "tmp").chmod(0o1777)
    return root


def build_busybox(work: Path, tag: str) -> None:
    _import(_busybox_root(work), tag, 'CMD ["sh"]')


def build_musl(work: Path, tag: str) -> None:
    root = _busybox_root(work)
    debs = work / "musl-debs"
    debs.mkdir()
    (deb,) = _debs(debs, "musl")
    _unpack(deb, root)  # /usr/lib/x86_64-linux-musl/libc.so and the /lib/ld-musl-x86_64.so.1 link to it
    if not (root / "lib" / "ld-musl-x86_64.so.1").exists():
        raise Unbuildable("Debian's musl package has no /lib/ld-musl-x86_64.so.1 here")
    _import(root, tag, 'CMD ["sh"]')


def build_bullseye(work: Path, tag: str) -> None:
    """codebox's offline base of Debian bullseye (debootstrap --variant=minbase: python3 3.9, glibc 2.31), the one
    codebox's Python images build on (agent/containers/pythons.py): reused when CI built it already."""
    from agent.containers.image import ImageError, build_base
    from agent.containers.pythons import SUITE_PACKAGES, base_tag

    if os.geteuid() != 0:
        raise Unbuildable("debootstrap needs root")
    try:
        build_base(log=lambda _msg: None, suite="bullseye", tag=base_tag("bullseye"),
                   packages=SUITE_PACKAGES["bullseye"])
    except ImageError as exc:
        raise Unbuildable(str(exc)) from exc
    _run(["docker", "tag", base_tag("bullseye"), tag])


def build_pypy(work: Path, tag: str) -> None:
    """codebox's offline base with pypy3 from .debs installed offline (dpkg, no network), and CPython gone."""
    from agent.containers.image import BASE_IMAGE, build_base

    if not _exists(BASE_IMAGE):
        build_base(log=lambda _msg: None)
    context = work / "context"
    context.mkdir()
    _debs(context, "pypy3", "pypy3-lib")
    (context / "Dockerfile").write_text(
        f"FROM {BASE_IMAGE}\n"
        "COPY *.deb /tmp/debs/\n"
        # pypy3 pre-depends on pypy3-lib: configured first
        "RUN dpkg -i /tmp/debs/pypy3-lib_*.deb && dpkg -i /tmp/debs/pypy3_*.deb && rm -rf /tmp/debs \\\n"
        " && rm -f /usr/bin/python3 /usr/bin/python3.* /usr/local/bin/python3 \\\n"
        " && ln -s /usr/bin/pypy3 /usr/local/bin/python3\n"
        f"LABEL {LABEL}\n"
    )
    _run(["docker", "build", "--network", "none", "-q", "-t", tag, str(context)])


def build_repo_is_a_file(work: Path, tag: str) -> None:
    """busybox with a FILE at /repo: no repository can be mounted there (the image check says so)."""
    root = _busybox_root(work)
    (root / "repo").write_text("not a folder\n")
    _import(root, tag, 'CMD ["sh"]')


def build_no_shell(work: Path, tag: str) -> None:
    """busybox at /usr/bin/busybox and its `true` only: no /bin/sh (a #! /bin/sh script cannot run)."""
    root = work / "root"
    (root / "usr" / "bin").mkdir(parents=True)
    (work / "b").mkdir()
    shutil.move(str(_busybox_root(work / "b") / "bin" / "busybox"), root / "usr" / "bin" / "busybox")
    (root / "usr" / "bin" / "true").symlink_to("busybox")
    _import(root, tag, 'CMD ["true"]')


def build_arm64(work: Path, tag: str) -> None:
    """An image that says it is for linux/arm64 (one empty layer), loaded as `docker save` writes it."""
    layer = work / "layer.tar"
    with tarfile.open(layer, "w") as tar:
        folder = tarfile.TarInfo("bin")
        folder.type = tarfile.DIRTYPE
        tar.addfile(folder)
    diff_id = "sha256:" + hashlib.sha256(layer.read_bytes()).hexdigest()
    config = json.dumps({"architecture": "arm64", "os": "linux", "config": {"Cmd": ["/bin/true"],
                         "Labels": {LABEL.split("=")[0]: LABEL.split("=")[1]}},
                         "rootfs": {"type": "layers", "diff_ids": [diff_id]}}).encode()
    config_name = hashlib.sha256(config).hexdigest() + ".json"
    (work / config_name).write_bytes(config)
    (work / "manifest.json").write_text(json.dumps([{"Config": config_name, "RepoTags": [tag],
                                                     "Layers": ["layer.tar"]}]))
    archive = work / "image.tar"
    with tarfile.open(archive, "w") as tar:
        for name in ("manifest.json", config_name, "layer.tar"):
            tar.add(work / name, arcname=name)
    _run(["docker", "load", "-q", "-i", str(archive)])


BUILDERS: dict[str, Callable[[Path, str], None]] = {
    "busybox": build_busybox, "musl": build_musl, "bullseye": build_bullseye, "pypy": build_pypy,
    "repo-is-a-file": build_repo_is_a_file, "no-shell": build_no_shell, "arm64": build_arm64,
}


def foreign_image(name: str) -> str:
    """The tag of the foreign image ``name``, built the first time (one build at a time per machine)."""
    tag = tag_of(name)
    if _exists(tag):
        return tag
    if shutil.which("docker") is None:
        raise Unbuildable("no docker CLI")
    lock = Path(tempfile.gettempdir()) / f"codebox-test-image-{name}.lock"
    with open(lock, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        if _exists(tag):
            return tag
        work = Path(tempfile.mkdtemp(prefix=f"codebox-foreign-{name}-", dir=os.environ.get("TMPDIR", "/var/tmp")))
        try:
            BUILDERS[name](work, tag)
        finally:
            subprocess.run(["rm", "-rf", "--one-file-system", str(work)], capture_output=True)
    return tag
