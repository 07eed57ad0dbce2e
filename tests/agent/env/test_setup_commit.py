"""The dependencies read at a row's environment_setup_commit, the project at its base commit, and the cache keyed so
that the rows of one version share one environment (SWE-bench's env image)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from agent.env.choose import dependency_date, setup_declarations
from agent.env.install.inputs import inputs_key, read_inputs
from agent.env.install.request import EnvRequest
from agent.env.read.at_commit import declarations_at, full_commit, wanted
from agent.env.recipe import Recipe
from agent.env.resolve.fetch import cache_dir
from agent.env.resolve.resolve import IndexConfig
from agent.protocol import TaskSpec
from tests.agent.env.projects import write

SETUP_PY = ("from setuptools import setup\nsetup(name='proj', version='1.0', packages=['proj'],\n"
            "      install_requires={deps!r})\n")


def commit(repo: Path, files: dict[str, str], date: str, message: str = "c") -> str:
    write(repo, files)
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t",
           "GIT_COMMITTER_DATE": date, "GIT_AUTHOR_DATE": date, "HOME": str(repo)}
    if not (repo / ".git").exists():
        subprocess.run(["git", "init", "-q"], cwd=repo, check=True, env=env)
    for command in (["add", "-A"], ["commit", "-qm", message], ["rev-parse", "HEAD"]):
        out = subprocess.run(["git", *command], cwd=repo, check=True, capture_output=True, env=env)
    return out.stdout.decode().strip()


def checkout(repo: Path, rev: str, dest: Path) -> Path:
    subprocess.run(["git", "clone", "-q", "--shared", str(repo), str(dest)], check=True)
    subprocess.run(["git", "checkout", "-q", rev], cwd=dest, check=True)
    return dest


@pytest.fixture()
def history(tmp_path: Path) -> dict[str, str]:
    """Two base commits of one version (their test requirements differ) and the version's setup commit, later."""
    repo = tmp_path / "origin"
    found = {"base1": commit(repo, {"setup.py": SETUP_PY.format(deps=["alpha"]), "proj/__init__.py": "",
                                    "requirements-test.txt": "beta==2.0\n"}, "2020-05-05T10:00:00Z"),
             "base2": commit(repo, {"requirements-test.txt": "beta==2.0\ngamma\n", "proj/x.py": "X = 1\n"},
                             "2020-05-30T10:00:00Z"),
             "setup": commit(repo, {"requirements-test.txt": "beta==1.0\ndelta\n",
                                    "ci/requirements/extra-requirements.txt": "gamma\n"}, "2020-07-08T09:30:00Z")}
    return found


def request(tmp_path: Path, base: str, setup: str | None, name: str) -> EnvRequest:
    origin = tmp_path / "origin"
    work = checkout(origin, base, tmp_path / name)
    deps = declarations_at(origin, setup, cache_dir()) if setup else None
    return EnvRequest(repo=work, index=IndexConfig(no_index=True), deps_repo=deps, deps_commit=setup,
                      as_of="2020-07-08T09:30:00Z")


def texts(req: EnvRequest) -> list[list[str]]:
    return [[r.text for r in c.requirements] for c in read_inputs(req).declared.candidates]


def test_the_dependencies_are_read_at_the_setup_commit_and_the_project_at_the_base(
        tmp_path: Path, history: dict[str, str]) -> None:
    at_base = texts(request(tmp_path, history["base1"], None, "plain"))
    assert at_base[0] == ["alpha", "beta==2.0", "pytest"]
    req = request(tmp_path, history["base1"], history["setup"], "row1")
    declared = read_inputs(req).declared
    assert [r.text for r in declared.candidates[0].requirements] == ["alpha", "beta==1.0", "delta", "pytest"]
    assert "beta==2.0" not in {r.text for r in declared.requirements}
    assert f"requirements-test.txt@{history['setup'][:10]}" in declared.files
    assert "setup.py" in declared.files  # the project's own, read at the base
    assert any(n.startswith(f"dependencies declared at environment_setup_commit {history['setup'][:10]}")
               for n in declared.notes)
    assert declared.project.name == "proj" and declared.project.version == "1.0"


