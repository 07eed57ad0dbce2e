"""The sandbox image for a Python version: a chain of sources, each tried in turn, named in the error when all fail.

1. an image the user registered for that version (`codebox image python 3.9 --image NAME`, or the
   ``python_images`` setting), taken as it is, as ``--image`` is;
2. a Debian suite that ships it, built offline as codebox's own base is (``build_base.sh``: debootstrap,
   minbase, ``docker import``), with ``Dockerfile.sandbox`` on it (network none): bullseye 3.9,
   bookworm 3.11 (codebox's default image), trixie 3.13; built once, reused by tag;
3. the host's own CPython build of that minor (pyenv's, uv's or /usr/local's: host_pythons.py) copied into an
   image on the host's Debian suite, offline (host_python_image.py); after a suite that ships the minor (Debian's
   build is the known-good one), before a registry (no packet leaves the machine for what it has already), and
   only when asked: ``CODEBOX_HOST_PYTHONS=1`` (the copy has no pytest of its own: host_pythons.enabled);
4. only when the user opts in (``--python-pull yes``, as `codebox image build --pull`), ``python:X.Y-slim``
   from a registry, as it is.

When no source has the exact minor, the nearest newer one that some source has stands in (3.6-3.8 -> 3.9,
3.10 -> 3.11 on a machine with no such host build) and the choice says so. Like ``image.py``, this talks to
Docker directly: these are the sandbox images themselves (docs/backends.md), not an environment.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from agent import python_versions as versions
from agent.containers import host_pythons, image
from agent.containers.host_pythons import HostPython
from agent.debian import host_mirror
from agent.defaults import DEFAULT_IMAGE

# The Debian suites reachable here and the CPython each ships (python3 in main).
SUITES: dict[str, str] = {"3.9": "bullseye", "3.11": "bookworm", "3.13": "trixie"}
# What a suite's Python needs beyond python3: uv does not take a 3.9 without distutils (Debian ships it apart),
# nor does the setuptools of that era.
SUITE_PACKAGES: dict[str, tuple[str, ...]] = {"bullseye": ("python3-distutils",)}
REGISTRY_IMAGE = "python:{minor}-slim"
Log = Callable[[str], None]


class PythonUnavailable(image.ImageError):
    """No source can provide the version: the message names every link tried. A usage error (exit 2)."""

    usage = True


@dataclass
class Provided:
    image: str
    minor: str
    link: str


def base_tag(suite: str) -> str:
    return f"codebox-base:{suite}"


def sandbox_tag(minor: str) -> str:
    """codebox's sandbox image of a suite's Python: the default image for bookworm's 3.11."""
    return DEFAULT_IMAGE if SUITES.get(minor) == "bookworm" else f"codebox-sandbox:py{minor}"


def _quiet(_: str) -> None:
    pass


