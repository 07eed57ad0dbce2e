"""The project's own build, in a box: its backend's hooks, its generated files, its recipe steps.

The box starts from the base image (the build-tools image when the project compiles). Root
copies the project's files (the tree's list, read-only mount -> ``/repo``, owned by the build
user; ``.git`` stays a read-only mount for version tools) and installs the recipe's Debian
packages; no repository code has run yet. Then, as the build user, offline:

1. the build venv from ``[build-system]``'s lock (a second lock when ``get_requires_for_build_*``
   asks for more), the recipe's ``pre_install`` commands, Cython's C where the tree has none;
2. ``prepare_metadata_for_build_*``: the METADATA whose Requires-Dist the host then resolves;
3. ``build_editable`` (PEP 660), or an in-place build for a setuptools without it; then
   ``_codebox_collect.py`` puts the install, what the build generated and the scripts under
   ``/opt/codebox-project``, which becomes the project layer (nothing else of the box does).

A version tool that cannot read the git metadata (no ``.git``, a clone whose objects are
elsewhere) gets ``SETUPTOOLS_SCM_PRETEND_VERSION``: the version the static reading found.

Step 3's collection is codebox's own, after repository code ran: it ends what the build left
running (box.REAP), runs the base image's interpreter by its absolute path with ``-I -S`` and
``/bin/tar`` on a system PATH, sources nothing the build wrote, and its layer is capped on the
host (ENV_PROJECT_LAYER_MAX_BYTES), checked as a plain tar, never decompressed.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

from packaging.version import InvalidVersion, Version

from agent import defaults
from agent.env.cancel import NEVER, Cancel, check
from agent.env.errors import EnvError, ProjectBuildFailed, why_it_failed
from agent.env.install.box import (
    BUILD_USER,
    DPKG_CAPS,
    REAP,
    SETUP_CAPS,
    SYSTEM_PATH,
    Box,
    BuildLimits,
    Deadline,
    Mount,
    StepFailed,
)
from agent.env.install.layer import PROJECT, VENV, check_layer
from agent.env.install.metadata import BackendMetadata, parse_metadata
from agent.env.install.plan import Backend
from agent.env.install.tree import Tree
from agent.env.recipe import Recipe
from agent.env.resolve import apt
from agent.env.resolve.fetch import make_wheelhouse
from agent.env.resolve.resolve import Lock, uv_binary
from agent.sandboxes.build import Builder

BUILD = "/tmp/codebox-build"
OUT = "/tmp/codebox-out"
BUILDENV = "/tmp/codebox-buildenv"
COPY_CAPS = ["CHOWN", "DAC_READ_SEARCH"]  # root reads the user's files whatever their mode, and hands them over
MAX_ANSWER = 8 * 1024 * 1024
PRE_INSTALL_FAILED = 7
_HOOK_NAMES = {"requires": "get_requires_for_build_*", "metadata": "prepare_metadata_for_build_*",
               "editable": "build_editable"}
SCRIPTS = ("_codebox_pep517.py", "_codebox_collect.py", "_codebox_project_finder.py", "_codebox_cythonize.py")
Log = Callable[[str], None]


class ProjectBuild:
    """One project box through its steps; see the module docstring. A context manager."""

    def __init__(self, client: Builder, image: str, repo: Path, tree: Tree, backend: Backend,
                 recipe: Recipe, import_root: str, version: str, folder: Path, limits: BuildLimits,
                 deadline: Deadline, cancel: Cancel = NEVER, log: Log = lambda _: None, python: str = "",
                 debian: str = "") -> None:
        self.client = client
        self.debian = debian  # the base image's Debian release: where the recipe's apt packages come from
        self.python = python or "python3"  # the base image's, by its absolute path (probe.py): codebox's own steps
        self.image = image
        self.repo = repo
        self.tree = tree
        self.backend = backend
        self.recipe = recipe
        self.import_root = import_root
        self.version = _pretend(version)
        self.folder = folder
        self.limits = limits
        self.deadline = deadline
        self.cancel = cancel
        self.log = log
        self.box: Box | None = None
        self.debs: list[str] = []

    # -- the box ------------------------------------------------------------------------------------

    def start(self, installed_debs: set[str]) -> None:
        """Stage, start the box, and run root's step (the copy, the recipe's Debian packages)."""
        stage = self.folder / "stage"
        stage.mkdir(parents=True)
        for name in SCRIPTS:
            (stage / name).write_text(resources.files("agent.env.install.inside").joinpath(name).read_text("utf-8"),
                                      encoding="utf-8")
        listing = "\0".join(self.tree.files).encode("utf-8", "surrogateescape")
        (stage / "files.list").write_bytes(listing)
        (stage / "collect.json").write_text(json.dumps(self._collect_spec()), encoding="utf-8")
        (self.folder / "wheels").mkdir()
        if self.recipe.apt:
            self.debs = apt.download_debs(self.recipe.apt, installed_debs, self.folder / "debs", self.cancel,
                                          self.debian)
        self._open_modes()
        mounts = [Mount(host=str(stage), target=f"{BUILD}/stage"),
                  Mount(host=str(self.folder / "wheels"), target=f"{BUILD}/wheels"),
                  Mount(host=uv_binary(), target=f"{BUILD}/uv"),
                  Mount(host=str(self.repo), target=f"{BUILD}/repo")]
        git = self.repo / ".git"
        if self.tree.git and git.is_dir() and not git.is_symlink():
            mounts.append(Mount(host=str(git), target="/repo/.git"))
        if self.debs:
            mounts.append(Mount(host=str(self.folder / "debs"), target=f"{BUILD}/debs"))
        caps = sorted({*COPY_CAPS, *(DPKG_CAPS if self.debs else SETUP_CAPS)})
        self.box = Box(self.client, self.image, "project", mounts, self.limits, self.deadline, self.cancel,
                       caps=caps, log=self.log)
        self.box.__enter__()
        self.box.root(self._root_script(), "project copy")

    def close(self) -> None:
        if self.box is not None:
            self.box.close()
            self.box = None

    def __enter__(self) -> ProjectBuild:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _open_modes(self) -> None:
        for path in [self.folder, *self.folder.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)

    def _run(self, script: str, what: str, stdout_to: Path | None = None) -> str:
        assert self.box is not None, "start() first"
        return self.box.run(f"set -eu\n[ -f /tmp/codebox-env.sh ] && . /tmp/codebox-env.sh\ncd /repo\n{script}",
                            what, env=self._env(), stdout_to=stdout_to)

    def _env(self) -> dict[str, str]:
        return {
            "PATH": f"{BUILDENV}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "UV_CACHE_DIR": "/tmp/codebox-uv-cache", "UV_NO_PROGRESS": "1", "NO_COLOR": "1",
            "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1",
            # The .git mount belongs to the host's user: git would call it "dubious" and stop. Version
            # tools that run git without the GIT_* variables (setuptools-scm) read /etc/gitconfig (_root_script).
            "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "safe.directory", "GIT_CONFIG_VALUE_0": "*",
            "GIT_OPTIONAL_LOCKS": "0",
            "PEP517_BACKEND": self.backend.name or "",
            "PEP517_BACKEND_PATH": ":".join(self.backend.path),
        }

    def _root_script(self) -> str:
        user = BUILD_USER
        dpkg = (f"dpkg --force-unsafe-io -i {BUILD}/debs/*.deb > /tmp/codebox-dpkg.log 2>&1 "
                "|| { tail -n 30 /tmp/codebox-dpkg.log; exit 1; }\n") if self.debs else ""
        return f"""set -eu
