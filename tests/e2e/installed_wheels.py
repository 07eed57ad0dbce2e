"""Wheels of packages installed in this test environment (pytest and its dependencies), made offline.

An environment build resolves and installs real wheels; the hermetic eval tests serve it the
pytest this suite runs on, repacked from its installed files (RECORD lists them), so the
sandbox's tests run under a real, current pytest with no index.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata as md
import zipfile
from pathlib import Path

import pytest

PYTEST_CLOSURE = ("pytest", "pluggy", "iniconfig", "packaging", "pygments")


def wheel_of(name: str, folder: Path) -> Path:
    """A py3-none-any wheel of the installed distribution ``name`` (pure Python only)."""
    dist = md.distribution(name)
    files = [f for f in dist.files or [] if not str(f).startswith("..") and not str(f).endswith((".pyc", "RECORD"))]
    info = next(str(f).split("/")[0] for f in files if str(f).endswith(".dist-info/METADATA"))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{info.removesuffix('.dist-info')}-py3-none-any.whl"
    record = []
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for file in files:
            if "__pycache__" in str(file) or str(file).endswith("INSTALLER") or "direct_url" in str(file):
                continue
            data = Path(str(dist.locate_file(file))).read_bytes()
            archive.writestr(str(file), data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append(f"{file},sha256={digest},{len(data)}")
        record.append(f"{info}/RECORD,,")
        archive.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
    return path


def pytest_wheelhouse(folder: Path) -> Path:
    for name in PYTEST_CLOSURE:
        wheel_of(name, folder)
    return folder


def two_betas_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """codebox's index for this test: a wheelhouse of pytest and beta 2.0 ('beta') and 1.0 ('old beta'), no
    other index, a cache of its own. Returns the wheelhouse."""
    from tests.agent.env.wheels import make_wheel

    wheels = pytest_wheelhouse(tmp_path / "wheels")
    make_wheel(wheels, "beta", "2.0", {"beta/__init__.py": "VALUE = 'beta'\n"})
    make_wheel(wheels, "beta", "1.0", {"beta/__init__.py": "VALUE = 'old beta'\n"})
    monkeypatch.setenv("CODEBOX_FIND_LINKS", str(wheels))
    monkeypatch.setenv("CODEBOX_NO_INDEX", "1")
    monkeypatch.setenv("CODEBOX_CACHE_DIR", str(tmp_path / "cache"))
    return wheels
