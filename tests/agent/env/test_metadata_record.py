"""The backend's METADATA read on the host, what the build plans from it, the layers codebox writes and
checks, and the record of built images (a derived image, a stale entry, concurrent writers)."""

from __future__ import annotations

import io
import os
import tarfile
import threading
from pathlib import Path
from typing import Any

import pytest

from agent.env.errors import EnvError
from agent.env.install import images
from agent.env.install.layer import check_layer, layer_from_files
from agent.env.install.metadata import parse_metadata, requirements
from agent.env.install.plan import pyx_without_c, unsatisfied
from agent.env.resolve.resolve import Lock, Pin, Target

TARGET = Target(python="3.11.2", platform="x86_64-manylinux_2_36")
METADATA = """Metadata-Version: 2.1
Name: attrs
Version: 25.1.0
Requires-Python: >=3.8
Requires-Dist: importlib-metadata; python_version < "3.8"
Requires-Dist: typing-extensions; python_version >= "3.10"
Provides-Extra: tests
Requires-Dist: hypothesis; extra == "tests"
Requires-Dist: pympler; extra == "tests" and platform_python_implementation == "PyPy"
Provides-Extra: dev
Requires-Dist: attrs[tests]; extra == "dev"
Requires-Dist: pre-commit; extra == "dev"
Provides-Extra: docs
Requires-Dist: sphinx; extra == "docs"
"""


def test_requires_dist_for_the_sandboxes_python_and_the_test_extras() -> None:
    meta = parse_metadata("attrs-25.1.0.dist-info", METADATA)
    assert (meta.name, meta.version, meta.requires_python) == ("attrs", "25.1.0", ">=3.8")
    texts = [r.text for r in requirements(meta, ["test", "tests"], TARGET)]
    assert texts == ["typing-extensions", "hypothesis"]  # markers evaluated for CPython 3.11 on Linux
    dev = [r.text for r in requirements(meta, ["dev"], TARGET)]
    assert dev == ["typing-extensions", "pre-commit", "hypothesis"]  # attrs[tests] expands attrs' own extra
    assert "sphinx" not in [r.text for r in requirements(meta, ["tests", "nope"], TARGET)]


@pytest.mark.parametrize("text, message", [
    ("Name: x\n", "without a Name and a Version"),
    ("Name: x\nVersion: 1\nRequires-Dist: y @ https://evil.example/y.whl\n", "URL requirements are not allowed"),
    ("Name: x\nVersion: 1\nRequires-Dist: not valid((\n", "is not a requirement"),
])
def test_bad_metadata_is_refused(text: str, message: str) -> None:
    with pytest.raises(EnvError, match=message):
        requirements(parse_metadata("x-1.dist-info", text), [], TARGET)


def test_a_second_round_only_for_what_the_build_lock_lacks() -> None:
    lock = Lock(pins=[Pin(name="setuptools", version="69.0", url="u", sha256="a"),
                      Pin(name="wheel", version="0.42", url="u", sha256="b")])
    assert unsatisfied(["wheel", "setuptools>=60"], lock) == []
    assert unsatisfied(["wheel>=1", "editables~=0.3"], lock) == ["wheel>=1", "editables~=0.3"]


def test_pyx_files_whose_c_is_not_in_the_tree() -> None:
    assert pyx_without_c(["m/_c.pyx", "m/_p.pyx", "m/_p.c"])
    assert not pyx_without_c(["m/_c.pyx", "m/_c.c", "m/x.pyx", "m/x.cpp"])


