"""A hostile repository on the read side: names that would become host paths, files that would exhaust
memory or leave the repository, each refused in one line naming the file and key; nothing executed."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from agent.env.errors import EnvError
from agent.env.install.project import Project, editable_files
from agent.env.read import digest
from agent.env.read.declared import read_declared
from tests.agent.env.projects import write


def refused(repo: Path, message: str) -> EnvError:
    with pytest.raises(EnvError, match=message) as info:
        read_declared(repo)
    assert "\n" not in str(info.value) and info.value.usage and "Traceback" not in str(info.value)
    return info.value


@pytest.mark.parametrize(("files", "message"), [
    ({"pyproject.toml": '[project]\nname = "/some/abs/path/x"\nversion = "1.0"\n'},
     r"^pyproject.toml \[project\] name: '/some/abs/path/x' is not a valid project name"),
    ({"pyproject.toml": '[project]\nname = "../x"\nversion = "1.0"\n'}, r"\[project\] name: '../x' is not a valid"),
    ({"pyproject.toml": '[project]\nname = "x\\ny"\n'}, r"\[project\] name: 'x\\ny' is not a valid"),
    ({"pyproject.toml": '[project]\nname = 7\n'}, r"\[project\] name: 7 is not a valid"),
    ({"setup.cfg": "[metadata]\nname = ../../evil\n"}, r"^setup.cfg \[metadata\] name: '../../evil'"),
    ({"setup.py": "from setuptools import setup\nsetup(name='/tmp/evil')\n"}, r"^setup.py name=: '/tmp/evil'"),
    ({"pyproject.toml": '[tool.poetry]\nname = "a/b"\n'}, r"\[tool.poetry\] name: 'a/b'"),
    ({"pyproject.toml": '[project]\nname = "x"\nversion = "1.0/../../../tmp/y"\n'},
     r"^pyproject.toml \[project\] version: '1.0/../../../tmp/y' is not a valid version"),
    ({"setup.py": "from setuptools import setup\nsetup(name='x', version='../1')\n"}, r"setup.py version=: '../1'"),
    ({"pyproject.toml": '[project]\nname = "x"\nversion = "1"\n[project.optional-dependencies]\n"../t" = ["a"]\n'},
     r"\[project.optional-dependencies\] ../t: '../t' is not a valid extra"),
    ({"setup.py": "from setuptools import setup\nsetup(name='x', extras_require={'a/b': ['c']})\n"},
     r"setup.py extras_require a/b: 'a/b' is not a valid extra"),
    ({"pyproject.toml": '[project]\nname = "x"\nversion = "1"\n[project.scripts]\n"a\\n[pytest11]\\nevil" = "m:f"\n'},
     r"\[project.scripts\]: entry point name 'a\\n\[pytest11\]\\nevil'"),
    ({"pyproject.toml": '[project]\nname = "x"\nversion = "1"\n[project.scripts]\nok = "os; import evil"\n'},
     r"entry point ok = 'os; import evil' is not 'module:object'"),
    ({"pyproject.toml": '[project]\nname = "x"\nversion = "1"\n[project.entry-points."a]\\n[b"]\nc = "m:f"\n'},
     r"entry point group 'a\]\\n\[b'"),
    ({"setup.cfg": "[metadata]\nname = x\n[options.entry_points]\nconsole_scripts =\n    s = m:f\\nx\n"},
     r"^setup.cfg \[options.entry_points\]: entry point s"),
    ({"pyproject.toml": '[dependency-groups]\n"../g" = ["a"]\n'}, r"\[dependency-groups\]: '../g' is not a valid"),
])
def test_hostile_names_are_refused_naming_the_file_and_key(tmp_path: Path, files: dict[str, str],
                                                          message: str) -> None:
    refused(write(tmp_path / "repo", files), message)


def test_an_absolute_project_name_never_becomes_a_path(tmp_path: Path) -> None:
    """The old attack: a dist-info folder written at the host path the name gave."""
    target = tmp_path / "outside" / "x"
    refused(write(tmp_path / "repo", {"pyproject.toml": f'[project]\nname = "{target}"\nversion = "1.0"\n'}),
            "not a valid project name")
    assert not (tmp_path / "outside").exists()
    with pytest.raises(EnvError, match="not a valid project name"):  # and a Project made elsewhere cannot either
        editable_files(Project(name=str(target), version="1.0"))
    with pytest.raises(EnvError, match="not a valid version"):
        editable_files(Project(name="x", version="1.0/../../y"))


def test_a_legacy_version_is_ignored_with_a_note(tmp_path: Path) -> None:
    declared = read_declared(write(tmp_path, {"setup.py": "from setuptools import setup\n"
                                                          "setup(name='old', version='2004d-beta')\n"}))
    assert declared.project.version == "0.0.0" and any("'2004d-beta' is not a PEP 440 version" in n
                                                       for n in declared.notes)


def test_an_invalid_requires_python_is_noted_and_ignored(tmp_path: Path) -> None:
    declared = read_declared(write(tmp_path, {"pyproject.toml": '[project]\nname = "x"\nversion = "1"\n'
                                                                'requires-python = ">=3.6.*"\n'}))
    assert declared.project.requires_python is None and any("not a valid version specifier" in n
                                                             for n in declared.notes)


def test_a_sparse_64_gib_c_source_is_refused_before_it_is_read(tmp_path: Path) -> None:
    repo = write(tmp_path, {"setup.py": "from setuptools import Extension, setup\n"
                                        "setup(name='big', ext_modules=[Extension('big', ['x.c'])])\n"})
    subprocess.run(["truncate", "-s", "64G", str(repo / "x.c")], check=True)
    error = refused(repo, r"^C/Cython sources: x.c \(68719476736 bytes\) takes them past 268435456 bytes")
    assert "MAX_SOURCE_BYTES" in str(error)


def test_too_many_c_sources_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(digest, "MAX_SOURCE_FILES", 3)
    files = {f"src/m{i}.c": "int x;\n" for i in range(4)}
    repo = write(tmp_path, {**files, "setup.py": "from setuptools import Extension, setup\n"
                                                 "setup(name='many', ext_modules=[Extension('m', ['src/m0.c'])])\n"})
    refused(repo, r"^more than 3 C/Cython source files \(digest.MAX_SOURCE_FILES\); refused$")


def test_the_digest_streams_follows_no_symlink_and_sees_every_change(tmp_path: Path) -> None:
    outside = tmp_path / "secret.c"
    outside.write_text("int secret;\n")
    repo = write(tmp_path / "repo", {"a.c": "int a;\n", "inc/b.h": "int b;\n"})
    (repo / "linked.c").symlink_to(outside)
    (repo / "linkdir").symlink_to(tmp_path)
    first = digest.source_digest(repo)
    outside.write_text("int changed;\n")
    assert digest.source_digest(repo) == first  # the symlinked file is not part of the project's sources
    (repo / "inc" / "b.h").write_text("int b2;\n")
    assert digest.source_digest(repo) != first
    os.mkfifo(repo / "pipe.c")  # a FIFO is not a source: never opened for reading (it would block)
    digest.source_digest(repo)


def test_a_symlinked_setup_cfg_pointing_outside_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "host.cfg"
    outside.write_text("[metadata]\nname = host\n")
    repo = write(tmp_path / "repo", {"setup.py": "from setuptools import setup\nsetup()\n"})
    (repo / "setup.cfg").symlink_to(outside)
    refused(repo, r"^setup.cfg: the path leaves the repository; refused$")


@pytest.mark.parametrize("name", ["pyproject.toml", "tox.ini", "pip.conf", "requirements-dev.txt"])
def test_every_file_read_refuses_a_symlink_out(tmp_path: Path, name: str) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("[x]\n")
    repo = write(tmp_path / "repo", {"pkg.py": ""})
    (repo / name).parent.mkdir(parents=True, exist_ok=True)
    (repo / name).symlink_to(outside)
    if name == "requirements-dev.txt":  # a found requirements file is one candidate: refused, it is left out
        declared = read_declared(repo)
        assert any(n.startswith(f"{name} not used: ") and "leaves the repository" in n for n in declared.notes)
        assert declared.requirements == []
        return
    refused(repo, "leaves the repository")


def test_a_fifo_in_place_of_a_declaration_file_is_not_read(tmp_path: Path) -> None:
    repo = write(tmp_path, {"requirements-test.txt": "gamma\n"})
    os.mkfifo(repo / "pyproject.toml")  # opening it for reading would block forever
    assert [r.text for r in read_declared(repo, runner=None).requirements] == ["gamma"]


def test_a_declaration_file_too_large_is_refused_from_its_size(tmp_path: Path) -> None:
    repo = write(tmp_path, {"pkg.py": ""})
    subprocess.run(["truncate", "-s", "64G", str(repo / "setup.py")], check=True)
    refused(repo, r"^setup.py: 68719476736 bytes is too large for a declaration file")


@pytest.mark.parametrize("files", [
    {"pyproject.toml": "x = " + "[" * 200 + "]" * 200 + "\n"},
    {"pyproject.toml": "a = {" * 40 + "}" * 40 + "\n"},
    {"setup.py": "from setuptools import setup\nsetup(install_requires=" + "[" * 80 + "]" * 80 + ")\n"},
])
def test_deep_nesting_is_refused(tmp_path: Path, files: dict[str, str]) -> None:
    refused(write(tmp_path, files), r"nested|not valid")


def test_nothing_in_the_read_path_runs_repository_code(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    code = f"open({str(marker)!r}, 'w').write('ran')\n"
    repo = write(tmp_path / "repo", {
        "setup.py": code + "from setuptools import setup\nsetup(name='quiet', install_requires=[open('x').read()])\n",
        "quiet/__init__.py": code + "__version__ = '1.0'\n", "quiet/_version.py": code, "conftest.py": code,
        "build_backend.py": code,
        "pyproject.toml": '[build-system]\nrequires = []\nbuild-backend = "build_backend"\nbackend-path = ["."]\n',
    })
    declared = read_declared(repo)
    assert not marker.exists() and declared.project.version == "1.0"


def test_tox_references_that_name_themselves_are_read_within_a_budget(tmp_path: Path) -> None:
    """A 500-byte tox.ini whose [a] x names {[a]x} twenty times: every reference was read again
    where it is named, down to the depth limit: 20**6 lines, 100 s and 8.6 GB of notes on the host
    (here six times: 6**6 notes before)."""
    fan = "\n".join("    {[a]x}" for _ in range(6))
    repo = write(tmp_path, {"tox.ini": f"[a]\nx =\n{fan}\n[testenv]\ndeps =\n    beta\n{fan}\n"})
    declared = read_declared(repo, runner=None)
    assert {r.text for r in declared.requirements} == {"beta"}
    assert any("lines read through its references; the rest not read" in n for n in declared.notes)
    assert len(declared.notes) < 100


@pytest.mark.parametrize("made", ['"".join(l)', "f'" + "{s}" * 2048 + "'", "sorted(l)[0][:4]",
                                  "sorted(set(l + ['b']))[0][:4]", "sorted([tuple(l), ('b',)])[0][0][:4]"])
def test_a_setup_py_cannot_make_the_reader_build_a_huge_value_before_refusing_it(tmp_path: Path, made: str) -> None:
    """Every value is capped at 100000 items, but some were made whole before the cap was checked:
    a join of 65536 references to one 65536-character string was 4 GB (here 2048 of them, 134 MB),
    as were sorted()'s repr keys and an f-string of many {s}."""
    import tracemalloc

    doubled = "s = s + s\n" * 16 + "l = [s]\n" + "l = l + l\n" * 11  # s: 65536 characters, l: 2048 of it
    repo = write(tmp_path, {"setup.py": f"from setuptools import setup\ns = 'a'\n{doubled}x = {made}\n"
                                        "setup(name='big', version='1.0', install_requires=[x])\n"})
    tracemalloc.start()
    try:
        declared = read_declared(repo, runner=None)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 32 * 2**20
    if "sorted" in made:  # within the caps: read, in order
        assert [r.text for r in declared.requirements] == ["aaaa"]
    else:
        assert any("install_requires" in n and "computed" in n for n in declared.notes), declared.notes
