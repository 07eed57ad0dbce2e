"""An environment from the real package index: resolve and download on the host, install offline,
then `codebox run` runs the project's own suite with the pytest version it asks for.

Required when CI is set; elsewhere it skips (with the reason) only when the index is unreachable.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from tests import engine
from tests.agent.env.projects import write

pytestmark = pytest.mark.docker
ROOT = Path(__file__).resolve().parents[2]
INDEX = os.environ.get("UV_INDEX_URL") or os.environ.get("UV_DEFAULT_INDEX") or "https://pypi.org/simple/"

PROJECT = {
    "pyproject.toml": '[project]\nname = "ini-user"\nversion = "0.3"\nrequires-python = ">=3.9"\n'
                      'dependencies = ["iniconfig>=2"]\n'
                      '[project.optional-dependencies]\ntest = ["pytest>=8"]\n'
                      '[tool.setuptools.packages.find]\nwhere = ["src"]\n',
    "src/ini_user/__init__.py": "import iniconfig\n\ndef parse(text):\n    return iniconfig.IniConfig('x', text)\n",
    "tests/test_ini.py": "import importlib.metadata as md\nimport pytest\nfrom ini_user import parse\n\n"
                         "def test_parse():\n    assert parse('[a]\\nb = 1\\n')['a']['b'] == '1'\n\n"
                         "def test_versions():\n    assert md.version('ini-user') == '0.3'\n"
                         "    assert int(pytest.__version__.split('.')[0]) >= 8\n",
}


def _index_problem() -> str | None:
    try:
        with urllib.request.urlopen(INDEX.rstrip("/") + "/iniconfig/", timeout=15):
            return None
    except OSError as exc:
        return f"the package index {INDEX} is unreachable ({exc})"


@pytest.fixture(scope="module", autouse=True)
def _index() -> None:
    problem = _index_problem()
    if problem and not os.environ.get("CI"):
        pytest.skip(problem)
    assert problem is None, problem


def test_codebox_run_with_env_auto_runs_the_projects_suite(tmp_path: Path) -> None:
    from agent.containers.image import ensure_sandbox_image

    ensure_sandbox_image()
    repo = write(tmp_path / "repo", PROJECT)
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": [{"tool_calls": [{"name": "run_test", "arguments": {}}]},
                                            {"message": "done"}]}))
    report_path = tmp_path / "report.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CODEBOX_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.run(
        [sys.executable, "-m", "agent.cli", "run", "--repo", str(repo), "--model", f"scripted:{script}",
         "--test-cmd", "python3 -m pytest -q", "--report", str(report_path), "check"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "codebox: env: building the environment" in proc.stderr
    report = json.loads(report_path.read_text())
    image = report["env"]["image"]
    try:
        assert report["last_test"]["outcome"] == "ok", proc.stdout
        assert any(p.startswith("pytest==") and int(p.split("==")[1].split(".")[0]) >= 8
                   for p in report["env"]["installed"])
        assert "iniconfig" in report["env"]["lock"]
        again = subprocess.run(
            [sys.executable, "-m", "agent.cli", "env", "build", "--repo", str(repo)],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
        )
        assert again.returncode == 0 and again.stdout.strip() == image and "reusing" in again.stderr
    finally:
        engine.remove_image(engine.docker(), image)


def _apt_problem() -> str | None:
    import shutil

    if shutil.which("apt-get") is None:
        return "no apt-get on this host"
    try:
        subprocess.run(["apt-get", "download", "--print-uris", "less"], check=True, capture_output=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"apt cannot resolve packages here ({exc})"
    return None


def test_apt_packages_are_downloaded_on_the_host_and_installed_offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agent.containers.sandbox import Sandbox
    from agent.env.install.ensure import EnvRequest, ensure_env
    from agent.env.resolve.resolve import IndexConfig
    from agent.sandboxes.config import SandboxConfig
    from tests.agent.env.wheels import make_wheelhouse

    problem = _apt_problem()
    if problem and not os.environ.get("CI"):
        pytest.skip(problem)
    assert problem is None, problem
    wheels = make_wheelhouse(tmp_path / "wheels")
    repo = write(tmp_path / "repo", {"requirements-test.txt": "gamma\n"})
    monkeypatch.setenv("CODEBOX_CACHE_DIR", str(tmp_path / "cache"))
    info = ensure_env(EnvRequest(repo=repo, apt=["less"], index=IndexConfig(find_links=[str(wheels)], no_index=True)))
    try:
        assert "less" in info.apt
        with Sandbox(repo, SandboxConfig(image=info.image), task_id="env-apt") as sb:
            reply = sb.call("run_test", {"argv": ["less", "--version"], "timeout_s": 30})
        assert reply.ok and "less" in reply.output.lower()
    finally:
        engine.remove_image(engine.docker(), info.image)


C_PROJECT = {
    "setup.py": "from setuptools import Extension, setup\n\n"
                "setup(name='cfast', version='1.0', packages=['cfast'], package_dir={'': 'src'},\n"
                "      ext_modules=[Extension('cfast._speed', ['src/cfast/_speed.c'])])\n",
    "src/cfast/__init__.py": "try:\n    from cfast._speed import add\n    COMPILED = True\nexcept ImportError:\n"
                             "    def add(a, b):\n        return a + b\n    COMPILED = False\n",
    "src/cfast/_speed.c": "#define PY_SSIZE_T_CLEAN\n#include <Python.h>\n\n"
                          "static PyObject *add(PyObject *self, PyObject *args) {\n    long a, b;\n"
                          "    if (!PyArg_ParseTuple(args, \"ll\", &a, &b)) return NULL;\n"
                          "    return PyLong_FromLong(a + b);\n}\n\n"
                          "static PyMethodDef methods[] = {\n"
                          "    {\"add\", add, METH_VARARGS, \"add\"}, {NULL, NULL, 0, NULL}};\n"
                          "static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, \"_speed\", NULL, -1, methods};\n"
                          "PyMODINIT_FUNC PyInit__speed(void) { return PyModule_Create(&module); }\n",
    "tests/test_c.py": "import cfast\nfrom cfast import _speed\n\n\ndef test_the_compiled_module_is_used():\n"
                       "    assert cfast.COMPILED and cfast.add(2, 3) == 5\n"
                       "    assert _speed.__file__.startswith('/opt/codebox-project/generated/src/cfast/')\n",
}


def test_the_projects_c_extension_is_built_offline_and_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from agent.containers.sandbox import Sandbox
    from agent.env.errors import EnvError
    from agent.env.install.ensure import EnvRequest, ensure_env
    from agent.sandboxes.config import SandboxConfig

    problem = _apt_problem()
    if problem and not os.environ.get("CI"):
        pytest.skip(problem)
    assert problem is None, problem
    monkeypatch.setenv("CODEBOX_CACHE_DIR", str(tmp_path / "cache"))
    repo = write(tmp_path / "repo", {**C_PROJECT, "src/cfast/_speed.c": "this is not C;\n"})
    with pytest.raises(EnvError, match=r"(?s)own build failed offline \(build_editable.*_speed\.c") as failed:
        ensure_env(EnvRequest(repo=repo))
    assert "error" in str(failed.value).lower()
    write(repo, {"src/cfast/_speed.c": C_PROJECT["src/cfast/_speed.c"]})  # fixed: a new environment
    info = ensure_env(EnvRequest(repo=repo))
    try:
        assert any("compiled extensions are built" in note for note in info.notes)
        with Sandbox(repo, SandboxConfig(image=info.image), task_id="env-cext") as sb:
            reply = sb.call("run_test", {"argv": ["python3", "-m", "pytest", "-q"], "timeout_s": 60})
        assert reply.ok and "1 passed" in reply.output, reply.output
    finally:
        engine.remove_image(engine.docker(), info.image)


def test_resolving_as_of_a_date_gives_the_versions_of_that_day() -> None:
    """uv's --exclude-newer against the real index: an old commit gets its day's pytest, the same lock next year."""
    from agent.env.read.reqlines import parse_requirement
    from agent.env.resolve.resolve import IndexConfig, Target, resolve

    target = Target(python="3.11.2", platform="x86_64-manylinux_2_36")
    wanted = [parse_requirement("pytest", "test")]
    old = resolve(wanted, target, IndexConfig(), exclude_newer="2021-06-01T00:00:00Z")
    assert "pytest==6.2.4" in old.installed() and "pluggy==0.13.1" in old.installed()
    again = resolve(wanted, target, IndexConfig(), exclude_newer="2021-06-01T00:00:00Z")
    assert again.hashed_txt() == old.hashed_txt()  # every file's hash too
    today = resolve(wanted, target, IndexConfig())
    assert int(next(p.version for p in today.pins if p.name == "pytest").split(".")[0]) >= 8
