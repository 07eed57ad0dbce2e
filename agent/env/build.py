"""Make (or reuse) the environment image for a repository: ``codebox-env:<hash>``.

1. Read what the repository declares (host, parse only). Nothing declared: the base image.
2. Cache lookup by the inputs (base image id, declared requirements, options, format):
   one image list, no network.
3. Probe the base image's Python (a network-none container), resolve with uv on the host
   for that Python (wheels only), download the wheels (and ``--apt`` debs) on the host.
4. Install in a container from the base image with ``network_mode="none"``: the wheelhouse,
   the debs, uv and a staging folder mounted read-only. uv unpacks the wheels into a venv at
   /opt/codebox-env (no wheel runs code when installed); an editable install of /repo is
   two files (``project.py``). What the install changed becomes one layer on top of the
   base's, loaded as the image, with the venv first on PATH.
   A dependency with no wheel for the image is locked as its sdist (metadata read statically,
   ``sdists.py``); its build requirements are resolved as wheels on the host, and it is built
   into a wheel by ``uv build`` in the same network-none container, before the install.

The image is tagged by a hash of the base image id, the lock and the format version; a
failed build leaves no image and no container behind. A build is cancellable (``cancel``,
``cancel.py``): between stages, and within ~0.1 s while it waits on uv, a container or a
download; a cancelled build leaves nothing behind either and raises EnvCancelled.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shlex
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import docker
import docker.errors
from packaging.utils import canonicalize_name
from pydantic import BaseModel, Field

from agent.containers.docker_client import connect
from agent.containers.leftovers import owner_labels, remove_container
from agent.env import apt, extensions, images
from agent.env.cancel import NEVER, Cancel, EnvCancelled, check, holding, wait_container
from agent.env.declared import DEFAULT_RUNNER, NO_DEPENDENCIES, Declared, read_declared
from agent.env.errors import EnvError
from agent.env.fetch import cache_dir, make_wheelhouse
from agent.env.layer import LAYER_PATH, VENV, copy_layer, load_image
from agent.env.project import console_scripts, editable_files
from agent.env.resolve import IndexConfig, Lock, Target, check_python, resolve, uv_binary
from agent.env.sdists import build_requirements, resolve_with_sdists
from agent.env.source_policy import check_sources
from agent.protocol import EnvInfo

FORMAT_VERSION = "1"
# Where the build container sees its inputs; under /tmp, which a sandbox covers with its tmpfs.
BUILD_MOUNT = "/tmp/codebox-build"
BUILD_TIMEOUT_S = 1800.0
LOG_TAIL_LINES = 25
BUILT = "/tmp/codebox-built"  # wheels built from sdists in the install container
SDIST_FAILED = 5  # the install script's exit status when an sdist does not build
ROLE_BUILD = "env-build"
Log = Callable[[str], None]

_PROBE = (
    "import os, platform, sys, sysconfig; v = sys.version_info; libc = platform.libc_ver();"
    "h = os.path.exists(os.path.join(sysconfig.get_paths()['include'], 'Python.h'));"
    "print(f'{v[0]}.{v[1]}.{v[2]} {platform.machine()} {libc[0]} {libc[1]} {int(h)}')"
)
_key_locks: dict[str, threading.Lock] = {}
_key_locks_guard = threading.Lock()


class EnvRequest(BaseModel):
    """What to build an environment from."""

    repo: Path
    base_image: str = "codebox-sandbox:latest"
    extras: list[str] = Field(default_factory=list)
    groups: list[str] = Field(default_factory=list)
    requirements: list[str] = Field(default_factory=list)
    apt: list[str] = Field(default_factory=list)
    index: IndexConfig = Field(default_factory=IndexConfig.from_environ)
    runner: str | None = DEFAULT_RUNNER
    # Resolve what a repository's own package sources would serve from the user's index (source_policy.py).
    allow_public_fallback: bool = False


def _quiet(_: str) -> None:
    pass


def ensure_env(request: EnvRequest, log: Log = _quiet, cancel: Cancel = NEVER) -> EnvInfo:
    """The environment image for ``request``: reused when its inputs are unchanged, else built.

    ``cancel`` (a CancelToken) stops a build midway: EnvCancelled, and nothing left behind. A
    KeyboardInterrupt in this thread (a caller with no signal handler) is one too, once the
    build's uv and containers are gone.
    """
    check(cancel)
    try:
        return _ensure(request, log, cancel)
    except KeyboardInterrupt:
        raise EnvCancelled("interrupted") from None


def _ensure(request: EnvRequest, log: Log, cancel: Cancel) -> EnvInfo:
    start = time.monotonic()
    declared = read_declared(request.repo, request.extras, request.groups, request.requirements, request.runner)
    declared.notes += check_sources(declared, request.index, request.allow_public_fallback)
    apt.check_names(request.apt)
    if not declared.needs_env and not request.apt:
        return EnvInfo(image=request.base_image, base_image=request.base_image, notes=[NO_DEPENDENCIES])
    client = connect(EnvError)
    try:
        base_id = _image_id(client, request.base_image)
        key = inputs_key(base_id, declared, request)
        with holding(_lock_for(key), cancel):  # another task may build the same inputs
            cached = images.find_env_image(client, key)
            if cached is not None:
                log(f"reusing {cached.tag} ({cached.packages} packages)")
                info = _info(cached, request.base_image, declared, built=False, start=start)
            else:
                log(f"building the environment for {request.repo} on {request.base_image} "
                    f"({len(declared.requirements)} declared requirements)")
                info = _build(client, request, declared, base_id, key, log, start, cancel)
    finally:
        client.close()
    check(cancel)  # a cancel during the last step (the image load) is still a cancel; the image is whole
    return info


def _lock_for(key: str) -> threading.Lock:
    """One build per inputs at a time in this process (a batch of tasks on one repo builds once)."""
    with _key_locks_guard:
        return _key_locks.setdefault(key, threading.Lock())


def _image_id(client: docker.DockerClient, name: str) -> str:
    try:
        return str(client.images.get(name).id)
    except docker.errors.ImageNotFound:
        raise EnvError(f"the base image {name!r} is not there; build it with `codebox image build` "
                       "(or pass --image)") from None
    except docker.errors.APIError as exc:
        raise EnvError(f"Docker could not look up {name!r}: {exc}") from exc


def inputs_key(base_id: str, declared: Declared, request: EnvRequest) -> str:
    """The cache key: everything a build reads, so equal keys make equal environments."""
    material = {
        "format": FORMAT_VERSION,
        "base": base_id,
        "requirements": [r.text for r in declared.requirements],
        "build_requires": [r.text for r in declared.build_requires],
        "sources": declared.sources_digest,
        "project": declared.project.model_dump(mode="json"),
        "apt": sorted(request.apt),
        "index": request.index.model_dump(mode="json"),
        "uv_index": sorted(IndexConfig.user_indexes()),  # every index the user gives uv (resolve.py)
    }
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()[:32]


def _info(env: images.EnvImage, base: str, declared: Declared, built: bool, start: float) -> EnvInfo:
    lock = env.labels.get(images.LABEL_LOCK, "")
    return EnvInfo(
        image=env.tag,
        base_image=base,
        built=built,
        lock=lock,
        installed=[line for line in lock.splitlines() if line.strip()],
        apt=[p for p in env.labels.get(images.LABEL_APT, "").split() if p],
        python=env.labels.get(images.LABEL_PYTHON, ""),
        notes=declared.notes,
        duration_s=round(time.monotonic() - start, 3),
    )


def _build(client: docker.DockerClient, request: EnvRequest, declared: Declared, base_id: str, key: str,
           log: Log, start: float, cancel: Cancel = NEVER) -> EnvInfo:
    compiled = declared.project.extension_modules
    target, installed_debs = probe(client, request.base_image, with_debs=bool(request.apt) or compiled,
                                   cancel=cancel)
    check_python(declared.project.requires_python, target, request.base_image)
    log(f"resolving {len(declared.requirements)} requirements for Python {target.python} ({target.platform})")
    lock = resolve_with_sdists(declared.requirements, target, request.index, cancel)
    sdist_build_lock = (resolve(build_requirements(lock), target, request.index, cancel=cancel) if lock.sdists()
                        else Lock(pins=[]))
    apt_packages = list(request.apt)
    build_lock = Lock(pins=[])
    if compiled:  # the compiler (and headers) come from apt, the build backend from the index
        apt_packages += extensions.COMPILER_APT
        build_lock = resolve(declared.build_requires, target, request.index, cancel=cancel)
    if declared.project.name:  # a dependency may pull the project from the index: /repo is the project
        own = canonicalize_name(declared.project.name)
        lock = Lock(pins=[p for p in lock.pins if canonicalize_name(p.name) != own])
    tag = f"{images.REPOSITORY}:{_tag_hash(base_id, lock, declared, request)}"
    with tempfile.TemporaryDirectory(prefix="codebox-env-") as tmp:
        folder = Path(tmp)
        everything = Lock(pins=[*lock.pins, *build_lock.pins, *sdist_build_lock.pins])
        log(f"downloading {len(everything.pins)} wheels" + (f" ({len(lock.sdists())} sdists, built offline)"
                                                          if lock.sdists() else ""))
        make_wheelhouse(everything, folder / "wheels", cancel)
        debs = apt.download_debs(apt_packages, installed_debs, folder / "debs", cancel) if apt_packages else []
        if compiled and not target.headers:
            apt.download_only(extensions.headers_packages(target.python), folder / "debs-x", cancel)
        check(cancel)
        _stage(folder / "stage", declared, lock, target, build_lock)
        labels = _labels(request, declared, lock, target, base_id, key)
        log(f"installing into {VENV} (network none)")
        _install_and_load(client, request.base_image, folder, tag, labels, request.repo if compiled else None,
                          cancel)
    env = images.get_env_image(client, tag)
    if env is None:
        raise EnvError(f"the build reported success but {tag} is missing")
    info = _info(env, request.base_image, declared, built=True, start=start)
    info.apt = debs or info.apt
    log(f"built {tag} ({len(lock.pins)} packages) in {info.duration_s:.1f}s")
    return info


def probe(client: docker.DockerClient, image: str, with_debs: bool = False,
          cancel: Cancel = NEVER) -> tuple[Target, set[str]]:
    """The image's Python version and platform (and its installed Debian packages), from a network-none run.

    Kept per image id in the cache folder: an image's Python does not change.
    """
    saved = cache_dir() / "probe-v2" / f"{_image_id(client, image).replace(':', '-')}.json"
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


def _probe(client: docker.DockerClient, image: str, with_debs: bool, cancel: Cancel) -> tuple[Target, set[str]]:
    script = f"python3 -c {shlex.quote(_PROBE)}"
    if with_debs:
        script += "; dpkg-query -W -f '${Package}\\n' 2>/dev/null || true"
    output = _run_once(client, image, ["sh", "-c", script], "probe", cancel)
    lines = output.splitlines()
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
    return Target(python=version, platform=platform, headers=headers == "1"), installed


def _run_once(client: docker.DockerClient, image: str, command: list[str], purpose: str,
              cancel: Cancel = NEVER) -> str:
    labels = owner_labels(f"env-{purpose}", ROLE_BUILD, time.time() + 300)  # `codebox gc` reaps a dead owner's
    container = client.containers.create(
        image, command, network_mode="none", user="0:0", labels=labels,
        cap_drop=["ALL"], security_opt=["no-new-privileges"],
    )
    try:
        container.start()
        try:
            status = wait_container(container, cancel, 120, lambda: remove_container(client, container.id))
        except TimeoutError:
            raise EnvError(f"the {purpose} step in {image} did not finish in 120 s") from None
        output = container.logs(stdout=True, stderr=True).decode("utf-8", "replace")
    finally:
        remove_container(client, container.id)
    if status.get("StatusCode") != 0:
        raise EnvError(f"the image {image} failed the {purpose} step: {output.strip()[-300:]}")
    return output


def _tag_hash(base_id: str, lock: Lock, declared: Declared, request: EnvRequest) -> str:
    material = json.dumps({
        "format": FORMAT_VERSION,
        "base": base_id,
        "lock": [[p.name, p.version, p.sha256] for p in lock.pins],
        "project": declared.project.model_dump(mode="json"),
        "sources": declared.sources_digest,
        "apt": sorted(request.apt),
    }, sort_keys=True)
    return hashlib.sha256(material.encode()).hexdigest()[:16]


def _site_packages(target: Target) -> str:
    major, minor = target.python.split(".")[:2]
    return f"{VENV}/lib/python{major}.{minor}/site-packages"


def _stage(folder: Path, declared: Declared, lock: Lock, target: Target, build_lock: Lock) -> None:
    """The install script, the pinned requirements and the editable-install files."""
    for relative, text in editable_files(declared.project).items():
        path = folder / "site" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (folder / "bin").mkdir(parents=True)
    for name, text in console_scripts(declared.project, f"{VENV}/bin/python").items():
        (folder / "bin" / name).write_text(text, encoding="utf-8")
    (folder / "requirements.txt").write_text(lock.requirements_txt(), encoding="utf-8")
    (folder / "sdists.txt").write_text("".join(p.filename + "\n" for p in lock.sdists()), encoding="utf-8")
    compiled = declared.project.extension_modules
    if compiled:
        (folder / "build-requirements.txt").write_text(build_lock.requirements_txt(), encoding="utf-8")
        (folder / "collect_ext.py").write_text(extensions.collect_script(), encoding="utf-8")
    script = _install_script(target, declared.project.import_root if compiled else None)
    (folder / "install.sh").write_text(script, encoding="utf-8")
    for path in [folder, *folder.rglob("*")]:
        path.chmod(0o755 if path.is_dir() or path.parent.name == "bin" else 0o644)


def _install_script(target: Target, extension_root: str | None) -> str:
    """Install offline (and build the project's extensions when ``extension_root`` is given, "" for
    a flat layout), then tar every path the install created or changed into one layer."""
    site = _site_packages(target)
    short = ".".join(target.python.split(".")[:2])
    build = BUILD_MOUNT
    ext = "" if extension_root is None else extensions.shell_steps(build, "python", extension_root, site, VENV)
    return f"""set -eu
