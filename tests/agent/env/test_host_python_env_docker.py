"""The host's own CPython (pyenv's 3.11.7 on every machine of this kind) copied into a sandbox image, offline: the
chain takes it when no suite ships the minor, an environment is built on it, and a real pytest runs in it."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from agent.cli.parser import main
from agent.containers import image
from agent.containers.host_pythons import find_host_pythons
from agent.containers.pythons import PythonImages
from agent.containers.sandbox import Sandbox
from agent.defaults import DEFAULT_IMAGE
from agent.env.install.ensure import EnvRequest, ensure_env
from agent.env.resolve.resolve import IndexConfig
from agent.sandboxes.config import SandboxConfig
from tests.agent.env.projects import write
from tests.e2e.installed_wheels import pytest_wheelhouse
from tests.engine import docker, remove_image

pytestmark = pytest.mark.docker
MINOR = "3.11"  # the one pyenv build every machine of this kind has (bookworm ships it too: taken out below)
PROJECT = {
    "pyproject.toml": '[project]\nname = "calc"\nversion = "1"\ndependencies = ["pytest"]\n',
    "calc.py": "def add(a, b):\n    return a + b\n",
    "test_calc.py": "import ssl, sqlite3, sys\nfrom calc import add\n\n\n"
                    "def test_add():\n    assert add(1, 2) == 3\n\n\n"
                    "def test_where():\n"
                    "    print('ran on', sys.version.split()[0], sys.base_prefix, ssl.OPENSSL_VERSION)\n",
}


def test_a_host_pyenv_python_is_copied_in_and_runs_a_real_pytest(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEBOX_HOST_PYTHONS", "1")  # the link is opt-in
    host = find_host_pythons().get(MINOR)
    if host is None:
        if os.environ.get("CI"):
            pytest.fail(f"this machine kind has pyenv {MINOR}, this one has none under pyenv, uv or /usr/local")
        pytest.skip(f"no host build of Python {MINOR} here (pyenv, uv, /usr/local)")
    assert PythonImages(host=True).provide(MINOR).image == DEFAULT_IMAGE  # bookworm's 3.11 still comes first

    logged: list[str] = []
    provided = PythonImages(host=True, suites={}, log=logged.append).provide(MINOR)  # as for 3.10: no suite has it
    assert (provided.minor, provided.link) == (MINOR, f"{host.describe()}, copied in")
    assert provided.image.startswith(f"codebox-sandbox:py{MINOR}-host-")
    labels = image.image_labels(provided.image)
    assert labels is not None and labels["codebox.python.source"] == str(host.prefix)
    assert labels["codebox.python.version"] == host.version and image.stale(labels) is None
    again = PythonImages(host=True, suites={}, log=logged.append).provide(MINOR)
    assert again.image == provided.image  # reused by its tag
    capsys.readouterr()
    assert main(["image", "python", MINOR]) == 0
    assert capsys.readouterr().out == (f"{MINOR}: Debian bookworm ({DEFAULT_IMAGE}, built) > {host.describe()} "
                                       f"({host.prefix}, copied into {provided.image})\n")

    repo = write(tmp_path / "repo", PROJECT)
    index = IndexConfig(find_links=[str(pytest_wheelhouse(tmp_path / "wheels"))], no_index=True)
    info = ensure_env(EnvRequest(repo=repo, base_image=provided.image, index=index, python=MINOR))
    try:
        assert info.built and info.python == host.version
        with Sandbox(repo, SandboxConfig(image=info.run_image), task_id="host-python") as box:
            found = box.call("search", {"query": "def add"})
            tests = box.call("run_test", {"argv": ["python3", "-m", "pytest", "-q", "-s", "test_calc.py"],
                                          "timeout_s": 120})
        assert found.ok and "calc.py" in found.output
        assert tests.ok and "2 passed" in tests.output, tests.output
        assert f"ran on {host.version} /usr/local OpenSSL" in tests.output, tests.output
    finally:
        remove_image(docker(), info.image)


def test_a_copy_that_cannot_import_ssl_is_refused_in_one_line_naming_it(tmp_path: Path) -> None:
    """A pyenv build made without libssl-dev has no _ssl: the image's check names the module and no tag is made."""
    from agent.containers.host_python_image import ImageError, base_image, ensure_host_sandbox, image_tag
    from agent.containers.host_pythons import HostPython

    host = find_host_pythons().get(MINOR)
    if host is None:
        if os.environ.get("CI"):
            pytest.fail(f"this machine kind has pyenv {MINOR}, this one has none under pyenv, uv or /usr/local")
        pytest.skip(f"no host build of Python {MINOR} here (pyenv, uv, /usr/local)")
    shutil.copytree(host.prefix, tmp_path / "p", symlinks=True,  # links to the host's files: copied as those files
                    copy_function=lambda src, dst: os.symlink(os.path.realpath(src), dst))
    for path in (tmp_path / "p" / "lib" / f"python{MINOR}" / "lib-dynload").glob("_ssl.*"):
        path.unlink()
    broken = HostPython(MINOR, host.version, tmp_path / "p", "pyenv")
    with pytest.raises(ImageError) as caught:
        ensure_host_sandbox(broken, lambda _: None)
    message = str(caught.value)
    assert message.startswith(f"host pyenv {host.version} copied in lacks ssl (ModuleNotFoundError: No module named "
                              "'_ssl')") and "\n" not in message, message
    base_id = docker().inspect_image(base_image(lambda _: None))["Id"]
    assert image.image_labels(image_tag(broken, base_id)) is None  # docker tags a build only when it succeeded
