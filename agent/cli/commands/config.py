"""`codebox config` (every setting in effect and its source) and `codebox trust` (let a project's settings apply)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from agent.cli.commands.common import EXIT_OK, EXIT_STOPPED, usage_error
from agent.defaults import DEFAULT_IMAGE, DEFAULT_REQUEST_TIMEOUT_S
from agent.escape import one_line, printable
from agent.settings.sources import (
    KNOWN_KEYS,
    CodeboxSettings,
    ConfigError,
    ProjectFile,
    Source,
    read_project,
    shown,
    user_config_file,
)

ORDER = ("flag", "environment", "user config", "trusted project", "default")

# What an unset setting means (its value in effect).
_UNSET = {
    "model": "(none: --model or CODEBOX_MODEL)",
    "base_url": "https://api.openai.com/v1",
    "api_key_env": "OPENAI_API_KEY",
    "api": "chat",
    "request_timeout": format(DEFAULT_REQUEST_TIMEOUT_S, "g"),
    "temperature": "(the server's)",
    "test_cmd": "(none)",
    "max_total_tokens": "(no limit)",
    "max_cost": "(no limit)",
    "price_input": "(unknown)",
    "price_output": "(unknown)",
    "image": DEFAULT_IMAGE,
}


def value_text(key: str, value: Any) -> str:
    """A setting's value in effect, as `codebox config` shows it."""
    if value is None:
        return _UNSET.get(key, "(none)")
    if key == "allow" and not value:
        return "(every path but the files the host runs)"
    if key == "deny" and not value:
        return "(none)"
    return shown(value) if key in ("allow", "deny") or not isinstance(value, str) else value


def _source_json(source: Source) -> dict[str, Any]:
    data: dict[str, Any] = {"kind": source.kind, "text": str(source)}
    if source.where:
        data["where"] = source.where
    if source.key:
        data["key"] = source.key
    if source.kind == "project":
        data["trusted"] = source.trusted
    return data


def settings_json(settings: CodeboxSettings) -> dict[str, Any]:
    return {
        "order": list(ORDER),
        "settings": {key: {"value": getattr(settings, key), "source": _source_json(settings.sources[key])}
                     for key in KNOWN_KEYS},
        "projects": [{"path": str(p.root), "trust": p.trust, "digest": p.digest, "files": [f.label for f in p.files]}
                     for p in settings.projects],
        "refused": [{"file": r.label, "key": r.key, "value": r.value, "why": r.why} for r in settings.refused],
        "notes": settings.notes,
    }


def _api_key_line(settings: CodeboxSettings) -> str:
    name = settings.api_key_env or "OPENAI_API_KEY"
    state = "set (not shown)" if os.environ.get(name, "").strip() else "not set"
    return f"the API key: the variable {name}, {state}"


def render(settings: CodeboxSettings, repo: str | None) -> str:
    lines = [f"codebox settings for {Path.cwd()}" + (f" and --repo {repo}" if repo else "")]
    lines.append("order, highest first: " + " > ".join(ORDER) + f"  (user config: {user_config_file()})")
    lines.append("")
    rows = [(key, one_line(value_text(key, getattr(settings, key)), 44), str(settings.sources[key]))
            for key in KNOWN_KEYS]
    width = max(len(value) for _, value, _ in rows)
    lines.append(f"  {'setting':<17} {'value':<{width}}  source")
    lines += [f"  {key:<17} {value:<{width}}  {printable(source)}" for key, value, source in rows]
    lines.append(f"  {_api_key_line(settings)}")
    for project in settings.projects:
        state = {"trusted": "trusted", "untrusted": "untrusted: its values count only where they tighten the "
                 f"defaults (`codebox trust {project.root}`)", "changed": "changed since you trusted it: untrusted"}
        lines.append(f"project {printable(project.root)}: {state[project.trust]}")
    lines += [f"refused: {refusal.line()}" for refusal in settings.refused]
    lines += [f"note: {printable(note)}" for note in settings.notes]
    return "\n".join(lines)


def setting_help() -> dict[str, str]:
    """Each setting's help line (agent.defaults.SETTINGS: one home for the words), as a sentence."""
    from agent.defaults import SETTINGS

    return {key: setting.help[:1].upper() + setting.help[1:] + "." for key, setting in SETTINGS.items()}


def settings_markdown() -> str:
    """The settings table of docs/configuration.md (a test keeps the page equal to it)."""
    from agent.settings.rules import RULES

    words = setting_help()
    rows = ["| setting | what | default | flag | variable | an untrusted project may |", "|---|---|---|---|---|---|"]
    for key in KNOWN_KEYS:
        default = value_text(key, getattr(CodeboxSettings, key))
        default = default if default.startswith("(") else f"`{default}`"
        variable = f"`CODEBOX_{key.upper()}`" + (", `OPENAI_BASE_URL`" if key == "base_url" else "")
        flag = "--" + key.replace("_", "-")
        rows.append(f"| `{key}` | {words[key]} | {default} | `{flag}` | {variable} | {RULES[key].may} |")
    return "\n".join(rows) + "\n"


