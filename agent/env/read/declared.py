"""What a repository declares it needs, read statically on the host: parsed, never executed.

Sources, in order: pyproject.toml (``[project]`` dependencies, the optional-dependencies
extras asked for — test/tests/testing/dev by default — PEP 735 ``[dependency-groups]``,
hatch's default env, PDM's dev-dependencies, poetry's dependencies and dev/test groups,
flit's old ``[tool.flit.metadata]``, ``[tool.setuptools.dynamic]`` and hatch's
``requirements_txt`` hook files), setup.cfg (``install_requires``, ``extras_require``, with
``file:`` read), setup.py (``setup()``'s arguments and the module-level names they use, read
from its syntax tree: ``setup_py``), requirements files about running or testing the project,
and tox (``tox``: tox.ini, setup.cfg, ``legacy_tox_ini``, tox 4's TOML; deps, ``-r`` files,
extras). A requirement naming the project itself (``attrs[tests]`` inside attrs,
``-e .[test]``) expands the project's own extras: the project is never resolved from the index.

What the reading says beyond the requirements (fields of ``Declared``):

- ``dynamic_metadata``: why the static reading cannot see the project's whole dependency
  metadata, one reason per item naming the file and key — pyproject ``dynamic`` listing
  ``dependencies``/``optional-dependencies`` that no static file fills, setup.py arguments
  computed at run time, setup.cfg ``attr:`` values, a setup.py with no ``setup()`` call, a
  build backend whose metadata is not in ``[project]``. Empty means the static reading is
  complete; non-empty means the project's PEP 517 hooks must be asked (in the build
  container), and ``metadata_is_dynamic`` is True.
- ``build_system``: ``[build-system]``'s requires and backend, for every project (``backend``).
- ``extensions``: why the project is taken to have compiled extensions (empty: it has none).
- ``sources``: package sources the repository names (``sources``): never followed, named in
  the environment's notes, their packages held back by ``source_policy``.

Every name, version and entry point read is checked (``names``); a hostile or broken file is
refused with one line naming the file and key (EnvError, usage).
"""

from __future__ import annotations

import configparser
import re
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name
from pydantic import BaseModel, Field

from agent.env.errors import EnvError
from agent.env.install.project import Project, read_project
from agent.env.read.backend import BuildSystem, read_build_system
from agent.env.read.candidates import CI, OTHER, TEST_FILE, Candidate, Group, dedupe, make_candidates
from agent.env.read.digest import compiled_sources, source_digest
from agent.env.read.names import extra_name
from agent.env.read.poetry import poetry_tables
from agent.env.read.poetry import requirement as poetry_requirement
from agent.env.read.reqlines import Requirement, RequirementsFile, SelfReference, parse_declared, parse_requirement
from agent.env.read.safe_read import read_ini, read_toml, string_list, table
from agent.env.read.setup_py import METADATA_KEYS, SetupCall, read_setup_py
from agent.env.read.sources import PackageSource, read_file_sources, read_pyproject_sources
from agent.env.read.tox import ToxEnv, read_tox
from agent.escape import printable

DEFAULT_EXTRAS = ("test", "tests", "testing", "dev")
# The test runner every environment gets unless the project names its own.
DEFAULT_RUNNER = "pytest"
# The note of an environment for a repository that declares nothing (choose.py, build.py).
NO_DEPENDENCIES = "the repository declares no dependencies: the base image is used as it is"
_ABOUT_TESTS = re.compile(r"(^|[-_./])(test|tests|testing|dev|develop|ci)([-_.]|$)", re.IGNORECASE)


