"""The user's defaults, where each one comes from, and which of a project's settings count.

Order, highest first (docs/configuration.md and `codebox config` show the same table):

  flag > environment (CODEBOX_<KEY>; OPENAI_BASE_URL for base_url) > user config
  ($XDG_CONFIG_HOME/codebox/codebox.toml) > trusted project > built-in default

A project is a folder's `[tool.codebox]` in pyproject.toml and its codebox.toml (which wins):
the current folder's, and the --repo's (which wins). Until the user trusts it (`codebox trust
PATH`, agent.settings.trust), a project's value counts only where it tightens the default it replaces
(agent.settings.rules says so per key); any other value is refused, in one line, and ignored.

Every command reads these before it parses its flags, so this module imports no pydantic: the
sources are merged here and their values checked here, with the same words as the flags'
checks ("max_steps: must be at least 1 (got 0)"). The built-in defaults come from agent.defaults.
"""

from __future__ import annotations

import math
import os
import stat
from pathlib import Path
from typing import Any, Literal, NamedTuple

from agent.defaults import SETTINGS, PolicyName, bound_problem
from agent.errors import CodeboxError
from agent.escape import one_line
from agent.settings.environment import config_dir, read_environment


class ConfigError(CodeboxError):
    """A config file that cannot be read or holds a bad value; the message names the file."""


def user_config_file() -> Path:
    return config_dir() / "codebox.toml"


def _default(key: str) -> Any:
    return SETTINGS[key].default


class CodeboxSettings:
    """Every default a user may set once instead of on every command line.

    A plain class, not a dataclass (whose import costs `--help` more than the rest of this
    module): the annotations are the keys with their types (agent.defaults.SETTINGS declares each one's
    default, bounds, trust rule and help; a test keeps the two the same keys).
    load_settings also says where each value came from (``sources``), which project values were
    refused (``refused``), the projects it read (``projects``) and what it could not read (``notes``).
    """

    model: str | None = _default("model")
    base_url: str | None = _default("base_url")
    api_key_env: str | None = _default("api_key_env")
    api: Literal["chat", "responses"] | None = _default("api")
    request_timeout: float | None = _default("request_timeout")
    temperature: float | None = _default("temperature")
    policy: PolicyName = _default("policy")
    allow: list[str] = _default("allow")
    deny: list[str] = _default("deny")
    test_cmd: str | None = _default("test_cmd")
    test_timeout: float = _default("test_timeout")
    max_test_timeout: float = _default("max_test_timeout")
    max_steps: int = _default("max_steps")
    timeout: float = _default("timeout")
    max_total_tokens: int | None = _default("max_total_tokens")
    max_cost: float | None = _default("max_cost")
    price_input: float | None = _default("price_input")
    price_output: float | None = _default("price_output")
    image: str | None = _default("image")
    memory: str = _default("memory")
    pids: int = _default("pids")
    cpus: float = _default("cpus")
    backend: str = _default("backend")
    runtime: str = _default("runtime")
    jobs: int = _default("jobs")
    env_candidates: int = _default("env_candidates")
    env_candidate_timeout: float = _default("env_candidate_timeout")
    python: str | None = _default("python")
    python_pull: Literal["no", "yes"] = _default("python_pull")
    python_images: list[str] = _default("python_images")

    def __init__(self, **values: Any) -> None:
        """The built-in defaults, replaced by ``values`` (checked already: see load_settings)."""
        for key in KNOWN_KEYS:
            value = values[key] if key in values else getattr(CodeboxSettings, key)
            setattr(self, key, list(value) if isinstance(value, list) else value)
        self.sources: dict[str, Source] = {key: DEFAULT_SOURCE for key in KNOWN_KEYS}
        self.refused: list[Refusal] = []
        self.projects: list[Project] = []
        self.notes: list[str] = []

    def __repr__(self) -> str:
        return "CodeboxSettings(" + ", ".join(f"{key}={getattr(self, key)!r}" for key in KNOWN_KEYS) + ")"

    def given_as_flags(self, values: dict[str, Any]) -> None:
        """These values came from the command line (agent.cli.parser knows which flags were given)."""
        for key, value in values.items():
            if key in self.sources:
                setattr(self, key, value)
                self.sources[key] = Source("flag", "--" + key.replace("_", "-"))

    def from_projects(self) -> list[str]:
        """The keys whose value in effect came from a project's file."""
        return [key for key in KNOWN_KEYS if self.sources[key].kind == "project"]


