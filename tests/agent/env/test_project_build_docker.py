"""Projects only their own build backend can install, built for real in network-none boxes from local
wheels (the real setuptools, setuptools-scm, hatchling, hatch-vcs, Cython): version files, computed
dependencies, Cython with no C in the tree, a recipe's pre_install; /repo stays the source of truth."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent.containers.sandbox import Sandbox, SandboxConfig
from agent.env.errors import ProjectBuildFailed
from agent.env.install import box, images
from agent.env.install.box import BuildLimits
from agent.env.install.ensure import EnvRequest, ensure_env
from agent.env.recipe import Recipe
from agent.env.resolve.resolve import IndexConfig
from agent.protocol import EnvInfo
from tests import engine
from tests.agent.env import projects
from tests.agent.env.projects import git_tagged, write
from tests.agent.env.wheels import make_wheel

pytestmark = pytest.mark.docker
BASE = "codebox-sandbox:latest"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """alpha (needs beta), beta, gamma, delta: the wheelhouse minus its fake pytest (these suites run the real one)."""
    folder = tmp_path_factory.mktemp("tiny")
    make_wheel(folder, "alpha", "1.0", {"alpha/__init__.py": "import beta\nVALUE = 'alpha'\n"}, ("beta>=2",))
    make_wheel(folder, "beta", "2.0", {"beta/__init__.py": "VALUE = 'beta'\n"})
    make_wheel(folder, "gamma", "3.0", {"gamma/__init__.py": "VALUE = 'gamma'\n"})
    make_wheel(folder, "delta", "4.0", {"delta/__init__.py": "VALUE = 'delta'\n"})
    return folder


@pytest.fixture()
def index(tiny: Path, backend_wheels: Path) -> IndexConfig:
    return IndexConfig(find_links=[str(tiny), str(backend_wheels)], no_index=True)


@pytest.fixture(scope="module")
def made() -> Iterator[list[str]]:
    """Image ids this module made: removed at its end (ours only)."""
    ids: list[str] = []
    yield ids
    client = engine.docker()
    for image_id in reversed(ids):
        with contextlib.suppress(Exception):  # cleanup only: gone already, or still in use
            client.remove_image(image_id)


@pytest.fixture()
def steps(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str, str]]:
    """Every box step: (box purpose, user, script) -- a spy, the real step still runs."""
    seen: list[tuple[str, str, str]] = []
    real = box.Box._exec

    def spy(self: box.Box, script: str, user: str, *args: Any, **kwargs: Any) -> str:
        seen.append((self.purpose, user, script))
        return real(self, script, user, *args, **kwargs)

    monkeypatch.setattr(box.Box, "_exec", spy)
    return seen


@pytest.fixture()
def boxes(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """The create options of every box."""
    seen: list[dict[str, Any]] = []
    real = box.Box.create_options

    def spy(self: box.Box) -> dict[str, Any]:
        options = real(self)
        seen.append({"purpose": self.purpose, "image": self.image, **options})
        return options

    monkeypatch.setattr(box.Box, "create_options", spy)
    return seen


def build(repo: Path, index: IndexConfig, made: list[str], **kw: Any) -> EnvInfo:
    info = ensure_env(EnvRequest(repo=repo, base_image=BASE, index=index, **kw))
    made.append(info.image_id)
    return info


def run_in(info: EnvInfo, repo: Path, argv: list[str], ok: bool = True) -> str:
    with Sandbox(repo, SandboxConfig(image=info.run_image), task_id="env-project-test") as sb:
        reply = sb.call("run_test", {"argv": argv, "timeout_s": 120})
    assert reply.ok == ok, reply.output
    return reply.output


def test_setuptools_scm_version_file_and_computed_dependencies_come_from_the_backend(
    tmp_path: Path, index: IndexConfig, made: list[str], steps: list[tuple[str, str, str]]
) -> None:
    repo = git_tagged(write(tmp_path / "repo", projects.SCM), "v1.2.0")
    info = build(repo, index, made)
    assert "alpha==1.0" in info.installed  # only setup.py's own run says so
    assert not (repo / "src" / "scmproj" / "_version.py").exists()  # /repo was never written
    out = run_in(info, repo, ["python3", "-m", "pytest", "tests"])
    assert "1 passed" in out and "scmplug loaded" in out  # the plugin: the backend's entry points
    # Repository code ran only as the build user: root's steps copy files, create folders, run dpkg.
    assert {user for _, user, _ in steps} == {"0:0", box.BUILD_USER}
    assert all("python" not in script for _, user, script in steps if user == "0:0")
    # The model's edit of a generated file in /repo wins over the environment's copy.
    write(repo, {"src/scmproj/_version.py": "version = '9.9.9'\n"})
    code = "import scmproj; print('version', scmproj.__version__, scmproj.__file__)"
    assert "version 9.9.9 /repo/src/scmproj/__init__.py" in run_in(info, repo, ["python3", "-c", code])


def test_a_version_tool_that_drops_the_git_variables_still_reads_a_workspaces_git(
    tmp_path: Path, index: IndexConfig, made: list[str]
) -> None:
    # A batch workspace is a `git clone --shared` whose /repo/.git mount the build user does not own.
    # setuptools-scm runs git without the GIT_* variables, and its file finder stops the build on git's
    # "dubious ownership" (pluggy in a batch, with setuptools-scm 10.2.1: "git introspection failed").
    from agent.task.workspace import create_workspace

    repo = git_tagged(write(tmp_path / "repo", projects.GIT_NO_ENV), "v1.0")
    workspace = create_workspace(repo, root=tmp_path)
    try:
        info = build(workspace.path, index, made)
        assert "ok" in run_in(info, workspace.path, ["python3", "-c", "import gitnoenv; print('ok')"])
    finally:
        workspace.remove()


def test_a_build_that_needs_rust_says_so_and_what_to_do(tmp_path: Path, index: IndexConfig) -> None:
    repo = write(tmp_path / "repo", projects.NO_RUST)
    with pytest.raises(ProjectBuildFailed) as info:
        ensure_env(EnvRequest(repo=repo, base_image=BASE, index=index))
    message = str(info.value)
    assert message.startswith("the project's own build failed offline (prepare_metadata_for_build_*, exit 1): it "
                              "compiles Rust, and the build box has neither a Rust toolchain nor the network")
    assert "(--env IMAGE); the end of its log:" in message and "Cargo, the Rust package manager" in message


def test_hatch_vcs_version_file_and_the_test_extra(tmp_path: Path, index: IndexConfig, made: list[str]) -> None:
    repo = git_tagged(write(tmp_path / "repo", projects.HATCH_VCS), "v3.4.5")
    info = build(repo, index, made)
    assert {"gamma==3.0", "delta==4.0"} <= set(info.installed)  # delta: the tests extra, from METADATA
    assert "1 passed" in run_in(info, repo, ["python3", "-m", "pytest", "-q", "tests"])


def test_without_git_metadata_version_tools_get_the_static_version(
    tmp_path: Path, index: IndexConfig, made: list[str]
) -> None:
    repo = write(tmp_path / "repo", {**projects.HATCH_VCS, "src/hvproj/version.py": "__version__ = '3.4.5'\n"})
    info = build(repo, index, made)  # no .git: hatch-vcs is told the version the static reading found
    assert "1 passed" in run_in(info, repo, ["python3", "-m", "pytest", "-q", "tests"])


def test_cython_with_no_c_in_the_tree_is_compiled_and_used(tmp_path: Path, index: IndexConfig,
                                                          made: list[str]) -> None:
    repo = write(tmp_path / "repo", projects.CYTHON)
    info = build(repo, index, made)
    assert not (repo / "cyproj" / "_fast.c").exists()
    assert "1 passed" in run_in(info, repo, ["python3", "-m", "pytest", "-q", "tests"])


def test_a_recipes_pre_install_runs_offline_in_the_copy_and_what_it_makes_is_served(
    tmp_path: Path, index: IndexConfig, made: list[str]
) -> None:
    repo = write(tmp_path / "repo", projects.PRE_INSTALL)
    recipe = Recipe(pre_install=[projects.PRE_INSTALL_COMMAND])
    info = build(repo, index, made, recipe=recipe)
    assert not (repo / "gen_config.py").exists() and "gamma==3.0" in info.installed
    assert "1 passed" in run_in(info, repo, ["python3", "-m", "pytest", "-q", "tests"])
    without = build(repo, index, made)  # the recipe is part of the key
    assert without.image_id != info.image_id
    assert "ModuleNotFoundError" in run_in(without, repo, ["python3", "-m", "pytest", "-q", "tests"], ok=False)


def test_a_spec_pin_its_own_pre_install_refuses_gives_way_to_the_projects_bound(
    tmp_path: Path, tiny: Path, backend_wheels: Path, made: list[str]
) -> None:
    """sphinx 3.x's spec shape: pip_packages pin Jinja2==3.0.3, pre_install seds setup.py to Jinja2<3.0; SWE-bench
    installs the project after the pins, so the project's bound wins, and the notes say so in one line."""
    old = make_wheel(tmp_path / "old", "beta", "1.0", {"beta/__init__.py": "VALUE = 'old beta'\n"}).parent
    repo = write(tmp_path / "repo", {
        "setup.py": "from setuptools import setup\n\nsetup(name='pinned', version='1.0', py_modules=['pinned'], "
                    "install_requires=['beta>=1'])\n",
        "pinned.py": "import beta\n", "tests/test_pinned.py": "import pinned, beta\n\n"
                                                             "def test_old():\n    assert beta.VALUE == 'old beta'\n"})
    recipe = Recipe(prefer=["beta==2.0", "gamma==3.0"], pre_install=["sed -i 's/beta>=1/beta<2/' setup.py"])
    index = IndexConfig(find_links=[str(tiny), str(old), str(backend_wheels)], no_index=True)
    info = build(repo, index, made, recipe=recipe)
    assert "beta==1.0" in info.installed and "gamma==3.0" in info.installed
    assert [n for n in info.notes if "beta==2.0" in n] == [
        "spec pin beta==2.0 replaced by the project's beta<2 (the project's build backend (METADATA)): the "
        "project's install comes after the spec's packages, as in SWE-bench's"]
    assert "1 passed" in run_in(info, repo, ["python3", "-m", "pytest", "-q", "tests"])


