"""Installable as a package: the wheel and the sdist, named codebox-agent (the PyPI name "codebox" is
another project's), hold everything codebox needs at run time and install the `codebox` command; a
wheel installed into a fresh venv outside the checkout answers --version, builds its image and runs
the demo: the newcomer's path."""

from __future__ import annotations

import configparser
import email.parser
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DISTRIBUTION = "codebox-agent"  # the name on PyPI; the command stays `codebox`
ARCHIVE_STEM = "codebox_agent"  # the same name as wheels and sdists spell it (PEP 427, PEP 625)

# What must be in both archives: the in-container code, the image's build files, the demo.
RUNTIME_FILES = [
    "sandbox/server.py",
    "sandbox/container_init.py",
    "sandbox/patch/__init__.py",
    "sandbox/tools/catalog.py",
    "agent/containers/Dockerfile.sandbox",
    "agent/containers/build_base.sh",
    "agent/cli/demo_data/script.json",
    "agent/cli/demo_data/repo/backoff.py",
    "agent/cli/demo_data/repo/tests/test_backoff.py",
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


def _wheel(dist: Path) -> Path:
    (wheel,) = dist.glob(f"{ARCHIVE_STEM}-*.whl")
    return wheel


def test_the_wheel_is_named_codebox_agent_and_installs_the_codebox_command(dist: Path) -> None:
    from agent import __version__

    wheel = _wheel(dist)
    assert wheel.name == f"{ARCHIVE_STEM}-{__version__}-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as archive:
        info = f"{ARCHIVE_STEM}-{__version__}.dist-info"
        metadata = email.parser.Parser().parsestr(archive.read(f"{info}/METADATA").decode())
        entry_points = configparser.ConfigParser()
        entry_points.read_string(archive.read(f"{info}/entry_points.txt").decode())
    assert metadata["Name"] == DISTRIBUTION and metadata["Version"] == __version__
    assert "ray" in metadata.get_all("Provides-Extra", [])
    assert dict(entry_points["console_scripts"]) == {"codebox": "agent.cli.parser:entry"}


def test_the_wheel_holds_everything_needed_at_run_time(dist: Path) -> None:
    wheel = _wheel(dist)
    names = set(zipfile.ZipFile(wheel).namelist())
    assert [f for f in RUNTIME_FILES if f not in names] == []
    assert not any(n.startswith("tests/") for n in names)


def test_the_sdist_holds_everything_needed_at_run_time(dist: Path) -> None:
    (sdist,) = dist.glob(f"{ARCHIVE_STEM}-*.tar.gz")
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    assert [f for f in RUNTIME_FILES if f not in names] == []


def _index_reachable() -> bool:
    probe = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", os.devnull + ".d", "tenacity"],
        capture_output=True, timeout=120,
    )
    return probe.returncode == 0


class Installed:
    """A fresh venv outside the checkout with the wheel installed by its name, as a newcomer would."""

    def __init__(self, root: Path) -> None:
        self.venv = root / "venv"
        self.elsewhere = root / "elsewhere"  # not the checkout: nothing of the clone is importable here
        self.elsewhere.mkdir()
        self.env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        self.env["PATH"] = f"{self.venv / 'bin'}:{self.env.get('PATH', '')}"

    def run(self, program: str, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.venv / "bin" / program), *args], cwd=self.elsewhere, env=self.env,
            capture_output=True, text=True, timeout=timeout,
        )


@pytest.fixture(scope="module")
def installed(dist: Path, tmp_path_factory: pytest.TempPathFactory) -> Installed:
    if not os.environ.get("CI") and not _index_reachable():
        pytest.skip("the package index is not reachable: the wheel's dependencies cannot be installed")
    box = Installed(tmp_path_factory.mktemp("newcomer"))
    subprocess.run([sys.executable, "-m", "venv", str(box.venv)], check=True, timeout=120)
    # By the distribution's name, the built wheel found in dist/ (its dependencies from the index).
    install = box.run("pip", "install", "--quiet", "--disable-pip-version-check", "--find-links", str(dist),
                      DISTRIBUTION, timeout=900)
    assert install.returncode == 0, install.stderr[-3000:]
    return box


@pytest.mark.install
def test_the_installed_wheel_answers_version_from_its_own_copy(installed: Installed) -> None:
    from agent import __version__

    shown = installed.run("pip", "show", DISTRIBUTION)
    assert shown.returncode == 0 and f"Version: {__version__}" in shown.stdout, shown.stderr
    version = installed.run("codebox", "--version")
    assert version.returncode == 0 and version.stdout.startswith(f"codebox {__version__} "), version.stderr
    where = installed.run("python", "-c", "import agent, sandbox; print(agent.__file__, sandbox.__file__)")
    assert str(ROOT) not in where.stdout and str(installed.venv) in where.stdout  # the installed copy


@pytest.mark.docker
@pytest.mark.install
def test_the_installed_wheel_builds_its_image_and_runs_the_demo(installed: Installed, sandbox_image: str) -> None:
    built = installed.run("codebox", "image", "build")
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
    demo = installed.run("codebox", "demo")
    assert demo.returncode == 0, demo.stdout[-3000:] + demo.stderr[-3000:]
    assert "completed" in demo.stdout


def test_image_build_without_a_docker_daemon_says_what_to_do(tmp_path: Path) -> None:
    env = {**os.environ, "DOCKER_HOST": f"unix://{tmp_path}/no-docker.sock"}
    result = subprocess.run(
        [sys.executable, "-m", "agent.cli", "image", "build"], cwd=ROOT, env=env,
        capture_output=True, text=True, timeout=240,  # a liveness bound: a loaded machine starts Python slowly
    )
    assert result.returncode == 1
    assert "Docker is not answering" in result.stderr and "Start the daemon" in result.stderr
    assert "Traceback" not in result.stderr
