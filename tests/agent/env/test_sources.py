"""Private package sources: each kind a repository can declare is read and named, never followed, and the
packages it would serve are held back unless the user allows the fallback or configures that index."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.env.errors import EnvError
from agent.env.read.declared import Declared, read_declared
from agent.env.read.source_policy import check_sources
from agent.env.resolve.resolve import IndexConfig
from tests.agent.env.projects import write
from tests.agent.env.wheels import make_wheel

PRIVATE = "https://pkgs.corp.example/simple"


def declared_of(tmp_path: Path, files: dict[str, str]) -> Declared:
    return read_declared(write(tmp_path / "repo", files), runner=None)


def summary(declared: Declared) -> list[tuple[str, str, str, list[str], bool]]:
    return [(s.declared_in, s.kind, s.location, s.packages, s.every_package) for s in declared.sources]


POETRY = ('[tool.poetry]\nname = "p"\nversion = "1"\n[tool.poetry.dependencies]\npython = "^3.9"\n'
          'acme = {version = "^1.0", source = "corp"}\nrequests = "*"\n')


@pytest.mark.parametrize(("files", "expected"), [
    ({"pyproject.toml": POETRY + f'[[tool.poetry.source]]\nname = "corp"\nurl = "{PRIVATE}"\npriority = "explicit"\n'},
     [("pyproject.toml [[tool.poetry.source]]", "index", PRIVATE, ["acme"], False)]),
    ({"pyproject.toml": POETRY + f'[[tool.poetry.source]]\nname = "corp"\nurl = "{PRIVATE}"\n'},  # primary
     [("pyproject.toml [[tool.poetry.source]]", "index", PRIVATE, ["acme", "requests"], False)]),
    ({"pyproject.toml": POETRY + f'[[tool.poetry.source]]\nname = "corp"\nurl = "{PRIVATE}"\n'
                                 'priority = "supplemental"\n'},
     [("pyproject.toml [[tool.poetry.source]]", "index", PRIVATE, ["acme"], False)]),
    ({"pyproject.toml": '[project]\nname = "u"\nversion = "1"\ndependencies = ["acme", "lib", "tool"]\n'
                        f'[[tool.uv.index]]\nname = "corp"\nurl = "{PRIVATE}"\nexplicit = true\n'
                        '[tool.uv.sources]\nacme = { index = "corp" }\n'
                        'lib = { git = "https://git.corp.example/lib.git", tag = "v1" }\n'
                        'tool = { path = "packages/tool", editable = true }\n'},
     [("pyproject.toml [tool.uv] index", "index", PRIVATE, [], False),
      ("pyproject.toml [tool.uv.sources] acme", "index", PRIVATE, ["acme"], False),
      ("pyproject.toml [tool.uv.sources] lib", "git", "https://git.corp.example/lib.git", ["lib"], False),
      ("pyproject.toml [tool.uv.sources] tool", "path", "packages/tool", ["tool"], False)]),
    ({"pyproject.toml": f'[project]\nname = "u"\nversion = "1"\n[[tool.uv.index]]\nurl = "{PRIVATE}"\n'},
     [("pyproject.toml [tool.uv] index", "index", PRIVATE, [], True)]),
    ({"pyproject.toml": f'[[tool.pdm.source]]\nname = "corp"\nurl = "{PRIVATE}"\n'
                        'include_packages = ["acme-*"]\n'},
     [("pyproject.toml [[tool.pdm.source]]", "index", PRIVATE, ["acme-*"], False)]),
    ({"requirements.txt": f"--index-url {PRIVATE}\nacme==1.0\nrequests\n"},
     [("requirements.txt:1", "index", PRIVATE, ["acme", "requests"], False)]),
    ({"requirements-test.txt": f"-r requirements/base.txt\n-i{PRIVATE}\ngamma\n", "requirements/base.txt": "acme\n"},
     [("requirements-test.txt:2", "index", PRIVATE, ["acme", "gamma"], False)]),
    ({"requirements.txt": "--extra-index-url=https://user:s3cret@pkgs.corp.example/simple\nacme\n"},
     [("requirements.txt:1", "index", "https://***@pkgs.corp.example/simple", ["acme"], False)]),
    ({"requirements.txt": "-f ./wheels\nacme\n"}, [("requirements.txt:1", "path", "./wheels", ["acme"], False)]),
    ({"requirements.txt": "acme @ https://files.corp.example/acme-1.0-py3-none-any.whl\n"},
     [("requirements.txt:1", "url", "https://files.corp.example/acme-1.0-py3-none-any.whl", ["acme"], False)]),
    ({"pip.conf": f"[global]\nindex-url = {PRIVATE}\nextra-index-url =\n    https://b.example/simple\n"},
     [("pip.conf [global] index-url", "index", PRIVATE, [], True),
      ("pip.conf [global] extra-index-url", "index", "https://b.example/simple", [], True)]),
    ({"uv.toml": f'index-url = "{PRIVATE}"\n'}, [("uv.toml index-url", "index", PRIVATE, [], True)]),
    ({"setup.cfg": f"[easy_install]\nindex_url = {PRIVATE}\n"},
     [("setup.cfg [easy_install] index_url", "index", PRIVATE, [], True)]),
])
def test_each_kind_of_source_is_read(tmp_path: Path, files: dict[str, str], expected: list[object]) -> None:
    assert summary(declared_of(tmp_path, files)) == expected


def test_a_source_of_the_public_index_or_a_mirror_holds_nothing_back(tmp_path: Path) -> None:
    declared = declared_of(tmp_path, {"requirements.txt": "-i https://mirrors.aliyun.com/pypi/simple/\nacme\n"
                                                          "--extra-index-url https://pypi.org/simple\n"})
    assert [s.public for s in declared.sources] == [True, True]
    notes = check_sources(declared, IndexConfig())
    assert all("the public index (or a mirror of it)" in note for note in notes)


def _repo_with_private_source(tmp_path: Path) -> Declared:
    return declared_of(tmp_path, {"pyproject.toml": POETRY + f'[[tool.poetry.source]]\nname = "corp"\n'
                                                             f'url = "{PRIVATE}"\npriority = "explicit"\n'})


def test_a_private_source_is_refused_in_one_line_naming_file_source_and_packages(tmp_path: Path) -> None:
    with pytest.raises(EnvError) as info:
        check_sources(_repo_with_private_source(tmp_path), IndexConfig())
    message = str(info.value)
    assert info.value.usage and "\n" not in message
    assert message.startswith(f"pyproject.toml [[tool.poetry.source]] names the index source 'corp' ({PRIVATE}) "
                              "for acme:")
    assert "--allow-public-fallback" in message and f"UV_EXTRA_INDEX_URL={PRIVATE}" in message


def test_a_refused_url_or_git_source_is_not_offered_as_an_index(tmp_path: Path) -> None:
    wheel = "https://example.invalid/acme-1.0-py3-none-any.whl"
    declared = declared_of(tmp_path, {"requirements.txt": f"acme @ {wheel}\nattrs\n"})
    with pytest.raises(EnvError) as info:
        check_sources(declared, IndexConfig())
    message = str(info.value)
    assert f"names the url source 'acme' ({wheel})" in message and "UV_EXTRA_INDEX_URL" not in message
    assert "put their wheels in a folder yourself and pass CODEBOX_FIND_LINKS=DIR" in message


def test_the_fallback_names_the_source_and_lets_the_package_resolve(tmp_path: Path) -> None:
    [note] = check_sources(_repo_with_private_source(tmp_path), IndexConfig(), allow_public_fallback=True)
    assert "'corp'" in note and "acme resolve from your index instead (--allow-public-fallback)" in note


@pytest.mark.parametrize("variable", ["UV_INDEX_URL", "UV_DEFAULT_INDEX", "UV_EXTRA_INDEX_URL"])
def test_the_users_own_configuration_of_that_index_is_enough(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            variable: str) -> None:
    monkeypatch.setenv(variable, PRIVATE + "/")  # a trailing slash is the same index
    [note] = check_sources(_repo_with_private_source(tmp_path), IndexConfig())
    assert f"acme resolve from your index ({variable})" in note


def test_the_users_index_for_something_else_is_not_enough(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UV_INDEX_URL", "https://mirror.corp.example/simple")
    with pytest.raises(EnvError, match="for acme"):
        check_sources(_repo_with_private_source(tmp_path), IndexConfig())
    monkeypatch.setenv("UV_INDEX", f"corp={PRIVATE}")  # uv's name=url form
    assert "(UV_INDEX)" in check_sources(_repo_with_private_source(tmp_path), IndexConfig())[0]


def test_find_links_holding_the_package_or_no_index_is_enough(tmp_path: Path) -> None:
    declared = _repo_with_private_source(tmp_path)
    wheels = tmp_path / "wheels"
    make_wheel(wheels, "other", "1.0", {"other/__init__.py": ""})
    with pytest.raises(EnvError, match="for acme"):
        check_sources(declared, IndexConfig(find_links=[str(wheels)]))
    make_wheel(wheels, "acme", "1.0", {"acme/__init__.py": ""})
    assert "resolve from your --find-links folders" in check_sources(declared, IndexConfig(find_links=[str(wheels)]))[0]
    assert "(no index)" in check_sources(declared, IndexConfig(no_index=True))[0]


def test_a_source_serving_nothing_declared_is_only_named(tmp_path: Path) -> None:
    declared = declared_of(tmp_path, {"pyproject.toml": f'[[tool.pdm.source]]\nname = "corp"\nurl = "{PRIVATE}"\n'
                                                        'include_packages = ["acme-*"]\n',
                                      "requirements.txt": "requests\n"})
    [note] = check_sources(declared, IndexConfig())
    assert "not used (codebox takes packages from your index only)" in note


def test_a_source_for_every_package_holds_back_all_of_them(tmp_path: Path) -> None:
    declared = declared_of(tmp_path, {"pip.conf": f"[global]\nindex-url = {PRIVATE}\n",
                                      "requirements.txt": "acme\nrequests\n"})
    with pytest.raises(EnvError, match=r"pip.conf \[global\] index-url names the index source .* for acme, requests"):
        check_sources(declared, IndexConfig())


def test_no_option_of_a_requirements_file_is_followed_or_refuses_the_read(tmp_path: Path) -> None:
    declared = declared_of(tmp_path, {"requirements.txt": "--trusted-host evil.example\n--no-index\nacme\n"})
    assert [r.text for r in declared.requirements] == ["acme"] and declared.sources == []
    assert sum("ignored" in note for note in declared.notes) == 2