class Declared(BaseModel):
    """The requirements found (each with its origin), the project itself, and what was read."""

    requirements: list[Requirement] = Field(default_factory=list)
    project: Project
    files: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    # Why the project's whole dependency metadata is not known statically (empty: it is): see the module doc.
    dynamic_metadata: list[str] = Field(default_factory=list)
    build_system: BuildSystem = Field(default_factory=BuildSystem)
    # Why the project is taken to have compiled extensions (empty: it has none).
    extensions: list[str] = Field(default_factory=list)
    # Package sources the repository names: never followed (sources.py, source_policy.py).
    sources: list[PackageSource] = Field(default_factory=list)
    # Only for a project with compiled extensions: what building them needs, and their sources' digest.
    build_requires: list[Requirement] = Field(default_factory=list)
    sources_digest: str = ""
    # The environments to try, closest to the project's CI first (candidates.py); ``requirements`` is their union.
    candidates: list[Candidate] = Field(default_factory=list)

    @property
    def needs_env(self) -> bool:
        """False for a repository that declares nothing: the plain sandbox image serves it."""
        return bool(self.requirements) or self.project.name is not None

    @property
    def metadata_is_dynamic(self) -> bool:
        """True when the project's PEP 517 hooks must be asked for its metadata (``dynamic_metadata`` says why)."""
        return bool(self.dynamic_metadata)


class _Extras:
    """The project's extras by name, from whichever file declares them."""

    def __init__(self) -> None:
        self.by_name: dict[str, tuple[list[str], str]] = {}

    def add(self, name: str, requirements: list[str], source: str) -> None:
        self.by_name.setdefault(_norm(extra_name(name, source)), (requirements, source))


def _norm(name: str) -> str:
    return canonicalize_name(name)


class _Collector:
    def __init__(self, repo: Path, project: Project) -> None:
        self.repo = repo
        self.project = project
        self.requirements: list[Requirement] = []
        self.files: list[str] = []
        self.notes: list[str] = []
        self.dynamic: list[str] = []
        self.sources: list[PackageSource] = []
        self.extras = _Extras()
        self.groups: dict[str, list[Any]] = {}
        self.reader = RequirementsFile(repo)
        # The group a requirement read now belongs to (candidates.py); None: what every environment gets.
        self.group: Group | None = None
        self.tagged: list[tuple[Group | None, Requirement]] = []
        self._expanded: set[tuple[str, str]] = set()
        self._taken = (0, 0, 0, 0, 0)  # how much of the reader's lists was taken in

    def add(self, text: str, source: str) -> None:
        req, url_source = parse_declared(text, source)
        if self.project.name and req.name == _norm(self.project.name):
            for extra in sorted(_extras_of(text)):
                self.expand_extra(extra, source)
            return
        self._keep(req)
        if url_source is not None:
            self.sources.append(url_source)

    def _keep(self, req: Requirement) -> None:
        self.requirements.append(req)
        self.tagged.append((self.group, req))

    def in_group(self, group: Group | None) -> _Collector:
        """This collector, reading into ``group`` from now on."""
        self.group = group
        return self

    def expand_extra(self, name: str, source: str, required: bool = True) -> None:
        key = _norm(name)
        done = (self.group.name if self.group else "", key)
        if done in self._expanded:
            return
        if key not in self.extras.by_name:
            if required:
                raise EnvError(f"{source}: the project has no extra named {name!r} "
                               f"(it has: {', '.join(sorted(self.extras.by_name)) or 'none'})", usage=True)
            return
        self._expanded.add(done)
        texts, where = self.extras.by_name[key]
        for text in texts:
            self.add(text, where)

    def add_self_ref(self, ref: SelfReference) -> None:
        for extra in ref.extras:
            self.expand_extra(extra, ref.source)

    def expand_group(self, name: str, source: str, stack: tuple[str, ...] = ()) -> None:
        key = _norm(name)
        if key in stack:
            raise EnvError(f"{source}: dependency group {name!r} includes itself", usage=True)
        entries = {_norm(k): v for k, v in self.groups.items()}.get(key)
        if entries is None:
            raise EnvError(f"{source}: no dependency group named {name!r}", usage=True)
        where = f"pyproject.toml [dependency-groups] {name}"
        if not isinstance(entries, list):
            raise EnvError(f"{where}: expected a list", usage=True)
        for entry in entries:
            if isinstance(entry, str):
                self.add(entry, where)
            elif isinstance(entry, dict) and isinstance(entry.get("include-group"), str):
                self.expand_group(entry["include-group"], where, (*stack, key))
            else:
                raise EnvError(f"{where}: entries must be strings or {{include-group = ...}}", usage=True)

    def take_from_reader(self) -> None:
        """What the requirements reader found since the last call: requirements, self-references, sources."""
        reader = self.reader
        reqs, refs, notes, files, sources = self._taken
        for req in reader.requirements[reqs:]:
            if self.project.name and req.name == _norm(self.project.name):
                for extra in sorted(_extras_of(req.text)):
                    self.expand_extra(extra, req.source)
            else:
                self._keep(req)
        for ref in reader.self_refs[refs:]:
            self.add_self_ref(ref)
        self.notes.extend(reader.notes[notes:])
        self.files.extend(f for f in reader.files[files:] if f not in self.files)
        self.sources.extend(reader.sources[sources:])
        self._taken = (len(reader.requirements), len(reader.self_refs), len(reader.notes), len(reader.files),
                       len(reader.sources))

    def fresh_reader(self) -> None:
        """A new requirements reader: a file another group's file included is read again for this group."""
        self.take_from_reader()
        self.reader = RequirementsFile(self.repo)
        self._taken = (0, 0, 0, 0, 0)

    def requirement_lines(self, files: list[str], where: str) -> list[tuple[str, str]]:
        """(text, file:line) of the requirements in ``files`` (setuptools' ``file:``, hatch's hook), read apart."""
        reader = RequirementsFile(self.repo)
        for relative in files:
            try:
                reader.read(relative)
            except EnvError as exc:
                raise EnvError(f"{where}: {exc}", usage=True) from None
        self.files.extend(f for f in reader.files if f not in self.files)
        self.notes.extend(reader.notes)
        self.sources.extend(reader.sources)
        own = [(f"{self.project.name}[{','.join(ref.extras)}]", ref.source) for ref in reader.self_refs
               if self.project.name and ref.extras]
        return [(r.text, r.source) for r in reader.requirements] + own


