"""A local wheelhouse of tiny packages, made once per session: environments resolve from it alone."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.env.resolve.resolve import IndexConfig
from tests.agent.env.wheels import make_wheelhouse


@pytest.fixture(scope="session")
def wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_wheelhouse(tmp_path_factory.mktemp("wheelhouse"))


@pytest.fixture()
def local_index(wheelhouse: Path) -> IndexConfig:
    return IndexConfig(find_links=[str(wheelhouse)], no_index=True)


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch,
                   _session_images: Path) -> Iterator[None]:
    """Downloads, probes and the record of built images go to a cache of this session, not the user's."""
    monkeypatch.setenv("CODEBOX_CACHE_DIR", str(_session_images))
    yield


@pytest.fixture(scope="session")
def _session_images(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The session's cache; at its end, every image recorded in it (environment, dependencies, tools) is removed."""
    folder = tmp_path_factory.getbasetemp() / "codebox-cache"
    yield folder
    if not (folder / "env-images").is_dir():
        return
    saved = os.environ.get("CODEBOX_CACHE_DIR")
    os.environ["CODEBOX_CACHE_DIR"] = str(folder)
    try:
        from agent.env.install import images

        for backend in sorted({e.engine for e in images.entries()}):  # each engine a test built in
            engine = images.EngineImages.connect(backend)
            images.remove_env_images(engine, [])
            engine.close()
    except Exception as exc:  # cleanup only: a daemon gone at the end is not a test failure
        print(f"codebox tests: could not remove this session's images: {exc}")
    finally:
        if saved is None:
            os.environ.pop("CODEBOX_CACHE_DIR", None)
        else:
            os.environ["CODEBOX_CACHE_DIR"] = saved


@pytest.fixture(scope="session")
def setuptools_wheels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """setuptools and wheel as wheels, for building sdists offline: downloaded once per session.

    Required when CI is set; elsewhere the test skips (with pip's reason) when the index is unreachable.
    """
    folder = tmp_path_factory.mktemp("setuptools-wheels")
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--only-binary", ":all:", "--no-deps",
         "--dest", str(folder), "setuptools>=61", "wheel", "packaging"],  # wheel 0.46+ needs packaging
        capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
    )
    problem = f"cannot download setuptools and wheel: {proc.stderr.strip()[-300:]}" if proc.returncode else None
    if problem and not os.environ.get("CI"):
        pytest.skip(problem)
    assert problem is None, problem
    return folder


# The real build backends the project-build tests use, with pytest to run the fixtures' suites.
BACKENDS = ["setuptools>=70", "wheel", "setuptools-scm>=8", "hatchling", "hatch-vcs", "editables", "cython>=3",
            "pytest>=8"]


@pytest.fixture(scope="session")
def backend_wheels() -> Path:
    """Wheels of real build backends (setuptools, setuptools-scm, hatchling, hatch-vcs, Cython) and pytest,
    for the sandbox image's Python: downloaded once into ~/.cache/codebox-tests and reused by later sessions.

    Required when CI is set; elsewhere the test skips (with pip's reason) when the index is unreachable.
    """
    import hashlib
    import json

    from agent.containers.image import ensure_sandbox_image

    ensure_sandbox_image()
    python, platform = _sandbox_python()
    spec = json.dumps({"reqs": BACKENDS, "python": python, "platform": platform}, sort_keys=True)
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "codebox-tests"
    folder = root / f"backend-wheels-{hashlib.sha256(spec.encode()).hexdigest()[:12]}"
    if (folder / ".complete").is_file():
        return folder
    partial = folder.with_name(folder.name + f".part-{os.getpid()}")
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--only-binary", ":all:", "--dest", str(partial),
         "--python-version", python, "--implementation", "cp", "--platform", platform,
         "--platform", platform.replace("manylinux_2_17", "manylinux2014"),
         "--platform", platform.replace("2_17", "2_28"), *BACKENDS],
        capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL,
    )
    problem = f"cannot download the build backends: {proc.stderr.strip()[-300:]}" if proc.returncode else None
    if problem and not os.environ.get("CI"):
        pytest.skip(problem)
    assert problem is None, problem
    (partial / ".complete").write_text(spec)
    try:
        partial.rename(folder)
    except OSError:  # another session finished first
        import shutil

        shutil.rmtree(partial, ignore_errors=True)
    return folder


def _sandbox_python() -> tuple[str, str]:
    """The sandbox image's Python (major.minor) and a manylinux platform tag pip takes for it."""
    from tests.engine import docker, run

    code = "import platform, sys; print(f'{sys.version_info[0]}.{sys.version_info[1]} {platform.machine()}')"
    python, machine = run(docker(), "codebox-sandbox:latest", ["python3", "-c", code]).split()
    return python, f"manylinux_2_17_{machine}"
