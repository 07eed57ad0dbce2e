"""Run INSIDE the sandbox image (its python3, with ``-I``): copy its CPython, the stdlib, ripgrep and
every shared library they load, the glibc loader included, into one folder (the first argument).

That folder is the in-box server's runtime (agent/containers/runtime.py): mounted read-only into
any image and started through its own loader (``lib/ld-*.so --library-path lib bin/python3.X``),
it needs nothing from the image. Stdlib only; the host sends this file's text with ``-c``.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
import sysconfig

# The stdlib's parts the server never imports: left out (a third of its size).
SKIPPED = {
    "test", "idlelib", "tkinter", "turtledemo", "ensurepip", "lib2to3", "pydoc_data", "venv",
    "site-packages", "dist-packages", "sitecustomize.py",
}
# Extension modules the server never imports that would bring large libraries (OpenSSL, sqlite,
# Berkeley DB, ncurses, Kerberos): left out with them.
SKIPPED_EXTENSIONS = ("_ssl", "_hashlib", "_sqlite3", "_dbm", "_gdbm", "readline", "_curses", "nis", "_crypt",
                      "_tkinter")
PT_INTERP = 3


def elf_interpreter(path: str) -> str:
    """The ELF program interpreter (PT_INTERP) of a 64-bit little-endian executable."""
    with open(path, "rb") as f:
        head = f.read(64)
        if head[:4] != b"\x7fELF" or head[4] != 2:
            raise SystemExit(f"{path}: not a 64-bit ELF file")
        phoff, = struct.unpack_from("<Q", head, 0x20)
        phentsize, phnum = struct.unpack_from("<HH", head, 0x36)
        for i in range(phnum):
            f.seek(phoff + i * phentsize)
            kind, _, offset, _, _, size = struct.unpack("<IIQQQQ", f.read(40))
            if kind == PT_INTERP:
                f.seek(offset)
                return f.read(size).rstrip(b"\0").decode()
    raise SystemExit(f"{path}: has no program interpreter (static?)")


def needed(loader: str, path: str) -> dict[str, str]:
    """The shared libraries ``path`` loads, by the name it asks for -> where the loader found it."""
    listing = subprocess.run([loader, "--list", path], capture_output=True, text=True, check=True).stdout
    found: dict[str, str] = {}
    for line in listing.splitlines():
        name, arrow, rest = line.strip().partition(" => ")
        where = rest.split(" (")[0].strip() if arrow else ""
        if where.startswith("/"):
            found[name] = where
        elif arrow and "not found" in rest:
            raise SystemExit(f"{path}: {name} not found")
    return found


def _skipped(folder: str, names: list[str], stdlib: str) -> list[str]:
    if folder == stdlib:  # the static library and Makefile of config-3.X-<arch>: for builds only
        return [n for n in names if n in SKIPPED or n.startswith("config-")]
    if os.path.basename(folder) == "lib-dynload":
        return [n for n in names if n.startswith(SKIPPED_EXTENSIONS)]
    return []


def collect(out: str) -> dict[str, str]:
    python = os.path.realpath(sys.executable)
    loader = elf_interpreter(python)
    stdlib = sysconfig.get_paths()["stdlib"]
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    rg = shutil.which("rg")
    os.makedirs(os.path.join(out, "bin"))
    os.makedirs(os.path.join(out, "lib"))
    shutil.copy2(python, os.path.join(out, "bin", version))
    shutil.copytree(stdlib, os.path.join(out, "lib", version), symlinks=False, ignore_dangling_symlinks=True,
                    ignore=lambda folder, names: _skipped(folder, names, stdlib))
    # The server's package is mounted here, on the interpreter's own path (``-I`` reads no PYTHONPATH).
    os.makedirs(os.path.join(out, "lib", version, "sandbox"), exist_ok=True)
    elves = [python] + ([rg] if rg else [])
    dynload = os.path.join(out, "lib", version, "lib-dynload")
    if os.path.isdir(dynload):
        elves += [os.path.join(dynload, n) for n in sorted(os.listdir(dynload)) if n.endswith(".so")]
    libs: dict[str, str] = {}
    for elf in elves:
        libs.update(needed(loader, elf))
    for name, where in libs.items():
        shutil.copy2(os.path.realpath(where), os.path.join(out, "lib", name))
    loader_name = os.path.basename(loader)
    shutil.copy2(os.path.realpath(loader), os.path.join(out, "lib", loader_name))
    if rg:
        shutil.copy2(os.path.realpath(rg), os.path.join(out, "bin", "rg"))
    manifest = {
        "loader": f"lib/{loader_name}",
        "python": f"bin/{version}",
        "package": f"lib/{version}/sandbox",
        "rg": "bin/rg" if rg else "",
        "version": sys.version.split()[0],
        "machine": os.uname().machine,
    }
    with open(os.path.join(out, "runtime.json"), "w", encoding="utf-8") as f:
        json.dump(manifest, f)
    return manifest


if __name__ == "__main__":
    print(json.dumps(collect(sys.argv[1])))