def variables_markdown() -> str:
    """The table of codebox's other CODEBOX_ variables in docs/configuration.md."""
    from agent.settings.environment import OTHER_VARIABLES

    rows = ["| variable | what |", "|---|---|"]
    rows += [f"| `{name}` | {what} |" for name, what in OTHER_VARIABLES.items()]
    return "\n".join(rows) + "\n"


def cmd_config(args: argparse.Namespace) -> int:
    settings: CodeboxSettings = args.settings
    if args.repo and not Path(args.repo).expanduser().is_dir():
        return usage_error(f"--repo {args.repo}: not a folder")
    if args.json:
        print(json.dumps(settings_json(settings), indent=2, default=str))
    else:
        print(render(settings, args.repo))
    return EXIT_OK


# --- trust ---------------------------------------------------------------------------------------


def _project_root(path: str) -> Path:
    root = Path(path).expanduser().resolve()
    return root.parent if root.is_file() else root


def _checked_files(root: Path) -> list[ProjectFile]:
    """The project's settings, every value valid (ConfigError naming file and key otherwise)."""
    from agent.settings.sources import check_file

    files, notes = read_project(root)
    if notes:
        raise ConfigError(notes[0])
    if not files:
        raise ConfigError(f"{root} has no codebox settings (no [tool.codebox] in pyproject.toml, no codebox.toml): "
                          "nothing to trust")
    for file in files:
        check_file(file)
    return files


def _changes(files: list[ProjectFile]) -> list[str]:
    """What trusting the project changes: each value, and what an untrusted project could not do with it."""
    from agent.settings.rules import refusal
    from agent.settings.sources import check_value

    lines = []
    for file in files:
        lines.append(f"  {printable(file.label)}")
        for key, raw in file.values.items():
            why = refusal(key, check_value(key, raw))
            verdict = f"loosens or redirects: {why}" if why else "tightens the default (counts untrusted too)"
            lines.append(f"    {one_line(key, 60)} = {one_line(shown(raw), 60)}    {verdict}")
    return lines


def _confirmed(args: argparse.Namespace) -> bool | None:
    """--yes, or the answer on the terminal; None when there is no terminal to ask on."""
    if args.yes:
        return True
    if not sys.stdin.isatty():
        return None
    answer = input("Trust these settings? [y/N] ").strip().lower()
    return answer in ("y", "yes")


def cmd_trust(args: argparse.Namespace) -> int:
    from agent.settings import trust

    try:
        if args.list:
            return _list(trust.entries())
        if args.revoke:
            root = _project_root(args.revoke)
            if not trust.revoke(root):
                print(f"codebox: {printable(root)} was not trusted", file=sys.stderr)
                return EXIT_STOPPED
            print(f"codebox: {printable(root)} is no longer trusted")
            return EXIT_OK
        if not args.path:
            return usage_error("codebox trust: give a project folder, --list or --revoke PATH")
        root = _project_root(args.path)
        files = _checked_files(root)
    except (ConfigError, trust.TrustError) as exc:
        return usage_error(str(exc))
    print(f"codebox: trusting {printable(root)} lets its settings apply as written, above the defaults "
          "(your flags, environment and codebox.toml still win):")
    print("\n".join(_changes(files)))
    answer = _confirmed(args)
    if answer is None:
        return usage_error("codebox trust: no terminal to ask on; pass --yes to trust these settings")
    if not answer:
        print("codebox: not trusted")
        return EXIT_STOPPED
    from agent.settings.sources import project_digest

    digest = project_digest(files)
    try:
        trust.record(root, digest, sorted({key for f in files for key in f.values}))
    except (trust.TrustError, OSError) as exc:
        return usage_error(f"cannot record the trust in {trust.trust_file()}: {exc}")
    print(f"codebox: trusted {printable(root)} ({digest[:19]}…); an edit to its settings needs `codebox trust` again")
    return EXIT_OK


def _list(entries: list[Any]) -> int:
    if not entries:
        print("codebox: no trusted projects")
        return EXIT_OK
    from agent.settings.sources import project_digest

    for entry in entries:
        root = Path(entry.path)
        files, notes = read_project(root) if root.is_dir() else ([], [])
        if not root.is_dir():
            state = "folder gone"
        elif notes or not files:
            state = "no readable settings now"
        else:
            state = "trusted" if project_digest(files) == entry.digest else "changed since: untrusted"
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(entry.trusted_at))
        keys = ", ".join(entry.keys) or "-"
        print(f"{printable(entry.path)}  {state}  (trusted {when}; {printable(keys)})")
    return EXIT_OK
