"""A dependency whose sdist declares its metadata dynamically (docopt, py 1.4, old coverage): its wheel built in a
box, and its metadata read from that wheel, never on the host.

The box holds no repository: only the sdist, the wheels of its build requirements (resolved on the host) and uv.
It runs the build-tools image (the base image with a C compiler and Python's headers, ``tools.py``), so an sdist
with C code compiles as pip compiles it where gcc is (typed_ast 1.4.1 has no wheel for 3.9); the compiler never
reaches an environment image, only the wheel does. The box has no network, no capability, no root step, and the
build's limits; the sdist's setup.py runs there as the build user. Out of it comes one file, the wheel, streamed
by a codebox step that first ends whatever the build left running; the host reads it as untrusted (its name, size,
METADATA and requirements checked). The wheel is kept in the cache under the sdist's sha256, the target Python and
platform, and the build requirements' lock digest, so the next environment that needs it builds nothing.
"""

from __future__ import annotations

import hashlib
import re
import tempfile
import zipfile
from email.parser import HeaderParser
from pathlib import Path
from typing import TYPE_CHECKING

from agent.env.cancel import NEVER, Cancel
from agent.env.errors import EnvError
from agent.env.install.box import REAP, SYSTEM_PATH, Box, BuildLimits, Deadline, Log, Mount, StepFailed
from agent.env.resolve.fetch import cache_dir, make_wheelhouse
from agent.env.resolve.resolve import Lock, Pin, Target

if TYPE_CHECKING:
    from agent.sandboxes.build import Builder

BUILD = "/tmp/codebox-build"
BUILT = "/tmp/codebox-built"
MAX_WHEEL_BYTES = 512 * 1024**2
FORMAT = "3"  # 3: built with a C compiler (the build-tools image); 2: a universal wheel named by all its tags
_WHEEL_NAME = re.compile(r"^[A-Za-z0-9_.]+-[A-Za-z0-9_.!+]+(-[0-9][A-Za-z0-9_]*)?-[A-Za-z0-9_.]+-[A-Za-z0-9_.]+"
                         r"-[A-Za-z0-9_.]+\.whl$")
_DIST_INFO = re.compile(r"^([A-Za-z0-9_.]+)-([A-Za-z0-9_.!+]+)\.dist-info/")


class BuiltWheel:
    """The wheel built from a dynamic sdist: its pin (a local file), its Requires-Dist."""

    def __init__(self, pin: Pin, requires_dist: list[str]) -> None:
        self.pin = pin
        self.requires_dist = requires_dist


def build_key(sdist: Pin, target: Target, build_lock: Lock) -> str:
    """The cache key: the sdist's hash, the Python it was built for, the lock of what built it."""
    material = f"{FORMAT}\n{sdist.sha256}\n{target.python}\n{target.platform}\n{build_lock.digest()}\n"
    return hashlib.sha256(material.encode()).hexdigest()[:32]


def build_wheel(client: Builder, base_image: str, target: Target, sdist: Pin, sdist_path: Path, build_lock: Lock,
                limits: BuildLimits, deadline: Deadline, cancel: Cancel = NEVER, log: Log = lambda _: None
                ) -> BuiltWheel:
    """The wheel of ``sdist`` for ``target``: from the cache, else built in a box of ``base_image`` (the build-tools
    image of the environment's base)."""
    from agent.env.install.images import held

    key = build_key(sdist, target, build_lock)
    folder = cache_dir() / "built" / key
    # One build per key at a time: two environments built together (eval prepares the next row's while one runs)
    # take the same wheel, so their locks, and their dependencies images, are one (a rebuilt wheel's bytes differ).
    with held(folder.with_suffix(".lock"), f"sdist-{key}", cancel):
        found = sorted(folder.glob("*.whl")) if folder.is_dir() else []
        if found:
            log(f"reusing the wheel built from {sdist.filename} ({found[0].name})")
            check_python_tag(found[0].name, target, sdist)
            return _read_wheel(found[0], sdist)
        return _build(client, base_image, target, sdist, sdist_path, build_lock, limits, deadline, cancel, log,
                      folder)


