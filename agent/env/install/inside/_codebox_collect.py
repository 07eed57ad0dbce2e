"""After the project's own build: put what it made into /opt/codebox-project, the project layer.

Runs inside the build container as the build user (system python3): ``python3
_codebox_collect.py SPEC.json``. It installs the editable wheel the backend built into the
project's site folder (or, for a backend with no editable builds, the dist-info its metadata
hook wrote and a .pth naming /repo), copies every file the build created in the project copy
(version files, compiled modules; not its temporary build folders) under ``generated/`` at
the same relative path, writes the finder that serves them (``_codebox_project_finder``),
and the console scripts of the project's entry points.
"""

from __future__ import annotations

import configparser
import importlib.machinery
import json
import os
import re
import shutil
import stat
import sys
import zipfile
from email.parser import HeaderParser
from typing import Any

REPO = "/repo"
MAX_GENERATED_FILES = 20000
MAX_GENERATED_BYTES = 2 * 1024 * 1024 * 1024
_SKIP_ANYWHERE = {".git", "__pycache__", ".tox", ".nox", ".pytest_cache", ".mypy_cache", ".eggs"}
_SKIP_AT_TOP = {"build", "dist"}
_SKIP_SUFFIXES = (".o", ".obj", ".pyc", ".a")
_DIST_INFO = re.compile(r"^[A-Za-z0-9_.]+-[A-Za-z0-9_.!+]+\.dist-info$")
# setuptools before 2022 (its dist_info command, from egg_info's folder) named it NAME.dist-info; pip takes it.
_UNVERSIONED = re.compile(r"^[A-Za-z0-9_.]+\.dist-info$")
_VERSION = re.compile(r"^[A-Za-z0-9_.!+]+$")
_SCRIPT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,100}$")
_DOTTED = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


def say(text: str) -> None:
    print("codebox: " + text, flush=True)


def _safe_member(name: str) -> bool:
    parts = name.split("/")
    return not name.startswith("/") and "\\" not in name and ".." not in parts and "" not in parts[:-1]


def install_wheel(wheel: str, site: str) -> str:
    """Unpack the editable wheel into ``site`` (its .data/purelib and platlib too); its dist-info name."""
    dist_info = ""
    with zipfile.ZipFile(wheel) as archive:
        for info in archive.infolist():
            name = info.filename
            if not _safe_member(name) or name.endswith("/"):
                continue
            top, _, rest = name.partition("/")
            if top.endswith(".data"):
                kind, _, rest = rest.partition("/")
                if kind not in ("purelib", "platlib") or not rest:
                    continue  # scripts come from the entry points; headers and data are not the project's code
                name = rest
            elif top.endswith(".dist-info"):
                dist_info = top
            dest = os.path.join(site, name)
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            with archive.open(info) as source, open(dest, "wb") as out:
                shutil.copyfileobj(source, out)
            if (info.external_attr >> 16) & 0o111:
                os.chmod(dest, 0o755)
    return dist_info


def write_dist_info(site: str, meta: dict[str, str]) -> str:
    """The backend's dist-info (from its metadata hook) for a project installed without an editable wheel."""
    name = dist_info_name(meta.get("dist_info", ""), meta.get("metadata", ""))
    folder = os.path.join(site, name)
    os.makedirs(folder, exist_ok=True)
    files = {"METADATA": meta.get("metadata", ""), "INSTALLER": "codebox\n",
             "direct_url.json": json.dumps({"url": "file://" + REPO, "dir_info": {"editable": True}})}
    if meta.get("entry_points"):
        files["entry_points.txt"] = meta["entry_points"]
    files["RECORD"] = "".join(f"{name}/{f},,\n" for f in sorted(files)) + f"{name}/RECORD,,\n"
    for file_name, text in files.items():
        with open(os.path.join(folder, file_name), "w", encoding="utf-8") as out:
            out.write(text)
    return name


def dist_info_name(name: str, metadata: str) -> str:
    """The folder's name as installed: ``NAME-VERSION.dist-info``, the version from METADATA when the backend
    left it out of the name (old setuptools); SystemExit for any other shape."""
    if _UNVERSIONED.match(name):
        version = (HeaderParser().parsestr(metadata).get("Version") or "").strip().replace("-", "_")
        if _VERSION.match(version):
            return f"{name[: -len('.dist-info')]}-{version}.dist-info"
    if not _DIST_INFO.match(name):
        raise SystemExit(f"codebox: the backend named its metadata folder {name!r}; refused")
    return name


def _skipped(relative_dir: str) -> bool:
    parts = relative_dir.split("/") if relative_dir else []
    if parts and parts[0] in _SKIP_AT_TOP:
        return True
    return any(p in _SKIP_ANYWHERE or p.endswith(".egg-info") for p in parts)


def generated_files(copy: str, pristine: str) -> list[str]:
    """The files the build created in the project copy (relative paths), its scratch folders left out."""
    found: list[str] = []
    total = 0
    for folder, dirs, files in os.walk(copy):
        relative = os.path.relpath(folder, copy)
        relative = "" if relative == "." else relative
        dirs[:] = [d for d in dirs if not _skipped(f"{relative}/{d}".lstrip("/"))]
        for name in files:
            rel = f"{relative}/{name}".lstrip("/")
            if name.endswith(_SKIP_SUFFIXES) or os.path.lexists(os.path.join(pristine, rel)):
                continue
            found.append(rel)
            total += os.lstat(os.path.join(copy, rel)).st_size
            if len(found) > MAX_GENERATED_FILES or total > MAX_GENERATED_BYTES:
                raise SystemExit(f"codebox: the build generated more than {MAX_GENERATED_FILES} files or "
                                 f"{MAX_GENERATED_BYTES} bytes in the project; refused")
    return sorted(found)


