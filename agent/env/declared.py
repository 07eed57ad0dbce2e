"""What a repository declares it needs, read statically on the host: parsed, never executed.

Sources, in order: pyproject.toml (``[project]`` dependencies, the optional-dependencies
extras asked for — test/tests/testing/dev by default — PEP 735 ``[dependency-groups]``,
hatch's default env, PDM's dev-dependencies, poetry's dependencies and dev/test groups),
setup.cfg (``install_requires``, ``extras_require``), setup.py (literal arguments of
``setup()`` only), requirements files about running or testing the project, and tox.ini's
``[testenv]`` deps. A requirement naming the project itself (``attrs[tests]`` inside attrs,
``-e .[test]``) expands the project's own extras: the project is never resolved from the index.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name
from pydantic import BaseModel, Field

from agent.env.errors import EnvError
from agent.env.extensions import build_requires, source_digest
from agent.env.poetry import poetry_tables
from agent.env.poetry import requirement as poetry_requirement
from agent.env.project import Project, read_project
from agent.env.reqlines import Requirement, RequirementsFile, SelfReference, parse_requirement
from agent.env.safe_read import read_ini, read_toml, string_list, table
from agent.env.setup_py import SetupCall, read_setup_py

DEFAULT_EXTRAS = ("test", "tests", "testing", "dev")
# The test runner every environment gets unless the project names its own.
DEFAULT_RUNNER = "pytest"
# The note of an environment for a repository that declares nothing (choose.py, build.py).
NO_DEPENDENCIES = "the repository declares no dependencies: the base image is used as it is"
_ABOUT_TESTS = re.compile(r"(^|[-_./])(test|tests|testing|dev|develop|ci)([-_.]|$)", re.IGNORECASE)
_TOX_FACTOR = re.compile(r"^[A-Za-z0-9_{},.!-]+:\s")


class Declared(BaseModel):
    """The requirements found (each with its origin), the project itself, and what was read."""

    requirements: list[Requirement] = Field(default_factory=list)
    project: Project
    files: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    # Only for a project with compiled extensions: what building them needs, and their sources' digest.
    build_requires: list[Requirement] = Field(default_factory=list)
    sources_digest: str = ""

    @property
    def needs_env(self) -> bool:
        """False for a repository that declares nothing: the plain sandbox image serves it."""
        return bool(self.requirements) or self.project.name is not None


class _Extras:
    """The project's extras by name, from whichever file declares them."""

    def __init__(self) -> None:
        self.by_name: dict[str, tuple[list[str], str]] = {}

    def add(self, name: str, requirements: list[str], source: str) -> None:
        self.by_name.setdefault(_norm(name), (requirements, source))


def _norm(name: str) -> str:
    return canonicalize_name(name)


class _Collector:
    def __init__(self, repo: Path, project: Project) -> None:
        self.repo = repo
        self.project = project
        self.requirements: list[Requirement] = []
        self.files: list[str] = []
        self.notes: list[str] = []
        self.extras = _Extras()
        self.groups: dict[str, list[Any]] = {}
        self._expanded: set[str] = set()

    def add(self, text: str, source: str) -> None:
        req = parse_requirement(text, source)
        if self.project.name and req.name == _norm(self.project.name):
            for extra in sorted(_extras_of(text)):
                self.expand_extra(extra, source)
            return
        self.requirements.append(req)

    def expand_extra(self, name: str, source: str, required: bool = True) -> None:
        key = _norm(name)
        if key in self._expanded:
            return
        if key not in self.extras.by_name:
            if required:
                raise EnvError(f"{source}: the project has no extra named {name!r} "
                               f"(it has: {', '.join(sorted(self.extras.by_name)) or 'none'})", usage=True)
            return
        self._expanded.add(key)
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
        for entry in entries:
            if isinstance(entry, str):
                self.add(entry, where)
            elif isinstance(entry, dict) and isinstance(entry.get("include-group"), str):
                self.expand_group(entry["include-group"], where, (*stack, key))
            else:
                raise EnvError(f"{where}: entries must be strings or {{include-group = ...}}", usage=True)


def _extras_of(text: str) -> set[str]:
    match = re.search(r"\[([^\]]*)\]", text.split(";")[0])
    return {e.strip() for e in match.group(1).split(",") if e.strip()} if match else set()


def _read_pyproject(c: _Collector, data: dict[str, Any]) -> None:
    project = table(data, "project")
    for text in string_list(project.get("dependencies"), "pyproject.toml [project] dependencies"):
        c.add(text, "pyproject.toml [project] dependencies")
    for name, texts in table(project, "optional-dependencies").items():
        where = f"pyproject.toml [project.optional-dependencies] {name}"
        c.extras.add(name, string_list(texts, where), where)
    groups = data.get("dependency-groups")
    if isinstance(groups, dict):
        c.groups = groups
    _read_tool_tables(c, data)


def _read_tool_tables(c: _Collector, data: dict[str, Any]) -> None:
    """PDM's dev-dependencies and hatch's default/test environments: PEP 508 lists, read like extras."""
    for name, texts in table(data, "tool", "pdm", "dev-dependencies").items():
        where = f"pyproject.toml [tool.pdm.dev-dependencies] {name}"
        c.extras.add(name, string_list(texts, where), where)
    for env in ("default", *DEFAULT_EXTRAS):
        hatch = table(data, "tool", "hatch", "envs", env)
        for key in ("dependencies", "extra-dependencies"):
            where = f"pyproject.toml [tool.hatch.envs.{env}] {key}"
            for text in string_list(hatch.get(key), where):
                if "{" not in text:  # hatch's context formatting ({root:uri}) is not ours to expand
                    c.add(text, where)
    for where, deps in poetry_tables(data):
        for name, value in deps.items():
            converted = poetry_requirement(str(name), value, where)
            if converted is not None:
                c.add(converted, where)


