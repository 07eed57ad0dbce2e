"""Fixture projects in each shape: flat, src/, extras, dependency groups, requirements files, setup.py-only."""

from __future__ import annotations

from pathlib import Path


def write(root: Path, files: dict[str, str]) -> Path:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    # A repository as people have them (pytest makes tmp_path 0700): the tool container of a
    # root-owned repo runs as an unprivileged user, which must be able to read it.
    root.chmod(0o755)
    return root


FLAT = {
    "pyproject.toml": '[project]\nname = "flatproj"\nversion = "1.2.3"\ndependencies = ["alpha"]\n'
                      '[project.optional-dependencies]\ntest = ["gamma"]\ndocs = ["delta"]\n'
                      '[project.scripts]\nflat-hello = "flatproj:hello"\n"bad name;x" = "os:system"\n',
    "flatproj.py": "import alpha\nVALUE = 'flat'\n\ndef hello():\n    print('hello from', __file__)\n",
}

HATCH_PDM = {
    "pyproject.toml": '[project]\nname = "hp"\nversion = "1"\n'
                      '[tool.hatch.envs.default]\ndependencies = ["gamma", "x @ {root:uri}/x"]\n'
                      '[tool.pdm.dev-dependencies]\ntest = ["delta"]\n',
    "hp.py": "",
}

SRC = {
    "pyproject.toml": '[project]\nname = "srcproj"\ndynamic = ["version"]\ndependencies = ["pulls-project"]\n'
                      '[project.optional-dependencies]\ntests = ["srcproj[more]"]\nmore = ["gamma"]\n'
                      '[project.entry-points.pytest11]\nsrcplug = "srcproj.plugin"\n',
    "src/srcproj/__init__.py": "__version__ = '7.1'\nWHERE = 'repo'\n",
}

GROUPS = {
    "pyproject.toml": '[project]\nname = "grp"\nversion = "0.1"\n'
                      '[dependency-groups]\ntest = ["gamma", {include-group = "lint"}]\nlint = ["delta"]\n'
                      'other = ["beta==1.0"]\n',
    "grp.py": "",
}

REQUIREMENTS = {
    "requirements.txt": "alpha  # the runtime\n",
    "requirements-test.txt": "-r requirements.txt\ngamma \\\n  >=3\n",
    "requirements-docs.txt": "delta\n",
    "app.py": "import alpha\n",
}

SETUP_PY = {
    "setup.py": "from setuptools import setup\nsetup(name='legacy', version='2.0', install_requires=['alpha'],\n"
                "      extras_require={'test': ['gamma']}, package_dir={'': 'src'})\n",
    "src/legacy/__init__.py": "",
}

SETUP_CFG = {
    "setup.cfg": "[metadata]\nname = cfgproj\nversion = 3.0\n[options]\ninstall_requires =\n    alpha\n"
                 "[options.extras_require]\ntesting =\n    gamma\n",
    "setup.py": "import setuptools\nsetuptools.setup()\n",
    "cfgproj.py": "",
}

TOX = {
    "tox.ini": "[tox]\nenvlist = py311\n[testenv]\n"
               "deps =\n    gamma\n    py38: delta\n    -r{toxinidir}/req-extra.txt\n",
    "req-extra.txt": "beta\n",
}

POETRY = {
    "pyproject.toml": '[tool.poetry]\nname = "poet"\nversion = "0.4.0"\n'
                      '[tool.poetry.dependencies]\npython = "^3.9"\nalpha = "^1.0"\n'
                      'gamma = {version = "~3.0", extras = ["x"]}\nopt = {version = "*", optional = true}\n'
                      '[tool.poetry.group.dev.dependencies]\nbeta = "2.0"\ndelta = "*"\n',
    "poet/__init__.py": "",
}
