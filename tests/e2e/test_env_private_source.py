"""Dependency confusion: a package a repository's private index would serve is never resolved by name
from another index unless the user says so, and the repository's index itself is never contacted.

Two real PEP 503 indexes on 127.0.0.1 (HTTPS, a test CA): "private" (the repository's
[[tool.poetry.source]], serving acme 1.0) and "public" (the user's default index, UV_DEFAULT_INDEX,
where a squatter published acme 6.6.6). `codebox env build`:
- as it is: exit 2, one line naming pyproject.toml, the source and acme; neither index hears of acme;
- with --allow-public-fallback: acme 6.6.6 comes from the user's index; the private one is never asked;
- with the private index configured by the user (UV_EXTRA_INDEX_URL): acme 1.0, from it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.agent.env.index_server import IndexServer, make_ca, openssl_problem, serving, trust_bundle
from tests.agent.env.projects import write
from tests.agent.env.wheels import FAKE_PYTEST_MAIN, make_wheel

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def indexes(tmp_path: Path) -> Iterator[tuple[IndexServer, IndexServer, Path]]:
    problem = openssl_problem()
    if problem and not os.environ.get("CI"):
        pytest.skip(problem)
    assert problem is None, problem
    ca, cert, key = make_ca(tmp_path / "tls")
    private, public = tmp_path / "private", tmp_path / "public"
    make_wheel(private, "acme", "1.0", {"acme/__init__.py": "WHO = 'the real acme'\n"})
    make_wheel(public, "acme", "6.6.6", {"acme/__init__.py": "WHO = 'a squatter'\n"})
    make_wheel(public, "pytest", "99.0", {"pytest/__init__.py": "", "pytest/__main__.py": FAKE_PYTEST_MAIN})
    with serving(private, cert, key) as private_index, serving(public, cert, key) as public_index:
        yield private_index, public_index, trust_bundle(ca, tmp_path / "tls")


def _repo(tmp_path: Path, private_url: str) -> Path:
    return write(tmp_path / "repo", {
        "pyproject.toml": '[tool.poetry]\nname = "uses-acme"\nversion = "0.1.0"\n'
                          f'[[tool.poetry.source]]\nname = "internal"\nurl = "{private_url}/"\npriority = "explicit"\n'
                          '[tool.poetry.dependencies]\npython = "^3.9"\nacme = {version = "*", source = "internal"}\n',
        "uses_acme/__init__.py": "",
    })


def _build(repo: Path, tmp_path: Path, bundle: Path, *flags: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {key: value for key, value in os.environ.items() if not key.startswith(("UV_", "CODEBOX_"))}
    environ.update({"PYTHONPATH": str(ROOT), "CODEBOX_CACHE_DIR": str(tmp_path / "cache"), "SSL_CERT_FILE": str(bundle),
                    "NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1", **env})
    return subprocess.run([sys.executable, "-m", "agent.cli", "env", "build", "--repo", str(repo), *flags],
                          cwd=ROOT, env=environ, capture_output=True, text=True, timeout=600)


def _packages(tmp_path: Path, image: str) -> list[str]:
    """The packages of ``image``, from the record codebox keeps of the images it built (this test's cache)."""
    for path in (tmp_path / "cache" / "env-images").glob("env-*.json"):
        entry = json.loads(path.read_text())
        if entry["tag"] == image:
            return list(entry["packages"])
    raise AssertionError(f"no record of {image}")


def _remove_built(tmp_path: Path) -> None:
    """Every image this test's builds recorded (environment, dependency and tool layers), and nothing else."""
    environ = {**os.environ, "PYTHONPATH": str(ROOT), "CODEBOX_CACHE_DIR": str(tmp_path / "cache")}
    subprocess.run([sys.executable, "-m", "agent.cli", "env", "rm", "--all"], cwd=ROOT, env=environ,
                   capture_output=True, text=True, timeout=900)


def test_a_private_source_is_named_and_its_package_held_back(
        indexes: tuple[IndexServer, IndexServer, Path], tmp_path: Path) -> None:
    private, public, bundle = indexes
    repo = _repo(tmp_path, private.url)
    proc = _build(repo, tmp_path, bundle, UV_DEFAULT_INDEX=public.url)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "pyproject.toml [[tool.poetry.source]]" in lines[0] and "'internal'" in lines[0]
    assert "for acme:" in lines[0] and "--allow-public-fallback" in lines[0]
    assert not public.asked_for("acme") and private.requests == []
    declared = subprocess.run([sys.executable, "-m", "agent.cli", "env", "build", "--repo", str(repo),
                               "--print-declared"], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                              capture_output=True, text=True, timeout=60)
    sources = json.loads(declared.stdout)["sources"]
    assert [(s["name"], s["packages"]) for s in sources] == [("internal", ["acme"])]


@pytest.mark.docker
def test_the_fallback_and_the_users_own_index(indexes: tuple[IndexServer, IndexServer, Path], tmp_path: Path) -> None:
    from agent.containers.image import ensure_sandbox_image

    ensure_sandbox_image()
    private, public, bundle = indexes
    repo = _repo(tmp_path, private.url)
    try:
        allowed = _build(repo, tmp_path, bundle, "--allow-public-fallback", UV_DEFAULT_INDEX=public.url)
        assert allowed.returncode == 0, allowed.stderr
        assert "acme==6.6.6" in _packages(tmp_path, allowed.stdout.strip())
        assert public.asked_for("acme") and private.requests == []
        assert "resolve from your index instead (--allow-public-fallback)" in allowed.stderr
        configured = _build(repo, tmp_path, bundle, UV_DEFAULT_INDEX=public.url, UV_EXTRA_INDEX_URL=private.url)
        assert configured.returncode == 0, configured.stderr
        assert "acme==1.0" in _packages(tmp_path, configured.stdout.strip())
        assert private.asked_for("acme") and "resolve from your index (UV_EXTRA_INDEX_URL)" in configured.stderr
    finally:
        _remove_built(tmp_path)
