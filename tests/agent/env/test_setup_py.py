"""setup.py read from its syntax tree: module-level names followed in order, extensions decided from the tree,
computed values named with their line, and nothing ever run."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agent.env.errors import EnvError
from agent.env.read.declared import read_declared
from agent.env.read.setup_py import SetupCall, read_setup_py
from tests.agent.env.projects import write

HEAD = "from setuptools import setup\n"


def setup_of(tmp_path: Path, text: str) -> SetupCall:
    found = read_setup_py(write(tmp_path, {"setup.py": text}))
    assert found is not None
    return found


@pytest.mark.parametrize(("body", "key", "value"), [
    ("EXTRAS_REQUIRE = {'tests': ['pytest']}\nsetup(extras_require=EXTRAS_REQUIRE)\n",
     "extras_require", {"tests": ["pytest"]}),
    ("REQUIRES = ['a', 'b']\nsetup(install_requires=REQUIRES)\n", "install_requires", ["a", "b"]),
    ("BASE = ['a']\nTESTS = BASE + ['b']\nsetup(install_requires=TESTS)\n", "install_requires", ["a", "b"]),
    ("E = dict(tests=['t'], docs=['d'])\nsetup(extras_require=E)\n", "extras_require", {"tests": ["t"], "docs": ["d"]}),
    ("E = {'tests': ['t']}\nE['dev'] = E['tests'] + ['tox']\nsetup(extras_require=E)\n",
     "extras_require", {"tests": ["t"], "dev": ["t", "tox"]}),
    ("R = ['a']\nR += ['b']\nR.append('c')\nR.extend(('d',))\nsetup(install_requires=R)\n",
     "install_requires", ["a", "b", "c", "d"]),
    ("V = '2.1'\nsetup(install_requires=[f'dep>={V}'])\n", "install_requires", ["dep>=2.1"]),
    ("E = {'a': ['x'], 'b': ['y']}\nE['all'] = sorted(set(sum(E.values(), [])))\nsetup(extras_require=E)\n",
     "extras_require", {"a": ["x"], "b": ["y"], "all": ["x", "y"]}),
    ("KW = dict(name='kw', install_requires=['a'])\nsetup(**KW)\n", "install_requires", ["a"]),
    ("T = ['t']\nE = {'test': T}\nT.append('u')\nsetup(extras_require=E)\n", "extras_require", {"test": ["t", "u"]}),
    ("R: list = ['a']\nsetup(install_requires=R)\n", "install_requires", ["a"]),
    ("R = ['a']\ndef main():\n    setup(install_requires=R + ['b'])\nif __name__ == '__main__':\n    main()\n",
     "install_requires", ["a", "b"]),
    ("a, b = ['x'], ['y']\nsetup(install_requires=a + b)\n", "install_requires", ["x", "y"]),
])
def test_names_bound_at_module_level_are_followed(tmp_path: Path, body: str, key: str, value: object) -> None:
    found = setup_of(tmp_path, HEAD + body)
    assert found.values[key] == value and key not in found.computed


@pytest.mark.parametrize(("body", "key", "why"), [
    ("setup(install_requires=open('r.txt').read().split())\n", "install_requires", r"line 2: a call to open"),
    ("R = ['a']\nif True:\n    R.append('b')\nsetup(install_requires=R)\n", "install_requires", r"line 3: an if block"),
    ("import helper\nR = ['a']\nhelper.add(R)\nsetup(install_requires=R)\n", "install_requires",
     r"line 4: a call to helper.add"),
    ("T = ['a']\nE = {'t': T}\nimport x\nx.grow(T)\nsetup(extras_require=E)\n", "extras_require",
     r"a call to x.grow"),
    ("R = ['a']\ndef more():\n    R.append('b')\nmore()\nsetup(install_requires=R)\n", "install_requires",
     r"a call to more"),
    ("R = ['a']\ndef reset():\n    global R\n    R = []\nsetup(install_requires=R)\n", "install_requires",
     r"changed through 'global'"),
    ("with open('x') as f:\n    R = f.read().split()\nsetup(install_requires=R)\n", "install_requires",
     r"line 2: a with block"),
    ("setup(**get_kwargs())\n", "install_requires", r"passed through \*\*kwargs"),
    ("X = ['a']\n" + "X = X + X\n" * 40 + "setup(install_requires=X)\n", "install_requires", r"more than 100000 items"),
    ("S = 'a'\n" + "S = S + S\n" * 40 + "setup(install_requires=[S])\n", "install_requires", r"more than 100000"),
])
def test_a_computed_value_is_named_with_its_line(tmp_path: Path, body: str, key: str, why: str) -> None:
    found = setup_of(tmp_path, HEAD + body)
    assert key not in found.values
    assert key in found.computed and re.search(why, found.computed[key]), found.computed


@pytest.mark.parametrize(("body", "compiled"), [
    ("setup(name='x', ext_modules=[])\n", False),
    ("EXT = []\nsetup(ext_modules=EXT)\n", False),
    ("setup(name='x')\n", False),
    ("from setuptools import Extension\nE = Extension('a', ['a.c'])\nsetup(name='x')\n", False),  # never reaches setup
    ("from setuptools import Extension\nsetup(ext_modules=[Extension('a', ['a.c'])])\n", True),
    ("from setuptools import Extension as Ext\nEXTS = [Ext('a', ['a.c'])]\nsetup(ext_modules=EXTS)\n", True),
    ("import setuptools\nsetuptools.setup(ext_modules=[setuptools.Extension('a', ['a.c'])])\n", True),
    ("from Cython.Build import cythonize\nsetup(ext_modules=cythonize('a.pyx'))\n", True),
    ("from setuptools import Extension\nclass CMakeExtension(Extension):\n    pass\n"
     "setup(ext_modules=[CMakeExtension('a')])\n", True),
    ("import os\nfrom setuptools import Extension\nEXT = []\nif not os.environ.get('PURE'):\n"
     "    EXT.append(Extension('a', ['a.c']))\nsetup(ext_modules=EXT)\n", True),  # msgpack's shape
    ("from helpers import make\nsetup(ext_modules=make())\n", False),  # computed, and no Extension in the file
    ("setup(cffi_modules=['build.py:ffi'])\n", True),
    ("from setuptools_rust import RustExtension\nsetup(rust_extensions=[RustExtension('a')])\n", True),
    ("from pybind11.setup_helpers import Pybind11Extension\nsetup(ext_modules=[Pybind11Extension('a', [])])\n", True),
])
def test_extensions_are_decided_from_the_syntax_tree(tmp_path: Path, body: str, compiled: bool) -> None:
    found = setup_of(tmp_path, HEAD + body)
    assert found.has_extensions is compiled, (found.extensions, found.notes)
    declared = read_declared(tmp_path, runner=None)
    assert declared.project.extension_modules is compiled and bool(declared.extensions) is compiled


def test_ext_modules_empty_list_is_no_extension_even_with_a_c_file(tmp_path: Path) -> None:
    repo = write(tmp_path, {"setup.py": HEAD + "setup(name='plain', version='1.0', ext_modules=[])\n",
                            "plain/__init__.py": "", "plain/helper.c": "int x;\n"})
    declared = read_declared(repo, runner=None)
    assert not declared.project.extension_modules and declared.sources_digest == ""
    assert not any("compiled extensions" in note for note in declared.notes)


def test_a_computed_ext_modules_without_extension_is_noted(tmp_path: Path) -> None:
    found = setup_of(tmp_path, HEAD + "from helpers import make\nsetup(ext_modules=make())\n")
    assert found.computed_extensions.startswith("setup.py ext_modules= is computed") and not found.has_extensions
    declared = read_declared(tmp_path, runner=None)
    assert any("holds no C/Cython source: taken as no compiled extensions" in note for note in declared.notes)


# astropy 4.3-5.2's setup.py, as shipped (its help texts cut): the extensions come from extension_helpers,
# which finds each subpackage's setup_package.py; only the tree's C/Cython files say there are some.
ASTROPY_43 = ("import sys\nif 'test' in sys.argv:\n    print(TEST_HELP)\n    sys.exit(1)\n"
              "from setuptools import setup  # noqa\nfrom extension_helpers import get_extensions  # noqa\n\n"
              "setup(ext_modules=get_extensions())\n")
# astropy 1.3's: everything through **package_info, made by astropy_helpers at run time.
ASTROPY_13 = ("import ah_bootstrap\nfrom setuptools import setup\n"
              "from astropy_helpers.setup_helpers import register_commands, get_package_info\n"
              "package_info = get_package_info()\n"
              "setup(name='astropy', version='1.3', requires=['numpy'], **package_info)\n")


@pytest.mark.parametrize("setup", [ASTROPY_43, ASTROPY_13])
def test_computed_extensions_with_c_sources_in_the_tree_compile(tmp_path: Path, setup: str) -> None:
    repo = write(tmp_path, {"setup.py": setup, "astropy/__init__.py": "",
                            "astropy/wcs/setup_package.py": "def get_extensions():\n    return []\n",
                            "astropy/wcs/src/docstrings.c": "int x;\n", "cextern/wcslib/C/wcs.h": "int y;\n"})
    declared = read_declared(repo, runner=None)
    assert declared.project.extension_modules, declared.notes
    assert declared.extensions and "1 C/Cython sources (astropy/wcs/src/docstrings.c)" in declared.extensions[0]
    assert declared.sources_digest


def test_computed_extensions_with_only_headers_do_not_compile(tmp_path: Path) -> None:
    repo = write(tmp_path, {"setup.py": ASTROPY_43, "pkg/__init__.py": "", "pkg/include/api.h": "int y;\n"})
    assert not read_declared(repo, runner=None).project.extension_modules


def test_the_marshmallow_shape_reads_its_extras(tmp_path: Path) -> None:
    repo = write(tmp_path, {"setup.py": HEAD + (
        "EXTRAS_REQUIRE = {\n    'tests': ['pytest', 'pytz'],\n    'lint': ['flake8==5.0.4'],\n}\n"
        "EXTRAS_REQUIRE['dev'] = EXTRAS_REQUIRE['tests'] + EXTRAS_REQUIRE['lint'] + ['tox']\n"
        "def find_version(path):\n    return open(path).read()\n"
        "setup(name='marsh', version=find_version('v.txt'), install_requires=['packaging>=17.0'],\n"
        "      extras_require=EXTRAS_REQUIRE)\n"), "marsh/__init__.py": "__version__ = '3.19.0'\n"})
    declared = read_declared(repo, runner=None)
    assert {r.text for r in declared.requirements} == {"packaging>=17.0", "pytest", "pytz", "flake8==5.0.4", "tox"}
    assert declared.project.version == "3.19.0" and declared.dynamic_metadata == []
    assert any("version= is computed at run time (line" in note for note in declared.notes)


def test_nothing_is_run(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    write(tmp_path / "r", {"setup.py": f"import os\nopen({str(marker)!r}, 'w')\nos.system('touch {marker}')\n"
                                       "R = [__import__('os').system('id')]\n" + HEAD + "setup(install_requires=R)\n"})
    found = read_setup_py(tmp_path / "r")
    assert found is not None and "install_requires" in found.computed and not marker.exists()


@pytest.mark.parametrize("text", [
    "x = " + "(" * 5000 + ")" * 5000,
    "x = " + "1 + " * 30000 + "1\n" + HEAD + "setup(install_requires=[x])\n",
    "x = " + "[" * 90 + "]" * 90 + "\n" + HEAD + "setup(install_requires=x)\n",
])
def test_deep_nesting_is_refused_or_computed_in_one_line(tmp_path: Path, text: str) -> None:
    write(tmp_path, {"setup.py": text})
    try:
        found = read_setup_py(tmp_path)
    except EnvError as exc:
        assert "\n" not in str(exc) and exc.usage
        return
    assert found is not None and "install_requires" in found.computed


def test_python_2_setup_py_is_refused_in_one_line(tmp_path: Path) -> None:
    write(tmp_path, {"setup.py": "try:\n    pass\nexcept ImportError, e:\n    print 'no'\n"})
    with pytest.raises(EnvError, match=r"^setup.py: not valid Python \(SyntaxError: .*\); refused$") as info:
        read_declared(tmp_path)
    assert "\n" not in str(info.value)