def test_rows_of_one_version_share_one_key_and_another_setup_commit_does_not(
        tmp_path: Path, history: dict[str, str]) -> None:
    row1 = request(tmp_path, history["base1"], history["setup"], "row1")
    row2 = request(tmp_path, history["base2"], history["setup"], "row2")
    key1 = inputs_key("sha256:base", read_inputs(row1), row1)
    assert key1 == inputs_key("sha256:base", read_inputs(row2), row2)
    # Read at their own base commits (as before), the two rows differ (row 2's gamma).
    plain1 = request(tmp_path, history["base1"], None, "plain1")
    plain2 = request(tmp_path, history["base2"], None, "plain2")
    assert inputs_key("sha256:base", read_inputs(plain1), plain1) != \
        inputs_key("sha256:base", read_inputs(plain2), plain2)
    other = request(tmp_path, history["base1"], history["base2"], "other")  # another version's setup commit
    assert inputs_key("sha256:base", read_inputs(other), other) != key1
    assert inputs_key("sha256:other-python", read_inputs(row1), row1) != key1


def test_a_requirement_only_the_base_declares_is_added(tmp_path: Path, history: dict[str, str]) -> None:
    origin = tmp_path / "origin"
    newer = commit(origin, {"setup.py": SETUP_PY.format(deps=["alpha", "epsilon>=2"])}, "2020-08-01T00:00:00Z")
    row = request(tmp_path, newer, history["setup"], "row")
    assert texts(row)[0] == ["alpha", "beta==1.0", "delta", "pytest", "epsilon>=2"]


def test_the_setup_tree_holds_the_declarations_from_gits_objects_only(tmp_path: Path,
                                                                       history: dict[str, str]) -> None:
    origin = tmp_path / "origin"
    marker = tmp_path / "filtered"
    subprocess.run(["git", "config", "filter.mark.smudge", f"touch {marker}; cat"], cwd=origin, check=True)
    commit(origin, {".gitattributes": "*.txt filter=mark\n", "deep/a/b/code.py": "x\n"}, "2020-09-01T00:00:00Z")
    bare = tmp_path / "mirror.git"
    subprocess.run(["git", "clone", "-q", "--mirror", str(origin), str(bare)], check=True)
    folder = declarations_at(bare, "HEAD", tmp_path / "cache")
    assert folder is not None and folder.name == full_commit(bare, "HEAD")
    assert (folder / "requirements-test.txt").read_text() == "beta==1.0\ndelta\n"
    assert (folder / "ci/requirements/extra-requirements.txt").is_file()  # named for requirements: taken deep
    assert not (folder / "deep").exists() and not marker.exists()
    assert declarations_at(bare, "HEAD", tmp_path / "cache") == folder  # kept: the next row reads it
    assert declarations_at(bare, "0" * 40, tmp_path / "cache") is None
    assert declarations_at(bare, "--output=/tmp/x", tmp_path / "cache") is None
    assert wanted("setup.py") and wanted("requirements/test.txt") and not wanted("src/pkg/mod.py")


def task(origin: Path, base: str, setup: str | None, created: str = "2020-05-05T10:00:00Z") -> TaskSpec:
    return TaskSpec(id="t", goal="g", repo=str(origin), base_commit=base, environment_setup_commit=setup,
                    created_at=created)


def test_a_row_resolves_as_of_its_setup_commits_day_unless_the_user_says(tmp_path: Path,
                                                                          history: dict[str, str]) -> None:
    origin = tmp_path / "origin"
    row = task(origin, history["base1"], history["setup"])
    setup = setup_declarations(row, origin)
    assert setup is not None and setup[1] == history["setup"]
    assert dependency_date(row, None, origin, setup[1]) == "2020-07-08T09:30:00Z"
    assert dependency_date(row, "2021-01-01", origin, setup[1]) == "2021-01-02T00:00:00Z"
    assert dependency_date(row, None, origin, None) == "2020-05-05T10:00:00Z"  # created_at, as before
    assert setup_declarations(task(origin, history["setup"], history["setup"][:12]), origin) is None  # the same
    said: list[str] = []
    assert setup_declarations(task(origin, history["base1"], "f" * 40), origin, said.append) is None
    assert said and "is not in" in said[0]


