"""The build-tools image: the base image with a C compiler and the Python headers, for projects that compile.

A project's own build (its extensions) runs in a container from this image; the compiler never
reaches the environment image itself, whose project layer holds only ``/opt/codebox-project``.
The debs are downloaded on the host and installed by root in a box that runs no package or
repository code; the image is kept (and recorded) per base image and package set, so only
the first compiled project on a base pays for it (dpkg of gcc takes ~10 s on fuse-overlayfs).
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from collections.abc import Callable
from pathlib import Path

from agent.env.cancel import NEVER, Cancel, check
from agent.env.install import images
from agent.env.install.box import DPKG_CAPS, Box, BuildLimits, Deadline, Mount
from agent.env.install.layer import load_image
from agent.env.resolve import apt
from agent.env.resolve.resolve import Target
from agent.sandboxes.build import Builder

FORMAT = "tools-1"
COMPILER_APT = ["gcc", "g++", "libc6-dev"]
BUILD = "/tmp/codebox-build"


def headers_packages(python: str) -> list[str]:
    """Debian's package with Python.h for this Python. Unpacked, not installed: the mirror's
    version may be a Debian revision ahead of the image's interpreter (same headers), and
    installing it would drag an interpreter upgrade along."""
    major, minor = python.split(".")[:2]
    return [f"libpython{major}.{minor}-dev"]


def ensure_tools(client: Builder, engine: images.Engine, base_image: str, base_id: str, target: Target,
                 installed_debs: set[str], limits: BuildLimits, deadline: Deadline, cancel: Cancel = NEVER,
                 log: Callable[[str], None] = lambda _: None, repo: str = "") -> images.Entry:
    """The build-tools image of this base: recorded, or built now (and recorded)."""
    headers = [] if target.headers else headers_packages(target.python)
    key = hashlib.sha256(json.dumps({"format": FORMAT, "base": base_id, "apt": COMPILER_APT, "headers": headers,
                                     **images.engine_part(engine.name)}, sort_keys=True).encode()).hexdigest()[:32]
    with images.building("tools", key, cancel):
        found = images.lookup(engine, "tools", key)
        if found is not None:
            return found
        log(f"making the build-tools image (a C compiler{' and Python headers' if headers else ''}) for "
            f"{base_image}, once")
        with tempfile.TemporaryDirectory(prefix="codebox-tools-") as tmp:
            folder = Path(tmp)
            debs = apt.download_debs(COMPILER_APT, installed_debs, folder / "debs", cancel, target.debian)
            if headers:
                apt.download_only(headers, folder / "headers", cancel, target.debian)
            (folder / "headers").mkdir(exist_ok=True)
            for path in [folder, *folder.rglob("*")]:
                path.chmod(0o755 if path.is_dir() else 0o644)
            check(cancel)
            mounts = [Mount(host=str(folder / "debs"), target=f"{BUILD}/debs"),
                      Mount(host=str(folder / "headers"), target=f"{BUILD}/headers")]
            with Box(client, base_image, "tools", mounts, limits, deadline, cancel, caps=DPKG_CAPS, log=log) as box:
                layer = folder / "tools.tar"
                box.root(_script(bool(debs)), "build tools", stdout_to=layer)
            tag = f"{images.REPOSITORY}-tools:{key[:16]}"
            labels = {images.LABEL_KIND: "env-tools", images.LABEL_REPO: repo}
            image_id = load_image(client, base_image, [layer], tag, labels)
        entry = images.Entry(kind="tools", key=key, id=image_id, tag=tag, base=base_image, base_id=base_id,
                             python=target.python, apt=[*debs, *headers], engine=engine.name)
        images.write(entry)
        return entry


def _script(with_debs: bool) -> str:
    install = (f"dpkg --force-unsafe-io -i {BUILD}/debs/*.deb > /tmp/codebox-dpkg.log 2>&1 "
               "|| { tail -n 30 /tmp/codebox-dpkg.log; exit 1; }\n") if with_debs else ""
    # The headers are unpacked, not installed; tar keeps /lib -> usr/lib and its kind as they are.
    return f"""set -eu
exec 3>&1 1>&2
touch /tmp/codebox-marker
{install}for deb in {BUILD}/headers/*.deb; do
  [ -f "$deb" ] && dpkg-deb --fsys-tarfile "$deb" | tar -x --keep-directory-symlink --no-same-owner -C /
done
find / -xdev \\( -path /proc -o -path /sys -o -path /dev -o -path /tmp -o -path /etc/hosts \\
  -o -path /etc/hostname -o -path /etc/resolv.conf \\) -prune -o -cnewer /tmp/codebox-marker -print \\
  | sed -e 's#^/##' -e '/^$/d' > /tmp/codebox-tools-files
echo "codebox: build tools ready"
tar --no-recursion -cf - -C / -T /tmp/codebox-tools-files >&3
"""