def _build(client: Builder, base_image: str, target: Target, sdist: Pin, sdist_path: Path, build_lock: Lock,
           limits: BuildLimits, deadline: Deadline, cancel: Cancel, log: Log, folder: Path) -> BuiltWheel:
    log(f"building {sdist.filename} in a box (network none, no repository): its metadata is dynamic")
    with tempfile.TemporaryDirectory(prefix="codebox-sdist-") as tmp:
        work = Path(tmp)
        wheels = make_wheelhouse(Lock(pins=build_lock.pins), work / "wheels", cancel)
        (wheels / sdist.filename).write_bytes(sdist_path.read_bytes())
        for path in [work, *work.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
        out = work / "built.whl"
        from agent.env.resolve.resolve import uv_binary

        mounts = [Mount(host=str(wheels), target=f"{BUILD}/wheels"), Mount(host=uv_binary(), target=f"{BUILD}/uv")]
        with Box(client, base_image, "sdist", mounts, limits, deadline, cancel, caps=[], log=log,
                 root_steps=False) as box:
            try:
                box.run(_build_script(target, sdist.filename), f"{sdist.filename} build", env={"PATH": SYSTEM_PATH})
            except StepFailed as exc:
                raise EnvError(f"{sdist.name} {sdist.version}: its sdist (dynamic metadata) did not build offline in "
                               f"the box; the end of its log:\n{exc.tail}", usage=True) from None
            box.run(_out_script(), "built wheel", env={"PATH": SYSTEM_PATH}, stdout_to=out, max_bytes=MAX_WHEEL_BYTES)
        name = _wheel_name(out, sdist)
        check_python_tag(name, target, sdist)
        folder.mkdir(parents=True, exist_ok=True)
        final = folder / name
        partial = folder / f".{name}.part"
        partial.write_bytes(out.read_bytes())
        partial.replace(final)
    return _read_wheel(final, sdist)


def _build_script(target: Target, filename: str) -> str:
    python = target.executable or "python3"
    return f"""set -eu
export UV_CACHE_DIR=/tmp/codebox-sdist-cache UV_NO_PROGRESS=1 NO_COLOR=1 HOME=/tmp
mkdir -p {BUILT}
echo "codebox: building {filename} from source (offline, in a box with no repository)"
{BUILD}/uv build --no-config --offline --no-index --find-links {BUILD}/wheels --wheel --python {python} \\
    -o {BUILT} "{BUILD}/wheels/{filename}"
"""


def _out_script() -> str:
    """codebox's own step after the sdist's code ran: the one wheel out on standard output."""
    return f"""{REAP}
set -- {BUILT}/*.whl
[ "$#" -eq 1 ] && [ -f "$1" ] || {{ echo "codebox: the build made $# wheels" >&2; exit 3; }}
exec /bin/cat -- "$1"
"""


def _wheel_name(path: Path, sdist: Pin) -> str:
    """The wheel's file name from its own dist-info and WHEEL tag (the box's file name is not trusted)."""
    try:
        with zipfile.ZipFile(path) as archive:
            dist_info = next((m.group(0)[:-1] for n in archive.namelist() if (m := _DIST_INFO.match(n))), None)
            if dist_info is None:
                raise EnvError(f"the wheel built from {sdist.filename} has no dist-info; refused", usage=True)
            wheel = archive.read(f"{dist_info}/WHEEL")[:65536].decode("utf-8", "replace")
    except (OSError, zipfile.BadZipFile, KeyError) as exc:
        raise EnvError(f"the wheel built from {sdist.filename} is not readable: {exc}", usage=True) from None
    tags = [tag.strip() for tag in HeaderParser().parsestr(wheel).get_all("Tag") or []]
    name = f"{dist_info[: -len('.dist-info')]}-{compressed_tag(tags)}.whl"
    if not tags or not _WHEEL_NAME.match(name):
        raise EnvError(f"the wheel built from {sdist.filename} names itself {name!r}; refused", usage=True)
    return name


def compressed_tag(tags: list[str]) -> str:
    """A wheel's tags as its file name writes them (PEP 425): a universal wheel's WHEEL lists ``py2-none-any`` and
    ``py3-none-any``, its name says ``py2.py3-none-any`` (named from the first alone, an installer on 3.x refuses
    it); each part's distinct values in their order, joined by dots."""
    parts = [tag.split("-") for tag in tags]
    if not parts or any(len(part) != 3 for part in parts):
        return tags[0] if tags else ""
    return "-".join(".".join(dict.fromkeys(part[i] for part in parts)) for i in range(3))


def check_python_tag(name: str, target: Target, sdist: Pin) -> None:
    """EnvError (usage) when the wheel says it is for another Python (pytest 2.6.0's setup.cfg tags its wheel
    py2): the installer would refuse it, as pip does."""
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename

    major, minor = target.python.split(".")[:2]
    fits = {f"py{major}", f"py{major}{minor}", f"cp{major}{minor}"}
    try:
        tags = parse_wheel_filename(name)[3]
    except InvalidWheelFilename:
        tags = frozenset()
    if not any(tag.interpreter in fits for tag in tags):
        found = ", ".join(sorted({t.interpreter for t in tags})) or "none"
        raise EnvError(f"{sdist.name} {sdist.version}: the wheel its sdist builds is for Python {found}, not "
                       f"{major}.{minor} ({name})", usage=True)


def _read_wheel(path: Path, sdist: Pin) -> BuiltWheel:
    from agent.env.resolve.fetch import sha256_of

    try:
        with zipfile.ZipFile(path) as archive:
            member = next((n for n in archive.namelist() if _DIST_INFO.match(n) and n.endswith(".dist-info/METADATA")
                           and n.count("/") == 1), None)
            text = archive.read(member)[:4 * 1024**2].decode("utf-8", "replace") if member else ""
    except (OSError, zipfile.BadZipFile) as exc:
        raise EnvError(f"the wheel built from {sdist.filename} is not readable: {exc}", usage=True) from None
    headers = HeaderParser().parsestr(text)
    requires = [r.strip() for r in headers.get_all("Requires-Dist") or [] if r.strip()]
    pin = Pin(name=sdist.name, version=sdist.version, url=path.as_uri(), sha256=sha256_of(path))
    return BuiltWheel(pin, requires)