def _extras_of(text: str) -> set[str]:
    match = re.search(r"\[([^\]]*)\]", text.split(";")[0])
    return {e.strip() for e in match.group(1).split(",") if e.strip()} if match else set()


# --- pyproject.toml ------------------------------------------------------------------------------


def _read_pyproject(c: _Collector, data: dict[str, Any]) -> None:
    project = table(data, "project")
    for text in string_list(project.get("dependencies"), "pyproject.toml [project] dependencies"):
        c.add(text, "pyproject.toml [project] dependencies")
    for name, texts in table(project, "optional-dependencies").items():
        where = f"pyproject.toml [project.optional-dependencies] {name}"
        c.extras.add(name, string_list(texts, where), where)
    groups = data.get("dependency-groups")
    if isinstance(groups, dict):
        for name in groups:
            extra_name(name, "pyproject.toml [dependency-groups]")
        c.groups = groups
    _read_dynamic_files(c, data)
    _read_tool_tables(c, data)


def _read_dynamic_files(c: _Collector, data: dict[str, Any]) -> None:
    """Dependencies a backend takes from requirements files: setuptools' ``dynamic`` ``file =``
    and hatch's ``requirements_txt`` hook. Read here, they are static."""
    dynamic = table(data, "tool", "setuptools", "dynamic")
    hatch = table(data, "tool", "hatch", "metadata", "hooks", "requirements_txt")
    for where, files in (("pyproject.toml [tool.setuptools.dynamic] dependencies",
                          table(dynamic, "dependencies").get("file")),
                         ("pyproject.toml [tool.hatch.metadata.hooks.requirements_txt] files", hatch.get("files"))):
        if files is not None:
            for text, line in c.requirement_lines(_file_list(files, where), where):
                c.add(text, line)
    for source, extras in (("pyproject.toml [tool.setuptools.dynamic.optional-dependencies]",
                            table(dynamic, "optional-dependencies")),
                           ("pyproject.toml [tool.hatch.metadata.hooks.requirements_txt.optional-dependencies]",
                            table(hatch, "optional-dependencies"))):
        for name, value in extras.items():
            where = f"{source} {name}"
            files = value.get("file") if isinstance(value, dict) else value
            c.extras.add(name, [text for text, _ in c.requirement_lines(_file_list(files, where), where)], where)


def _file_list(value: Any, where: str) -> list[str]:
    return [value] if isinstance(value, str) else string_list(value, where)


