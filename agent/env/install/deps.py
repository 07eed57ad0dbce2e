"""The dependencies image: the base image, the Debian packages asked for, and a venv holding exactly the lock.

Built from the lock's files only: the wheels (and sdists) it names, each checked against its
sha256 on the host when downloaded and again by uv when installed, and the debs apt-get
downloaded on the host. No file of any repository is in its build container, so nothing a
repository does can reach it; that is why it is shared, by every repository and commit whose
lock, base image and Debian packages are the same (its key). Steps, in one box:

1. root, no package code: create the venv folder for the build user; ``dpkg -i`` the debs and
   take what dpkg changed as a layer of its own (no root step at all when the venv is on a
   tmpfs and there are no debs: ``box_plan``);
2. the build user: build the sdists (offline, from the wheelhouse), make the venv, install
   the lock, and take ``/opt/codebox-env`` as a layer (files owned by root), which the engine
   loads meanwhile as an untagged image;
3. the build user: compile the venv's bytecode, its ``__pycache__`` folders the last layer.

An sdist's build (package code) is a step of its own, before the install; the install and the
bytecode are codebox's own steps: they end whatever a build left running (box.REAP), run the
base image's interpreter by its absolute path (``-I -S`` for the bytecode) and ``/bin/tar``, and
their layers are capped on the host and checked as plain tars.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import tempfile
from collections.abc import Callable
from importlib import resources
from pathlib import Path

from agent.env.cancel import NEVER, Cancel, check
from agent.env.errors import EnvError, why_it_failed
from agent.env.install import images
from agent.env.install.box import BUILD_USER, REAP, SYSTEM_PATH, Box, BuildLimits, Deadline, StepFailed
from agent.env.install.deps_box import BUILD, PREFIX, EarlyBox, box_plan, fits_in_memory, mounts, tmpfs
from agent.env.install.layer import PROJECT, VENV, BackgroundLoad, Stacked, check_layer, load_stack
from agent.env.resolve import apt
from agent.env.resolve.fetch import make_wheelhouse
from agent.env.resolve.resolve import Lock, Target
from agent.sandboxes.build import Builder

FORMAT = "deps-1"
UV_CACHE = f"{VENV}/.uv-cache"  # on the venv's file system, so uv hard-links instead of copying; not in the layer
SDIST_FAILED = 5  # the install script's exit status when an sdist does not build
BYTECODE = "_codebox_bytecode.py"
_BUILT = "/tmp/codebox-built"  # the wheels built from sdists
Log = Callable[[str], None]


def deps_key(base_id: str, lock: Lock, build_lock: Lock, apt_packages: list[str],
             engine: str = images.DEFAULT_ENGINE) -> str:
    material = json.dumps({"format": FORMAT, "base": base_id, "lock": lock.digest(), "sdist_build": build_lock.digest(),
                           "apt": sorted(apt_packages), **images.engine_part(engine)}, sort_keys=True)
    return hashlib.sha256(material.encode()).hexdigest()[:32]


def site_packages(target: Target) -> str:
    major, minor = target.python.split(".")[:2]
    return f"{VENV}/lib/python{major}.{minor}/site-packages"


def ensure_deps(client: Builder, engine: images.Engine, base_image: str, base_id: str, target: Target,
                lock: Lock, sdist_build_lock: Lock, apt_packages: list[str], installed_debs: set[str],
                limits: BuildLimits, deadline: Deadline, cancel: Cancel = NEVER,
                log: Callable[[str], None] = lambda _: None, repo: str = "",
                on_top: Stacked | None = None, early: EarlyBox | None = None) -> tuple[images.Entry, str | None]:
    """The dependencies image of this lock on this base: recorded, or built now (and recorded).

    ``on_top``: an image made of the dependencies image plus its layers (the project's), loaded in
    the same load when the dependencies image is built; its id, else None (reused: the
    caller loads it). ``early``: a box started before the lock was known, taken when the lock
    fits it (the caller closes it either way).
    """
    key = deps_key(base_id, lock, sdist_build_lock, apt_packages, engine.name)
    with images.building("deps", key, cancel):
        found = images.lookup(engine, "deps", key)
        if found is not None:
            log(f"reusing the dependencies image {found.tag} ({len(found.packages)} packages)")
            return found, None
        log(f"installing {len(lock.pins)} packages into a new dependencies image (network none)")
        images.reap_loading(engine)  # what a killed build left on its way
        with contextlib.ExitStack() as held:
            folder = early.folder if early else Path(held.enter_context(tempfile.TemporaryDirectory(prefix=PREFIX)))
            folder.chmod(0o755)  # the build user reads the mounts
            make_wheelhouse(Lock(pins=[*lock.pins, *sdist_build_lock.pins]), folder / "wheels", cancel)
            debs = (apt.download_debs(apt_packages, installed_debs, folder / "debs", cancel, target.debian)
                    if apt_packages else [])
            check(cancel)
            _stage(folder / "stage", lock, target)
            for path in [folder, *folder.rglob("*")]:
                path.chmod(0o755 if path.is_dir() else 0o644)
            plan = box_plan(lock, bool(debs), fits_in_memory(folder / "wheels", limits), limits)
            if early is not None and early.plan == plan:
                box = early.take()
            else:
                if early is not None:
                    early.discard()  # made for another lock (an sdist, a big one): a box of its own
                box = Box(client, base_image, "deps", mounts(folder, bool(debs)), plan.limits, deadline, cancel,
                          caps=plan.caps, log=log, tmpfs=tmpfs(limits) if plan.tmpfs else {},
                          root_steps=plan.root_step)
                box.__enter__()
            held.callback(box.close)
            tag = f"{images.REPOSITORY}-deps:{key[:16]}"
            labels = {images.LABEL_KIND: "env-deps", images.LABEL_REPO: repo}
            image_id, *above = _install_and_load(box, base_image, target, folder, bool(debs), plan.root_step,
                                                 [Stacked([], tag, labels), *([on_top] if on_top else [])])
        entry = images.Entry(kind="deps", key=key, id=image_id, tag=tag, base=base_image, base_id=base_id,
                             python=target.python, lock=lock.hashed_txt(), packages=lock.installed(), apt=debs,
                             engine=engine.name)
        images.write(entry)
        return entry, (above[0] if above else None)


def _install_and_load(box: Box, base_image: str, target: Target, folder: Path, debs: bool, root_step: bool,
                      stack: list[Stacked]) -> list[str]:
    """In ``box``: root's step, the install, the bytecode; their layers loaded as they come, the first
    of ``stack`` (the dependencies image) given them. The ids of ``stack``'s images."""
    layers = [folder / "apt.tar"] if debs else []
    if root_step:
        box.root(_root_script(debs), "dependencies setup", stdout_to=layers[0] if debs else None)
    layers.append(folder / "venv.tar")
    try:
        if (folder / "stage" / "sdists.txt").stat().st_size:
            box.run(_sdist_script(target), "sdist builds", env={"PATH": SYSTEM_PATH})
        box.run(_install_script(target), "dependencies install", env={"PATH": SYSTEM_PATH}, stdout_to=layers[-1])
    except StepFailed as exc:
        if exc.status == SDIST_FAILED:
            why = why_it_failed(exc.tail)
            raise EnvError(f"building a dependency from its sdist failed offline{f': {why}' if why else ''}; the end "
                           f"of the build log:\n{exc.tail}", usage=True) from None
        raise EnvError(f"installing the environment failed offline (exit {exc.status}); the end of "
                       f"the build log:\n{exc.tail}") from None
    # The venv's layer is checked, then unpacked by the daemon (~1 ms a file on fuse-overlayfs), while the box
    # compiles its bytecode, which is then a layer of its own on top.
    venv_layer = layers[-1]
    with BackgroundLoad(box.client, base_image, layers, stack[0].labels, box.cancel,
                        lambda: check_layer(venv_layer, VENV.lstrip("/"), box.cancel)) as venv:
        bytecode = folder / "bytecode.tar"
        box.run(_bytecode_script(target), "bytecode", env={"PATH": SYSTEM_PATH}, stdout_to=bytecode)
        check_layer(bytecode, VENV.lstrip("/"), box.cancel)
        removing = box.close_in_background()
        try:
            check(box.cancel)
            parent = venv.wait()
            return load_stack(box.client, parent, [stack[0]._replace(layers=[bytecode]), *stack[1:]],
                              cancel=box.cancel)
        finally:
            removing.join()


def _stage(stage: Path, lock: Lock, target: Target) -> None:
    stage.mkdir(parents=True, exist_ok=True)  # an early box's folder has it already
    script = resources.files("agent.env.install.inside").joinpath(BYTECODE).read_text("utf-8")
    (stage / BYTECODE).write_text(script, encoding="utf-8")
    (stage / "requirements.txt").write_text(lock.hashed_txt(), encoding="utf-8")
    (stage / "sdists.txt").write_text("".join(p.filename + "\n" for p in lock.sdists()), encoding="utf-8")
    project_site = f"{PROJECT}/site"
    # The project layer (built for one tree, on top of this image) is a site folder of its own.
    (stage / "_codebox_project.pth").write_text(f"import site; site.addsitedir({project_site!r})\n",
                                                encoding="utf-8")


def _root_script(with_debs: bool) -> str:
    """Root's part: the venv folder for the build user; dpkg, and what it changed as a layer (on stdout).
    No package code runs here."""
    user = BUILD_USER
    script = f"""set -eu
exec 3>&1 1>&2
mkdir -p {VENV}
chown {user} {VENV}  # a no-op on the tmpfs, which is the build user's already
"""
    if with_debs:
        script += f"""touch /tmp/codebox-marker
echo "codebox: dpkg -i $(ls {BUILD}/debs | wc -l) Debian packages"
dpkg --force-unsafe-io -i {BUILD}/debs/*.deb > /tmp/codebox-dpkg.log 2>&1 \
  || {{ tail -n 30 /tmp/codebox-dpkg.log; exit 1; }}
find / -xdev \\( -path /proc -o -path /sys -o -path /dev -o -path /tmp -o -path {VENV} -o -path /etc/hosts \\
  -o -path /etc/hostname -o -path /etc/resolv.conf \\) -prune -o -cnewer /tmp/codebox-marker -print \\
  | sed -e 's#^/##' -e '/^$/d' > /tmp/codebox-apt-files
/bin/tar --no-recursion -cf - -C / -T /tmp/codebox-apt-files >&3
"""
    return script


def _bytecode_script(target: Target) -> str:
    """The build user's bytecode step: the venv's modules compiled, their ``__pycache__`` folders as a layer (stdout).

    By the base interpreter, isolated and without site: no .pth of the installed packages runs
    (``inside/_codebox_bytecode.py``).
    """
    return f"""{REAP}
set -eu
exec 3>&1 1>&2
{_python(target)} -I -S {BUILD}/stage/{BYTECODE} {site_packages(target)}
cd /
find {VENV.lstrip("/")} -path {UV_CACHE.lstrip("/")} -prune -o -type d -name __pycache__ -print \\
  | /bin/tar --owner=0 --group=0 --numeric-owner -cf - -T - >&3
"""


def _python(target: Target) -> str:
    """The base image's interpreter by its absolute path (probe.py); python3 on the system PATH when unprobed."""
    return target.executable or "python3"


def _sdist_script(target: Target) -> str:
    """The build user's sdist builds (package code runs here), offline, from the wheelhouse, into /tmp/codebox-built."""
    return f"""set -eu
export UV_CACHE_DIR=/tmp/codebox-sdist-cache UV_NO_PROGRESS=1 NO_COLOR=1
mkdir -p {_BUILT}
while read -r sdist; do  # dependencies with no wheel: built here, offline, from the wheelhouse
  echo "codebox: building $sdist from source (offline)"
  if ! {BUILD}/uv build --no-config --offline --no-index --find-links {BUILD}/wheels --wheel \\
      --python {_python(target)} -o {_BUILT} "{BUILD}/wheels/$sdist" > /tmp/codebox-sdist.log 2>&1; then
    echo "codebox: building $sdist failed offline; the end of its build log:"
    tail -n 25 /tmp/codebox-sdist.log
    exit {SDIST_FAILED}
  fi
done < {BUILD}/stage/sdists.txt
"""


def _install_script(target: Target) -> str:
    """codebox's own step, as the build user: the venv, the lock installed (wheels only: no package code runs),
    the venv as a layer (on stdout)."""
    site = site_packages(target)
    short = ".".join(target.python.split(".")[:2])
    return f"""{REAP}
set -eu
exec 3>&1 1>&2
export UV_CACHE_DIR={UV_CACHE} UV_NO_PROGRESS=1 NO_COLOR=1
python={_python(target)}
case "$python" in /*) ;; *) python=$(command -v "$python") ;; esac
# The venv by hand (what `python -m venv --without-pip` writes), one interpreter start cheaper than uv venv.
mkdir -p {VENV}/bin {site} {_BUILT}
ln -s lib {VENV}/lib64
ln -s "$python" {VENV}/bin/python
ln -s python {VENV}/bin/python3
ln -s python {VENV}/bin/python{short}
printf 'home = %s\\ninclude-system-site-packages = false\\nversion = {target.python}\\n' "$(dirname "$python")" \\
  > {VENV}/pyvenv.cfg
if [ -s {BUILD}/stage/sdists.txt ]; then  # a built wheel's hash is its own: the lock's is the sdist's
  sed 's/ --hash=.*//' {BUILD}/stage/requirements.txt > /tmp/codebox-requirements.txt
  hashes=""
else
  cp {BUILD}/stage/requirements.txt /tmp/codebox-requirements.txt
  hashes="--require-hashes"
fi
{BUILD}/uv pip install --no-config --offline --no-index --find-links {_BUILT} --find-links {BUILD}/wheels \\
  --only-binary :all: --no-deps $hashes --link-mode hardlink --python {VENV}/bin/python \\
  -r /tmp/codebox-requirements.txt
cp {BUILD}/stage/_codebox_project.pth {site}/
cp {BUILD}/stage/requirements.txt {VENV}/codebox-lock.txt
echo "codebox: dependencies layer written"
/bin/tar --owner=0 --group=0 --numeric-owner --exclude={UV_CACHE.lstrip("/")} -cf - -C / {VENV.lstrip("/")} >&3
"""
