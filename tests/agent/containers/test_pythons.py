"""The chain of Python sources without an engine: a version nobody provides names every link tried; the mirror."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.containers.pythons import PythonImages, PythonUnavailable, sandbox_tag
from agent.debian import codename, host_mirror


def test_a_version_nobody_provides_names_every_link_tried() -> None:
    with pytest.raises(PythonUnavailable) as caught:
        PythonImages(host=True).provide("2.7")  # nothing registered, no registry: no engine is asked
    message = str(caught.value)
    assert message.startswith("no Python 2.7 here: tried registered image for 2.7 (none); Debian suite with 2.7 "
                              "(none ships it; bullseye 3.9, bookworm 3.11, trixie 3.13); host Python 2.7 (none "
                              "under pyenv, uv or /usr/local); registry python:2.7-slim (not opted in: "
                              "--python-pull yes)")
    assert "codebox image python 2.7 --image NAME" in message and "\n" not in message
    assert caught.value.usage


def test_the_host_link_is_off_unless_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CODEBOX_HOST_PYTHONS", raising=False)  # off unless asked
    chain = PythonImages()
    assert chain.host_pythons() == {} and chain.available() == {"3.9", "3.11", "3.13"}
    with pytest.raises(PythonUnavailable, match=r"host Python 2\.7 \(off: CODEBOX_HOST_PYTHONS=1 turns it on\)"):
        chain.provide("2.7")


def test_codebox_s_own_image_of_each_suite() -> None:
    assert (sandbox_tag("3.9"), sandbox_tag("3.11"), sandbox_tag("3.13")) == \
        ("codebox-sandbox:py3.9", "codebox-sandbox:latest", "codebox-sandbox:py3.13")


def test_the_host_s_main_archive_mirror_serves_a_suite_it_does_not_list(tmp_path: Path) -> None:
    (tmp_path / "sources.list.d").mkdir()
    (tmp_path / "sources.list.d" / "debian.sources").write_text(
        "Types: deb\nURIs: http://deb.debian.org/debian-security\nSuites: bookworm-security\n\n"
        "Types: deb\n# a comment\nURIs: http://mirror.example/debian\nSuites: bookworm bookworm-updates\n")
    assert host_mirror(tmp_path) == "http://mirror.example/debian"
    (tmp_path / "sources.list.d" / "debian.sources").unlink()
    (tmp_path / "sources.list").write_text("# deb http://old.example/debian sid main\n"
                                           "deb [arch=amd64] http://one.example/debian bookworm main\n")
    assert host_mirror(tmp_path) == "http://one.example/debian"
    assert host_mirror(tmp_path / "none") is None


def test_the_release_s_codename(tmp_path: Path) -> None:
    (tmp_path / "os-release").write_text('PRETTY_NAME="Debian GNU/Linux 11 (bullseye)"\nVERSION_CODENAME=bullseye\n')
    assert codename(tmp_path / "os-release") == "bullseye"
    assert codename(tmp_path / "none") == ""
