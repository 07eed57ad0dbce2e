"""Generate the C of the project's Cython modules whose C is not in the tree (a Makefile's job upstream).

Runs inside the build container as the build user, with the build venv's python (which has
Cython), in the project copy, before the backend builds: ``python _codebox_cythonize.py``.
Every ``.pyx`` with no ``.c``/``.cpp`` beside it is compiled by Cython; one that does not
compile alone (a fragment another ``.pyx`` includes) is left as it is: the build says
whether the C it needed is there.
"""

from __future__ import annotations

import os
import subprocess
import sys

_SKIP = {".git", "build", "dist", ".tox", ".nox", ".eggs", "__pycache__", "node_modules"}
MAX_MODULES = 500


def missing_c(root: str) -> list[str]:
    found: list[str] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP)
        for name in sorted(files):
            stem, suffix = os.path.splitext(name)
            if suffix == ".pyx" and not any(os.path.exists(os.path.join(folder, stem + s)) for s in (".c", ".cpp")):
                found.append(os.path.relpath(os.path.join(folder, name), root))
    return found[:MAX_MODULES]


def _cplus(path: str) -> bool:
    with open(path, encoding="utf-8", errors="replace") as handle:
        head = handle.read(4096).replace(" ", "").lower()
    return "language=c++" in head


def main() -> int:
    made = []
    for relative in missing_c("."):
        command = [sys.executable, "-m", "cython", *(["--cplus"] if _cplus(relative) else []), relative]
        if subprocess.run(command, capture_output=True).returncode == 0:
            made.append(relative)
    if made:
        print("codebox: Cython generated the C of " + ", ".join(made), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