def test_a_layer_codebox_writes_refuses_any_path_a_name_could_bend(tmp_path: Path) -> None:
    layer = layer_from_files(tmp_path / "ok.tar", {"opt/codebox-project/site/p-1.0.dist-info/METADATA": ("x", 0o644)})
    with tarfile.open(layer) as tar:
        assert [m.name for m in tar] == ["opt", "opt/codebox-project", "opt/codebox-project/site",
                                         "opt/codebox-project/site/p-1.0.dist-info",
                                         "opt/codebox-project/site/p-1.0.dist-info/METADATA"]
        assert all(m.uid == 0 for m in tar)
    for bad in ("opt/codebox-project/site//tmp/x-1.0.dist-info/METADATA", "opt/../etc/passwd", "opt/a b/c"):
        with pytest.raises(EnvError, match="refusing"):
            layer_from_files(tmp_path / "bad.tar", {bad: ("x", 0o644)})


def _tar(path: Path, members: list[tarfile.TarInfo]) -> Path:
    with tarfile.open(path, "w") as tar:
        for member in members:
            tar.addfile(member, io.BytesIO(b"") if member.isfile() else None)
    return path


def test_a_containers_layer_is_checked_before_it_is_loaded(tmp_path: Path) -> None:
    inside = "opt/codebox-project"
    good = _tar(tmp_path / "good.tar", [tarfile.TarInfo(inside), tarfile.TarInfo(f"{inside}/site/x.py")])
    assert check_layer(good, inside) == 2
    link = tarfile.TarInfo(f"{inside}/site/passwd")
    link.type, link.linkname = tarfile.LNKTYPE, "etc/passwd"
    device = tarfile.TarInfo(f"{inside}/dev")
    device.type = tarfile.CHRTYPE
    for name, members in [("outside", [tarfile.TarInfo("opt/codebox-env/lib/evil.pth")]),
                          ("dotdot", [tarfile.TarInfo(f"{inside}/../codebox-env/evil.pth")]),
                          ("hardlink", [link]), ("device", [device])]:
        with pytest.raises(EnvError, match="outside"):
            check_layer(_tar(tmp_path / f"{name}.tar", members), inside)


class FakeEngine:
    """Images by id (and tag); what the record asks of a backend's image store."""

    def __init__(self, name: str = "docker") -> None:
        self.name = name
        self.images: dict[str, dict[str, Any]] = {}
        self.removed: list[str] = []

    def inspect(self, name: str) -> dict[str, Any] | None:
        return self.images.get(name)

    def remove(self, image_id: str) -> bool:
        self.removed.append(image_id)
        self.images = {k: v for k, v in self.images.items() if v["Id"] != image_id}
        return True

    def add(self, image_id: str, *names: str) -> None:
        for name in (image_id, *names):
            self.images[name] = {"Id": image_id, "Size": 10}


def entry(kind: images.Kind, key: str, image_id: str) -> images.Entry:
    return images.Entry(kind=kind, key=key, id=image_id, tag=f"codebox-{kind}:{key[:16]}")