mkdir -p /repo {PROJECT} {OUT}
tar -C {BUILD}/repo --sparse --null --verbatim-files-from --no-recursion -T {BUILD}/stage/files.list -cf - \\
  | tar -C /repo -xf - --no-same-owner
find /repo -xdev -path /repo/.git -prune -o -exec chown -h {user} {{}} +
chown {user} {PROJECT} {OUT}
printf '[safe]\\n\\tdirectory = *\\n' >> /etc/gitconfig
{dpkg}echo "codebox: the project's files copied ({len(self.tree.files)})"
"""

    # -- the steps ------------------------------------------------------------------------------------

    def install_build_requirements(self, lock: Lock) -> None:
        """The build venv holds ``lock`` (again after a second round: only what is new is installed)."""
        make_wheelhouse(lock, self.folder / "wheels", self.cancel)
        self._open_modes()
        (self.folder / "stage" / "build-requirements.txt").write_text(lock.hashed_txt(), encoding="utf-8")
        self._open_modes()
        self._run(f"""[ -x {BUILDENV}/bin/python ] || \\
  {BUILD}/uv venv --no-config --quiet --no-python-downloads --python python3 {BUILDENV}
{BUILD}/uv pip install --no-config --quiet --offline --no-index --find-links {BUILD}/wheels --no-deps \\
  --require-hashes --python {BUILDENV}/bin/python -r {BUILD}/stage/build-requirements.txt
