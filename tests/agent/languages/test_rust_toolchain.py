"""Which Rust toolchain a crate's environment stands on: the host's rustup default toolchain found from rustup's
own files (never by running its proxies), only what cargo test needs taken from it, and the choice's errors."""

from __future__ import annotations

import os
import platform
import tarfile
from pathlib import Path

import pytest

from agent.env.errors import EnvError
from agent.languages.rust import rustup, toolchain

TRIPLE = rustup.TRIPLES.get(platform.machine(), "x86_64-unknown-linux-gnu")
pytestmark = pytest.mark.skipif(platform.machine() not in rustup.TRIPLES, reason="no rustup triple for this CPU")


def fake_toolchain(home: Path, name: str, *, rustdoc: bool = True) -> Path:
    """A rustup toolchain's layout (the files rustup installs), with small files in it."""
    root = home / "toolchains" / name
    files = ["bin/cargo", "bin/rustc", *(["bin/rustdoc"] if rustdoc else []), "bin/cargo-clippy", "bin/rustfmt",
             "lib/librustc_driver-0123abcd.so", "lib/libLLVM.so.22.1-rust-1.95.0-stable",
             f"lib/rustlib/{TRIPLE}/lib/libstd-0123.rlib", f"lib/rustlib/{TRIPLE}/lib/self-contained/crt1.o",
             f"lib/rustlib/{TRIPLE}/bin/rust-lld", f"lib/rustlib/{TRIPLE}/bin/gcc-ld/ld.lld",
             f"lib/rustlib/{TRIPLE}/bin/wasm-component-ld", "lib/rustlib/etc/gdb_load_rust_pretty_printers.py",
             "share/doc/rust/html/index.html", "libexec/rust-analyzer-proc-macro-srv"]
    for relative in files:
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{relative}\n")
        if "/bin/" in f"/{relative}" or relative.startswith("bin/"):
            path.chmod(0o755)
    return root


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("RUSTUP_HOME", str(tmp_path / "rustup"))
    monkeypatch.delenv("RUSTUP_TOOLCHAIN", raising=False)
    (tmp_path / "rustup").mkdir()
    return tmp_path / "rustup"


def test_the_default_toolchain_is_found_from_settings_with_or_without_its_triple(home: Path) -> None:
    fake_toolchain(home, f"stable-{TRIPLE}")
    (home / "settings.toml").write_text('version = "12"\ndefault_toolchain = "stable"\n')
    found, why = rustup.find_host_toolchain()
    assert found is not None and found.name == f"stable-{TRIPLE}" and found.triple == TRIPLE
    assert why == f"rustup's default toolchain stable-{TRIPLE}"
    (home / "settings.toml").write_text(f'default_toolchain = "stable-{TRIPLE}"\n')
    assert rustup.find_host_toolchain()[0] == found