def test_the_record_finds_only_the_ids_codebox_built(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEBOX_CACHE_DIR", str(tmp_path))
    engine = FakeEngine()
    engine.add("sha256:env1", "codebox-env:aaaa")
    engine.add("sha256:derived", "mine:latest")  # FROM the env image: same labels, another id
    images.write(entry("env", "a" * 32, "sha256:env1"))
    assert images.lookup(engine, "env", "a" * 32) is not None
    assert images.find(engine, "mine:latest") is None and images.find(engine, "codebox-env:aaaa") is not None
    assert [e.entry.id for e in images.list_env_images(engine)] == ["sha256:env1"]
    with pytest.raises(EnvError, match="not an image codebox built"):
        images.remove_env_images(engine, ["mine:latest"])
    assert images.remove_env_images(engine, []) == ["codebox-env:aaaaaaaaaaaaaaaa"]
    assert engine.removed == ["sha256:env1"] and "mine:latest" in engine.images


def test_each_engines_images_are_its_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEBOX_CACHE_DIR", str(tmp_path))
    docker, podman = FakeEngine("docker"), FakeEngine("podman")
    for engine in (docker, podman):  # the same base image in both stores (Podman's is a copy of Docker's)
        engine.add("sha256:env1", "codebox-env:aaaa")
    images.write(entry("env", "a" * 32, "sha256:env1"))  # Docker's record
    assert images.engine_part("docker") == {} and images.engine_part("podman") == {"engine": "podman"}
    assert [e.entry.id for e in images.list_env_images(podman)] == []  # not Podman's, though it has that id
    assert images.remove_env_images(podman, []) == [] and podman.removed == []
    assert [e.entry.id for e in images.list_env_images(docker)] == ["sha256:env1"]
    left = images.mark_loading("sha256:left", "podman")
    left.write_text(left.read_text().replace(f'"pid": {os.getpid()}', '"pid": 999999999'))  # its build died
    assert images.reap_loading(docker) == [] and left.exists()  # another engine's image: not Docker's to remove
    assert images.reap_loading(podman) == ["sha256:left"] and not left.exists()


def test_a_stale_or_damaged_entry_is_a_miss(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEBOX_CACHE_DIR", str(tmp_path))
    engine = FakeEngine()
    images.write(entry("deps", "b" * 32, "sha256:gone"))
    assert images.lookup(engine, "deps", "b" * 32) is None  # the image was removed behind codebox's back
    assert images.read("deps", "b" * 32) is None  # and the entry with it
    (images.record_dir() / f"env-{'c' * 32}.json").write_text("{not json")
    assert images.lookup(engine, "env", "c" * 32) is None
    with pytest.raises(EnvError, match="not a record key"):
        images.read("env", "../../etc/passwd")


def test_concurrent_writers_leave_whole_entries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEBOX_CACHE_DIR", str(tmp_path))
    key = "d" * 32
    done: list[str] = []

    def writer(n: int) -> None:
        for i in range(50):
            images.write(entry("env", key, f"sha256:{n}-{i}"))
            found = images.read("env", key)
            assert found is not None  # never half a file
        done.append(str(n))

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(done) == 4 and not list(images.record_dir().glob("*.part"))


def test_building_holds_one_builder_per_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEBOX_CACHE_DIR", str(tmp_path))
    inside: list[int] = []
    overlap: list[bool] = []

    def build(n: int) -> None:
        with images.building("env", "e" * 32):
            inside.append(n)
            overlap.append(len(inside) > 1)
            threading.Event().wait(0.05)
            inside.remove(n)

    threads = [threading.Thread(target=build, args=(n,)) for n in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert overlap == [False, False, False]


@pytest.mark.parametrize("files, builds", [
    ({"pyproject.toml": '[build-system]\nrequires = ["setuptools", "setuptools-scm[toml]>=6"]\n'
                        '[tool.setuptools_scm]\nwrite_to = "src/p/_version.py"\n',
      "setup.cfg": "[metadata]\nname = p\n"}, True),  # pluggy 1.5's shape: no version anywhere
    ({"pyproject.toml": '[build-system]\nrequires = ["setuptools", "setuptools_scm"]\n',
      "setup.cfg": "[metadata]\nname = p\nversion = 1.0\n"}, False),  # a version is stated
    ({"pyproject.toml": '[build-system]\nrequires = ["hatchling", "hatch-vcs"]\n'
                        '[project]\nname = "p"\ndynamic = ["version"]\n'}, True),
    ({"pyproject.toml": '[build-system]\nrequires = ["hatchling"]\n[project]\nname = "p"\ndynamic = ["version"]\n'},
     False),  # a dynamic version read from the sources: no tool writes a file
    ({"pyproject.toml": '[project]\nname = "p"\nversion = "1"\ndynamic = ["entry-points"]\n'}, True),
])
def test_a_version_tool_or_dynamic_entry_points_make_the_projects_own_build_run(
    tmp_path: Path, files: dict[str, str], builds: bool
) -> None:
    from agent.env.install.plan import version_file_at_build
    from agent.env.read.declared import read_declared
    from tests.agent.env.projects import write

    repo = write(tmp_path / "repo", files)
    assert version_file_at_build(repo, read_declared(repo).build_system.requires) is builds
