"""SWE-bench's specs read as data: its module's statement shapes evaluated without running it, a spec turned into
a recipe (pip, extras, pre_install, apt) and notes, a --specs file."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from agent.env.errors import EnvError
from agent.eval import specs
from agent.eval.spec_module import read_tables

# The shapes of swebench 4.1.0's harness/constants/python.py, one each.
MODULE = '''
"""Constants."""
import os
TEST_PYTEST = "pytest -rA"
SPECS_A = {k: {"python": "3.6", "pip_packages": ["cython"], "test_cmd": TEST_PYTEST} for k in ["0.1", "0.2"]}
SPECS_A.update({k: {"python": "3.9", "install": "python -m pip install -e .[test,docs]"} for k in ["1.0"] + ["1.1"]})
SPECS_A["0.2"]["pip_packages"] = ["numpy==1.19.2"]
SPECS_A["0.2"]["pre_install"] = ["sed -i 's/>=>=/>=/' setup.cfg"]
for k in ["1.0", "1.1"]:
    SPECS_A[k]["pre_install"] = []
    SPECS_A[k]["pre_install"].extend(["apt-get update && apt-get install -y graphviz"])
    if k in ["1.1"]:
        SPECS_A[k]["pre_install"] += ["touch x"]
    else:
        SPECS_A[k]["python"] = "3.10"
SPECS_A.update({k: {**SPECS_A[k], "nano_cpus": int(2e9)} for k in ["1.0"]})
SPECS_B = {"2.0": {"python": "3.11", "packages": "environment.yml", "install": 'pip install -e ".[dev,test]"'}}
SPECS_B["2.0"]["evil"] = os.system("true")
def evil():
    pass
MAP_REPO_VERSION_TO_SPECS_PY = {"o/a": SPECS_A, "o/b": SPECS_B}
'''


def test_the_module_s_tables_are_read_as_python_would_build_them_and_nothing_else_runs() -> None:
    table = read_tables(MODULE)["MAP_REPO_VERSION_TO_SPECS_PY"]
    assert table["o/a"]["0.1"] == {"python": "3.6", "pip_packages": ["cython"], "test_cmd": "pytest -rA"}
    assert table["o/a"]["0.2"]["pip_packages"] == ["numpy==1.19.2"]
    assert table["o/a"]["1.0"] == {"python": "3.10", "install": "python -m pip install -e .[test,docs]",
                                   "pre_install": ["apt-get update && apt-get install -y graphviz"],
                                   "nano_cpus": 2_000_000_000}
    assert table["o/a"]["1.1"]["pre_install"][-1] == "touch x"
    assert "evil" not in table["o/b"]["2.0"]  # a call of anything but int/str/float: the statement is skipped
    assert "evil" not in read_tables(MODULE) and "os" not in read_tables(MODULE)


def test_a_module_that_loops_forever_or_is_no_python_gives_what_it_could() -> None:
    # a loop over a list it grows: it walks the list as it was at the start
    assert read_tables("X = [1]\nfor k in X:\n    X.append(k)\n")["X"] == [1, 1]
    assert read_tables("def (:") == {}
    assert "X" in read_tables("X = 1\nwhile True:\n    pass\n")  # a statement it does not evaluate is skipped


def test_a_spec_becomes_a_recipe_and_notes() -> None:
    table = read_tables(MODULE)["MAP_REPO_VERSION_TO_SPECS_PY"]
    book = specs.Specs(table, "SWE-bench 4.1.0")
    first = book.for_row("o/a", "1.0")
    assert first is not None and first.python == "3.10" and first.where == "SWE-bench 4.1.0's spec for o/a 1.0"
    # test is taken by default where the project has it (a spec naming an extra the commit lacks is no error)
    assert first.recipe.extras == ["docs"] and first.recipe.apt == ["graphviz"] and first.recipe.pre_install == []
    second = book.for_row("o/a", "0.2")
    assert second is not None and second.recipe.prefer == ["numpy==1.19.2"] and second.recipe.pip == []
    assert second.recipe.pre_install == ["sed -i 's/>=>=/>=/' setup.cfg"]
    conda = book.for_row("o/b", "2.0")
    assert conda is not None and conda.recipe.extras == []
    assert conda.notes == ["SWE-bench 4.1.0's spec for o/b 2.0: its conda environment file (environment.yml) is not "
                           "followed: the environment is built from what the project declares, with the spec's pip "
                           "packages"]
    assert book.for_row("o/a", "9.9") is None and book.for_row("o/zzz", "1.0") is None


def test_a_bad_pip_entry_is_left_out_with_a_note() -> None:
    spec = specs.row_spec({"python": "3.9", "pip_packages": ["ok==1", "x @ https://example.invalid/x.whl"]}, "s")
    assert spec.recipe.prefer == ["ok==1"] and "from the index by name" in spec.notes[0]


def test_a_specs_file_is_json_of_the_same_shape(tmp_path: Path) -> None:
    path = tmp_path / "specs.json"
    path.write_text(json.dumps({"o/a": {"1.0": {"python": "3.9"}}}))
    loaded = specs.load_specs(path, print)
    assert loaded is not None and loaded.origin == "--specs specs.json"
    row = loaded.for_row("o/a", "1.0")
    assert row is not None and row.python == "3.9"
    path.write_text("[1]")
    with pytest.raises(EnvError, match=r"--specs .*expected"):
        specs.load_specs(path, print)


def test_the_cached_wheel_is_read_and_never_imported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEBOX_CACHE_DIR", str(tmp_path))
    wheel = specs.wheel_path()
    wheel.parent.mkdir(parents=True)
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr(specs.MODULE, MODULE + "\nraise SystemExit('imported')\n")
    loaded = specs.load_specs(None, print)
    assert loaded is not None and loaded.origin == "SWE-bench 4.1.0"
    row = loaded.for_row("o/a", "0.1")
    assert row is not None and row.python == "3.6"