def _read_setup_cfg(c: _Collector) -> None:
    cfg = read_ini(c.repo, "setup.cfg")
    if cfg is None:
        return
    c.files.append("setup.cfg")
    if cfg.has_option("options", "install_requires"):
        _add_cfg_lines(c, cfg.get("options", "install_requires"), "setup.cfg [options] install_requires")
    if cfg.has_section("options.extras_require"):
        for name, value in cfg.items("options.extras_require"):
            where = f"setup.cfg [options.extras_require] {name}"
            c.extras.add(name, _cfg_lines(value, where), where)


def _cfg_lines(value: str, where: str) -> list[str]:
    lines = [line.strip() for line in value.splitlines() if line.strip() and not line.strip().startswith("#")]
    if any(line.startswith(("file:", "attr:")) for line in lines):
        raise EnvError(f"{where}: 'file:'/'attr:' values are not read; list the requirements or use --requirements",
                       usage=True)
    return lines


def _add_cfg_lines(c: _Collector, value: str, where: str) -> None:
    for line in _cfg_lines(value, where):
        c.add(line, where)


def _read_setup_py(c: _Collector, setup: SetupCall) -> None:
    c.files.append("setup.py")
    for name in setup.computed:
        c.notes.append(f"setup.py: {name}= is computed at run time; not read")
    where = "setup.py install_requires"
    for text in _literal_list(setup.values.get("install_requires"), where):
        c.add(text, where)
    extras = setup.values.get("extras_require")
    if isinstance(extras, dict):
        for name, texts in extras.items():
            where = f"setup.py extras_require {name}"
            c.extras.add(str(name), _literal_list(texts, where), where)
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
    return [v.strip() for v in value if v.strip() and not v.strip().startswith("#")]


def requirement_files(repo: Path) -> list[str]:
    """requirements.txt, and the requirements files whose names say they are about tests or development."""
    found: list[str] = []
    if (repo / "requirements.txt").is_file():
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


def _read_requirement_files(c: _Collector, files: list[str]) -> None:
    reader = RequirementsFile(c.repo)
    for relative in files:
        reader.read(relative)
    c.files.extend(reader.files)
    c.notes.extend(reader.notes)
    for req in reader.requirements:
        c.add(req.text, req.source)
    for ref in reader.self_refs:
        c.add_self_ref(ref)


def _read_tox(c: _Collector) -> None:
    cfg = read_ini(c.repo, "tox.ini")
    if cfg is None or not cfg.has_section("testenv"):
        return
    c.files.append("tox.ini")
    where = "tox.ini [testenv] deps"
    for line in cfg.get("testenv", "deps", fallback="").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if _TOX_FACTOR.match(line) or ("{" in line and not line.startswith("-r")):
            c.notes.append(f"{where}: {line!r} (factor-conditional or substituted) not read")
            continue
        if line.startswith("-r"):
            included = line[2:].strip().replace("{toxinidir}/", "").replace("{toxinidir}", ".")
            _read_requirement_files(c, [included])
            continue
        c.add(line, where)
    for extra in cfg.get("testenv", "extras", fallback="").replace(",", "\n").split():
        c.expand_extra(extra, "tox.ini [testenv] extras", required=False)


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
    when the project names no test runner of that name itself.
    """
    pyproject = read_toml(repo, "pyproject.toml")
    setup = read_setup_py(repo)
    project = read_project(repo, pyproject, setup)
    c = _Collector(repo, project)
    if pyproject is not None:
        c.files.append("pyproject.toml")
        _read_pyproject(c, pyproject)
    _read_setup_cfg(c)
    if setup is not None:
        _read_setup_py(c, setup)
    for name in DEFAULT_EXTRAS:
        c.expand_extra(name, "default extras", required=False)
    c.expand_extra("tests-require", "setup.py", required=False)
    for name in extras or []:
        c.expand_extra(name, "--extra")
    for name in [g for g in DEFAULT_EXTRAS if _norm(g) in {_norm(k) for k in c.groups}]:
        c.expand_group(name, "default groups")
    for name in groups or []:
        c.expand_group(name, "--group")
    _read_requirement_files(c, [*requirement_files(repo), *(requirements or [])])
    _read_tox(c)
    declared = Declared(requirements=_dedupe(c.requirements), project=project, files=c.files, notes=c.notes)
    if project.extension_modules:
        declared.build_requires = build_requires(pyproject)
        declared.sources_digest = source_digest(repo)
        declared.notes.append("the project's compiled extensions are built at env time; "
                              "edits to their C/Cython sources need a new `codebox env build`")
    if runner and declared.needs_env and _norm(runner) not in {r.name for r in declared.requirements}:
        declared.requirements.append(parse_requirement(runner, "codebox default (the test runner)"))
    return declared


def _dedupe(requirements: list[Requirement]) -> list[Requirement]:
    seen: set[str] = set()
    kept = []
    for req in requirements:
        if req.text not in seen:
            seen.add(req.text)
            kept.append(req)
    return kept
