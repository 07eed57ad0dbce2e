"""Environment images built for real from a local wheelhouse: every build container without a network,
the project importable from /repo as if installed editable, the env's own pytest, cache hits, clean failures."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent.containers.builds import EngineBuilder
from agent.containers.sandbox import Sandbox
from agent.env.errors import EnvError
from agent.env.install import images
from agent.env.install.ensure import EnvRequest, ensure_env
from agent.env.recipe import Recipe
from agent.env.resolve.resolve import IndexConfig
from agent.protocol import EnvInfo
from agent.sandboxes.config import SandboxConfig
from tests.agent.env import projects
from tests.agent.env.projects import write
from tests.agent.env.slow import env_images
from tests.agent.env.wheels import make_sdist, make_wheel, setuptools_pyproject
from tests.engine import containers, docker, remove_image

pytestmark = pytest.mark.docker
BASE = "codebox-sandbox:latest"


@pytest.fixture(scope="module", autouse=True)
def _image() -> None:
    from agent.containers.image import ensure_sandbox_image

    ensure_sandbox_image()


@pytest.fixture(scope="module")
def made() -> Iterator[list[str]]:
    """Tags of the environment images this module made: removed at its end (ours only)."""
    tags: list[str] = []
    yield tags
    client = docker()
    for tag in set(tags):
        if tag.startswith(images.REPOSITORY + ":"):
            remove_image(client, tag)


@pytest.fixture()
def created(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """The options of every build box created (a spy: the real create still runs)."""
    seen: list[dict[str, Any]] = []
    real = EngineBuilder.create_box

    def spy(self: EngineBuilder, image: str, options: Any) -> Any:
        seen.append({"image": image, **options})
        return real(self, image, options)

    monkeypatch.setattr(EngineBuilder, "create_box", spy)
    return seen


def build(repo: Path, index: IndexConfig, made: list[str], **kw: Any) -> EnvInfo:
    info = ensure_env(EnvRequest(repo=repo, base_image=BASE, index=index, **kw))
    made.append(info.image)
    return info


def run_in(info: EnvInfo, repo: Path, argv: list[str]) -> str:
    with Sandbox(repo, SandboxConfig(image=info.image), task_id="env-test") as sb:
        reply = sb.call("run_test", {"argv": argv, "timeout_s": 60})
    assert reply.ok, reply.output
    return reply.output


def test_flat_project_env_every_container_offline_and_the_envs_pytest_runs(
    tmp_path: Path, local_index: IndexConfig, made: list[str], created: list[dict[str, Any]]
) -> None:
    repo = write(tmp_path, projects.FLAT)
    info = build(repo, local_index, made)
    assert info.built and info.image.startswith("codebox-env:")
    assert info.installed == ["alpha==1.0", "beta==2.0", "gamma==3.0", "pytest==99.0"]
    assert created and all(c["network_mode"] == "none" for c in created), created
    out = run_in(info, repo, ["python3", "-m", "pytest", "flatproj", "gamma"])
    assert "fake pytest 99.0 from /opt/codebox-env/" in out and "imported flatproj" in out
    assert "python /opt/codebox-env/bin/python3" in out
    assert "hello from /repo/flatproj.py" in run_in(info, repo, ["flat-hello"])  # its console script, on PATH


def test_a_second_build_is_a_cache_hit_with_no_container(
    tmp_path: Path, local_index: IndexConfig, made: list[str], created: list[dict[str, Any]]
) -> None:
    repo = write(tmp_path, projects.FLAT)
    first = build(repo, local_index, made)
    created.clear()
    again = build(repo, local_index, made)
    assert again.image == first.image and not again.built and again.installed == first.installed
    assert created == []
    write(repo, {"requirements-test.txt": "delta\n"})  # a new declaration: a new environment
    third = build(repo, local_index, made)
    # ... whose first candidate is still the test extra (closer to the project's CI than a test file)
    assert third.image != first.image and third.candidates == first.candidates + 1 and third.candidate == 1
    assert "delta==4.0" not in third.installed
    fourth = build(repo, local_index, made, skip=1)  # the next one: the test file's
    assert "delta==4.0" in fourth.installed and fourth.candidate == 2


def test_a_task_older_than_its_python_may_fall_back_to_the_python_s_day_without_a_new_key(
    tmp_path: Path, local_index: IndexConfig, made: list[str]
) -> None:
    repo = write(tmp_path / "repo", projects.FLAT)
    when = "2012-09-20T15:48:00Z"  # requests 0.14's row on SWE-bench's Python (the local wheels carry no date)
    # A venv of that day had setuptools (python_era.venv_seed): a stand-in beside the wheelhouse.
    make_wheel(tmp_path / "seed", "setuptools", "1.0", {"setuptools/__init__.py": ""})
    index = IndexConfig(find_links=[*local_index.find_links, str(tmp_path / "seed")], no_index=True)
    plain = build(repo, index, made, as_of=when)
    aware = build(repo, index, made, as_of=when, python="3.11")  # 3.11: released 2022-10-24
    assert aware.image == plain.image and not aware.built  # the fallback after the others is no part of the key
    assert (aware.candidate, aware.candidates) == (1, plain.candidates + 1)  # ... but it is counted: eval's next
    era = build(repo, index, made, as_of=when, python="3.11", skip=plain.candidates)
    assert era.built and era.candidate == plain.candidates + 1 and era.image != plain.image
    assert "environment: candidate 3 of 3, the project's own dependencies as of Python 3.11's release " \
           "(2022-10-24)" in era.notes and "gamma==3.0" not in era.installed  # the test extra is not in it


def test_src_layout_is_importable_from_repo_with_metadata_and_wins_over_the_index(
    tmp_path: Path, local_index: IndexConfig, made: list[str]
) -> None:
    repo = write(tmp_path, projects.SRC)
    info = build(repo, local_index, made)
    assert "srcproj==5.0" not in info.installed  # pulled by pulls-project, but /repo is the project
    code = ("import srcproj, importlib.metadata as md; print(srcproj.WHERE, srcproj.__file__); "
            "print('version', md.version('srcproj')); "
            "print('plugins', [e.name for e in md.entry_points(group='pytest11')])")
    out = run_in(info, repo, ["python3", "-c", code])
    assert "repo /repo/src/srcproj/__init__.py" in out and "version 7.1" in out and "srcplug" in out


def test_edits_to_the_repo_are_what_the_tests_import(
    tmp_path: Path, local_index: IndexConfig, made: list[str]
) -> None:
    repo = write(tmp_path, projects.SRC)
    info = build(repo, local_index, made)
    (repo / "src" / "srcproj" / "__init__.py").write_text("WHERE = 'edited'\n")
    assert "edited" in run_in(info, repo, ["python3", "-c", "import srcproj; print(srcproj.WHERE)"])


def test_the_images_own_packages_do_not_shadow_the_env(tmp_path: Path, local_index: IndexConfig,
                                                       made: list[str]) -> None:
    repo = write(tmp_path, projects.GROUPS)
    info = build(repo, local_index, made)
    code = "import importlib.util as u; print('attrs', u.find_spec('attrs')); import pytest; print(pytest.__file__)"
    out = run_in(info, repo, ["python3", "-c", code])
    assert "attrs None" in out and "/opt/codebox-env/" in out  # Debian's attrs 22.2 is in the base image


@pytest.mark.parametrize("shape", ["REQUIREMENTS", "SETUP_PY", "SETUP_CFG", "TOX"])
def test_other_shapes_build_and_import(shape: str, tmp_path: Path, local_index: IndexConfig, made: list[str]) -> None:
    repo = write(tmp_path, getattr(projects, shape))
    info = build(repo, local_index, made)
    wanted = {"REQUIREMENTS": "alpha", "SETUP_PY": "gamma", "SETUP_CFG": "gamma", "TOX": "beta"}[shape]
    assert any(p.startswith(wanted + "==") for p in info.installed)
    assert f"imported {wanted}" in run_in(info, repo, ["python3", "-m", "pytest", wanted])


def test_a_repo_that_declares_nothing_uses_the_base_image(created: list[dict[str, Any]]) -> None:
    root = Path(__file__).resolve().parents[3]
    info = ensure_env(EnvRequest(repo=root / "agent" / "cli" / "demo_data" / "repo", base_image=BASE))
    assert info.image == BASE and not info.built and created == []


def test_an_unresolvable_requirement_leaves_no_image(tmp_path: Path, local_index: IndexConfig,
                                                     created: list[dict[str, Any]]) -> None:
    repo = write(tmp_path, {"requirements.txt": "alpha\nnot-there\n"})
    with pytest.raises(EnvError, match=r"not-there \(declared in requirements.txt:2\)") as info:
        ensure_env(EnvRequest(repo=repo, base_image=BASE, index=local_index))
    assert info.value.usage
    client = docker()
    assert env_images(client, repo) == []
    # No recorded image could hold not-there: the box started while uv resolved, and went with the failure.
    assert "env-deps" in [c["labels"]["codebox.task"] for c in created]
    assert containers(client, "codebox.role=env-build", f"codebox.owner={os.getpid()}") == []


def test_requires_python_the_image_lacks_points_to_image(tmp_path: Path, local_index: IndexConfig) -> None:
    pyproject = '[project]\nname = "future"\nversion = "1"\nrequires-python = ">=3.99"\n'
    repo = write(tmp_path, {"pyproject.toml": pyproject})
    with pytest.raises(EnvError, match=r"requires Python >=3.99.*--image"):
        ensure_env(EnvRequest(repo=repo, base_image=BASE, index=local_index))


def test_an_install_that_fails_offline_reports_the_log_tail_and_leaves_nothing(
    tmp_path: Path, made: list[str], created: list[dict[str, Any]]
) -> None:
    wheels = tmp_path / "bad-wheels"
    # Its metadata resolves; only the installer, in the container, refuses it.
    make_wheel(wheels, "escaper", "1.0", {"escaper/__init__.py": ""}, wheel_version="9.0")
    make_wheel(wheels, "pytest", "99.0", {"pytest/__init__.py": ""})
    repo = write(tmp_path / "repo", {"requirements.txt": "escaper\n"})
    client = docker()
    with pytest.raises(EnvError, match="failed offline") as info:
        ensure_env(EnvRequest(repo=repo, base_image=BASE, index=IndexConfig(find_links=[str(wheels)], no_index=True)))
    assert "escaper" in str(info.value)  # the tail of the build log names the bad wheel
    assert env_images(client, repo) == []
    ids = containers(client, "codebox.role=env-build", f"codebox.owner={os.getpid()}")
    assert ids == [] and all(c["network_mode"] == "none" for c in created)


def test_env_ls_and_rm_see_the_images_codebox_recorded_and_nothing_else(
    tmp_path: Path, local_index: IndexConfig, made: list[str]
) -> None:
    repo = write(tmp_path, projects.FLAT)
    info = build(repo, local_index, made)
    engine = images.EngineImages.connect()
    listed = {e.tag: e.entry for e in images.list_env_images(engine)}
    # The key is the content, not the path: the first repo with this content named the image.
    assert info.image in listed and listed[info.image].repo.startswith("/") and len(listed[info.image].packages) == 4
    deps = next(e for e in listed.values() if e.id == listed[info.image].deps)  # its dependencies image
    assert deps.kind == "deps" and deps.packages == listed[info.image].packages
    with pytest.raises(EnvError, match="not an image codebox built"):
        images.remove_env_images(engine, [BASE])
    assert images.remove_env_images(engine, [info.image]) == [info.image]
    assert images.find(engine, info.image) is None and images.find(engine, info.image_id) is None


def _sdist_index(tmp_path: Path, wheelhouse: Path, setuptools_wheels: Path, files: dict[str, str]) -> IndexConfig:
    sdists = tmp_path / "sdists"
    make_sdist(sdists, "tinysd", "0.1", files)
    return IndexConfig(find_links=[str(wheelhouse), str(setuptools_wheels), str(sdists)], no_index=True)


def test_an_sdist_only_dependency_is_built_offline_and_imports(
    tmp_path: Path, wheelhouse: Path, setuptools_wheels: Path, made: list[str], created: list[dict[str, Any]]
) -> None:
    marker = tmp_path / "ran-on-host"
    # Writes the marker where the host has the folder (the build container has not): proof of where it ran.
    setup_py = (f"import pathlib\nm = pathlib.Path({str(marker)!r})\nm.parent.is_dir() and m.write_text('ran')\n"
                "from setuptools import setup\nsetup()\n")
    index = _sdist_index(tmp_path, wheelhouse, setuptools_wheels, {
        "pyproject.toml": setuptools_pyproject("tinysd", "0.1", ["beta>=2"]), "setup.py": setup_py,
        "tinysd/__init__.py": "import beta\nVALUE = 'built from sdist'\n",
    })
    repo = write(tmp_path / "repo", {"requirements.txt": "tinysd\n", "app.py": ""})
    info = build(repo, index, made)
    assert "tinysd==0.1" in info.installed and "beta==2.0" in info.installed
    assert not marker.exists()  # the sdist's setup.py ran only in the build container
    assert created and all(c["network_mode"] == "none" for c in created), created
    # The box started early for a lock of wheels was not this lock's: the one that built the sdist has the quota.
    install = [c for c in created if c["labels"]["codebox.task"] == "env-deps"][-1]
    assert install["nano_cpus"] == 10**9  # package code (setup.py) runs there: the CPU quota stays
    code = "import tinysd, beta; print(tinysd.VALUE, tinysd.__file__, beta.VALUE)"
    out = run_in(info, repo, ["python3", "-c", code])
    assert "built from sdist /opt/codebox-env/" in out and "beta" in out


def test_an_sdist_that_fails_to_build_reports_its_log_tail_and_leaves_no_image(
    tmp_path: Path, wheelhouse: Path, setuptools_wheels: Path, created: list[dict[str, Any]]
) -> None:
    index = _sdist_index(tmp_path, wheelhouse, setuptools_wheels, {
        "pyproject.toml": setuptools_pyproject("tinysd", "0.1", []),
        "setup.py": "raise SystemExit('codebox-test: this sdist does not build')\n",
    })
    repo = write(tmp_path / "repo", {"requirements.txt": "tinysd\n"})
    client = docker()
    with pytest.raises(EnvError, match=r"(?s)sdist failed offline.*tinysd-0.1.tar.gz failed.*this sdist does not build"
                       ) as info:
        ensure_env(EnvRequest(repo=repo, base_image=BASE, index=index))
    assert info.value.usage  # exit 2
    assert env_images(client, repo) == []
    assert created and all(c["network_mode"] == "none" for c in created)


def test_a_candidate_that_conflicts_is_dropped_and_the_next_one_built(tmp_path: Path, local_index: IndexConfig,
                                                                       made: list[str]) -> None:
    """flask's shape: the test pins conflict with what the project needs (alpha needs beta>=2); the environment
    falls back to the next candidate, and the notes say which was dropped and why, and which was chosen."""
    pyproject = ('[project]\nname = "fallproj"\nversion = "1.0"\ndependencies = ["alpha"]\n'
                 '[project.optional-dependencies]\ntest = ["beta<2"]\n')
    repo = write(tmp_path, {"pyproject.toml": pyproject, "fallproj/__init__.py": "",
                            "requirements-test.txt": "gamma\n"})
    info = build(repo, local_index, made)
    assert "beta==2.0" in info.installed and "gamma==3.0" in info.installed
    dropped = [n for n in info.notes if "dropped" in n]
    assert len(dropped) == 1 and dropped[0].startswith("environment candidate 1 (extra test) dropped: ")
    assert "beta<2" in dropped[0]
    assert "environment: candidate 2 of 3, requirements-test.txt" in info.notes
    skipped = build(repo, local_index, made, skip=2)  # what eval asks for after candidate 2 failed its tests
    assert "gamma==3.0" not in skipped.installed and skipped.image != info.image
    assert "environment: candidate 3 of 3, the project's own dependencies" in skipped.notes


def test_an_sdist_with_dynamic_metadata_is_built_in_a_box_and_its_wheel_cached(
    tmp_path: Path, wheelhouse: Path, setuptools_wheels: Path, made: list[str], created: list[dict[str, Any]]
) -> None:
    """docopt's and py 1.4's shape: a setup.py only (PKG-INFO 2.1, no pyproject), its requirements computed when it
    runs. Its wheel is built in a box with no network and no repository; its Requires-Dist read from that wheel."""
    marker = tmp_path / "ran-on-host"
    setup_py = (f"import pathlib\nm = pathlib.Path({str(marker)!r})\nm.parent.is_dir() and m.write_text('ran')\n"
                "from setuptools import setup\nsetup(name='tinysd', version='0.1', packages=['tinysd'], "
                "install_requires=['be' + 'ta>=2'])\n")
    index = _sdist_index(tmp_path, wheelhouse, setuptools_wheels, {
        "setup.py": setup_py, "tinysd/__init__.py": "import beta\nVALUE = 'built in a box'\n"})
    repo = write(tmp_path / "repo", {"requirements.txt": "tinysd\n", "app.py": ""})
    info = build(repo, index, made)
    assert "tinysd==0.1" in info.installed and "beta==2.0" in info.installed  # beta: from the built wheel's metadata
    assert not marker.exists()
    boxes = [c for c in created if c["labels"]["codebox.task"] == "env-sdist"]
    assert len(boxes) == 1 and boxes[0]["network_mode"] == "none" and boxes[0]["cap_add"] == []
    assert boxes[0]["user"] == "65534:65534"  # no root step: everything in it, its keep-alive too, as nobody
    mounted = [bind["bind"] for bind in boxes[0]["volumes"].values()]
    assert sorted(mounted) == ["/tmp/codebox-build/uv", "/tmp/codebox-build/wheels"]  # no repository in that box
    out = run_in(info, repo, ["python3", "-c", "import tinysd; print(tinysd.VALUE)"])
    assert "built in a box" in out
    created.clear()  # the wheel is cached by the sdist's hash, the Python and the build lock: no box the next time
    again = build(write(tmp_path / "repo2", {"requirements.txt": "tinysd\nalpha\n"}), index, made)
    assert "tinysd==0.1" in again.installed and not [c for c in created if c["labels"]["codebox.task"] == "env-sdist"]


def test_a_dynamic_sdist_with_c_code_compiles_in_the_build_tools_image(
    tmp_path: Path, wheelhouse: Path, setuptools_wheels: Path, made: list[str], created: list[dict[str, Any]]
) -> None:
    """typed_ast 1.4.1's shape (sphinx 3.x's test extra as of 2020): a setup.py with a C extension and no wheel for
    the Python; pip compiles it where gcc is, and so does the sdist's box, on the build-tools image. The compiler
    stays there: the environment image gets the wheel only."""
    speed_c = ('#include <Python.h>\n'
               'static PyObject *answer(PyObject *s, PyObject *a) { return PyLong_FromLong(42); }\n'
               'static PyMethodDef m[] = {{"answer", answer, METH_NOARGS, ""}, {0}};\n'
               'static struct PyModuleDef d = {PyModuleDef_HEAD_INIT, "_speed", "", -1, m};\n'
               'PyMODINIT_FUNC PyInit__speed(void) { return PyModule_Create(&d); }\n')
    setup_py = ("from setuptools import setup, Extension\nsetup(name='tinysd', version='0.1', packages=['tinysd'], "
                "ext_modules=[Extension('tinysd._speed', ['tinysd/_speed.c'])])\n")
    index = _sdist_index(tmp_path, wheelhouse, setuptools_wheels, {
        "setup.py": setup_py, "tinysd/__init__.py": "", "tinysd/_speed.c": speed_c})
    repo = write(tmp_path / "repo", {"requirements.txt": "tinysd\n", "app.py": ""})
    info = build(repo, index, made)
    assert "tinysd==0.1" in info.installed
    boxes = [c for c in created if c["labels"]["codebox.task"] == "env-sdist"]
    assert len(boxes) == 1 and boxes[0]["network_mode"] == "none"
    assert [e.kind for e in images.entries() if e.id == boxes[0]["image"]] == ["tools"]  # the build-tools image
    out = run_in(info, repo, ["python3", "-c", "import tinysd._speed as s, shutil; print(s.answer(), "
                                               "shutil.which('gcc'))"])
    assert "42 None" in out



def test_without_a_debian_mirror_a_pure_python_dynamic_sdist_still_builds_and_says_so(
    tmp_path: Path, wheelhouse: Path, setuptools_wheels: Path, made: list[str], created: list[dict[str, Any]],
    monkeypatch: pytest.MonkeyPatch
) -> None:
    """An offline index (find-links) and no Debian mirror: the build-tools image cannot be made, and docopt's shape
    (setup.py only, pure Python) builds in the base image as it did before sdists got a compiler; the notes say so."""
    monkeypatch.setenv("CODEBOX_CACHE_DIR", str(tmp_path / "cache"))  # no tools image or built wheel recorded
    for variable in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"):
        monkeypatch.setenv(variable, "http://127.0.0.1:9")  # apt-get's downloads go nowhere
    setup_py = ("from setuptools import setup\nsetup(name='tinysd', version='0.1', packages=['tinysd'], "
                "install_requires=['be' + 'ta>=2'])\n")
    index = _sdist_index(tmp_path, wheelhouse, setuptools_wheels, {
        "setup.py": setup_py, "tinysd/__init__.py": "import beta\nVALUE = 'no compiler needed'\n"})
    repo = write(tmp_path / "repo", {"requirements.txt": "tinysd\n", "app.py": ""})
    info = build(repo, index, made)
    assert "tinysd==0.1" in info.installed and "beta==2.0" in info.installed
    assert [n for n in info.notes if n.startswith("the build-tools image could not be made (")]
    boxes = [c for c in created if c["labels"]["codebox.task"] == "env-sdist"]
    assert len(boxes) == 1 and boxes[0]["image"] == BASE
    assert "no compiler needed" in run_in(info, repo, ["python3", "-c", "import tinysd; print(tinysd.VALUE)"])


def test_a_legacy_build_s_named_pin_whose_dependency_is_a_dynamic_sdist_is_built_with_it(
    tmp_path: Path, wheelhouse: Path, setuptools_wheels: Path, made: list[str], created: list[dict[str, Any]]
) -> None:
    """astropy 1.3's shape on a stand-in Python: its setup.py imports jinja2 when it runs (pip built it without
    isolation, after the spec's jinja2==2.10), and jinja2 2.10 needs a MarkupSafe that had no wheel for 3.9 in 2020,
    only its sdist. The build runs again with the pin its failure names; that pin's sdist-only dependency is built
    in a box, as the dependencies' are, instead of ending the build with "no usable wheel"."""
    setup_py = ("from setuptools import setup\nsetup(name='tinysd', version='0.1', packages=['tinysd'], "
                "install_requires=['be' + 'ta>=2'])\n")  # dynamic: only running it tells its requirements
    index = _sdist_index(tmp_path, wheelhouse, setuptools_wheels, {
        "setup.py": setup_py, "tinysd/__init__.py": "import beta\nVALUE = 'built in a box'\n"})
    templating = make_wheel(tmp_path / "templating", "templating", "2.10",
                            {"templating/__init__.py": "import tinysd\nREQUIRES = ['gamma']\n"}, ("tinysd",)).parent
    index = IndexConfig(find_links=[*index.find_links, str(templating)], no_index=True)
    repo = write(tmp_path / "repo", {
        "setup.py": "import templating  # the build's own import, as astropy's setup.py imports jinja2\n"
                    "from setuptools import setup\n"
                    "setup(name='legacy', version='1.0', py_modules=['legacy'],\n"
                    "      install_requires=templating.REQUIRES)\n",
        "legacy.py": "VALUE = 'legacy'\n"})
    info = build(repo, index, made, recipe=Recipe(prefer=["templating==2.10"]))
    assert "templating==2.10" in info.installed and "tinysd==0.1" in info.installed
    assert "gamma==3.0" in info.installed  # what the build, with templating imported, said the project requires
    assert [n for n in info.notes if "failed naming templating==2.10" in n], info.notes  # built again, with the pin
    assert len([c for c in created if c["labels"]["codebox.task"] == "env-sdist"]) == 1  # tinysd's wheel, once
    assert "legacy" in run_in(info, repo, ["python3", "-c", "import legacy; print(legacy.VALUE)"])
