"""The base image's Python and platform (and its Debian packages), asked once per image id in a network-none box."""

from __future__ import annotations

import contextlib
import os
import shlex
import threading
from typing import TYPE_CHECKING

from agent.env.cancel import NEVER, Cancel
from agent.env.errors import EnvError
from agent.env.install.box import Box, BuildLimits, Deadline
from agent.env.resolve.fetch import cache_dir
from agent.env.resolve.resolve import Target

if TYPE_CHECKING:
    from agent.sandboxes.build import Builder

PROBE_TIMEOUT_S = 120.0
_PROBE = (
    "import os, platform, sys, sysconfig; v = sys.version_info; libc = platform.libc_ver();"
    "h = os.path.exists(os.path.join(sysconfig.get_paths()['include'], 'Python.h'));"
    "print(f'{v[0]}.{v[1]}.{v[2]} {platform.machine()} {libc[0]} {libc[1]} {int(h)}');"
    # The interpreter, and whether the build user (the probe runs as it) could replace it or its standard library.
    "exe = os.path.realpath(sys.executable); lib = sysconfig.get_paths()['stdlib'];"
    "w = any(os.access(p, os.W_OK) for p in (exe, os.path.dirname(exe), lib));"
    "print('codebox-python', int(w), exe);"
    "r = open('/etc/os-release').read() if os.path.exists('/etc/os-release') else '';"
    "c = [l.split('=', 1)[1].strip().strip(chr(34)) for l in r.splitlines() if l.startswith('VERSION_CODENAME=')];"
    "print('codebox-debian', (c or [''])[0])"
)
# What codebox's own steps in a box run when the probe could not say (a Target made elsewhere): the image's python3
# found on root's folders only.
FALLBACK_PYTHON = "python3"


def probe(client: Builder, image: str, with_debs: bool = False,
          cancel: Cancel = NEVER) -> tuple[Target, set[str]]:
    """The image's Python version and platform (and its installed Debian packages), from a network-none run.

    Kept per image id in the cache folder: an image's Python does not change.
    """
    saved = cache_dir() / "probe-v4" / f"{_image_id(client, image).replace(':', '-')}.json"
    if not with_debs and saved.is_file():
        with contextlib.suppress(ValueError, OSError):
            return Target.model_validate_json(saved.read_text(encoding="utf-8")), set()
    target, debs = _probe(client, image, with_debs, cancel)
    with contextlib.suppress(OSError):  # whole or not at all (a cancel may come while it is written)
        saved.parent.mkdir(parents=True, exist_ok=True)
        partial = saved.with_name(f"{saved.name}.{os.getpid()}-{threading.get_ident()}.part")
        partial.write_text(target.model_dump_json(), encoding="utf-8")
        os.replace(partial, saved)
    return target, debs


def _image_id(client: Builder, name: str) -> str:
    from agent.errors import SandboxError

    try:
        found = client.inspect_image(name)
    except SandboxError as exc:
        raise EnvError(str(exc)) from exc
    if found is None:
        raise EnvError(f"the base image {name!r} is not there; build it with `codebox image build` "
                       "(or pass --image)")
    return str(found["Id"])


def _probe(client: Builder, image: str, with_debs: bool, cancel: Cancel) -> tuple[Target, set[str]]:
    script = f"python3 -c {shlex.quote(_PROBE)}"
    if with_debs:
        script += "; dpkg-query -W -f '${Package}\\n' 2>/dev/null || true"
    with Box(client, image, "probe", [], BuildLimits(), Deadline(PROBE_TIMEOUT_S), cancel, caps=[]) as box:
        output = box.run(script, "probe")
    lines = [line for line in output.splitlines() if not line.startswith(("codebox-python ", "codebox-debian"))]
    debian = next((line.split(" ", 1)[1].strip() for line in output.splitlines()
                   if line.startswith("codebox-debian ")), "")
    executable = _executable(output, image)
    try:
        version, machine, libc, libc_version, headers = [*lines[0].split(), "", "", "", ""][:5]
    except IndexError:
        raise EnvError(f"the image {image} has no working python3") from None
    if libc != "glibc":
        raise EnvError(f"the image {image} is not glibc-based ({libc or 'unknown libc'}); "
                       "environments need a glibc (manylinux) image")
    major, _, minor = libc_version.partition(".")
    platform = f"{machine}-manylinux_{major}_{minor}"
    installed = {line.strip() for line in lines[1:] if line.strip()}
    return Target(python=version, platform=platform, headers=headers == "1", executable=executable,
                  debian=debian), installed


def _executable(output: str, image: str) -> str:
    """The interpreter's absolute path the probe printed; EnvError when the build user could replace it."""
    line = next((line for line in output.splitlines() if line.startswith("codebox-python ")), "")
    _, writable, path = [*line.split(" ", 2), "", "", ""][:3]
    if writable == "1":
        raise EnvError(f"the image {image}'s python3 ({path}) or its standard library is writable by the build user "
                       "(uid 65534): codebox's own build steps could not trust it; use an image whose Python is root's")
    return path if path.startswith("/") else ""