@dataclass
class PythonImages:
    """The chain, with the user's registrations and opt-in; ``provide`` builds what it must once (by tag)."""

    registered: dict[str, str] = field(default_factory=dict)
    pull: bool = False
    log: Log = _quiet
    host: bool = field(default_factory=host_pythons.enabled)
    """Whether the host's own CPython builds are a link (CODEBOX_HOST_PYTHONS=1: they are)."""
    suites: dict[str, str] = field(default_factory=lambda: dict(SUITES))
    _done: dict[str, Provided] = field(default_factory=dict)
    _found: dict[str, HostPython] | None = None

    def available(self) -> set[str]:
        """The minors some link may provide without a registry (the registry's are asked by name)."""
        return set(self.registered) | set(self.suites) | set(self.host_pythons())

    def host_pythons(self) -> dict[str, HostPython]:
        """The host's CPython builds by minor (none when that link is off), looked for once."""
        if not self.host:
            return {}
        if self._found is None:
            self._found = host_pythons.find_host_pythons()
        return self._found

    def provide(self, wanted: str) -> Provided:
        """The sandbox image for ``wanted`` (X.Y), else for the nearest newer minor; PythonUnavailable naming
        each link tried."""
        if wanted in self._done:
            return self._done[wanted]
        tried: list[str] = []
        found = self._exact(wanted, tried)
        if found is None:
            stand_in = versions.nearest_newer(wanted, self.available() - {wanted})
            if stand_in is not None:
                found = self._exact(stand_in, tried)
        if found is None:
            raise PythonUnavailable(f"no Python {wanted} here: tried {'; '.join(tried)}; register an image with "
                                    f"`codebox image python {wanted} --image NAME`, or pass another --python")
        self._done[wanted] = found
        return found

    def _exact(self, minor: str, tried: list[str]) -> Provided | None:
        for link in (self._registered, self._suite, self._host, self._registry):
            found = link(minor, tried)
            if found is not None:
                return found
        return None

    def _registered(self, minor: str, tried: list[str]) -> Provided | None:
        name = self.registered.get(minor)
        if name is None:
            tried.append(f"registered image for {minor} (none)")
            return None
        if not image.image_exists(name):
            tried.append(f"registered image {name} (not in Docker's image store)")
            return None
        return Provided(image=name, minor=minor, link=f"the image registered for {minor}")

    def _suite(self, minor: str, tried: list[str]) -> Provided | None:
        suite = self.suites.get(minor)
        if suite is None:
            tried.append(f"Debian suite with {minor} (none ships it; bullseye 3.9, bookworm 3.11, trixie 3.13)")
            return None
        try:
            tag = ensure_suite_sandbox(minor, self.log)
        except image.ImageError as exc:
            tried.append(f"Debian {suite} ({exc})")
            return None
        return Provided(image=tag, minor=minor, link=f"Debian {suite}, built offline")

    def _host(self, minor: str, tried: list[str]) -> Provided | None:
        if not self.host:
            tried.append(f"host Python {minor} (off: {host_pythons.SWITCH}=1 turns it on)")
            return None
        found = self.host_pythons().get(minor)
        if found is None:
            tried.append(f"host Python {minor} (none under pyenv, uv or /usr/local)")
            return None
        from agent.containers.host_python_image import ensure_host_sandbox

        try:
            tag = ensure_host_sandbox(found, self.log)
        except image.ImageError as exc:
            tried.append(f"{found.describe()} ({exc})")
            return None
        return Provided(image=tag, minor=minor, link=f"{found.describe()}, copied in")

    def _registry(self, minor: str, tried: list[str]) -> Provided | None:
        name = REGISTRY_IMAGE.format(minor=minor)
        if not self.pull:
            tried.append(f"registry {name} (not opted in: --python-pull yes)")
            return None
        if image.image_exists(name) or image.pull(name, self.log):
            return Provided(image=name, minor=minor, link="a registry")
        tried.append(f"registry {name} (the pull failed)")
        return None


def ensure_suite_sandbox(minor: str, log: Log = _quiet) -> str:
    """codebox's sandbox image on the Debian suite that ships ``minor``: its base debootstrapped offline, then
    Dockerfile.sandbox on it (network none); each reused when it is there. Returns the tag."""
    suite = SUITES[minor]
    tag = sandbox_tag(minor)
    if tag == DEFAULT_IMAGE:
        return image.ensure_sandbox_image(tag, offline=None, log=log)
    labels = image.image_labels(tag)
    if labels is not None and image.stale(labels) is None:
        return tag  # there and fit: no wait for the machine's build lock (another image's build may hold it)
    with image.build_lock(log):
        labels = image.image_labels(tag)
        if labels is not None and image.stale(labels) is None:
            return tag
        base = base_tag(suite)
        log(f"building {tag}: Python {minor} from Debian {suite}, offline (once; reused after)")
        image.build_base(log=log, suite=suite, tag=base, mirror=host_mirror(), packages=SUITE_PACKAGES.get(suite, ()))
        return image.build_sandbox(base=base, tag=tag, log=log)