def test_rustup_toolchain_in_the_environment_beats_the_settings(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_toolchain(home, f"stable-{TRIPLE}")
    fake_toolchain(home, f"nightly-{TRIPLE}")
    (home / "settings.toml").write_text('default_toolchain = "stable"\n')
    monkeypatch.setenv("RUSTUP_TOOLCHAIN", "nightly")
    found, _ = rustup.find_host_toolchain()
    assert found is not None and found.name == f"nightly-{TRIPLE}"


@pytest.mark.parametrize(("settings", "said"), [
    (None, "this machine has no rustup"),
    ("default_toolchain = [", "rustup's settings.toml could not be read"),
    ('version = "12"\n', "rustup has no default toolchain"),
    ('default_toolchain = "beta"\n', "rustup's toolchain beta is not installed"),
    ('default_toolchain = "../../etc"\n', "is not installed"),
])
def test_no_usable_rustup_says_why(home: Path, settings: str | None, said: str) -> None:
    fake_toolchain(home, f"stable-{TRIPLE}")
    if settings is not None:
        (home / "settings.toml").write_text(settings)
    found, why = rustup.find_host_toolchain()
    assert found is None and said in why


def test_a_toolchain_without_rustdoc_is_not_taken(home: Path) -> None:
    fake_toolchain(home, f"minimal-{TRIPLE}", rustdoc=False)
    (home / "settings.toml").write_text('default_toolchain = "minimal"\n')
    found, why = rustup.find_host_toolchain()
    assert found is None and why == f"rustup's toolchain minimal-{TRIPLE} has no rustdoc"


def test_the_layer_holds_what_cargo_test_needs_under_usr_local_and_nothing_else(home: Path, tmp_path: Path) -> None:
    root = fake_toolchain(home, f"stable-{TRIPLE}")
    found = rustup.HostToolchain(f"stable-{TRIPLE}", root, TRIPLE)
    layer, digest = rustup.write_layer(found, tmp_path / "layer.tar")
    with tarfile.open(layer) as tar:
        members = {m.name: m for m in tar.getmembers()}
    files = sorted(name for name, m in members.items() if m.isfile())
    target = f"usr/local/lib/rustlib/{TRIPLE}"
    assert files == sorted(["usr/local/bin/cargo", "usr/local/bin/rustc", "usr/local/bin/rustdoc",
                            "usr/local/lib/librustc_driver-0123abcd.so",
                            "usr/local/lib/libLLVM.so.22.1-rust-1.95.0-stable",
                            f"{target}/lib/libstd-0123.rlib", f"{target}/lib/self-contained/crt1.o",
                            f"{target}/bin/rust-lld", f"{target}/bin/gcc-ld/ld.lld"])
    assert all(m.uid == 0 and m.gid == 0 for m in members.values())
    assert members["usr/local/bin/rustc"].mode & 0o111 and not members[f"{target}/lib/libstd-0123.rlib"].mode & 0o111
    assert len(digest) == 64
    assert rustup.write_layer(found, tmp_path / "again.tar")[1] == digest
    (root / "bin" / "rustc").write_text("another rustc\n")
    assert rustup.write_layer(found, tmp_path / "changed.tar")[1] != digest


def test_the_stamp_changes_when_rustup_updates_the_toolchain_in_place(home: Path) -> None:
    root = fake_toolchain(home, f"stable-{TRIPLE}")
    found = rustup.HostToolchain(f"stable-{TRIPLE}", root, TRIPLE)
    before = found.stamp()
    assert found.stamp() == before
    stat = (root / "lib" / "librustc_driver-0123abcd.so").stat()
    os.utime(root / "lib" / "librustc_driver-0123abcd.so", ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    assert found.stamp() != before


def test_a_wrong_choice_or_rustup_asked_for_but_absent_is_one_line(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(toolchain.CHOICE_VARIABLE, "nightly")
    with pytest.raises(EnvError, match=r"^CODEBOX_RUST_TOOLCHAIN='nightly': it is one of rustup, debian$"):
        toolchain.choose(None, engine=None, log=print)  # type: ignore[arg-type]  # refused before any engine call
    with pytest.raises(EnvError, match=r"^CODEBOX_RUST_TOOLCHAIN=rustup, but this machine has no rustup"):
        toolchain.choose(None, engine=None, log=print, prefer="rustup")  # type: ignore[arg-type]


def test_the_user_s_image_is_taken_as_it_is_and_said() -> None:
    chosen = toolchain.choose("my/rust:1.80", engine=None, log=print)  # type: ignore[arg-type]
    assert chosen == ("my/rust:1.80", "rust toolchain: the image my/rust:1.80, because --image names it")


def test_the_tag_s_version_comes_from_rustup_s_manifest_else_the_channel(home: Path) -> None:
    root = fake_toolchain(home, f"stable-{TRIPLE}")
    found = rustup.HostToolchain(f"stable-{TRIPLE}", root, TRIPLE)
    assert found.version_word() == "stable"
    (root / "lib" / "rustlib" / "multirust-channel-manifest.toml").write_text(
        '[pkg.cargo]\nversion = "0.96.0 (f2d3ce0bd 2026-03-21)"\n\n'
        '[pkg.rustc]\nversion = "1.95.0 (59807616e 2026-04-14)"\n')
    assert found.version_word() == "1.95.0"


def test_a_symlinked_library_goes_in_as_the_file_it_names(home: Path, tmp_path: Path) -> None:
    root = fake_toolchain(home, f"stable-{TRIPLE}")
    (root / "lib" / "libLLVM.so.22.1-rust-1.95.0-stable").rename(root / "lib" / "real-llvm")
    (root / "lib" / "libLLVM.so.22.1-rust-1.95.0-stable").symlink_to("real-llvm")
    layer, _ = rustup.write_layer(rustup.HostToolchain(f"stable-{TRIPLE}", root, TRIPLE), tmp_path / "layer.tar")
    with tarfile.open(layer) as tar:
        member = tar.getmember("usr/local/lib/libLLVM.so.22.1-rust-1.95.0-stable")
        assert member.isfile() and member.size == len("lib/libLLVM.so.22.1-rust-1.95.0-stable\n")