KNOWN_KEYS: tuple[str, ...] = tuple(SETTINGS)  # CodeboxSettings annotates the same keys (a test checks)

SourceKind = Literal["default", "project", "user", "environment", "flag"]


class Source(NamedTuple):
    """Where a setting's value came from."""

    kind: SourceKind
    where: str = ""  # the file (with its table), the variable, or the flag
    key: str = ""  # the key in that file
    trusted: bool = False  # a project's file: trusted by the user, or untrusted (its value only tightens)

    def __str__(self) -> str:
        if self.kind == "default":
            return "default"
        if self.kind == "flag":
            return f"flag {self.where}"
        if self.kind == "environment":
            return f"environment {self.where}"
        text = f"{self.where}: {self.key}"
        if self.kind == "project":
            text += " (trusted project)" if self.trusted else " (untrusted project: tightens the default)"
        return text


DEFAULT_SOURCE = Source("default")


class ProjectFile(NamedTuple):
    """One file's codebox settings in a project, as written."""

    name: str  # "pyproject.toml" or "codebox.toml"
    label: str  # the file and its table, for messages: "/repo/pyproject.toml [tool.codebox]"
    values: dict[str, Any]


Trust = Literal["trusted", "untrusted", "changed"]


class Project(NamedTuple):
    """A folder's codebox settings (lowest first: pyproject.toml, then codebox.toml) and the user's trust."""

    root: Path
    files: tuple[ProjectFile, ...]
    digest: str
    trust: Trust  # "changed": trusted once, edited since (so untrusted)


class Refusal(NamedTuple):
    """A project's value that does not count: it loosens or redirects, is unknown or is not valid."""

    label: str
    key: str
    value: Any
    why: str
    root: Path
    trustable: bool  # trusting the project would let it apply (false: unknown key or bad value)

    def line(self) -> str:
        hint = f"; `codebox trust {self.root}` lets it apply" if self.trustable else ""
        value = one_line(shown(self.value), 80)
        return one_line(f"{self.label}: {self.key} = {value}: refused ({self.why}){hint}", 400)


# Written as JSON in an environment variable: CODEBOX_DENY='["*.pem", "*.key"]'.
LISTS = frozenset(key for key, setting in SETTINGS.items() if setting.kind == "list")

MAX_PROJECT_FILE_BYTES = 1_000_000  # no real pyproject.toml comes near this
_PROJECT_FILES: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("pyproject.toml", ("tool", "codebox"), " [tool.codebox]"),
    ("codebox.toml", (), ""),
)


# --- reading -------------------------------------------------------------------------------------


def _parse_toml(text: str, path: Path, table: tuple[str, ...]) -> dict[str, Any]:
    import tomllib  # here: with no file, `codebox --help` does without it

    try:
        data: Any = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError) as exc:
        raise ConfigError(one_line(f"{path}: cannot read it as TOML: {exc}", 300)) from exc
    for key in table:
        data = data.get(key, {}) if isinstance(data, dict) else {}
    return data if isinstance(data, dict) else {}


