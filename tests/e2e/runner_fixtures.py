"""The projects of the runners' e2e test: a real Django (the 3.2 sdist's runner and package, trimmed), a plain
unittest project, and a pylint-named pytest project whose ids carry absolute paths; their instances."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.agent.eval.repos import diff_of, make_repo
from tests.e2e.eval_fixtures import Case

DJANGO_SDIST = "django==3.2.25"
DJANGO_WHEELS = ("asgiref==3.4.1", "sqlparse==0.4.4", "pytz==2024.1")
CALC = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
FIXED = CALC.replace("a - b", "a + b")
BROKEN_MUL = FIXED.replace("a * b", "a * b + 1")

DJANGO_TESTS = '''import sys
import unittest

from django.test import SimpleTestCase
from django.utils.calc import add, mul


class CalcTests(SimpleTestCase):
    def test_add(self):
        self.assertEqual(add(1, 2), 3)

    def test_add_documented(self):
        """add() adds, as its docstring says."""
        self.assertEqual(add(2, 2), 4)

    def test_mul(self):
        self.assertEqual(mul(2, 3), 6)

    def test_prints(self):
        sys.stderr.write("a line of the test's own\\n")
        self.assertEqual(mul(1, 1), 1)

    @unittest.skip("later")
    def test_later(self):
        pass
'''
UNITTEST_TESTS = '''import unittest

from calc import add, mul


class AddTests(unittest.TestCase):
    def test_add(self):
        self.assertEqual(add(1, 2), 3)

    def test_mul(self):
        self.assertEqual(mul(2, 3), 6)
'''
PYLINT_TESTS = '''import os

import pytest

from lint import check

HERE = os.path.dirname(os.path.abspath(__file__))
FILES = sorted(os.path.join(HERE, "functional", name) for name in os.listdir(os.path.join(HERE, "functional")))


@pytest.mark.parametrize("path", FILES)
def test_functional(path):
    assert check(path)
'''
LINT = "def check(path):\n    return path.endswith('a.py')\n"


def cache_folder(name: str) -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "codebox-tests" / name


def django_downloads() -> Path:
    """Django 3.2's sdist (it carries tests/runtests.py) and its dependencies' wheels, from the package index once
    into ~/.cache/codebox-tests. Required when CI is set; elsewhere the test skips when the index is unreachable."""
    folder = cache_folder("django-3.2.25")
    if (folder / ".complete").is_file():
        return folder
    partial = folder.with_name(folder.name + f".part-{os.getpid()}")
    pip = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--dest", str(partial)]
    problem = None
    for extra in (["--no-binary", ":all:", DJANGO_SDIST], ["--only-binary", ":all:", *DJANGO_WHEELS]):
        proc = subprocess.run([*pip, *extra], capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
        problem = problem or (f"cannot download {extra[-1]}: {proc.stderr.strip()[-300:]}" if proc.returncode else None)
    if problem and not os.environ.get("CI"):
        pytest.skip(problem)
    assert problem is None, problem
    (partial / ".complete").write_text("")
    try:
        partial.rename(folder)
    except OSError:  # another session finished first
        shutil.rmtree(partial, ignore_errors=True)
    return folder


def deps_dockerfile(downloads: Path, folder: Path) -> Path:
    """A build folder: the sandbox image with Django's dependencies' wheels unpacked into its site-packages."""
    folder.mkdir(parents=True, exist_ok=True)
    wheels = sorted(p.name for p in downloads.glob("*.whl"))
    for name in wheels:
        shutil.copy(downloads / name, folder / name)
    unpack = ("import glob, site, zipfile; [zipfile.ZipFile(w).extractall(site.getsitepackages()[0]) "
              "for w in glob.glob('/tmp/w/*.whl')]")
    (folder / "Dockerfile").write_text(f"FROM codebox-sandbox:latest\nCOPY *.whl /tmp/w/\n"
                                       f"RUN python3 -c {json.dumps(unpack)} && rm -r /tmp/w\n")
    return folder


def django_repo(downloads: Path, root: Path) -> tuple[str, str, dict[str, Case]]:
    """Django 3.2 as its sdist ships it, trimmed (no translations but English, no GIS, no admin static files),
    with a buggy django/utils/calc.py; the test_patch adds tests/calc_tests."""
    import tarfile

    sdist = next(downloads.glob("Django-*.tar.gz"))
    unpacked = root.parent / "django-sdist"
    with tarfile.open(sdist) as tar:
        tar.extractall(unpacked, filter="data")
    top = next(unpacked.iterdir())
    root.mkdir(parents=True)
    shutil.copytree(top / "django", root / "django", ignore=_trimmed)
    (root / "tests").mkdir()
    for name in ("runtests.py", "test_sqlite.py", "urls.py"):
        shutil.copy(top / "tests" / name, root / "tests" / name)
    base = make_repo(root, {"django/utils/calc.py": CALC})
    gold = diff_of(root, {"django/utils/calc.py": FIXED})
    wrong = diff_of(root, {"django/utils/calc.py": BROKEN_MUL})
    test_patch = diff_of(root, {"tests/calc_tests/__init__.py": "", "tests/calc_tests/tests.py": DJANGO_TESTS})
    where = "calc_tests.tests.CalcTests"
    f2p = [f"test_add ({where}.test_add)", "add() adds, as its docstring says."]
    p2p = [f"test_mul ({where}.test_mul)", f"test_prints ({where}.test_prints)", f"test_later ({where}.test_later)"]
    old = [f"test_add ({where})", "add() adds, as its docstring says."]
    cases = {
        "dj_gold": Case(gold, "resolved", f2p=f2p, p2p=p2p),
        "dj_empty": Case("", "unresolved", f2p=f2p, p2p=p2p),
        "dj_wrong": Case(wrong, "unresolved", f2p=f2p, p2p=p2p),
        "dj_junk": Case(gold, "resolved", f2p=f2p, p2p=[*p2p, "[100%]", "["]),
        "dj_py39_ids": Case(gold, "resolved", f2p=old, p2p=[f"test_mul ({where})", f"test_later ({where})"]),
    }
    return base, test_patch, cases


def _trimmed(folder: str, names: list[str]) -> list[str]:
    if folder.endswith(os.sep + "locale"):
        return [n for n in names if n not in ("__init__.py", "en")]
    if folder.endswith(os.sep + "contrib"):
        return ["gis"]
    return ["static"] if folder.endswith(os.sep + "admin") else []


def unittest_repo(root: Path) -> tuple[str, str, dict[str, Case]]:
    base = make_repo(root, {"calc.py": CALC, "tests/__init__.py": ""})
    gold = diff_of(root, {"calc.py": FIXED})
    wrong = diff_of(root, {"calc.py": BROKEN_MUL})
    test_patch = diff_of(root, {"tests/test_calc.py": UNITTEST_TESTS})
    f2p, p2p = ["test_add (tests.test_calc.AddTests.test_add)"], ["test_mul (tests.test_calc.AddTests.test_mul)"]
    return base, test_patch, {"ut_gold": Case(gold, "resolved", f2p=f2p, p2p=p2p),
                              "ut_wrong": Case(wrong, "unresolved", f2p=f2p, p2p=p2p)}


def pylint_repo(root: Path) -> tuple[str, str, dict[str, Case]]:
    base = make_repo(root, {"lint.py": LINT, "tests/__init__.py": "", "tests/functional/a.py": "",
                            "tests/functional/b.py": ""})
    gold = diff_of(root, {"lint.py": "def check(path):\n    return path.endswith('.py')\n"})
    test_patch = diff_of(root, {"tests/test_functional.py": PYLINT_TESTS})
    f2p = ["tests/test_functional.py::test_functional[/b.py]"]  # as SWE-bench's pylint parser writes the ids
    p2p = ["tests/test_functional.py::test_functional[/a.py]"]
    return base, test_patch, {"pl_gold": Case(gold, "resolved", f2p=f2p, p2p=p2p),
                              "pl_empty": Case("", "unresolved", f2p=f2p, p2p=p2p)}