def _read_tool_tables(c: _Collector, data: dict[str, Any]) -> None:
    """PDM's dev-dependencies, hatch's default/test environments, poetry, old flit: read like extras."""
    for name, texts in table(data, "tool", "pdm", "dev-dependencies").items():
        where = f"pyproject.toml [tool.pdm.dev-dependencies] {name}"
        c.extras.add(name, string_list(texts, where), where)
    for env in ("default", *DEFAULT_EXTRAS):
        c.in_group(Group(rank=_rank_of(env), name=f"hatch env {env}"))
        hatch = table(data, "tool", "hatch", "envs", env)
        for key in ("dependencies", "extra-dependencies"):
            where = f"pyproject.toml [tool.hatch.envs.{env}] {key}"
            for text in string_list(hatch.get(key), where):
                if "{" not in text:  # hatch's context formatting ({root:uri}) is not ours to expand
                    c.add(text, where)
    for where, deps in poetry_tables(data):
        main = where.endswith("[tool.poetry.dependencies]")
        c.in_group(None if main else Group(rank=_rank_of(where.split(".")[-2]), name=where.split(" ", 1)[1]))
        for name, value in deps.items():
            converted = poetry_requirement(str(name), value, where)
            if converted is not None:
                c.add(converted, where)
    c.in_group(None)
    flit = table(data, "tool", "flit", "metadata")
    for text in string_list(flit.get("requires"), "pyproject.toml [tool.flit.metadata] requires"):
        c.add(text, "pyproject.toml [tool.flit.metadata] requires")
    for name, texts in table(flit, "requires-extra").items():
        where = f"pyproject.toml [tool.flit.metadata.requires-extra] {name}"
        c.extras.add(name, string_list(texts, where), where)


# --- setup.cfg, setup.py ---------------------------------------------------------------------------


def _read_setup_cfg(c: _Collector, cfg: configparser.ConfigParser | None) -> None:
    if cfg is None:
        return
    c.files.append("setup.cfg")
    if cfg.has_option("options", "install_requires"):
        where = "setup.cfg [options] install_requires"
        for line in _cfg_lines(c, cfg.get("options", "install_requires"), where):
            c.add(line, where)
    if cfg.has_section("options.extras_require"):
        for name, value in cfg.items("options.extras_require"):
            where = f"setup.cfg [options.extras_require] {name}"
            c.extras.add(name, _cfg_lines(c, value, where), where)


def _cfg_lines(c: _Collector, value: str, where: str) -> list[str]:
    """A setup.cfg list; ``file:`` read (it names requirements files), ``attr:`` left to the backend."""
    lines = setuptools_lines([value])
    if len(lines) == 1 and ";" not in lines[0] and "," in lines[0]:  # one line, comma-separated
        lines = [part.strip() for part in lines[0].split(",") if part.strip()]
    found: list[str] = []
    for line in lines:
        if line.startswith("file:"):
            found += [text for text, _ in c.requirement_lines(line[5:].replace(",", " ").split(), where)]
        elif line.startswith("attr:"):
            c.dynamic.append(f"{where}: {line[:80]!r} is computed by the build backend")
        else:
            found.append(line)
    return found


def _read_setup_py(c: _Collector, setup: SetupCall) -> None:
    c.files.append("setup.py")
    c.notes.extend(setup.notes)
    for name, why in setup.computed.items():
        c.notes.append(f"setup.py: {name}= is computed at run time ({why}); not read")
    where = "setup.py install_requires"
    for text in _literal_list(setup.values.get("install_requires"), where):
        c.add(text, where)
    extras = setup.values.get("extras_require")
    if isinstance(extras, dict):
        for name, texts in extras.items():
            where = f"setup.py extras_require {name}"
            if isinstance(name, str) and name.startswith(":"):  # {":python_version<'3'": [...]}: conditional deps
                for text in _literal_list(texts, where):
                    c.add(f"{text}; {name[1:]}" if name[1:].strip() else text, where)
                continue
            extra, _, marker = str(name).partition(":")
            texts = [f"{t}; {marker}" if marker else t for t in _literal_list(texts, where)]
            c.extras.add(extra, texts, where)
    elif extras is not None:
        raise EnvError("setup.py extras_require: expected a dict of lists", usage=True)
    tests_require = setup.values.get("tests_require")
    if tests_require:
        c.extras.add("tests-require", _literal_list(tests_require, "setup.py tests_require"), "setup.py tests_require")