def _read_toml(path: Path, table: tuple[str, ...] = ()) -> dict[str, Any]:
    """The user's file's table, {} when the file is absent; ConfigError when it is not valid TOML."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(one_line(f"{path}: cannot read it as TOML: {exc}", 300)) from exc
    return _parse_toml(text, path, table)


def _read_project_file(root: Path, name: str) -> str | None:
    """A project's file, read as hostile input: inside the folder, a regular file, bounded, UTF-8.

    None when absent; ConfigError saying why it is not read (a FIFO would block, a symlink could
    point at any file of the user's).
    """
    path = root / name
    try:
        if not os.path.lexists(path):
            return None
        real = path.resolve()
        if root.resolve() not in real.parents:
            raise ConfigError(f"{path}: a link to a file outside {root}; not read")
        info = real.stat()
        if not stat.S_ISREG(info.st_mode):
            raise ConfigError(f"{path}: not a regular file; not read")
        if info.st_size > MAX_PROJECT_FILE_BYTES:
            raise ConfigError(f"{path}: {info.st_size} bytes is too large; not read")
        with open(real, "rb") as f:
            return f.read(MAX_PROJECT_FILE_BYTES + 1).decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start}); not read") from None
    except OSError as exc:
        raise ConfigError(one_line(f"{path}: cannot read it: {exc}", 300)) from None


def read_project(root: Path) -> tuple[list[ProjectFile], list[str]]:
    """A folder's codebox settings (lowest first) and, one line each, the files it could not read."""
    files: list[ProjectFile] = []
    notes: list[str] = []
    for name, table, suffix in _PROJECT_FILES:
        try:
            text = _read_project_file(root, name)
            if text is None:
                continue
            values = _parse_toml(text, root / name, table)
        except ConfigError as exc:
            notes.append(f"{exc}: its codebox settings are ignored")
            continue
        if values:
            files.append(ProjectFile(name, f"{root / name}{suffix}", values))
    return files, notes


def project_digest(files: list[ProjectFile]) -> str:
    """What the user trusts: the settings as written, file by file (an edit to them needs trusting again)."""
    import hashlib
    import json

    text = json.dumps([[f.name, f.values] for f in files], sort_keys=True, default=str, ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _project_roots(cwd: Path, repo: Path | None) -> list[Path]:
    """The folders whose settings count, lowest first: the current folder, then the --repo."""
    roots = [cwd.resolve()]
    if repo is not None and repo.is_dir() and repo.resolve() not in roots:
        roots.append(repo.resolve())
    return roots


def _projects(roots: list[Path], notes: list[str]) -> list[Project]:
    read = [(root, *read_project(root)) for root in roots]
    found = [(root, files) for root, files, _ in read if files]
    for _, _, unread in read:
        notes += unread
    trusted: dict[str, str] = {}
    if found:
        from agent.settings.trust import TrustError, trusted_digests

        try:
            trusted = trusted_digests()
        except TrustError as exc:
            raise ConfigError(str(exc)) from None
    projects = []
    for root, files in found:
        digest = project_digest(files)
        known = trusted.get(str(root))
        trust: Trust = "untrusted" if known is None else "trusted" if known == digest else "changed"
        if trust == "changed":
            notes.append(f"{root}: its codebox settings changed since you trusted them; they count as untrusted "
                         f"until `codebox trust {root}` again")
        projects.append(Project(root, tuple(files), digest, trust))
    return projects


# --- merging -------------------------------------------------------------------------------------


def load_settings(repo: Path | None = None, cwd: Path | None = None) -> CodeboxSettings:
    """The settings in effect (without the flags: agent.cli.parser adds those); ConfigError with the
    file (or variable) and key when the user's own value is wrong."""
    try:
        env, env_names = read_environment(KNOWN_KEYS, LISTS)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    user_path = user_config_file()
    user = _read_toml(user_path)
    unknown = [key for key in user if key not in KNOWN_KEYS]
    if unknown:
        raise ConfigError(one_line(f"{user_path}: {unknown[0]}: unknown key (known: {', '.join(KNOWN_KEYS)})", 400))
    notes: list[str] = []
    projects = _projects(_project_roots(cwd or Path.cwd(), repo), notes)
    refused: list[Refusal] = []
    # Highest first: each layer's values, with where each came from.
    layers: list[dict[str, tuple[Any, Source]]] = [
        {key: (value, Source("environment", env_names[key])) for key, value in env.items()},
        {key: (value, Source("user", str(user_path), key)) for key, value in user.items()},
    ]
    for project in reversed(projects):  # the --repo's over the current folder's
        layers.append(_project_layer(project, refused))
    values: dict[str, Any] = {}
    sources: dict[str, Source] = {}
    for key in KNOWN_KEYS:
        for layer in layers:
            if key in layer:
                value, source = layer[key]
                values[key] = value if source.kind == "project" else _checked(key, value, source)
                sources[key] = source
                break
    settings = CodeboxSettings(**values)
    settings.sources.update(sources)
    settings.refused, settings.projects, settings.notes = refused, projects, notes
    return settings


def check_file(file: ProjectFile) -> dict[str, Any]:
    """A project file's values, every one valid; ConfigError naming the file and key otherwise."""
    checked = {}
    for key, raw in file.values.items():
        if key not in KNOWN_KEYS:
            raise ConfigError(one_line(f"{file.label}: {key}: unknown key (known: {', '.join(KNOWN_KEYS)})", 400))
        checked[key] = _checked(key, raw, Source("project", file.label, key))
    return checked


def check_value(key: str, value: Any) -> Any:
    """The value as the setting holds it; ValueError saying what is wrong with it."""
    return _check(key, value)


def _project_layer(project: Project, refused: list[Refusal]) -> dict[str, tuple[Any, Source]]:
    """A project's values that count: every valid one of a trusted project, only the tightening ones otherwise."""
    from agent.settings.rules import refusal

    trusted = project.trust == "trusted"
    layer: dict[str, tuple[Any, Source]] = {}
    for file in project.files:  # codebox.toml last: it wins
        for key, raw in file.values.items():
            if key not in KNOWN_KEYS:
                refused.append(Refusal(file.label, key, raw, "unknown key", project.root, False))
                continue
            try:
                value = _check(key, raw)
            except ValueError as exc:
                refused.append(Refusal(file.label, key, raw, str(exc), project.root, False))
                continue
            why = None if trusted else refusal(key, value)
            if why is not None:
                refused.append(Refusal(file.label, key, raw, why, project.root, True))
                continue
            layer[key] = (value, Source("project", file.label, key, trusted))
    return layer


def origin(source: Source, key: str) -> str:
    """The source as an error message starts: the file (and table), or the variable."""
    if source.kind == "environment":
        return f"the environment variable {source.where}"
    return source.where or key


def _checked(key: str, value: Any, source: Source) -> Any:
    """The value as the setting holds it; ConfigError naming the source and key when it is wrong."""
    try:
        return _check(key, value)
    except ValueError as exc:
        got = f" (got {shown(value)})" if _scalar(value) else ""
        raise ConfigError(one_line(f"{origin(source, key)}: {key}: {exc}{got}", 400)) from None


def _scalar(value: Any) -> bool:
    return isinstance(value, str | int | float) and not isinstance(value, bool)


def shown(value: Any) -> str:
    """A value as a TOML file would hold it: text and lists as JSON, numbers plainly."""
    import json

    if isinstance(value, int | float) and not isinstance(value, bool):
        return format(value, "g") if isinstance(value, float) else str(value)
    return json.dumps(value, default=str, ensure_ascii=False)


def _check(key: str, value: Any) -> Any:
    """The value as the setting holds it (agent.defaults.SETTINGS: its kind and bounds); ValueError saying what is
    wrong with it. Values come typed from TOML and as text from the environment; a number given as text is read
    as one (CODEBOX_JOBS=4)."""
    setting = SETTINGS[key]
    if setting.kind == "text":
        if not isinstance(value, str):
            raise ValueError("must be a string")
        if key == "memory":
            from agent.sandboxes.config import memory_limit  # the sandbox's own rule

            return memory_limit(value)
        return value
    if setting.kind == "choice":
        choices = setting.choices
        if value not in choices:
            quoted = [f"'{c}'" for c in choices]
            raise ValueError("must be " + (", ".join(quoted[:-1]) + " or " + quoted[-1]))
        return value
    if setting.kind == "list":
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise ValueError("must be a list of strings")
        return list(value)
    number = _integer(value) if setting.kind == "integer" else _number(value)
    problem = bound_problem(key, number)
    if problem:
        raise ValueError(problem)
    return number


def _integer(value: Any) -> int:
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            raise ValueError("must be a whole number") from None
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError("must be a whole number")
    return value


def _number(value: Any) -> float:
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            raise ValueError("must be a number") from None
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise ValueError("must be a number")
    if not math.isfinite(value):
        raise ValueError("must be a finite number")
    return float(value)
