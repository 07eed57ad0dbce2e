"""Installable as a package: the wheel and the sdist hold everything codebox needs at run time, and
a wheel installed into a fresh venv outside the checkout builds its image and runs the demo."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# What must be in both archives: the in-container code, the image's build files, the demo.
RUNTIME_FILES = [
    "sandbox/server.py",
    "sandbox/container_init.py",
    "sandbox/patch/__init__.py",
    "sandbox/tools/catalog.py",
    "agent/containers/Dockerfile.sandbox",
    "agent/containers/build_base.sh",
    "agent/demo/script.json",
    "agent/demo/repo/backoff.py",
    "agent/demo/repo/tests/test_backoff.py",
    "agent/view/assets/view.js",
    "agent/view/assets/view.css",
]


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    result = subprocess.run(
        [sys.executable, "-m", "build", "--sdist", "--wheel", "--no-isolation", "--outdir", str(out), str(ROOT)],
        capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return out


def test_the_wheel_holds_everything_needed_at_run_time(dist: Path) -> None:
    (wheel,) = dist.glob("codebox-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert [f for f in RUNTIME_FILES if f not in names] == []
    assert not any(n.startswith("tests/") for n in names)


def test_the_sdist_holds_everything_needed_at_run_time(dist: Path) -> None:
    (sdist,) = dist.glob("codebox-*.tar.gz")
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    assert [f for f in RUNTIME_FILES if f not in names] == []


def _index_reachable() -> bool:
    probe = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", os.devnull + ".d", "tenacity"],
        capture_output=True, timeout=120,
    )
    return probe.returncode == 0


@pytest.mark.docker
def test_a_wheel_installed_outside_the_checkout_just_works(dist: Path, tmp_path: Path, sandbox_image: str) -> None:
    if not os.environ.get("CI") and not _index_reachable():
        pytest.skip("the package index is not reachable: the wheel's dependencies cannot be installed")
    (wheel,) = dist.glob("codebox-*.whl")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    install = subprocess.run(
        [str(venv / "bin" / "pip"), "install", "--quiet", "--disable-pip-version-check", str(wheel)],
        capture_output=True, text=True, timeout=900,
    )
    assert install.returncode == 0, install.stderr[-3000:]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{venv / 'bin'}:{env.get('PATH', '')}"

    def codebox(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(venv / "bin" / "codebox"), *args], cwd=elsewhere, env=env,
            capture_output=True, text=True, timeout=600,
        )

    version = codebox("--version")
    assert version.returncode == 0 and version.stdout.startswith("codebox "), version.stderr
    where = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import agent, sandbox; print(agent.__file__, sandbox.__file__)"],
        cwd=elsewhere, env=env, capture_output=True, text=True, timeout=60,
    )
    assert str(ROOT) not in where.stdout and str(venv) in where.stdout  # the installed copy, not the clone
    built = codebox("image", "build")
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
    demo = codebox("demo")
    assert demo.returncode == 0, demo.stdout[-3000:] + demo.stderr[-3000:]
    assert "completed" in demo.stdout


def test_image_build_without_a_docker_daemon_says_what_to_do(tmp_path: Path) -> None:
    env = {**os.environ, "DOCKER_HOST": f"unix://{tmp_path}/no-docker.sock"}
    result = subprocess.run(
        [sys.executable, "-m", "agent.cli", "image", "build"], cwd=ROOT, env=env,
        capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 1
    assert "Docker is not answering" in result.stderr and "Start the daemon" in result.stderr
    assert "Traceback" not in result.stderr