def _literal_list(value: Any, where: str) -> list[str]:
    if isinstance(value, str):
        value = value.splitlines()
    if value is None:
        return []
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise EnvError(f"{where}: expected a list of strings", usage=True)
    return setuptools_lines(value)


def setuptools_lines(values: list[str] | tuple[str, ...]) -> list[str]:
    """Requirement strings as setuptools reads them (``_reqs.parse``): each value's lines stripped, blank and
    ``#`` lines dropped, an inline `` #`` comment cut (xarray: ``setuptools >= 40.4  # For pkg_resources``), a
    line ending in a backslash joined to the next one left (zipp: ``pytest-black; \\``, a comment line, then
    its marker). A continuation at the very end is dropped, as setuptools drops it."""
    lines = [line.strip() for value in values for line in value.splitlines()]
    kept = [line.partition(" #")[0].strip() for line in lines if line and not line.startswith("#")]
    joined: list[str] = []
    pending = ""
    for line in kept:
        if line.endswith("\\"):
            pending += line[:-1].strip() + " "
            continue
        joined.append(pending + line)
        pending = ""
    return [line for line in joined if line]


# --- requirements files, tox -----------------------------------------------------------------------


def requirement_files(repo: Path) -> list[str]:
    """requirements.txt, and the requirements files whose names say they are about tests or development."""
    found: list[str] = []
    if _present(repo, "requirements.txt"):
        found.append("requirements.txt")
    for path in sorted(repo.glob("*requirements*.txt")):
        if path.name != "requirements.txt" and _ABOUT_TESTS.search(path.stem.replace("requirements", "")):
            found.append(path.name)
    folder = repo / "requirements"
    if folder.is_dir() and not folder.is_symlink():
        for path in sorted(folder.glob("*.txt")):
            if _ABOUT_TESTS.search(path.stem):
                found.append(f"requirements/{path.name}")
    return found


def _present(repo: Path, relative: str) -> bool:
    """A file, or a symlink (read later, and refused there when it leaves the repository)."""
    path = repo / relative
    return path.is_symlink() or path.is_file()


def _read_requirement_files(c: _Collector, files: list[str], asked: list[str]) -> None:
    """Each found file its own group (candidates.py); the files the user named are read for every environment."""
    for relative in files:
        c.in_group(_file_group(relative))
        c.fresh_reader()
        try:
            c.reader.read(relative)
        except EnvError as exc:  # one file refused or broken: its environment is not a candidate, the rest are
            c.notes.append(f"{relative} not used: {exc}")
            c.reader = RequirementsFile(c.repo)
            c._taken = (0, 0, 0, 0, 0)
            continue
        c.take_from_reader()
    c.in_group(None)
    c.fresh_reader()
    for relative in asked:
        c.reader.read(relative)
        c.take_from_reader()


def _file_group(relative: str) -> Group:
    stem = Path(relative).stem.replace("requirements", "")
    tests = re.search(r"(^|[-_./])(test|tests|testing)([-_.]|$)", stem, re.IGNORECASE)
    return Group(rank=TEST_FILE if tests and relative != "requirements.txt" else OTHER, name=relative)


def _rank_of(name: str) -> int:
    """An extra's, group's or env's rank by its name: test, tests, testing are CI's; dev and the rest are not."""
    return CI if _norm(name) in ("test", "tests", "testing", "tests-require") else OTHER


def _read_tox(c: _Collector, pyproject: dict[str, Any] | None) -> None:
    env = read_tox(c.repo, pyproject)
    if env is None:
        return
    c.in_group(Group(rank=CI, name=f"{env.file} [testenv]"))
    c.fresh_reader()
    try:
        _read_tox_env(c, env)
    except EnvError as exc:  # its deps refused (flask 2.0: a local path, examples/tutorial[test]): not a candidate
        c.notes.append(f"{env.file} [testenv] not used: {exc}")
        c.tagged = [(group, req) for group, req in c.tagged if group != c.group]
        c.requirements = [req for group, req in c.tagged]
        c.reader = RequirementsFile(c.repo)
        c._taken = (0, 0, 0, 0, 0)
    c.in_group(None)