def test_the_build_box_limits_as_seen_by_the_projects_own_setup_py(
    tmp_path: Path, index: IndexConfig, made: list[str], boxes: list[dict[str, Any]]
) -> None:
    repo = write(tmp_path / "repo", projects.LIMITS)
    info = build(repo, index, made, limits=BuildLimits(memory="512m", pids=128, cpus=1.0, timeout_s=600))
    out = run_in(info, repo, ["python3", "-c", "import buildinfo; print(repr(buildinfo.INFO))"])
    seen = eval(out.strip().splitlines()[-1])  # the literal setup.py wrote
    assert seen["uid"] == 65534 and seen["cap_eff"] == "0000000000000000" and seen["no_new_privs"] == "1"
    assert seen["ifaces"] == ["lo"] and seen["memory"] == str(512 * 1024 * 1024) and seen["pids"] == "128"
    assert seen["wrote_venv"] is False
    for options in boxes:
        assert options["network_mode"] == "none" and options["cap_drop"] == ["ALL"]
        assert options["security_opt"] == ["no-new-privileges"] and options["command"] == box.KEEP_ALIVE
        assert set(options["cap_add"]) <= {"CHOWN", "DAC_READ_SEARCH", "DAC_OVERRIDE", "FOWNER", "FSETID"}
        assert all(v["mode"] == "ro" for v in options["volumes"].values())
    project = next(o for o in boxes if o["purpose"] == "project")
    assert project["mem_limit"] == "512m" and project["memswap_limit"] == "512m" and project["pids_limit"] == 128
    assert project["nano_cpus"] == 10**9


