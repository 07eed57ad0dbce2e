"""Compile the bytecode of every module under a folder (the dependencies' site-packages), in parallel.

Runs inside the dependencies build container as the build user, with the base image's python3,
isolated and without its site module (``python3 -I -S _codebox_bytecode.py FOLDER``): no ``.pth``
of an installed package runs. One forked worker per CPU, each compiling its share of the files
(``compileall -j`` pays for a process pool and a pickle per file: ~1.5x slower here). A file
that does not compile (Python 2 syntax in a package's test folder) is skipped, as pip and uv
skip it; the pyc is checked against its source's time stamp, as theirs are.
"""

from __future__ import annotations

import contextlib
import os
import py_compile
import sys


def sources(root: str) -> list[str]:
    return sorted(os.path.join(folder, name) for folder, _, names in os.walk(root)
                  for name in names if name.endswith(".py"))


def compile_all(paths: list[str]) -> None:
    for path in paths:
        with contextlib.suppress(py_compile.PyCompileError, OSError, ValueError):  # skipped, as pip and uv do
            py_compile.compile(path, doraise=True)


def main() -> None:
    paths = sources(sys.argv[1])
    workers = max(1, min(os.cpu_count() or 1, len(paths) // 50 or 1))
    children = []
    for index in range(workers):
        pid = os.fork()
        if pid == 0:
            compile_all(paths[index::workers])
            os._exit(0)
        children.append(pid)
    for pid in children:
        os.waitpid(pid, 0)
    print(f"codebox: compiled the bytecode of {len(paths)} modules in {workers} workers")


if __name__ == "__main__":
    main()
