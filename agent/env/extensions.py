"""The project's own compiled extensions, built at environment time inside the network-none build
container, and made what the tests import (no silent pure-Python fallback).

The repository is copied inside the container (its mount is read-only) and built with
``setup.py build_ext --inplace`` by a build venv holding the project's ``[build-system]``
requirements (resolved and downloaded on the host like the rest). The compiled modules go to
``/opt/codebox-env/codebox-ext/`` and a meta-path finder (``_codebox_ext.pth``) loads them
by module name before anything in /repo. Edits to C sources need a new ``codebox env build``
(the sources' digest is part of the environment's cache key).
"""

from __future__ import annotations

DEFAULT_BUILD_REQUIRES = ["setuptools>=40.8.0", "wheel"]
COMPILER_APT = ["gcc", "libc6-dev"]


def headers_packages(python: str) -> list[str]:
    """Debian's package with Python.h for this Python. Unpacked, not installed: the mirror's
    version may be a Debian revision ahead of the image's interpreter (same headers), and
    installing it would drag an interpreter upgrade along."""
    major, minor = python.split(".")[:2]
    return [f"libpython{major}.{minor}-dev"]


def shell_steps(build: str, python_var: str, import_root: str, site: str, venv: str) -> str:
    """The install-script lines that build the extensions; exit 3 with the log's tail on failure."""
    root = f"/tmp/codebox-src/{import_root}" if import_root else "/tmp/codebox-src"
    return f"""echo "codebox: building the project's compiled extensions (offline)"
for deb in {build}/debs-x/*.deb; do [ -f "$deb" ] && dpkg-deb -x "$deb" /; done
{build}/uv venv --no-config --quiet --python "${python_var}" /tmp/codebox-buildenv
{build}/uv pip install --no-config --quiet --offline --no-index --find-links {build}/wheels --no-deps \\
  --python /tmp/codebox-buildenv/bin/python -r {build}/stage/build-requirements.txt
cp -a {build}/repo /tmp/codebox-src
cd /tmp/codebox-src
[ -f setup.py ] || printf 'from setuptools import setup\\nsetup()\\n' > setup.py
if ! /tmp/codebox-buildenv/bin/python setup.py build_ext --inplace > /tmp/codebox-ext.log 2>&1; then
  echo "codebox: building the project's extensions failed; the end of its log:"
  tail -n 30 /tmp/codebox-ext.log
  exit 3
fi
cd /
"${python_var}" {build}/stage/collect_ext.py {root} {build}/repo/{import_root} {venv}/codebox-ext {site}
"""


COLLECT_EXT = '''"""Inside the build container: move the freshly compiled modules into the venv, write their finder."""
import importlib.machinery
import os
import shutil
import sys

built_root, pristine_root, target, site = sys.argv[1:5]
found = {}
for folder, dirs, files in os.walk(built_root):
    for name in files:
        suffix = next((s for s in importlib.machinery.EXTENSION_SUFFIXES if name.endswith(s)), None)
        rel = os.path.relpath(os.path.join(folder, name), built_root)
        if suffix is None or os.path.exists(os.path.join(pristine_root, rel)):
            continue
        module = rel[: -len(suffix)].replace(os.sep, ".")
        dest = os.path.join(target, rel)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copy2(os.path.join(folder, name), dest)
        found[module] = dest
if not found:
    print("codebox: the extension build produced no compiled module", file=sys.stderr)
    sys.exit(4)
with open(os.path.join(site, "_codebox_ext.py"), "w") as out:
    out.write(FINDER.replace("__CODEBOX_MODULES__", repr(found)))
with open(os.path.join(site, "_codebox_ext.pth"), "w") as out:
    out.write("import _codebox_ext\\n")
print("codebox: compiled extensions: " + ", ".join(sorted(found)))
'''

FINDER = '''"""codebox: the project's compiled extensions, built at env time, loaded before /repo's files."""
import importlib.machinery
import importlib.util
import sys

_MODULES = __CODEBOX_MODULES__


class _CodeboxExtensions:
    @classmethod
    def find_spec(cls, fullname, path=None, target=None):
        location = _MODULES.get(fullname)
        if location is None:
            return None
        loader = importlib.machinery.ExtensionFileLoader(fullname, location)
        return importlib.util.spec_from_file_location(fullname, location, loader=loader)


sys.meta_path.insert(0, _CodeboxExtensions)
'''


def collect_script() -> str:
    return COLLECT_EXT.replace("FINDER.replace(", repr(FINDER) + ".replace(")