def _module(relative: str, suffix: str) -> str:
    return relative[: -len(suffix)].replace("/", ".")


def write_finder(spec: dict[str, Any], files: list[str], site: str, generated: str) -> dict[str, str]:
    """Copy the generated files under ``generated`` and write the finder that serves them; the compiled modules."""
    root = spec["import_root"]
    roots = [f"{REPO}/{root}" if root else REPO] + ([REPO] if root else [])
    extensions: dict[str, str] = {}
    top: set[str] = set()
    for rel in files:
        dest = os.path.join(generated, rel)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copy2(os.path.join(spec["copy"], rel), dest, follow_symlinks=False)
        for base in roots:
            prefix = base[len(REPO):].lstrip("/")
            if prefix and not rel.startswith(prefix + "/"):
                continue
            inner = rel[len(prefix) + 1:] if prefix else rel
            top.add(inner.split("/")[0].split(".")[0])
            suffix = next((s for s in importlib.machinery.EXTENSION_SUFFIXES if inner.endswith(s)), None)
            if suffix is not None and base == roots[0]:
                extensions[_module(inner, suffix)] = dest
    config = {"generated": generated, "roots": roots, "top": sorted(top), "extensions": extensions}
    with open(os.path.join(site, "_codebox_finder.json"), "w", encoding="utf-8") as out:
        json.dump(config, out, indent=1, sort_keys=True)
    shutil.copyfile(spec["finder"], os.path.join(site, "_codebox_project_finder.py"))
    with open(os.path.join(site, "_codebox_project_finder.pth"), "w", encoding="utf-8") as out:
        out.write("import _codebox_project_finder\n")
    return extensions


class _CaseKept(configparser.ConfigParser):
    """Entry point names keep their case (configparser lowers keys by default)."""

    def optionxform(self, optionstr: str) -> str:
        return optionstr


def write_scripts(site: str, dist_info: str, bin_dir: str, python: str) -> list[str]:
    """bin/ scripts for the console and GUI scripts the dist-info declares (names that are plain words only)."""
    path = os.path.join(site, dist_info, "entry_points.txt")
    if not dist_info or not os.path.isfile(path):
        return []
    parser = _CaseKept(interpolation=None, delimiters=("=",))
    try:
        parser.read(path, encoding="utf-8")
    except configparser.Error:
        return []
    made = []
    for group in ("console_scripts", "gui_scripts"):
        for name, target in parser.items(group) if parser.has_section(group) else []:
            module, _, attr = target.split("[")[0].strip().partition(":")
            module, attr = module.strip(), attr.strip()
            if not (_SCRIPT.match(name) and _DOTTED.match(module) and (not attr or _DOTTED.match(attr))):
                continue
            call = (f"import {module}\nsys.exit({module}.{attr}())" if attr
                    else f"import runpy\nrunpy.run_module({module!r}, run_name='__main__')")
            dest = os.path.join(bin_dir, name)
            with open(dest, "w", encoding="utf-8") as out:
                out.write(f"#!{python}\nimport sys\n{call}\n")
            os.chmod(dest, 0o755)
            made.append(name)
    return made


def _answer(path: Any) -> dict[str, Any]:
    """A hook's JSON answer (see _codebox_pep517), or {} when that hook did not run."""
    if not path or not os.path.isfile(path):
        return {}
    with open(path, encoding="utf-8") as handle:
        answer: dict[str, Any] = json.load(handle)
    return answer


def main(argv: list[str]) -> int:
    with open(argv[1], encoding="utf-8") as handle:
        spec: dict[str, Any] = json.load(handle)
    project = spec["project"]
    site, bin_dir, generated = (os.path.join(project, d) for d in ("site", "bin", "generated"))
    for folder in (site, bin_dir):
        os.makedirs(folder, exist_ok=True)
    editable = _answer(spec.get("editable_answer"))
    metadata = _answer(spec.get("metadata_answer"))
    if editable.get("wheel"):
        dist_info = install_wheel(editable["wheel"], site)
    else:
        dist_info = write_dist_info(site, metadata) if metadata else ""
    root = spec["import_root"]
    with open(os.path.join(site, "_codebox_repo.pth"), "w", encoding="utf-8") as out:
        out.write((f"{REPO}/{root}" if root else REPO) + "\n")
    files = generated_files(spec["copy"], spec["pristine"])
    extensions = write_finder(spec, files, site, generated) if files else {}
    scripts = write_scripts(site, dist_info, bin_dir, spec["python"])
    for folder, _dirs, names in os.walk(project):
        for name in [*names, *_dirs]:
            path = os.path.join(folder, name)
            if not os.path.islink(path):  # readable by whoever runs the tests
                mode = os.lstat(path).st_mode
                os.chmod(path, mode | stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH
                         | (stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH if stat.S_ISDIR(mode) else 0))
    say(f"the project's build generated {len(files)} files"
        + (f" (compiled: {', '.join(sorted(extensions))})" if extensions else "")
        + (f"; scripts: {', '.join(scripts)}" if scripts else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
