"""Which runtime folders `codebox gc` may remove: another version's, complete, mounted by no container."""

from __future__ import annotations

from pathlib import Path

from agent.containers.runtime_gc import old_runtimes


def _runtime(folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / "runtime.json").write_text("{}", encoding="utf-8")
    return folder


def test_old_runtimes_split_by_use(tmp_path: Path) -> None:
    current = _runtime(tmp_path / "9.9-aaaa")
    old = _runtime(tmp_path / "1.0-bbbb")
    mounted = _runtime(tmp_path / "1.1-cccc")
    inside = _runtime(tmp_path / "1.2-dddd")
    (tmp_path / ".1.3-eeee.42.tmp").mkdir()  # being copied: not complete, never touched
    (tmp_path / "1.4-ffff").mkdir()  # no manifest: not a runtime
    (tmp_path / "9.9-aaaa.lock").write_text("", encoding="utf-8")
    unused, used = old_runtimes(current, {mounted, inside / "lib", tmp_path / "elsewhere"})
    assert unused == [old]
    assert used == [mounted, inside]


def test_no_runtime_folder_yet(tmp_path: Path) -> None:
    assert old_runtimes(tmp_path / "none" / "9.9-aaaa", set()) == ([], [])
