"""Submodules in a workspace, in astropy 1.3's shape: ``astropy_helpers`` is a git submodule its setup.py builds
through (its bootstrap would download it when the folder is empty, which an offline build cannot).

A user's clone made with ``git submodule update --init`` holds the submodule's repository in
``.git/modules/astropy_helpers``: the workspace checks it out at the commit the superproject records. A clone
without it (or a bare mirror) leaves the folder empty, and the tree names it for a failed build's message.
"""

from __future__ import annotations

from pathlib import Path

from agent.env.install.tree import read_tree
from agent.task.workspace import create_workspace
from tests.repos import fingerprint, sh

ALLOW_FILE = ("-c", "protocol.file.allow=always")


def _helpers(root: Path) -> tuple[Path, str, str]:
    """astropy-helpers' repository: two commits (the superproject records the first)."""
    repo = root / "astropy-helpers"
    repo.mkdir()
    sh("git", "init", "-q", cwd=repo)
    (repo / "astropy_helpers").mkdir()
    (repo / "astropy_helpers" / "__init__.py").write_text("__version__ = '2.0.2'\n")
    (repo / "setup.py").write_text("from setuptools import setup\nsetup(name='astropy-helpers')\n")
    sh("git", "add", ".", cwd=repo)
    sh("git", "commit", "-qm", "v2.0.2", cwd=repo)
    first = sh("git", "rev-parse", "HEAD", cwd=repo)
    (repo / "astropy_helpers" / "__init__.py").write_text("__version__ = '3.0'\n")
    sh("git", "commit", "-qam", "v3.0", cwd=repo)
    return repo, first, sh("git", "rev-parse", "HEAD", cwd=repo)


def _astropy(root: Path, helpers: Path, commit: str) -> tuple[Path, str]:
    """The upstream superproject: setup.py, ah_bootstrap.py and the submodule at ``commit``."""
    repo = root / "astropy"
    repo.mkdir()
    sh("git", "init", "-q", cwd=repo)
    (repo / "setup.py").write_text("import ah_bootstrap\nfrom setuptools import setup\nsetup(**package_info)\n")
    (repo / "ah_bootstrap.py").write_text("# downloads astropy-helpers when the submodule is empty\n")
    sh("git", *ALLOW_FILE, "submodule", "add", "-q", str(helpers), "astropy_helpers", cwd=repo)
    sh("git", "-C", "astropy_helpers", "checkout", "-q", commit, cwd=repo)
    # As upstream has it: the URL is GitHub's, not this folder.
    sh("git", "config", "--file", ".gitmodules", "submodule.astropy_helpers.url",
       "https://github.com/astropy/astropy-helpers.git", cwd=repo)
    sh("git", "add", ".", cwd=repo)
    sh("git", "commit", "-qm", "astropy 1.3", cwd=repo)
    return repo, sh("git", "rev-parse", "HEAD", cwd=repo)


def _user_clone(root: Path, upstream: Path, helpers: Path, *, with_submodules: bool) -> Path:
    clone = root / ("with" if with_submodules else "without")
    sh("git", "clone", "-q", str(upstream), str(clone), cwd=root)
    if with_submodules:  # what `git clone --recurse-submodules` does, with a local mirror for GitHub's URL
        sh("git", "submodule", "init", cwd=clone)
        # file:// so git fetches what is reachable, as from GitHub (a plain path copies every object there is)
        sh("git", "config", "submodule.astropy_helpers.url", f"file://{helpers}", cwd=clone)
        sh("git", *ALLOW_FILE, "submodule", "update", "-q", cwd=clone)
    return clone


def test_a_clone_with_its_submodule_gives_a_workspace_with_it_at_the_recorded_commit(tmp_path: Path) -> None:
    helpers, first, _ = _helpers(tmp_path)
    upstream, base = _astropy(tmp_path, helpers, first)
    clone = _user_clone(tmp_path, upstream, helpers, with_submodules=True)
    sh("git", "-C", "astropy_helpers", "checkout", "-q", "master", cwd=clone)  # moved on in the user's tree
    before = fingerprint(clone)
    ws = create_workspace(clone, base_commit=base, root=tmp_path / "ws")
    try:
        assert (ws.path / "astropy_helpers" / "astropy_helpers" / "__init__.py").read_text() == \
            "__version__ = '2.0.2'\n"  # the superproject's commit, not the user's checkout
        assert not (ws.path / "astropy_helpers" / ".git").exists()
        assert sh("git", "status", "--porcelain", cwd=ws.path) == "" and ws.patch() == ""
        tree = read_tree(ws.path)
        assert "astropy_helpers/astropy_helpers/__init__.py" in tree.files and "astropy_helpers/setup.py" in tree.files
        assert tree.empty_submodules == [] and tree.missing_submodules("astropy/astropy") == ""
    finally:
        ws.remove()
    assert fingerprint(clone) == before


def test_a_clone_without_it_leaves_it_empty_and_the_tree_names_it_in_one_line(tmp_path: Path) -> None:
    helpers, first, _ = _helpers(tmp_path)
    upstream, base = _astropy(tmp_path, helpers, first)
    sh("git", "clone", "-q", "--mirror", str(upstream), str(tmp_path / "mirror.git"), cwd=tmp_path)
    for source in (_user_clone(tmp_path, upstream, helpers, with_submodules=False), tmp_path / "mirror.git"):
        ws = create_workspace(source, base_commit=base, root=tmp_path / "ws")
        try:
            assert (ws.path / "astropy_helpers").is_dir() and not any((ws.path / "astropy_helpers").iterdir())
            tree = read_tree(ws.path)
            assert tree.empty_submodules == ["astropy_helpers"]
            line = tree.missing_submodules("astropy/astropy")
            assert line == ("astropy_helpers is a git submodule the clone of astropy/astropy does not hold (it is "
                            "empty here, and codebox builds offline): run `git submodule update --init` in that clone")
        finally:
            ws.remove()


def test_a_submodule_whose_clone_lacks_the_recorded_commit_stays_empty(tmp_path: Path) -> None:
    helpers, first, later = _helpers(tmp_path)
    sh("git", "checkout", "-q", first, cwd=helpers)
    sh("git", "branch", "-q", "-f", "master", first, cwd=helpers)  # `later` is on no branch the user clones
    upstream, _ = _astropy(tmp_path, helpers, first)
    clone = _user_clone(tmp_path, upstream, helpers, with_submodules=True)
    # Upstream moves the submodule on; the user fetches the superproject but never updates the submodule.
    sh("git", "-C", "astropy_helpers", "fetch", "-q", str(helpers), later, cwd=upstream)
    sh("git", "-C", "astropy_helpers", "checkout", "-q", later, cwd=upstream)
    sh("git", "commit", "-qam", "helpers moved on", cwd=upstream)
    base = sh("git", "rev-parse", "HEAD", cwd=upstream)
    sh("git", "fetch", "-q", "--no-recurse-submodules", "origin", cwd=clone)
    ws = create_workspace(clone, base_commit=base, root=tmp_path / "ws")
    try:
        assert not any((ws.path / "astropy_helpers").iterdir())
        assert read_tree(ws.path).empty_submodules == ["astropy_helpers"]
    finally:
        ws.remove()