@pytest.mark.docker
def test_the_second_row_of_a_version_reuses_the_first_rows_environment(tmp_path: Path,
                                                                          local_index: IndexConfig) -> None:
    from agent.containers.image import ensure_sandbox_image
    from agent.env.install.ensure import ensure_env
    from tests.engine import docker, remove_image

    ensure_sandbox_image()
    # Dated after 3.12's release: no setuptools seeded (venv_seed), which the local index does not hold.
    origin = tmp_path / "origin"
    base1 = commit(origin, {"setup.py": SETUP_PY.format(deps=[]), "proj/__init__.py": "",
                            "requirements-test.txt": "beta==2.0\n"}, "2024-05-05T10:00:00Z")
    base2 = commit(origin, {"requirements-test.txt": "beta==2.0\ngamma\n"}, "2024-05-30T10:00:00Z")
    setup = commit(origin, {"requirements-test.txt": "beta==1.0\ndelta\n"}, "2024-07-08T09:30:00Z")
    deps = declarations_at(origin, setup, cache_dir())
    made = []
    try:
        for name, base in (("row1", base1), ("row2", base2)):
            work = checkout(origin, base, tmp_path / name)
            made.append(ensure_env(EnvRequest(repo=work, base_image="codebox-sandbox:latest", index=local_index,
                                              deps_repo=deps, deps_commit=setup, as_of="2024-07-08T09:30:00Z")))
        first, second = made
        assert first.built and "beta==1.0" in first.installed and "delta==4.0" in first.installed
        assert "gamma==3.0" not in first.installed  # row 2's base declares it; the version's setup commit does not
        assert not second.built and second.image == first.image and second.image_id == first.image_id
    finally:
        for info in made:
            remove_image(docker(), info.image)


def test_a_dated_lock_is_kept_by_its_inputs_and_a_lost_local_wheel_voids_it(tmp_path: Path) -> None:
    from agent.env.read.reqlines import parse_requirement
    from agent.env.resolve import lock_memo
    from agent.env.resolve.resolve import Lock, Pin, Target

    reqs = [parse_requirement("beta==1.0", "requirements-test.txt:1")]
    target = Target(python="3.9.2", platform="x86_64-manylinux_2_31")
    index = IndexConfig(no_index=True)
    assert lock_memo.memo_key(reqs, [], target, index, None) is None  # as of now: never kept
    key = lock_memo.memo_key(reqs, [], target, index, "2020-07-08T09:30:00Z")
    assert key is not None and lock_memo.recall(key) is None
    others = [lock_memo.memo_key(reqs, [], target, index, "2020-07-09T00:00:00Z"),
              lock_memo.memo_key([parse_requirement("beta==1.0", "requirements-dev.txt:1")], [], target, index,
                                 "2020-07-08T09:30:00Z"),
              lock_memo.memo_key(reqs, [], Target(python="3.11.2", platform=target.platform), index,
                                 "2020-07-08T09:30:00Z")]
    assert key not in others and len(set(others)) == 3
    wheel = tmp_path / "beta-1.0-py3-none-any.whl"
    wheel.write_bytes(b"w")
    lock = Lock(pins=[Pin(name="beta", version="1.0", url=wheel.as_uri(), sha256="0" * 64)])
    lock_memo.keep(key, lock, ["a note"])
    assert lock_memo.recall(key) == (lock, ["a note"])
    wheel.unlink()
    assert lock_memo.recall(key) is None


