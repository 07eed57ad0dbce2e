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


# --- projects only their own build backend can install (tests/agent/env/test_project_build_docker.py) ---

def git_tagged(repo: Path, tag: str) -> Path:
    """``repo`` as a git repository with one commit, tagged ``tag`` (what version tools read)."""
    import subprocess

    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t",
           "GIT_COMMITTER_DATE": "2024-03-01T12:00:00Z", "GIT_AUTHOR_DATE": "2024-03-01T12:00:00Z", "HOME": str(repo)}
    for command in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "init"], ["tag", tag]):
        subprocess.run(["git", *command], cwd=repo, check=True, capture_output=True, env=env)
    return repo


# setuptools-scm writes the version file while the project builds; install_requires is computed.
SCM = {
    "pyproject.toml": '[build-system]\nrequires = ["setuptools>=64", "setuptools-scm>=8"]\n'
                      'build-backend = "setuptools.build_meta"\n'
                      '[project]\nname = "scmproj"\ndynamic = ["version", "dependencies"]\n'
                      '[project.entry-points.pytest11]\nscmplug = "scmproj.plugin"\n'
                      '[tool.setuptools_scm]\nversion_file = "src/scmproj/_version.py"\n',
    "setup.py": "from setuptools import setup\n\nsetup(install_requires=['al' + 'pha'])\n",
    ".gitignore": "src/scmproj/_version.py\n",
    "src/scmproj/__init__.py": "from ._version import version as __version__\n",
    "src/scmproj/plugin.py": "def pytest_report_header(config):\n    return 'scmplug loaded'\n",
    "tests/test_scm.py": "import importlib.metadata as md\n\nimport alpha\nimport scmproj\n\n\n"
                         "def test_version():\n    assert scmproj.__version__ == md.version('scmproj') == '1.2.0'\n"
                         "    assert alpha.VALUE == 'alpha'\n",
}

# An in-tree backend that runs git as setuptools-scm's file finder does: without the GIT_* variables,
# stopping on git's "dubious ownership" (it never checks the answer otherwise: a workspace's objects are elsewhere).
GIT_NO_ENV = {
    "pyproject.toml": '[build-system]\nrequires = ["setuptools>=64"]\nbuild-backend = "gitbackend"\n'
                      'backend-path = ["_build"]\n[project]\nname = "gitnoenv"\nversion = "1.0"\n'
                      'dynamic = ["dependencies"]\n',
    "setup.py": "from setuptools import setup\n\nsetup(install_requires=[])\n",
    "_build/gitbackend.py": "import os\nimport subprocess\n\nfrom setuptools import build_meta\n"
                            "from setuptools.build_meta import *  # noqa: F403\n\n\n"
                            "def _git():\n"
                            "    env = {k: v for k, v in os.environ.items() if not k.startswith('GIT_')}\n"
                            "    res = subprocess.run(['git', 'rev-parse', 'HEAD'], capture_output=True, text=True,\n"
                            "                         env=env)\n"
                            "    if 'safe.directory' in res.stderr:\n"
                            "        raise SystemExit('git introspection failed: ' + res.stderr.splitlines()[0])\n\n\n"
                            "def get_requires_for_build_editable(config_settings=None):\n"
                            "    _git()\n"
                            "    return build_meta.get_requires_for_build_editable(config_settings)\n",
    "gitnoenv/__init__.py": "",
}

# An in-tree backend that fails as maturin does with no Rust toolchain (pendulum 3.0.0).
NO_RUST = {
    "pyproject.toml": '[build-system]\nrequires = []\nbuild-backend = "rustbackend"\nbackend-path = ["_build"]\n'
                      '[project]\nname = "rustproj"\nversion = "1.0"\ndynamic = ["dependencies"]\n',
    "_build/rustbackend.py": "import sys\n\n\n"
                             "def prepare_metadata_for_build_wheel(directory, config_settings=None):\n"
                             "    print('Checking for Rust toolchain....')\n"
                             "    sys.exit('Cargo, the Rust package manager, is not installed or is not on PATH.')\n",
}

# hatch-vcs's build hook writes src/hvproj/_version.py from the git tag.
HATCH_VCS = {
    "pyproject.toml": '[build-system]\nrequires = ["hatchling", "hatch-vcs"]\nbuild-backend = "hatchling.build"\n'
                      '[project]\nname = "hvproj"\ndynamic = ["version"]\ndependencies = ["gamma"]\n'
                      '[project.optional-dependencies]\ntests = ["delta"]\n'
                      '[tool.hatch.version]\nsource = "vcs"\n'
                      '[tool.hatch.build.hooks.vcs]\nversion-file = "src/hvproj/_version.py"\n',
    ".gitignore": "src/hvproj/_version.py\n",
    "src/hvproj/__init__.py": "from ._version import __version__\n",
    "tests/test_hv.py": "import delta\nimport gamma\nimport hvproj\n\n\n"
                        "def test_version():\n    assert hvproj.__version__ == '3.4.5'\n",
}

# A Cython module whose C is not in the tree (upstream, a Makefile runs cython).
CYTHON = {
    "pyproject.toml": '[build-system]\nrequires = ["setuptools>=64"]\nbuild-backend = "setuptools.build_meta"\n'
                      '[project]\nname = "cyproj"\nversion = "0.1"\n',
    "setup.py": "from setuptools import Extension, setup\n\n"
                "setup(packages=['cyproj'], ext_modules=[Extension('cyproj._fast', ['cyproj/_fast.c'])])\n",
    "cyproj/__init__.py": "from cyproj._fast import triple\n",
    "cyproj/_fast.pyx": "# cython: language_level=3\ndef triple(int x):\n    return 3 * x\n",
    "tests/test_fast.py": "from cyproj import _fast, triple\n\n\ndef test_compiled():\n"
                          "    assert triple(3) == 9 and _fast.__file__.endswith('.so')\n",
}

# A module made by a recipe's pre_install command (no metadata says it): no build backend at all.
PRE_INSTALL = {
    "requirements.txt": "gamma\n",
    "tests/test_gen.py": "from gen_config import VALUE\n\n\ndef test_generated():\n    assert VALUE == 42\n",
}
PRE_INSTALL_COMMAND = "printf 'VALUE = 42\\n' > gen_config.py"

# setup.py records what the build could see and do, into a module the tests import.
LIMITS = {
    "setup.py": """import os
from setuptools import setup


def read(*paths):
    for path in paths:
        if os.path.exists(path):
            with open(path) as f:
                return f.read().strip()
    return ''


status = dict(line.split(':', 1) for line in read('/proc/self/status').splitlines() if ':' in line)
info = {
    'uid': os.getuid(),
    'cap_eff': status['CapEff'].strip(),
    'no_new_privs': status.get('NoNewPrivs', '').strip(),
    'ifaces': sorted(os.listdir('/sys/class/net')),
    'memory': read('/sys/fs/cgroup/memory/memory.limit_in_bytes', '/sys/fs/cgroup/memory.max'),
    'pids': read('/sys/fs/cgroup/pids/pids.max', '/sys/fs/cgroup/pids.max'),
    'wrote_venv': os.access('/usr/lib/python3/dist-packages', os.W_OK),
}
with open('buildinfo.py', 'w') as f:
    f.write('INFO = %r\\n' % (info,))
setup(name='limitsproj', version='0.1', py_modules=['limitsproj'], install_requires=[n for n in ['gamma']])
""",
    "limitsproj.py": "",
}