def _read_tox_env(c: _Collector, env: ToxEnv) -> None:
    if env.file not in c.files:
        c.files.append(env.file)
    c.notes.extend(env.notes)
    for marker in dict.fromkeys(env.markers.get(where) for where, _ in env.deps):
        block = [(where, line) for where, line in env.deps if env.markers.get(where) == marker]
        c.reader.read_lines(block, ".", env.sources, marker)
    c.take_from_reader()
    for extra in env.extras:
        c.expand_extra(extra, f"{env.file} [testenv] extras", required=False)


# --- what else the files say ----------------------------------------------------------------------


def _dynamic_reasons(pyproject: dict[str, Any] | None, setup: SetupCall | None, system: BuildSystem,
                     c: _Collector) -> list[str]:
    """Why the static reading misses part of the dependency metadata (see the module doc)."""
    data = pyproject or {}
    meta = table(data, "project")
    reasons = list(c.dynamic)
    if meta:
        dynamic = [d for d in meta.get("dynamic") or [] if isinstance(d, str)]
        filled = _statically_filled(data)
        for field in ("dependencies", "optional-dependencies"):
            if field in dynamic and field not in filled:
                reasons.append(f"pyproject.toml [project] dynamic lists {field!r} (filled by {system.backend})")
        return reasons
    if table(data, "tool", "poetry") and system.backend.startswith("poetry"):
        return reasons
    if table(data, "tool", "flit", "metadata") and system.backend.startswith("flit"):
        return reasons
    if setup is not None:
        if not setup.found:
            reasons.append("setup.py: no setup(...) call to read; its metadata is only known by running it")
        reasons += [f"setup.py: {key}= is computed at run time ({setup.computed[key]})"
                    for key in METADATA_KEYS if key in setup.computed]
    elif system.declared and not system.setuptools:
        reasons.append(f"pyproject.toml [build-system] build-backend {system.backend!r}: no [project] table, "
                       "its metadata is not readable statically")
    return reasons


def _statically_filled(data: dict[str, Any]) -> set[str]:
    """The dynamic [project] fields a static file fills (setuptools' ``file =``, hatch's hook, poetry 2)."""
    filled = set()
    dynamic = table(data, "tool", "setuptools", "dynamic")
    hatch = table(data, "tool", "hatch", "metadata", "hooks", "requirements_txt")
    poetry = table(data, "tool", "poetry")
    if "file" in table(dynamic, "dependencies") or "files" in hatch or table(poetry, "dependencies"):
        filled.add("dependencies")
    if table(dynamic, "optional-dependencies") or table(hatch, "optional-dependencies") or table(poetry, "extras"):
        filled.add("optional-dependencies")
    return filled


def _extension_reasons(repo: Path, data: dict[str, Any], setup: SetupCall | None, system: BuildSystem,
                       notes: list[str]) -> list[str]:
    reasons = list(setup.extensions) if setup is not None else []
    if setup is not None and setup.computed_extensions and not reasons:
        # Computed by code the file does not show (astropy's extension_helpers.get_extensions(), its 1.3
        # setup(**package_info)): the tree's sources are the only static witness. Taking a compiler for a
        # project that needs none costs a tools image once; not taking one fails its build.
        sources = compiled_sources(repo)
        if sources:
            reasons.append(f"{setup.computed_extensions} and the tree holds {len(sources)} C/Cython sources "
                           f"({', '.join(sources[:2])}{', ...' if len(sources) > 2 else ''})")
        else:
            notes.append(f"{setup.computed_extensions}, and the tree holds no C/Cython source: taken as no compiled "
                         "extensions")
    ext_modules = table(data, "tool", "setuptools").get("ext-modules")
    if isinstance(ext_modules, list) and ext_modules:
        reasons.append(f"pyproject.toml [tool.setuptools] ext-modules lists {len(ext_modules)}")
    if system.compiles:
        reasons.append(f"pyproject.toml [build-system] build-backend {system.backend!r} builds compiled code")
    build = table(data, "tool", "poetry").get("build")
    script = build.get("script") if isinstance(build, dict) else build
    if isinstance(script, str) and script:
        reasons.append(f"pyproject.toml [tool.poetry] build script {script[:80]!r}")
    return reasons