def test_two_environments_built_together_take_one_wheel_of_a_dynamic_sdist(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Eval prepares the next row's environment while a row runs: the second build of the same sdist waits for the
    first and takes its wheel (a wheel built again has other bytes: the two locks, and dependencies images, would
    differ)."""
    import threading
    import time

    from agent.env.install import sdist_wheel
    from agent.env.install.box import BuildLimits, Deadline
    from agent.env.resolve.resolve import Lock, Pin, Target
    from tests.agent.env.wheels import make_wheel

    calls: list[int] = []

    def build(*args: object) -> sdist_wheel.BuiltWheel:
        calls.append(1)
        time.sleep(0.5)
        folder = args[-1]
        assert isinstance(folder, Path)
        folder.mkdir(parents=True)
        made = make_wheel(tmp_path / "w", "iniconfig", "1.0.0", {"iniconfig/__init__.py": ""})
        (folder / made.name).write_bytes(made.read_bytes())
        return sdist_wheel._read_wheel(folder / made.name, sdist)

    monkeypatch.setattr(sdist_wheel, "_build", build)
    sdist = Pin(name="iniconfig", version="1.0.0", url="https://x/iniconfig-1.0.0.tar.gz", sha256="1" * 64, sdist=True)
    target = Target(python="3.9.2", platform="x86_64-manylinux_2_31")
    got: list[str] = []

    def one() -> None:
        wheel = sdist_wheel.build_wheel(None, "img", target, sdist, tmp_path / "s.tar.gz",  # type: ignore[arg-type]
                                        Lock(pins=[]), BuildLimits(), Deadline(60))
        got.append(wheel.pin.sha256)

    threads = [threading.Thread(target=one) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert calls == [1] and len(got) == 2 and got[0] == got[1]


def test_a_project_build_that_fails_with_todays_build_requirements_runs_again_with_those_of_its_day(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from agent.env.errors import ProjectBuildFailed
    from agent.env.install.box import Deadline
    from agent.env.install.env_build import EnvBuild
    from agent.env.install.inputs import EnvInputs
    from agent.env.install.plan import Backend
    from agent.env.read.declared import read_declared
    from agent.env.resolve.resolve import Target

    build = object.__new__(EnvBuild)
    build.dated_build, build.exclude_newer, build.deadline = False, "2022-10-08T19:56:12Z", Deadline(60)
    build.target = Target(python="3.9.2", platform="x86_64-manylinux_2_31")
    build.inputs = EnvInputs(declared=read_declared(write(tmp_path / "p", {"setup.py": "from setuptools import "
                                                                                "setup\nsetup(name='p')\n"})),
                             recipe=Recipe(), pip=[], prefer=[], backend=Backend(), build_requires=[],
                             build=True)
    build.compiles, build.log = False, lambda _: None
    seen: list[tuple[str, bool]] = []

    def project_build(self: EnvBuild, folder: Path, compiles: bool) -> str:
        seen.append((folder.name, self.dated_build))
        if not self.dated_build:
            raise ProjectBuildFailed("the project's own build failed offline (get_requires_for_build_*, exit 1): "
                                     "InvalidSpecifier: '>=3.7.*'", 1)
        return "entry"

    monkeypatch.setattr(EnvBuild, "_with_project_build", project_build)
    assert build.run() == "entry"  # type: ignore[comparison-overlap]
    assert seen == [("today", False), ("dated", True)]
    assert any(n.startswith("the project's build failed with today's build requirements") and
               "as of 2022-10-08" in n for n in build.inputs.declared.notes)
    # Killed (memory, a signal), undated or already dated: no second build.
    build.dated_build = False
    assert not build._build_as_of_the_date(ProjectBuildFailed("killed", 137))
    build.exclude_newer = None
    assert not build._build_as_of_the_date(ProjectBuildFailed("x", 1))


def test_two_rows_asking_for_one_dated_lock_together_resolve_it_once(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    import threading
    import time

    from agent.cancel import CancelToken
    from agent.env.install.env_build import EnvBuild
    from agent.env.install.inputs import EnvInputs
    from agent.env.install.plan import Backend
    from agent.env.read.declared import read_declared
    from agent.env.read.reqlines import parse_requirement
    from agent.env.resolve.resolve import Lock, Pin, Target

    calls: list[int] = []

    def resolve(self: EnvBuild, requirements: list[object], notes: list[str]) -> Lock:
        calls.append(1)
        time.sleep(0.5)
        return Lock(pins=[Pin(name="beta", version="1.0", url="https://x/beta-1.0-py3-none-any.whl", sha256="0" * 64)])

    monkeypatch.setattr(EnvBuild, "_with_preferred", resolve)

    def build() -> EnvBuild:
        made = object.__new__(EnvBuild)
        made.request = EnvRequest(repo=tmp_path, index=IndexConfig(no_index=True), as_of="2020-07-08T09:30:00Z")
        made.exclude_newer, made.cancel, made.log = "2020-07-08T09:30:00Z", CancelToken(), lambda _: None
        made.target = Target(python="3.9.2", platform="x86_64-manylinux_2_31")
        made.inputs = EnvInputs(declared=read_declared(write(tmp_path / "p", {"requirements.txt": "beta\n"})),
                                recipe=Recipe(), pip=[], prefer=[], backend=Backend(), build_requires=[],
                                build=False)
        return made

    got: list[str] = []
    reqs = [parse_requirement("beta", "requirements.txt:1")]
    threads = [threading.Thread(target=lambda: got.append(build()._lock(reqs, None).digest())) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert calls == [1] and len(got) == 2 and got[0] == got[1]