export HOME=/tmp UV_CACHE_DIR=/tmp/codebox-uv-cache UV_NO_PROGRESS=1 NO_COLOR=1
python=$(command -v python3)
touch /tmp/codebox-marker
if ls {build}/debs/*.deb >/dev/null 2>&1; then
  echo "codebox: dpkg -i $(ls {build}/debs | wc -l) packages"
  dpkg -i {build}/debs/*.deb
fi
# The venv by hand (what `python -m venv --without-pip` writes), one interpreter start cheaper than uv venv.
mkdir -p {VENV}/bin {site}
ln -s lib {VENV}/lib64
ln -s "$python" {VENV}/bin/python
ln -s python {VENV}/bin/python3
ln -s python {VENV}/bin/python{short}
printf 'home = %s\\ninclude-system-site-packages = false\\nversion = {target.python}\\n' "$(dirname "$python")" \\
  > {VENV}/pyvenv.cfg
mkdir -p {BUILT}
while read -r sdist; do  # dependencies with no wheel: built here, offline, from the wheelhouse
  echo "codebox: building $sdist from source (offline)"
  if ! {build}/uv build --no-config --offline --no-index --find-links {build}/wheels --wheel \\
      --python "$python" -o {BUILT} "{build}/wheels/$sdist" > /tmp/codebox-sdist.log 2>&1; then
    echo "codebox: building $sdist failed offline; the end of its build log:"
    tail -n {LOG_TAIL_LINES} /tmp/codebox-sdist.log
    exit {SDIST_FAILED}
  fi
done < {build}/stage/sdists.txt
{build}/uv pip install --no-config --offline --no-index --find-links {BUILT} --find-links {build}/wheels \\
  --only-binary :all: --no-deps --link-mode copy --compile-bytecode --python {VENV}/bin/python \\
  -r {build}/stage/requirements.txt
cp -R {build}/stage/site/. {site}/
cp -R {build}/stage/bin/. {VENV}/bin/
cp {build}/stage/requirements.txt {VENV}/codebox-lock.txt
{ext}if ls {build}/debs/*.deb >/dev/null 2>&1; then  # dpkg wrote all over the tree: take what changed
  find / -xdev \\( -path /proc -o -path /sys -o -path /dev -o -path /tmp -o -path /etc/hosts \\
    -o -path /etc/hostname -o -path /etc/resolv.conf \\) -prune -o -cnewer /tmp/codebox-marker -print \\
    | sed -e 's#^/##' -e '/^$/d' > /tmp/codebox-files
else  # only the venv is new (a find over the whole base costs ~1 s on fuse-overlayfs)
  find {VENV} | sed -e 's#^/##' > /tmp/codebox-files
fi
tar --no-recursion -cf {LAYER_PATH} -C / -T /tmp/codebox-files
echo "codebox: layer of $(wc -l < /tmp/codebox-files) paths"
"""


def _labels(request: EnvRequest, declared: Declared, lock: Lock, target: Target, base_id: str,
            key: str) -> dict[str, str]:
    return {
        images.LABEL_KIND: images.KIND,
        images.LABEL_INPUTS: key,
        images.LABEL_BASE: request.base_image,
        images.LABEL_BASE_ID: base_id,
        images.LABEL_REPO: str(request.repo),
        images.LABEL_PYTHON: target.python,
        images.LABEL_LOCK: lock.requirements_txt(),
        images.LABEL_APT: " ".join(sorted(request.apt)),
        images.LABEL_FORMAT: FORMAT_VERSION,
    }


def _install_and_load(client: docker.DockerClient, base: str, folder: Path, tag: str,
                      labels: dict[str, str], repo: Path | None, cancel: Cancel = NEVER) -> None:
    """Run the install in a network-none container, take its one-layer diff, load it as ``tag``.

    ``repo`` (read-only) only when the project's extensions are built from it. A cancel removes
    the container at once; the image is loaded only from a whole layer (``docker load`` tags it
    in one step), so a cancelled build tags nothing.
    """
    mounts = {
        str(folder / "stage"): {"bind": f"{BUILD_MOUNT}/stage", "mode": "ro"},
        str(folder / "wheels"): {"bind": f"{BUILD_MOUNT}/wheels", "mode": "ro"},
        uv_binary(): {"bind": f"{BUILD_MOUNT}/uv", "mode": "ro"},
    }
    for debs in ("debs", "debs-x"):
        if (folder / debs).is_dir():
            mounts[str(folder / debs)] = {"bind": f"{BUILD_MOUNT}/{debs}", "mode": "ro"}
    if repo is not None:
        mounts[str(repo)] = {"bind": f"{BUILD_MOUNT}/repo", "mode": "ro"}
    container = client.containers.create(
        base, ["sh", f"{BUILD_MOUNT}/stage/install.sh"], network_mode="none", user="0:0",
        volumes=mounts, labels=owner_labels("env-build", ROLE_BUILD, time.time() + BUILD_TIMEOUT_S), working_dir="/",
        security_opt=["no-new-privileges"],
    )
    try:
        container.start()
        try:
            status = wait_container(container, cancel, BUILD_TIMEOUT_S, lambda: remove_container(client, container.id))
        except TimeoutError:  # the build hangs
            raise EnvError(f"the environment build did not finish in {BUILD_TIMEOUT_S:g} s") from None
        if status.get("StatusCode") != 0:
            logs = container.logs(stdout=True, stderr=True).decode("utf-8", "replace").splitlines()
            tail = "\n".join(logs[-LOG_TAIL_LINES:])
            if status.get("StatusCode") == SDIST_FAILED:
                raise EnvError(f"building a dependency from its sdist failed offline; the end of the build log:\n"
                               f"{tail}", usage=True)
            raise EnvError(f"installing the environment failed offline (exit {status.get('StatusCode')}); "
                           f"the end of the build log:\n{tail}")
        layer = copy_layer(container, folder / "layer.tar", cancel)
    finally:
        remove_container(client, container.id)
    check(cancel)  # the last point a cancel stops at: the load itself is one call, under a second
    load_image(client, base, layer, tag, labels)