def test_the_static_fast_path_runs_no_project_box(tmp_path: Path, wheelhouse: Path, made: list[str],
                                                   boxes: list[dict[str, Any]]) -> None:
    repo = write(tmp_path / "repo", projects.FLAT)
    build(repo, IndexConfig(find_links=[str(wheelhouse)], no_index=True), made)
    assert "project" not in {o["purpose"] for o in boxes}


def test_an_absolute_project_name_writes_nothing_on_the_host(tmp_path: Path, wheelhouse: Path) -> None:
    target = tmp_path / "outside" / "x"
    pyproject = f'[project]\nname = "{target}"\nversion = "1.0"\ndependencies = ["alpha"]\n'
    repo = write(tmp_path / "repo", {"pyproject.toml": pyproject})
    from agent.env.errors import EnvError

    with pytest.raises(EnvError) as failed:
        ensure_env(EnvRequest(repo=repo, base_image=BASE, index=IndexConfig(find_links=[str(wheelhouse)],
                                                                               no_index=True)))
    assert failed.value.usage
    assert not (tmp_path / "outside").exists() and not list(tmp_path.rglob("*.dist-info"))


def test_a_repository_cannot_poison_another_through_the_shared_layers(
    tmp_path: Path, index: IndexConfig, made: list[str]
) -> None:
    """Repo A's setup.py plants a pytest plugin (through a .pth) that makes every test pass, wherever it can
    write while its extension builds. Repo B has the same C sources and declared metadata, a setup.py of its
    own and a failing test: B's environment shares A's dependencies image, and B's failing test fails."""
    plant = (
        "import os, pathlib\n"
        "plugin = \"import pytest\\n@pytest.hookimpl(hookwrapper=True)\\n"
        "def pytest_runtest_makereport(item, call):\\n    outcome = yield\\n"
        "    outcome.get_result().outcome = 'passed'\\n\"\n"
        "for site in ['/opt/codebox-project/site', '/opt/codebox-env/lib/python3.11/site-packages',\n"
        "             '/usr/lib/python3/dist-packages', '/tmp/codebox-build/wheels', '/usr/local/lib/python3.11']:\n"
        "    try:\n"
        "        pathlib.Path(site).mkdir(parents=True, exist_ok=True)\n"
        "        pathlib.Path(site, 'codebox_poison.py').write_text(plugin)\n"
        "        pathlib.Path(site, 'zz_poison.pth').write_text(\"import os; os.environ['PYTEST_PLUGINS'] = "
        "'codebox_poison'\\n\")\n"
        "    except OSError:\n"
        "        pass\n"
    )
    failing = {"tests/test_b.py": "def test_fails():\n    assert 1 == 2\n"}
    repo_a = write(tmp_path / "a", {**projects.CYTHON, **failing, "setup.py": plant + projects.CYTHON["setup.py"]})
    info_a = build(repo_a, index, made)
    poisoned = run_in(info_a, repo_a, ["python3", "-m", "pytest", "-q", "tests/test_b.py"])
    assert "1 passed" in poisoned  # the plant works: in A's own environment, for A's own tree
    repo_b = write(tmp_path / "b", {**projects.CYTHON, **failing})
    info_b = build(repo_b, index, made)
    engine = images.EngineImages.connect()
    entry_a, entry_b = images.find(engine, info_a.image_id), images.find(engine, info_b.image_id)
    assert entry_a is not None and entry_b is not None
    assert entry_a.deps == entry_b.deps and info_a.image_id != info_b.image_id  # shared deps, own project layer
    out = run_in(info_b, repo_b, ["python3", "-m", "pytest", "-q", "tests/test_b.py"], ok=False)
    assert "1 failed" in out, out


