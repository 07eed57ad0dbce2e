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