def read_declared(
    repo: Path,
    extras: list[str] | None = None,
    groups: list[str] | None = None,
    requirements: list[str] | None = None,
    runner: str | None = DEFAULT_RUNNER,
) -> Declared:
    """Everything ``repo`` declares for running its tests; EnvError (usage) on a hostile or broken file.

    ``extras``/``groups`` add to the defaults (test, tests, testing, dev, when they exist);
    ``requirements`` are extra requirement files (relative to the repo); ``runner`` is added
    when the project names no test runner of that name itself. Every error is one line: what a
    message quotes from the repository (a key with a line break in it) is escaped.
    """
    try:
        return _read_declared(repo, extras or [], groups or [], requirements or [], runner)
    except EnvError as exc:
        raise EnvError(printable(str(exc)), usage=exc.usage) from None
    except RecursionError:
        raise EnvError(f"{repo.name}: a declaration nested too deeply to read; refused", usage=True) from None


def _read_declared(repo: Path, extras: list[str], groups: list[str], requirements: list[str],
                   runner: str | None) -> Declared:
    pyproject = read_toml(repo, "pyproject.toml")
    setup = read_setup_py(repo)
    cfg = read_ini(repo, "setup.cfg")
    system = read_build_system(repo, pyproject)
    notes: list[str] = []
    reasons = _extension_reasons(repo, pyproject or {}, setup, system, notes)
    project = read_project(repo, pyproject, setup, cfg, notes, compiled=bool(reasons))
    c = _Collector(repo, project)
    c.notes.extend(notes)
    if pyproject is not None:
        c.files.append("pyproject.toml")
        _read_pyproject(c, pyproject)
        c.sources += read_pyproject_sources(pyproject)
    _read_setup_cfg(c, cfg)
    if setup is not None:
        _read_setup_py(c, setup)
    for name in [*DEFAULT_EXTRAS, "tests-require"]:
        c.in_group(Group(rank=_rank_of(name), name="setup.py tests_require" if name == "tests-require"
                         else f"extra {name}"))
        c.expand_extra(name, "setup.py" if name == "tests-require" else "default extras", required=False)
    for name in [g for g in DEFAULT_EXTRAS if _norm(g) in {_norm(k) for k in c.groups}]:
        c.in_group(Group(rank=_rank_of(name), name=f"dependency group {name}"))
        c.expand_group(name, "default groups")
    c.in_group(None)
    for name in extras:
        c.expand_extra(name, "--extra")
    for name in groups:
        c.expand_group(name, "--group")
    _read_requirement_files(c, requirement_files(repo), requirements)
    _read_tox(c, pyproject)
    file_sources, source_files = read_file_sources(repo)
    declared = Declared(requirements=dedupe(c.requirements), project=project, files=[*c.files, *source_files],
                        notes=c.notes, dynamic_metadata=_dynamic_reasons(pyproject, setup, system, c),
                        build_system=system, extensions=reasons,
                        sources=[*c.sources, *file_sources])
    if project.extension_modules:
        declared.build_requires = system.requires
        declared.sources_digest = source_digest(repo)
        declared.notes.append("the project's compiled extensions are built at env time; "
                              "edits to their C/Cython sources need a new `codebox env build`")
    if runner and declared.needs_env and _norm(runner) not in {r.name for r in declared.requirements}:
        declared.requirements.append(parse_requirement(runner, "codebox default (the test runner)"))
    declared.candidates = _candidates(c, runner if declared.needs_env else None, project.name is not None)
    return declared


def _candidates(c: _Collector, runner: str | None, project: bool) -> list[Candidate]:
    base = [req for group, req in c.tagged if group is None]
    groups: dict[str, tuple[Group, list[Requirement]]] = {}
    for group, req in c.tagged:
        if group is not None:
            groups.setdefault(group.name, (group, []))[1].append(req)
    return make_candidates(base, list(groups.values()), runner, project)