""", "build requirements")

    def prepare(self) -> None:
        """Version tools' fallback, the recipe's pre_install commands, Cython's missing C."""
        pretend = shlex.quote(self.version)
        script = f"""if ! git -C /repo describe --tags --always >/dev/null 2>&1; then
  echo "codebox: no readable git metadata: the version tools are told {self.version}"
  echo "export SETUPTOOLS_SCM_PRETEND_VERSION={pretend}" > /tmp/codebox-env.sh
fi
"""
        for number, command in enumerate(self.recipe.pre_install, start=1):
            script += (f"echo {shlex.quote(f'codebox: pre_install {number}: {command[:200]}')}\n"
                       f"sh -c {shlex.quote(command)} || {{ echo 'codebox: pre_install {number} failed'; "
                       f"exit {PRE_INSTALL_FAILED}; }}\n")
        if self.backend.name:
            script += (f"if {BUILDENV}/bin/python -c 'import Cython' 2>/dev/null; then\n"
                       f"  {BUILDENV}/bin/python {BUILD}/stage/_codebox_cythonize.py\nfi\n")
        try:
            self._run(script, "pre_install")
        except StepFailed as exc:
            if exc.status == PRE_INSTALL_FAILED:
                raise EnvError(f"a pre_install command of the recipe failed in the build container (offline, as an "
                               f"unprivileged user); the end of its log:\n{exc.tail}", usage=True) from None
            raise

    def pyproject(self) -> str | None:
        """``/repo/pyproject.toml`` as the box holds it now (after pre_install); None when there is none."""
        if "pyproject.toml" not in self.tree.files:
            return None
        return self._read("/repo/pyproject.toml")

    def requires(self) -> list[str]:
        """What ``get_requires_for_build_editable`` (or ``_wheel``) adds to ``[build-system]``."""
        answer = self._hook("requires")
        requires = answer.get("requires")
        if not isinstance(requires, list) or not all(isinstance(r, str) for r in requires):
            raise EnvError("the project's build backend answered get_requires_for_build_* with something that is "
                           "not a list of requirements")
        return list(requires)

    def metadata(self) -> BackendMetadata:
        """The METADATA the backend's ``prepare_metadata_for_build_*`` wrote."""
        answer = self._hook("metadata")
        fields = [answer.get(k) for k in ("dist_info", "metadata", "entry_points")]
        if not all(isinstance(f, str) for f in fields):
            raise EnvError("the project's build backend wrote no readable metadata")
        return parse_metadata(str(fields[0]), str(fields[1]), str(fields[2]))

    def build(self, dest: Path) -> Path:
        """Install the project, collect what its build made, and copy the project layer to ``dest``."""
        if self.backend.name:
            self._hook("editable")
            editable = json.loads(self._read(f"{OUT}/editable.json"))
            if not editable.get("wheel") and self.backend.setuptools:  # an old setuptools: build in place
                try:
                    self._run(f"""[ -f setup.py ] || printf 'from setuptools import setup\\nsetup()\\n' > setup.py
echo "codebox: the backend has no editable builds: setup.py build_ext --inplace"
{BUILDENV}/bin/python setup.py build_ext --inplace
""", "in-place build")
                except StepFailed as exc:
                    raise ProjectBuildFailed(f"the project's own build failed offline (setup.py build_ext --inplace, "
                                             f"exit {exc.status}){_why(exc.tail)}; the end of its log:\n{exc.tail}",
                                             exc.status) from None
        assert self.box is not None, "start() first"
        # codebox's own step: nothing the build wrote or left running takes part (see the module docstring)
        self.box.run(f"""{REAP}
set -eu
exec 3>&1 1>&2
cd /repo
{self.python} -I -S {BUILD}/stage/_codebox_collect.py {BUILD}/stage/collect.json
/bin/tar --owner=0 --group=0 --numeric-owner -cf - -C / {PROJECT.lstrip("/")} >&3
""", "project install", env={"PATH": SYSTEM_PATH}, stdout_to=dest, max_bytes=defaults.ENV_PROJECT_LAYER_MAX_BYTES)
        check(self.cancel)
        check_layer(dest, PROJECT.lstrip("/"), self.cancel, defaults.ENV_PROJECT_LAYER_MAX_BYTES)
        return dest

    def _hook(self, hook: str) -> dict[str, Any]:
        try:
            self._run(f"{BUILDENV}/bin/python {BUILD}/stage/_codebox_pep517.py {hook} {OUT}/{hook}.json",
                      f"PEP 517 {hook}")
        except StepFailed as exc:
            step = _HOOK_NAMES[hook]
            raise ProjectBuildFailed(f"the project's own build failed offline ({step}, exit {exc.status})"
                                     f"{_why(exc.tail)}; the end of its log:\n{exc.tail}", exc.status) from None
        answer = json.loads(self._read(f"{OUT}/{hook}.json"))
        if not isinstance(answer, dict):
            raise EnvError(f"the PEP 517 {hook} step answered with something that is not a JSON object")
        return answer

    def _read(self, path: str) -> str:
        assert self.box is not None
        return self.box.read(path, MAX_ANSWER).decode("utf-8", "replace")

    def _collect_spec(self) -> dict[str, Any]:
        return {
            "pristine": f"{BUILD}/repo", "copy": "/repo", "project": PROJECT, "import_root": self.import_root,
            "python": f"{VENV}/bin/python", "finder": f"{BUILD}/stage/_codebox_project_finder.py",
            "editable_answer": f"{OUT}/editable.json", "metadata_answer": f"{OUT}/metadata.json",
        }


def _why(log: str) -> str:
    """``: <why, and what to do>`` when the log says something codebox can name, else ``""``."""
    why = why_it_failed(log)
    return f": {why}" if why else ""


def _pretend(version: str) -> str:
    """A version setuptools-scm takes as given (PEP 440, normalized)."""
    try:
        return str(Version(version))
    except InvalidVersion:
        return "0.0.0"
