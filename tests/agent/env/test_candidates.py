"""The environments a repository offers, closest to its CI first (agent/env/read/candidates.py)."""

from __future__ import annotations

from pathlib import Path

from agent.env.read.declared import read_declared
from tests.agent.env.projects import write

# flask 2.3's shape (2023): tox runs requirements/tests.txt; a minimum-versions pin file for the `min` factor;
# a dev file that includes the tests, docs and typing files, with pins of its own.
FLASK_23 = {
    "pyproject.toml": '[project]\nname = "Flask"\nversion = "2.3.0"\ndependencies = ["Werkzeug>=2.2.2", '
                      '"Jinja2>=3.0"]\n',
    "src/flask/__init__.py": "",
    "tox.ini": "[testenv]\ndeps =\n    -r requirements/tests.txt\n    min: -r requirements/tests-pallets-min.txt\n",
    "requirements/tests.txt": "pytest==7.3.0\n",
    "requirements/tests-pallets-min.txt": "jinja2==3.0.0\nwerkzeug==2.0.0\n",
    "requirements/docs.txt": "sphinx==4.5.0\njinja2==3.1.2\n",
    "requirements/dev.txt": "-r docs.txt\n-r tests.txt\ntox==4.4.11\n",
}


def test_each_source_is_its_own_candidate_in_order_of_closeness_to_ci(tmp_path: Path) -> None:
    declared = read_declared(write(tmp_path, FLASK_23))
    names = [(c.rank, c.name) for c in declared.candidates]
    assert names == [(1, "tox.ini [testenv]"), (2, "requirements/tests-pallets-min.txt"),
                     (3, "requirements/dev.txt"), (4, "the project's own dependencies")]
    tox, pins, dev, own = ({r.text for r in c.requirements} for c in declared.candidates)
    assert tox == {"Werkzeug>=2.2.2", "Jinja2>=3.0", "pytest==7.3.0"}  # tests.txt: the same set, kept once
    assert pins == {"Werkzeug>=2.2.2", "Jinja2>=3.0", "jinja2==3.0.0", "werkzeug==2.0.0", "pytest"}
    assert "tox==4.4.11" in dev and "pytest==7.3.0" in dev  # the file dev.txt includes is read for it too
    assert own == {"Werkzeug>=2.2.2", "Jinja2>=3.0", "pytest"}


def test_the_test_extra_comes_before_requirements_txt_and_what_the_user_asks_is_in_every_one(tmp_path: Path) -> None:
    repo = write(tmp_path, {"setup.py": "from setuptools import setup\nsetup(name='p', version='1', "
                                        "install_requires=['alpha'], extras_require={'testing': ['gamma'], "
                                        "'dev': ['delta']}, tests_require=['beta'])\n",
                            "p.py": "", "requirements.txt": "py==1.4.12\npytest==2.3.4\n", "extra.txt": "zeta\n"})
    declared = read_declared(repo, requirements=["extra.txt"])
    assert [c.name for c in declared.candidates] == ["extra testing", "setup.py tests_require", "extra dev",
                                                     "requirements.txt", "the project's own dependencies"]
    assert all({"alpha", "zeta"} <= {r.text for r in c.requirements} for c in declared.candidates)
    assert [r.text for r in declared.candidates[-1].requirements] == ["alpha", "zeta", "pytest"]


# requests 0.14's shape (2012): a requirements.txt of nose plugins, no install_requires, no test extra.
REQUESTS_014 = {"setup.py": "from setuptools import setup\nrequires = []\nsetup(name='requests', version='0.14.0', "
                            "packages=['requests'], install_requires=requires)\n",
                "requests/__init__.py": "", "requirements.txt": "nose\nrudolf2\n"}


def test_a_task_older_than_its_python_gets_its_own_dependencies_again_as_of_the_python_s_release(
        tmp_path: Path) -> None:
    from agent.env.read.candidates import PYTHON_ERA, with_python_era

    declared = read_declared(write(tmp_path, REQUESTS_014))
    found = with_python_era(declared.candidates, "2012-09-20T15:48:00Z", "3.9", "2020-10-05")
    assert [(c.name, c.as_of) for c in found] == [
        ("requirements.txt", None), ("the project's own dependencies", None),
        ("the project's own dependencies as of Python 3.9's release (2020-10-05)", "2020-10-05T00:00:00Z")]
    assert found[-1].rank == PYTHON_ERA and found[-1].requirements == found[-2].requirements
    # A task of the Python's day or later, `now`, or a Python of unknown release: nothing to add.
    assert with_python_era(declared.candidates, "2021-03-01T00:00:00Z", "3.9", "2020-10-05") == declared.candidates
    assert with_python_era(declared.candidates, None, "3.9", "2020-10-05") == declared.candidates
    assert with_python_era(declared.candidates, "2012-09-20T15:48:00Z", "3.9", None) == declared.candidates


def test_the_python_era_fallback_is_in_the_key_only_when_it_is_the_first_tried(tmp_path: Path) -> None:
    from agent.env.install.inputs import keyed
    from agent.env.read.candidates import with_python_era

    declared = read_declared(write(tmp_path, REQUESTS_014))
    found = with_python_era(declared.candidates, "2012-09-20T15:48:00Z", "3.9", "2020-10-05")
    assert keyed(found) == declared.candidates  # the key a 2012 row's environment had before the fallback
    assert keyed(found[2:]) == found[2:]  # eval's validation skipped the two before it: it is what gets built


# pytest 4.5's shape (2019): its setup.py reads statically, its version comes from setuptools_scm (so its own
# build runs and its backend's metadata is read), and its `testing` extra holds hypothesis.
PYTEST_45 = {"setup.py": "from setuptools import setup\nINSTALL_REQUIRES = ['py>=1.5.0', 'pluggy>=0.9']\n"
                         "setup(name='pytest', use_scm_version={'write_to': 'src/_pytest/_version.py'}, "
                         "setup_requires=['setuptools-scm'], package_dir={'': 'src'}, "
                         "install_requires=INSTALL_REQUIRES, extras_require={'testing': ['hypothesis>=3.56', "
                         "'nose']})\n",
             "src/pytest.py": "", "src/_pytest/__init__.py": ""}


def test_the_backend_adds_the_default_extras_to_every_candidate_only_when_no_static_reading_saw_them(
        tmp_path: Path) -> None:
    from agent.env.install.inputs import backend_extras
    from agent.env.recipe import Recipe

    declared = read_declared(write(tmp_path, PYTEST_45))
    assert not declared.metadata_is_dynamic
    assert [c.name for c in declared.candidates] == ["extra testing", "the project's own dependencies"]
    assert backend_extras(declared, Recipe()) == []  # "the project's own dependencies" stays without hypothesis
    assert backend_extras(declared, Recipe(extras=["docs"])) == ["docs"]  # a spec's install extra: every candidate
    declared.dynamic_metadata = ["setup.py: install_requires= is computed at run time"]
    assert backend_extras(declared, Recipe())[:3] == ["test", "tests", "testing"]  # only the backend can tell
