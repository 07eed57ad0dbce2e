"""The host's CPython builds, found by their folders alone (pyenv, uv, /usr/local), and what of them is copied."""

from __future__ import annotations

from pathlib import Path

from agent.containers.host_pythons import HostPython, enabled, find_host_pythons, patchlevel


def prefix(root: Path, minor: str, version: str | None = None, shared: bool = True) -> Path:
    """A CPython prefix as `make install` lays it out (empty files: nothing here is run)."""
    (root / "bin").mkdir(parents=True, exist_ok=True)
    (root / "bin" / f"python{minor}").write_text("")
    stdlib = root / "lib" / f"python{minor}"
    for name in ("os.py", "json/__init__.py", "json/__pycache__/__init__.cpython.pyc",
                 "json/__pycache__/__init__.cpython.opt-1.pyc", "lib-dynload/_ssl.so",
                 "lib-dynload/_tkinter.so", "test/test_os.py", "idlelib/idle.py", "tkinter/__init__.py",
                 "site-packages/pip/__init__.py", "lib2to3/tests/t.py", "lib2to3/main.py",
                 f"config-{minor}-x86_64-linux-gnu/libpython{minor}.a"):
        (stdlib / name).parent.mkdir(parents=True, exist_ok=True)
        (stdlib / name).write_text("x")
    if shared:
        (root / "lib" / f"libpython{minor}.so.1.0").write_text("elf")
        (root / "lib" / f"libpython{minor}.so").symlink_to(f"libpython{minor}.so.1.0")
    (root / "include" / f"python{minor}").mkdir(parents=True, exist_ok=True)
    if version:
        (root / "include" / f"python{minor}" / "patchlevel.h").write_text(
            f'/* comment */\n#define PY_VERSION      "{version}"\n')
    return root


def test_pyenv_comes_before_uv_and_usr_local_and_its_newest_patch_first(tmp_path: Path) -> None:
    pyenv, uv, local = tmp_path / "pyenv", tmp_path / "uv", tmp_path / "local"
    prefix(pyenv / "versions" / "3.10.4", "3.10")
    prefix(pyenv / "versions" / "3.10.13", "3.10")
    prefix(pyenv / "versions" / "pypy3.10-7.3.12", "3.10")  # not CPython by its name
    prefix(pyenv / "versions" / "3.13.0t", "3.13")  # free-threaded: another ABI
    (pyenv / "versions" / "3.9.1" / "bin").mkdir(parents=True)  # no standard library: not self-contained
    prefix(uv / "cpython-3.10.14-linux-x86_64-gnu", "3.10")
    prefix(uv / "cpython-3.12.1-linux-x86_64-gnu", "3.12")
    prefix(uv / "cpython-3.12.1-linux-x86_64-musl", "3.12")  # not glibc's
    prefix(local, "3.9", version="3.9.2")
    prefix(local, "3.8")  # no patchlevel.h: its minor names it
    prefix(pyenv / "versions" / "3.6.15", "3.6")  # older than codebox's build steps run on: 3.9 stands in
    found = find_host_pythons({"PYENV_ROOT": str(pyenv), "UV_PYTHON_INSTALL_DIR": str(uv)}, home=tmp_path,
                              usr_local=local)
    assert {m: (p.kind, p.version, p.prefix) for m, p in found.items()} == {
        "3.10": ("pyenv", "3.10.13", pyenv / "versions" / "3.10.13"),
        "3.12": ("uv", "3.12.1", uv / "cpython-3.12.1-linux-x86_64-gnu"),
        "3.9": ("/usr/local", "3.9.2", local),
        "3.8": ("/usr/local", "3.8", local),
    }
    assert found["3.10"].describe() == "host pyenv 3.10.13"
    # The defaults: ~/.pyenv and ~/.local/share/uv/python under the home folder.
    prefix(tmp_path / "home" / ".local" / "share" / "uv" / "python" / "cpython-3.11.7-linux-x86_64-gnu", "3.11")
    assert list(find_host_pythons({}, home=tmp_path / "home", usr_local=tmp_path / "none")) == ["3.11"]
    assert find_host_pythons({}, home=tmp_path / "nobody", usr_local=tmp_path / "none") == {}


def test_the_copy_leaves_the_stdlib_s_tests_tk_site_packages_and_the_static_library_out(tmp_path: Path) -> None:
    host = HostPython("3.10", "3.10.13", prefix(tmp_path / "p", "3.10", version="3.10.13"), "pyenv")
    inside = [name for name, _ in host.files()]
    assert inside == [
        "usr/local/bin/python3.10",
        "usr/local/lib/libpython3.10.so", "usr/local/lib/libpython3.10.so.1.0",
        "usr/local/lib/python3.10/os.py",
        "usr/local/lib/python3.10/json/__init__.py",
        "usr/local/lib/python3.10/json/__pycache__/__init__.cpython.pyc",
        "usr/local/lib/python3.10/lib-dynload/_ssl.so",
        "usr/local/lib/python3.10/lib2to3/main.py",
        "usr/local/include/python3.10/patchlevel.h",
    ]
    stamp = host.stamp()
    assert stamp == host.stamp()
    (tmp_path / "p" / "lib" / "python3.10" / "os.py").write_text("changed")
    assert host.stamp() != stamp  # a size changed: another image
    (tmp_path / "p" / "lib" / "python3.10" / "test" / "test_more.py").write_text("")
    changed = host.stamp()
    assert host.stamp() == changed  # a file left out changes nothing


def test_the_version_from_the_headers_and_the_switch(tmp_path: Path) -> None:
    prefix(tmp_path / "p", "3.6", version="3.6.15")
    (tmp_path / "p" / "include" / "python3.6").rename(tmp_path / "p" / "include" / "python3.6m")
    assert patchlevel(tmp_path / "p", "3.6") == "3.6.15"
    assert patchlevel(tmp_path / "p", "3.7") is None
    assert enabled({"CODEBOX_HOST_PYTHONS": "1"}) and enabled({"CODEBOX_HOST_PYTHONS": "on"})
    assert not enabled({}) and not enabled({"CODEBOX_HOST_PYTHONS": "0"})  # opt-in: the copy has no pytest


def test_the_build_context_holds_the_prefix_under_usr_local_root_owned(tmp_path: Path) -> None:
    import tarfile

    from agent.containers.host_python_image import DOCKERFILE, write_context

    root = prefix(tmp_path / "p", "3.12", version="3.12.1")
    (root / "bin" / "python3.12").chmod(0o4755)  # a set-uid bit is not carried into the image
    (root / "lib" / "python3.12" / "gone.py").symlink_to("missing.py")  # names nothing copied: left out
    host = HostPython("3.12", "3.12.1", root, "pyenv")
    with tarfile.open(write_context(host, tmp_path / "context.tar")) as tar:
        members = {m.name: m for m in tar.getmembers()}
        assert tar.extractfile("Dockerfile").read().decode() == DOCKERFILE  # type: ignore[union-attr]
    binary = members["root/usr/local/bin/python3.12"]
    assert binary.isfile() and binary.mode == 0o755 and (binary.uid, binary.gid) == (0, 0)
    links = {members[f"root/usr/local/bin/{alias}"].linkname for alias in ("python3", "python")}
    assert links == {"python3.12"}
    assert members["root/usr/local/lib/libpython3.12.so"].linkname == "libpython3.12.so.1.0"
    assert members["root/usr/local/lib/python3.12/site-packages"].isdir()
    assert not any("site-packages/pip" in n or "/test/" in n or "gone.py" in n for n in members)
