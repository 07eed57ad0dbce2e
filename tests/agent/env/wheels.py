"""Tiny wheels made in the test session, for a local wheelhouse (find-links, no index)."""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path

FAKE_PYTEST_MAIN = """import sys
import importlib.metadata as md
print("fake pytest", md.version("pytest"), "from", __file__)
print("python", sys.executable)
for name in sys.argv[1:]:
    __import__(name)
    print("imported", name)
"""


def make_wheel(folder: Path, name: str, version: str, files: dict[str, str], requires: tuple[str, ...] = (),
               requires_python: str | None = None, wheel_version: str = "1.0") -> Path:
    """A pure-Python wheel holding ``files`` (path -> text); a wheel_version installers refuse makes a bad one."""
    dist = f"{name.replace('-', '_')}-{version}"
    meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    if requires_python:
        meta += f"Requires-Python: {requires_python}\n"
    meta += "".join(f"Requires-Dist: {r}\n" for r in requires)
    entries = dict(files)
    entries[f"{dist}.dist-info/METADATA"] = meta
    entries[f"{dist}.dist-info/WHEEL"] = (
        f"Wheel-Version: {wheel_version}\nGenerator: codebox-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    )
    record = []
    for path, text in entries.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(text.encode())}")
    record.append(f"{dist}.dist-info/RECORD,,")
    entries[f"{dist}.dist-info/RECORD"] = "\n".join(record) + "\n"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{dist}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for member, text in entries.items():
            archive.writestr(member, text)
    return path


def make_wheelhouse(folder: Path) -> Path:
    """alpha (needs beta), beta, gamma, delta, a fake pytest 99.0, and attrs 99.0 (a name the project may have)."""
    make_wheel(folder, "alpha", "1.0", {"alpha/__init__.py": "import beta\nVALUE = 'alpha'\n"}, ("beta>=2",))
    make_wheel(folder, "beta", "2.0", {"beta/__init__.py": "VALUE = 'beta'\n"})
    make_wheel(folder, "beta", "1.0", {"beta/__init__.py": "VALUE = 'old beta'\n"})
    make_wheel(folder, "gamma", "3.0", {"gamma/__init__.py": "VALUE = 'gamma'\n"})
    make_wheel(folder, "delta", "4.0", {"delta/__init__.py": "VALUE = 'delta'\n"})
    make_wheel(folder, "pytest", "99.0", {"pytest/__init__.py": "", "pytest/__main__.py": FAKE_PYTEST_MAIN})
    make_wheel(folder, "needs-future", "1.0", {"needs_future/__init__.py": ""}, requires_python=">=3.99")
    make_wheel(folder, "pulls-project", "1.0", {"pulls_project/__init__.py": ""}, ("srcproj",))
    make_wheel(folder, "srcproj", "5.0", {"srcproj/__init__.py": "WHERE = 'index'\n"})
    return folder


def make_sdist(folder: Path, name: str, version: str, files: dict[str, str]) -> Path:
    """An sdist ``name-version.tar.gz``: ``files`` under its top folder, with a PKG-INFO (Metadata 2.1)."""
    import io
    import tarfile

    top = f"{name.replace('-', '_')}-{version}"
    entries = {"PKG-INFO": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n", **files}
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{top}.tar.gz"
    with tarfile.open(path, "w:gz") as archive:
        for relative, text in entries.items():
            data = text.encode()
            info = tarfile.TarInfo(f"{top}/{relative}")
            info.size = len(data)
            info.mode = 0o644
            archive.addfile(info, io.BytesIO(data))
    return path


def setuptools_pyproject(name: str, version: str, dependencies: list[str]) -> str:
    deps = ", ".join(f'"{d}"' for d in dependencies)
    return (f'[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n'
            f'[project]\nname = "{name}"\nversion = "{version}"\ndependencies = [{deps}]\n')