def test_a_cache_hit_needs_no_index_and_no_container(tmp_path: Path, index: IndexConfig, made: list[str],
                                                      boxes: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
                                                      ) -> None:
    repo = git_tagged(write(tmp_path / "repo", projects.HATCH_VCS), "v3.4.5")
    first = build(repo, index, made)
    boxes.clear()

    def no_network(*args: object, **kwargs: object) -> None:
        raise AssertionError("a cache hit resolved or downloaded")

    monkeypatch.setattr("agent.env.resolve.resolve.run_process", no_network)
    monkeypatch.setattr("agent.env.resolve.fetch.fetch_pin", no_network)
    again = ensure_env(EnvRequest(repo=repo, base_image=BASE, index=index))
    assert again.image_id == first.image_id and not again.built and boxes == []
    write(repo, {"src/hvproj/extra.py": "X = 1\n"})  # any change to the tree: a new project layer
    with pytest.raises(AssertionError, match="resolved or downloaded"):
        ensure_env(EnvRequest(repo=repo, base_image=BASE, index=index))


def test_an_image_built_from_an_env_image_is_never_taken_listed_or_removed(
    tmp_path: Path, wheelhouse: Path, made: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    index = IndexConfig(find_links=[str(wheelhouse)], no_index=True)
    repo = write(tmp_path / "repo", projects.FLAT)
    info = build(repo, index, made)
    client = engine.docker()
    derived_tag = f"codebox-test-derived:{os.getpid()}"
    dockerfile = tmp_path / "ctx"
    write(dockerfile, {"Dockerfile": f"FROM {info.image_id}\nLABEL derived=yes\n"})
    derived = engine.build(client, dockerfile, derived_tag)
    try:
        labels = client.inspect_image(derived)["Config"]["Labels"]
        assert labels[images.LABEL_KIND] == images.KIND  # it inherited every label
        monkeypatch.setenv("CODEBOX_CACHE_DIR", str(tmp_path / "other-cache"))  # a record without the env image
        store = images.EngineImages.connect()
        assert derived not in {e.entry.id for e in images.list_env_images(store)}
        again = build(repo, index, made)
        assert again.built and again.image_id != derived
        removed = images.remove_env_images(store, [])
        assert derived_tag not in removed and engine.image_id(client, derived_tag) == derived
        from agent.env.choose import choose_env

        named = choose_env(derived_tag, repo, BASE)
        assert named is not None and named.image == derived_tag and named.lock == ""  # any image, as it is
    finally:
        client.remove_image(derived_tag)


def test_recipe_pip_packages_are_resolved_with_the_rest(tmp_path: Path, wheelhouse: Path, made: list[str]) -> None:
    repo = write(tmp_path / "repo", projects.FLAT)
    info = build(repo, IndexConfig(find_links=[str(wheelhouse)], no_index=True), made, recipe=Recipe(pip=["delta"]))
    assert "delta==4.0" in info.installed
    assert json.loads(json.dumps(info.installed))  # a plain list, for the report


READ_SHAPES = {
    # ext_modules=[]: no extension at all (it was once taken for one, and failed as "no compiled module").
    "no-extensions": ({"setup.py": "from setuptools import setup\n\nsetup(name='noext', version='1.0', "
                                   "py_modules=['noext'], ext_modules=[], install_requires=['gamma'])\n",
                       "noext.py": "import gamma\n"}, "noext", "gamma==3.0"),
    # extras_require=NAME: a module-level dict setup() names.
    "extras-by-name": ({"setup.py": "from setuptools import setup\n\nEXTRAS = {'test': ['delta']}\n"
                                    "setup(name='exreq', version='1.0', py_modules=['exreq'], extras_require=EXTRAS)\n",
                        "exreq.py": "import delta\n"}, "exreq", "delta==4.0"),
    # tox's legacy ini inside pyproject, naming a requirements file.
    "tox-legacy-ini": ({"pyproject.toml": '[project]\nname = "toxy"\nversion = "1.0"\n[tool.tox]\n'
                                          'legacy_tox_ini = """\n[testenv]\ndeps = -r tests/requirements.txt\n"""\n',
                        "tests/requirements.txt": "gamma\n", "toxy.py": "import gamma\n"}, "toxy", "gamma==3.0"),
}


@pytest.mark.parametrize("shape", sorted(READ_SHAPES))
def test_shapes_the_static_reading_covers_build_in_a_box_and_import(
    shape: str, tmp_path: Path, wheelhouse: Path, made: list[str], boxes: list[dict[str, Any]]
) -> None:
    files, module, wanted = READ_SHAPES[shape]
    repo = write(tmp_path / "repo", files)
    info = build(repo, IndexConfig(find_links=[str(wheelhouse)], no_index=True), made)
    assert wanted in info.installed and all(o["network_mode"] == "none" for o in boxes)
    assert f"imported {module}" in run_in(info, repo, ["python3", "-m", "pytest", module])


def test_eval_builds_the_project_again_when_the_model_patch_changes_what_its_build_reads(
    tmp_path: Path, tiny: Path, backend_wheels: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fix in Cython is compiled before the tests run (SWE-bench's eval script installs the project
    again); a patch of Python modules alone is served from /repo and keeps the environment."""
    from agent.cli.parser import main
    from tests.agent.eval.repos import diff_of, make_repo

    monkeypatch.setenv("CODEBOX_FIND_LINKS", f"{tiny}{os.pathsep}{backend_wheels}")
    monkeypatch.setenv("CODEBOX_NO_INDEX", "1")
    buggy = {**projects.CYTHON, "cyproj/_fast.pyx": projects.CYTHON["cyproj/_fast.pyx"].replace("3 * x", "2 * x")}
    buggy.pop("tests/test_fast.py")
    repo = tmp_path / "repos" / "acme" / "cyproj"
    base = make_repo(repo, buggy)
    test_patch = diff_of(repo, {"tests/test_fast.py": projects.CYTHON["tests/test_fast.py"]})
    patches = {
        "gold": diff_of(repo, {"cyproj/_fast.pyx": projects.CYTHON["cyproj/_fast.pyx"]}),
        "python-only": diff_of(repo, {"cyproj/__init__.py": "from cyproj._fast import triple  # looked at\n"}),
        "breaks-the-build": diff_of(repo, {"cyproj/_fast.pyx": "def triple(x) oops\n"}),
    }
    line = {"repo": "acme/cyproj", "base_commit": base, "test_patch": test_patch,
            "FAIL_TO_PASS": ["tests/test_fast.py::test_compiled"], "PASS_TO_PASS": []}
    (tmp_path / "d.jsonl").write_text("".join(json.dumps({**line, "instance_id": i}) + "\n" for i in patches))
    (tmp_path / "p.jsonl").write_text("".join(json.dumps({"instance_id": i, "model_patch": p}) + "\n"
                                              for i, p in patches.items()))
    out = tmp_path / "out"
    main(["eval", "--jobs", "1", "--tasks", str(tmp_path / "d.jsonl"), "--predictions", str(tmp_path / "p.jsonl"),
          "--out", str(out), "--repos", str(tmp_path / "repos")])
    gold, python_only, broken = (json.loads((out / i / "eval.json").read_text()) for i in patches)
    assert gold["status"] == "resolved", gold["error"]
    assert "the project was built again with the model patch (it changes cyproj/_fast.pyx)" in gold["notes"]
    assert "env_again" in gold["timings"] and gold["image_id"] == gold["env"]["image_id"]
    assert python_only["status"] == "unresolved" and "env_again" not in python_only["timings"]
    assert gold["env"]["image_id"] != python_only["env"]["image_id"]  # the patched tree's own project layer
    # a patch the project does not build with is the patch's doing: graded unresolved, not an error (an error
    # was an infrastructure failure in report.json, and --retry-errors ran it again for the same result)
    assert broken["status"] == "unresolved" and broken["error_kind"] is None
    assert broken["error"].startswith("the project does not build with the model patch (cyproj/_fast.pyx): the "
                                      "project's own build failed offline")
