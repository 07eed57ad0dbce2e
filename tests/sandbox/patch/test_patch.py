"""Unit tests of sandbox.patch: the Codex apply_patch format, its safety rules and its CLI."""

from __future__ import annotations

import glob
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import sandbox.patch.commit as patch_commit
from sandbox.patch import (
    PatchError,
    PatchResult,
    apply_patch,
    normalize_path,
    parse_patch,
    patch_paths,
)

REPO = Path(__file__).resolve().parents[3]


def wrap(body: str) -> str:
    return "*** Begin Patch\n" + body.rstrip("\n") + "\n*** End Patch\n"


def write(root: Path, rel: str, content: str | bytes) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, str):
        path.write_bytes(content.encode("utf-8"))
    else:
        path.write_bytes(content)
    return path


def read(root: Path, rel: str) -> bytes:
    return (root / rel).read_bytes()


def snapshot(root: Path) -> dict[str, Any]:
    """Files (bytes and mode), directories and symlinks under root."""
    out: dict[str, Any] = {}
    for dirpath, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(dirpath, name)
            rel = path.relative_to(root).as_posix()
            if path.is_symlink():
                out[rel] = ("link", os.readlink(path))
            elif path.is_dir():
                out[rel] = ("dir",)
            elif not path.is_file():
                out[rel] = ("special",)
            else:
                out[rel] = ("file", path.read_bytes(), stat.S_IMODE(path.stat().st_mode))
    return out


def apply(root: Path, body: str, **kwargs: Any) -> PatchResult:
    return apply_patch(wrap(body), str(root), **kwargs)


def fails(root: Path, text: str, **kwargs: Any) -> PatchError:
    """Apply text (a whole patch), expect a PatchError and an unchanged tree."""
    before = snapshot(root)
    with pytest.raises(PatchError) as info:
        apply_patch(text, str(root), **kwargs)
    assert snapshot(root) == before, "a rejected patch must change nothing"
    return info.value


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    return path


# --------------------------------------------------------------------------------------
# Parsing
# --------------------------------------------------------------------------------------

FULL = """*** Begin Patch
*** Add File: path/new.py
+line one
+line two
*** Delete File: path/old.py
*** Update File: path/a.py
*** Move to: path/b.py
@@ def handler():
 context line
-removed line
+added line
@@
 tail
+more
*** End of File
*** End Patch
"""


def test_parse_every_construct() -> None:
    ops = parse_patch(FULL).operations
    assert [(op.kind, op.path, op.move_to) for op in ops] == [
        ("add", "path/new.py", None),
        ("delete", "path/old.py", None),
        ("update", "path/a.py", "path/b.py"),
    ]
    assert ops[0].contents == "line one\nline two\n"
    first, second = ops[2].chunks
    assert first.headers == ["def handler():"]
    assert first.old_lines == ["context line", "removed line"]
    assert first.new_lines == ["context line", "added line"]
    assert not first.end_of_file
    assert first.line == 8
    assert second.headers == []
    assert second.old_lines == ["tail"]
    assert second.new_lines == ["tail", "more"]
    assert second.end_of_file


def test_patch_paths_lists_operations_and_move_destination() -> None:
    assert patch_paths(FULL) == [
        ("add", "path/new.py"),
        ("delete", "path/old.py"),
        ("update", "path/a.py"),
        ("move", "path/b.py"),
    ]


def test_patch_paths_keeps_paths_as_written() -> None:
    text = wrap("*** Add File: ./x//y.txt \n+a\n*** Update File: src/a.py\n*** Move to: .git/a.py\n@@\n-x\n+y")
    assert patch_paths(text) == [("add", "./x//y.txt"), ("update", "src/a.py"), ("move", ".git/a.py")]


def test_parse_does_not_touch_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    ops = parse_patch(wrap("*** Update File: missing.py\n@@\n-a\n+b\n*** Delete File: also/missing")).operations
    assert [op.kind for op in ops] == ["update", "delete"]
    assert list(tmp_path.iterdir()) == []


def test_parse_empty_patch_has_no_operations() -> None:
    assert parse_patch("*** Begin Patch\n*** End Patch").operations == []


def test_add_file_with_no_lines_is_an_empty_file() -> None:
    (op,) = parse_patch(wrap("*** Add File: empty.txt")).operations
    assert op.contents == ""


def test_first_hunk_may_omit_the_at_at_line() -> None:
    (op,) = parse_patch(wrap("*** Update File: a.py\n import foo\n+bar")).operations
    assert op.chunks[0].headers == []
    assert op.chunks[0].old_lines == ["import foo"]
    assert op.chunks[0].new_lines == ["import foo", "bar"]


@pytest.mark.parametrize(
    "text",
    [
        " *** Begin Patch\n*** Add File: a\n+x\n*** End Patch ",
        "*** Begin Patch  \n  *** Add File:   a  \n+x\n\t*** End Patch\n",
        "\n\n*** Begin Patch\n*** Add File: a\n+x\n*** End Patch\n\n\n",
        "*** Begin Patch\r\n*** Add File: a\r\n+x\r\n*** End Patch\r\n",
        "<<EOF\n*** Begin Patch\n*** Add File: a\n+x\n*** End Patch\nEOF\n",
        "<<'EOF'\n*** Begin Patch\n*** Add File: a\n+x\n*** End Patch\nEOF",
        '<<"EOF"\n*** Begin Patch\n*** Add File: a\n+x\n*** End Patch\nEOF',
        "apply_patch <<'PATCH'\n*** Begin Patch\n*** Add File: a\n+x\n*** End Patch\nPATCH\n",
        "```\n*** Begin Patch\n*** Add File: a\n+x\n*** End Patch\n```",
        "```diff\n*** Begin Patch\n*** Add File: a\n+x\n*** End Patch\n```\n",
        "```patch\n<<'EOF'\n*** Begin Patch\n*** Add File: a\n+x\n*** End Patch\nEOF\n```",
    ],
    ids=[
        "padded-markers",
        "padded-headers",
        "surrounding-blank-lines",
        "crlf-patch",
        "heredoc",
        "heredoc-single-quoted",
        "heredoc-double-quoted",
        "heredoc-with-command",
        "code-fence",
        "code-fence-with-language",
        "fence-around-heredoc",
    ],
)
def test_lenient_wrappers_and_padding(text: str) -> None:
    (op,) = parse_patch(text).operations
    assert (op.kind, op.path, op.contents) == ("add", "a", "x\n")


def test_padded_move_and_hunk_lines() -> None:
    text = wrap("*** Update File: a.py\n   *** Move to:   b.py  \n   @@   def f():  \n-x\n+y")
    (op,) = parse_patch(text).operations
    assert op.move_to == "b.py"
    assert op.chunks[0].headers == ["def f():"]


def test_blank_lines_between_sections_are_ignored() -> None:
    text = wrap("*** Add File: a\n+x\n\n\n*** Delete File: b\n\n*** Update File: c\n\n@@\n-1\n+2")
    assert [op.kind for op in parse_patch(text).operations] == ["add", "delete", "update"]


def test_blank_line_inside_added_lines_is_an_empty_line() -> None:
    (op,) = parse_patch(wrap("*** Add File: a\n+one\n\n+three\n")).operations
    assert op.contents == "one\n\nthree\n"


def test_blank_context_line_without_leading_space() -> None:
    (op,) = parse_patch(wrap("*** Update File: a\n@@\n first\n\n-third\n+THIRD")).operations
    assert op.chunks[0].old_lines == ["first", "", "third"]
    assert op.chunks[0].new_lines == ["first", "", "THIRD"]


def test_several_at_at_lines_in_a_row_narrow_step_by_step() -> None:
    (op,) = parse_patch(wrap("*** Update File: a\n@@ class A:\n@@     def f(self):\n-x\n+y")).operations
    assert op.chunks[0].headers == ["class A:", "def f(self):"]


def test_context_line_starting_with_at_at_after_a_header() -> None:
    """Found by the property tests: ' @@' after an '@@' line is a file line, not a second header."""
    (op,) = parse_patch(wrap("*** Update File: a.diff\n@@\n @@\n+@@ -1 +1 @@")).operations
    assert op.chunks[0].headers == []
    assert op.chunks[0].old_lines == ["@@"]
    assert op.chunks[0].new_lines == ["@@", "@@ -1 +1 @@"]


def test_unified_diff_hunk_header_is_accepted() -> None:
    (op,) = parse_patch(
        wrap("*** Update File: a\n@@ -10,3 +10,4 @@ def f():\n-x\n+y\n@@ -40 +41 @@\n-p\n+q")
    ).operations
    assert [chunk.headers for chunk in op.chunks] == [["def f():"], []]


def test_several_files_and_hunks() -> None:
    text = wrap("*** Update File: a\n@@\n-1\n+2\n@@\n-3\n+4\n*** Update File: b\n@@\n-5\n+6\n*** Add File: c\n+7")
    ops = parse_patch(text).operations
    assert [len(op.chunks) for op in ops] == [2, 1, 0]


# -- parse errors ---------------------------------------------------------------------


def parse_error(text: str) -> PatchError:
    with pytest.raises(PatchError) as info:
        parse_patch(text)
    return info.value


def test_missing_begin_patch() -> None:
    error = parse_error("*** Add File: a\n+x\n*** End Patch")
    assert str(error).startswith(
        "apply_patch verification failed: invalid patch: The first line of the patch must be '*** Begin Patch'"
    )
    assert error.cli_message.startswith("Invalid patch: The first line of the patch must be '*** Begin Patch'")
    assert "*** Add File: a" in str(error)


def test_empty_text_is_an_invalid_patch() -> None:
    assert "The first line of the patch must be '*** Begin Patch'" in str(parse_error("  \n "))


def test_missing_end_patch_is_rejected_as_cut_off() -> None:
    error = parse_error("*** Begin Patch\n*** Add File: a\n+x\n")
    assert "The last line of the patch must be '*** End Patch'" in str(error)
    assert "cut off" in str(error)


def test_text_after_end_patch_is_rejected() -> None:
    error = parse_error("*** Begin Patch\n*** Add File: a\n+x\n*** End Patch\nDone!")
    assert "The last line of the patch must be '*** End Patch'" in str(error)


def test_heredoc_with_mismatched_quotes_is_not_unwrapped() -> None:
    error = parse_error("<<\"EOF'\n*** Begin Patch\n*** Add File: a\n+x\n*** End Patch\nEOF")
    assert "The first line of the patch must be '*** Begin Patch'" in str(error)


def test_heredoc_without_end_patch_is_rejected() -> None:
    error = parse_error("<<'EOF'\n*** Begin Patch\n*** Update File: a\nEOF")
    assert "The last line of the patch must be '*** End Patch'" in str(error)


def test_unknown_header_names_its_line() -> None:
    error = parse_error("*** Begin Patch\n*** Add File: a\n+x\n*** Frobnicate File: foo\n*** End Patch")
    assert str(error).startswith(
        "apply_patch verification failed: invalid hunk at line 4, '*** Frobnicate File: foo' is not a valid "
        "hunk header. Valid hunk headers: '*** Add File: {path}', '*** Delete File: {path}', "
        "'*** Update File: {path}'"
    )
    assert error.cli_message.startswith("Invalid patch hunk on line 4: '*** Frobnicate File: foo'")


def test_update_without_hunks() -> None:
    error = parse_error(wrap("*** Update File: foo.txt"))
    assert "invalid hunk at line 2, Update file hunk for path 'foo.txt' is empty" in str(error)
    assert "Invalid patch hunk on line 2: Update file hunk for path 'foo.txt' is empty" in error.cli_message


def test_update_followed_directly_by_another_file_is_empty() -> None:
    error = parse_error(wrap("*** Update File: a\n*** Add File: b\n+x"))
    assert "Update file hunk for path 'a' is empty" in str(error)


def test_second_hunk_needs_an_at_at_line() -> None:
    error = parse_error(wrap("*** Update File: a\n@@\n-x\n+y\nnot a diff line"))
    assert (
        "invalid hunk at line 6, Expected update hunk to start with a @@ context marker, got: 'not a diff line'"
        in str(error)
    )


def test_unexpected_line_in_first_hunk() -> None:
    error = parse_error(wrap("*** Update File: a\n@@\nfoo"))
    assert (
        "invalid hunk at line 4, Unexpected line found in update hunk: 'foo'. Every line should start with "
        "' ' (context line), '+' (added line), or '-' (removed line)" in str(error)
    )


def test_at_at_line_without_lines() -> None:
    assert "Update hunk does not contain any lines" in str(parse_error(wrap("*** Update File: a\n@@")))
    error = parse_error(wrap("*** Update File: a\n@@ def f():\n*** Add File: b\n+x"))
    assert "invalid hunk at line 4, Update hunk does not contain any lines" in str(error)


def test_end_of_file_marker_without_lines() -> None:
    error = parse_error(wrap("*** Update File: a\n@@\n*** End of File"))
    assert "invalid hunk at line 4, Update hunk does not contain any lines" in str(error)


def test_header_without_path() -> None:
    error = parse_error(wrap("*** Add File:\n+x"))
    assert "invalid hunk at line 2, '*** Add File:' has no path" in str(error)


def test_move_to_out_of_place_gets_a_hint() -> None:
    error = parse_error(wrap("*** Update File: a\n@@\n-x\n+y\n*** Move to: b"))
    assert "'*** Move to: b' is not a valid hunk header" in str(error)
    assert "must come right after its '*** Update File: {path}' line" in str(error)


def test_unified_diff_gets_a_hint() -> None:
    error = parse_error(wrap("--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b"))
    assert "unified diff" in str(error)


# --------------------------------------------------------------------------------------
# Applying: Add, Delete, Update, Move
# --------------------------------------------------------------------------------------


def test_add_file_creates_parents(root: Path) -> None:
    result = apply(root, "*** Add File: a/b/c.txt\n+hello\n+world")
    assert read(root, "a/b/c.txt") == b"hello\nworld\n"
    assert result.summary == ["A a/b/c.txt"]
    assert result.changed_paths == ["a/b/c.txt"]
    assert "+++ b/a/b/c.txt" in result.diff


def test_add_empty_file(root: Path) -> None:
    apply(root, "*** Add File: empty.txt")
    assert read(root, "empty.txt") == b""


def test_add_over_existing_file_replaces_it_and_says_so(root: Path) -> None:
    write(root, "dup.txt", "old\n")
    result = apply(root, "*** Add File: dup.txt\n+new")
    assert read(root, "dup.txt") == b"new\n"
    assert result.summary == ["A dup.txt (replaced the existing file)"]


def test_add_over_existing_keeps_its_mode(root: Path) -> None:
    path = write(root, "run.sh", "old\n")
    path.chmod(0o750)
    apply(root, "*** Add File: run.sh\n+new")
    assert stat.S_IMODE(path.stat().st_mode) == 0o750


def test_new_files_get_the_usual_mode(root: Path) -> None:
    apply(root, "*** Add File: new.txt\n+x")
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE((root / "new.txt").stat().st_mode) == 0o666 & ~umask


def test_add_onto_a_directory_fails(root: Path) -> None:
    (root / "d").mkdir()
    error = fails(root, wrap("*** Add File: d\n+x"))
    assert "Failed to write file d: Is a directory" in str(error)


def test_add_under_an_existing_file_fails(root: Path) -> None:
    write(root, "a.txt", "x\n")
    error = fails(root, wrap("*** Add File: a.txt/b.txt\n+x"))
    assert "Failed to create parent directories for a.txt/b.txt" in str(error)


def test_delete_file(root: Path) -> None:
    write(root, "old.txt", "bye\n")
    write(root, "keep.txt", "keep\n")
    result = apply(root, "*** Delete File: old.txt")
    assert not (root / "old.txt").exists()
    assert read(root, "keep.txt") == b"keep\n"
    assert result.summary == ["D old.txt"]
    assert "--- a/old.txt\n+++ /dev/null\n" in result.diff
    assert "-bye" in result.diff


def test_delete_leaves_the_now_empty_directory(root: Path) -> None:
    write(root, "d/only.txt", "x\n")
    apply(root, "*** Delete File: d/only.txt")
    assert (root / "d").is_dir()


def test_delete_binary_file(root: Path) -> None:
    write(root, "blob.bin", b"\x00\xff\xfe")
    result = apply(root, "*** Delete File: blob.bin")
    assert not (root / "blob.bin").exists()
    assert "binary file" in result.diff


def test_delete_missing_file(root: Path) -> None:
    error = fails(root, wrap("*** Delete File: missing.txt"))
    assert str(error).startswith("apply_patch verification failed: Failed to read missing.txt")
    assert "No such file or directory" in str(error)


def test_delete_directory(root: Path) -> None:
    write(root, "dir/f.txt", "x\n")
    error = fails(root, wrap("*** Delete File: dir"))
    assert "Failed to read dir: Is a directory" in str(error)


def test_update_missing_file(root: Path) -> None:
    error = fails(root, wrap("*** Update File: missing.txt\n@@\n-a\n+b"))
    assert "Failed to read file to update missing.txt: No such file or directory" in str(error)


def test_update_a_directory(root: Path) -> None:
    (root / "d").mkdir()
    error = fails(root, wrap("*** Update File: d\n@@\n-a\n+b"))
    assert "Failed to read file to update d: Is a directory" in str(error)


def test_update_hunk_at_start_of_file(root: Path) -> None:
    write(root, "f.txt", "one\ntwo\nthree\n")
    apply(root, "*** Update File: f.txt\n@@\n-one\n+ONE\n two")
    assert read(root, "f.txt") == b"ONE\ntwo\nthree\n"


def test_update_hunk_at_end_of_file(root: Path) -> None:
    write(root, "f.txt", "one\ntwo\nthree\n")
    apply(root, "*** Update File: f.txt\n@@\n two\n-three\n+THREE\n+four")
    assert read(root, "f.txt") == b"one\ntwo\nTHREE\nfour\n"


def test_two_hunks_in_one_file(root: Path) -> None:
    write(root, "f.txt", "a\nb\nc\nd\ne\n")
    result = apply(root, "*** Update File: f.txt\n@@\n a\n-b\n+B\n@@\n d\n-e\n+E")
    assert read(root, "f.txt") == b"a\nB\nc\nd\nE\n"
    assert result.summary == ["M f.txt"]


def test_removal_only_and_insertion_only(root: Path) -> None:
    write(root, "f.txt", "a\nb\nc\n")
    apply(root, "*** Update File: f.txt\n@@\n a\n-b\n c")
    assert read(root, "f.txt") == b"a\nc\n"
    apply(root, "*** Update File: f.txt\n@@\n a\n+between\n c")
    assert read(root, "f.txt") == b"a\nbetween\nc\n"


def test_end_of_file_anchor_picks_the_last_occurrence(root: Path) -> None:
    write(root, "f.txt", "x\nend\nx\nend\n")
    apply(root, "*** Update File: f.txt\n@@\n x\n-end\n+END\n*** End of File")
    assert read(root, "f.txt") == b"x\nend\nx\nEND\n"


def test_end_of_file_anchor_must_match_at_the_end(root: Path) -> None:
    write(root, "f.txt", "a\nb\nc\n")
    error = fails(root, wrap("*** Update File: f.txt\n@@\n-a\n+A\n*** End of File"))
    assert "Failed to find expected lines in f.txt" in str(error)
    assert "*** End of File" in str(error)
    assert "These lines are at line 1, which is not the end of the file." in str(error)


def test_pure_addition_without_at_at_line_appends_at_end(root: Path) -> None:
    write(root, "f.txt", "a\nb\n")
    apply(root, "*** Update File: f.txt\n@@\n+c")
    assert read(root, "f.txt") == b"a\nb\nc\n"


def test_pure_addition_after_at_at_line_inserts_after_it(root: Path) -> None:
    """Deliberate difference: Codex appends such a hunk at the end of the file."""
    write(root, "f.py", "class A:\n    x = 1\n\nclass B:\n    y = 2\n")
    apply(root, "*** Update File: f.py\n@@ class A:\n+    w = 0")
    assert read(root, "f.py") == b"class A:\n    w = 0\n    x = 1\n\nclass B:\n    y = 2\n"


def test_at_at_line_narrows_the_search(root: Path) -> None:
    write(root, "f.py", "def a():\n    return 1\n\ndef b():\n    return 1\n")
    apply(root, "*** Update File: f.py\n@@ def b():\n-    return 1\n+    return 2")
    assert read(root, "f.py") == b"def a():\n    return 1\n\ndef b():\n    return 2\n"


def test_several_at_at_lines_narrow_step_by_step(root: Path) -> None:
    write(root, "f.py", "class A:\n    def f(self):\n        pass\nclass B:\n    def f(self):\n        pass\n")
    apply(root, "*** Update File: f.py\n@@ class B:\n@@     def f(self):\n-        pass\n+        return 1")
    assert read(root, "f.py").endswith(b"class B:\n    def f(self):\n        return 1\n")
    assert read(root, "f.py").startswith(b"class A:\n    def f(self):\n        pass\n")


def test_at_at_line_repeated_as_first_context_line(root: Path) -> None:
    write(root, "f.py", "def f():\n    return 1\n")
    apply(root, "*** Update File: f.py\n@@ def f():\n def f():\n-    return 1\n+    return 2")
    assert read(root, "f.py") == b"def f():\n    return 2\n"


def test_context_not_found(root: Path) -> None:
    write(root, "f.py", "def handler(request):\n    return 1\n")
    error = fails(root, wrap("*** Update File: f.py\n@@ def handlr(request):\n-    return 1\n+    return 2"))
    assert str(error).startswith(
        "apply_patch verification failed: Failed to find context 'def handlr(request):' in f.py"
    )
    assert "1 | def handler(request):" in str(error)


def test_search_proceeds_forward_from_the_previous_hunk(root: Path) -> None:
    write(root, "f.txt", "a\nb\nc\nd\n")
    error = fails(root, wrap("*** Update File: f.txt\n@@\n-c\n+C\n@@\n-a\n+A"))
    assert "Failed to find expected lines in f.txt:\na" in str(error)
    assert "hunks must follow the order of the file" in str(error)


def test_second_hunk_placed_by_the_previous_one(root: Path) -> None:
    write(root, "f.txt", "start\nx\nmiddle\nx\n")
    apply(root, "*** Update File: f.txt\n@@\n-middle\n+MIDDLE\n@@\n-x\n+X")
    assert read(root, "f.txt") == b"start\nx\nMIDDLE\nX\n"


def test_ambiguous_hunk_is_an_error(root: Path) -> None:
    write(root, "f.py", "x = 1\npass\ny = 2\npass\n")
    error = fails(root, wrap("*** Update File: f.py\n@@\n-pass\n+return"))
    assert "Ambiguous hunk in f.py" in str(error)
    assert "line 2, line 4" in str(error)
    assert "@@" in str(error)


def test_ambiguity_resolved_by_more_context(root: Path) -> None:
    write(root, "f.py", "x = 1\npass\ny = 2\npass\n")
    apply(root, "*** Update File: f.py\n@@\n y = 2\n-pass\n+return")
    assert read(root, "f.py") == b"x = 1\npass\ny = 2\nreturn\n"


def test_ambiguity_resolved_by_at_at_line(root: Path) -> None:
    write(root, "f.py", "x = 1\npass\ny = 2\npass\n")
    apply(root, "*** Update File: f.py\n@@ y = 2\n-pass\n+return")
    assert read(root, "f.py") == b"x = 1\npass\ny = 2\nreturn\n"


def test_hunk_mismatch_reports_the_closest_region(root: Path) -> None:
    lines = [f"line {n}" for n in range(1, 31)]
    lines[19] = "    value = compute(alpha, beta)"
    lines[20] = "    return value"
    write(root, "src/m.py", "\n".join(lines) + "\n")
    error = fails(
        root,
        wrap(
            "*** Update File: src/m.py\n@@\n line 19\n-    value = compute(alpha, gamma)\n+    value = 0\n"
            "     return value"
        ),
    )
    message = str(error)
    assert message.startswith(
        "apply_patch verification failed: Failed to find expected lines in src/m.py:\n"
        "line 19\n    value = compute(alpha, gamma)\n    return value\n"
    )
    assert "Hunk 1 of 1 (patch line 3)" in message
    assert "Closest match in src/m.py, lines 19-21" in message
    assert "20 |     value = compute(alpha, beta)" in message
    assert "First difference at line 20" in message
    assert error.cli_message.startswith("Failed to find expected lines in src/m.py:")


def test_mismatch_with_nothing_similar(root: Path) -> None:
    write(root, "f.txt", "alpha\nbeta\n")
    error = fails(root, wrap("*** Update File: f.txt\n@@\n-zzzzzzzzzzzzzz 12345\n+q"))
    assert "Nothing in f.txt resembles these lines" in str(error)


def test_mismatch_in_empty_file(root: Path) -> None:
    write(root, "f.txt", "")
    error = fails(root, wrap("*** Update File: f.txt\n@@\n-a\n+b"))
    assert "f.txt is empty" in str(error)


# -- matching leniency ----------------------------------------------------------------


def test_match_ignoring_trailing_whitespace(root: Path) -> None:
    write(root, "f.txt", "keep   \nold\t\n")
    apply(root, "*** Update File: f.txt\n@@\n keep\n-old\n+new")
    # Context lines keep the file's own text (deliberate: Codex rewrites them with the patch's).
    assert read(root, "f.txt") == b"keep   \nnew\n"


def test_match_ignoring_surrounding_whitespace(root: Path) -> None:
    write(root, "f.txt", "    indented\n        old\n")
    apply(root, "*** Update File: f.txt\n@@\n indented\n-old\n+        new")
    assert read(root, "f.txt") == b"    indented\n        new\n"


def test_match_with_unicode_punctuation_normalised(root: Path) -> None:
    write(root, "f.py", "s = \u201chello\u201d  # it\u2019s \u2013 fine\u00a0here\nx = 1\n")
    apply(root, '*** Update File: f.py\n@@\n s = "hello"  # it\'s - fine here\n-x = 1\n+x = 2')
    assert read(root, "f.py") == "s = \u201chello\u201d  # it\u2019s \u2013 fine\u00a0here\nx = 2\n".encode()


def test_exact_match_preferred_over_fuzzy(root: Path) -> None:
    write(root, "f.txt", "a  \nb\na\nb\n")
    apply(root, "*** Update File: f.txt\n@@\n-a\n+A\n b")
    assert read(root, "f.txt") == b"a  \nb\nA\nb\n"


def test_trailing_blank_context_line_stands_for_the_final_newline(root: Path) -> None:
    write(root, "f.txt", "foo\nbar\nbaz\n")
    apply(root, "*** Update File: f.txt\n@@\n foo\n bar\n-baz\n+BAZ\n\n")
    assert read(root, "f.txt") == b"foo\nbar\nBAZ\n"


# -- text details -----------------------------------------------------------------------


def test_crlf_file_keeps_crlf(root: Path) -> None:
    write(root, "w.txt", "one\r\ntwo\r\nthree\r\n")
    apply(root, "*** Update File: w.txt\n@@\n one\n-two\n+TWO\n+2.5\n three")
    assert read(root, "w.txt") == b"one\r\nTWO\r\n2.5\r\nthree\r\n"


def test_crlf_patch_on_lf_file(root: Path) -> None:
    write(root, "u.txt", "one\ntwo\n")
    apply_patch("*** Begin Patch\r\n*** Update File: u.txt\r\n@@\r\n-two\r\n+TWO\r\n*** End Patch\r\n", str(root))
    assert read(root, "u.txt") == b"one\nTWO\n"


def test_mixed_line_endings_are_kept_line_by_line(root: Path) -> None:
    write(root, "m.txt", "a\nb\r\nc\nd\r\n")
    apply(root, "*** Update File: m.txt\n@@\n b\n-c\n+C\n d")
    assert read(root, "m.txt") == b"a\nb\r\nC\nd\r\n"


def test_missing_final_newline_is_added(root: Path) -> None:
    write(root, "n.txt", "a\nb")
    apply(root, "*** Update File: n.txt\n@@\n-a\n+A")
    assert read(root, "n.txt") == b"A\nb\n"


def test_missing_final_newline_on_crlf_file(root: Path) -> None:
    write(root, "n.txt", "a\r\nb")
    apply(root, "*** Update File: n.txt\n@@\n-b\n+B")
    assert read(root, "n.txt") == b"a\r\nB\r\n"


def test_diff_shows_the_added_final_newline(root: Path) -> None:
    write(root, "n.txt", "a\nb")
    result = apply(root, "*** Update File: n.txt\n@@\n-a\n+A")
    assert "\\ No newline at end of file" in result.diff


def test_update_empty_file(root: Path) -> None:
    write(root, "e.txt", "")
    apply(root, "*** Update File: e.txt\n@@\n+first\n+second")
    assert read(root, "e.txt") == b"first\nsecond\n"


def test_removing_every_line_leaves_an_empty_file(root: Path) -> None:
    write(root, "e.txt", "only\n")
    apply(root, "*** Update File: e.txt\n@@\n-only")
    assert read(root, "e.txt") == b""


def test_unicode_content(root: Path) -> None:
    write(root, "u.txt", "na\u00efve caf\u00e9\n\u65e5\u672c\u8a9e\n")
    apply(root, "*** Update File: u.txt\n@@\n na\u00efve caf\u00e9\n-\u65e5\u672c\u8a9e\n+\u4e2d\u6587 \u2705")
    assert read(root, "u.txt") == "na\u00efve caf\u00e9\n\u4e2d\u6587 \u2705\n".encode()


def test_byte_order_mark_is_kept(root: Path) -> None:
    write(root, "b.txt", "\ufefffirst\nsecond\n")
    apply(root, "*** Update File: b.txt\n@@\n-first\n+FIRST")
    assert read(root, "b.txt") == "\ufeffFIRST\nsecond\n".encode()


def test_non_utf8_file_cannot_be_updated(root: Path) -> None:
    write(root, "latin.txt", b"caf\xe9\n")
    error = fails(root, wrap("*** Update File: latin.txt\n@@\n-caf\n+cafe"))
    assert "Failed to read file to update latin.txt: stream did not contain valid UTF-8" in str(error)


def test_update_without_changes(root: Path) -> None:
    write(root, "f.txt", "same\n")
    result = apply(root, "*** Update File: f.txt\n@@\n same")
    assert result.summary == ["M f.txt (no changes)"]
    assert result.changed_paths == []


def test_update_preserves_mode(root: Path) -> None:
    path = write(root, "run.sh", "#!/bin/sh\necho hi\n")
    path.chmod(0o755)
    apply(root, "*** Update File: run.sh\n@@\n-echo hi\n+echo bye")
    assert stat.S_IMODE(path.stat().st_mode) == 0o755


def test_write_goes_through_rename_and_leaves_no_temp_file(root: Path) -> None:
    path = write(root, "f.txt", "a\n")
    inode = path.stat().st_ino
    apply(root, "*** Update File: f.txt\n@@\n-a\n+b")
    assert path.stat().st_ino != inode
    assert sorted(p.name for p in root.iterdir()) == ["f.txt"]


# -- moves ------------------------------------------------------------------------------


def test_move_with_edits(root: Path) -> None:
    write(root, "old/name.py", "def f():\n    return 1\n")
    write(root, "old/other.py", "keep\n")
    result = apply(root, "*** Update File: old/name.py\n*** Move to: new/dir/name.py\n@@\n-    return 1\n+    return 2")
    assert not (root / "old/name.py").exists()
    assert read(root, "new/dir/name.py") == b"def f():\n    return 2\n"
    assert read(root, "old/other.py") == b"keep\n"
    assert result.summary == ["R old/name.py -> new/dir/name.py"]
    assert set(result.changed_paths) == {"old/name.py", "new/dir/name.py"}
    assert "--- a/old/name.py\n+++ b/new/dir/name.py\n" in result.diff


def test_move_onto_existing_file_replaces_it_and_says_so(root: Path) -> None:
    write(root, "a.txt", "from\n")
    write(root, "b.txt", "existing\n")
    result = apply(root, "*** Update File: a.txt\n*** Move to: b.txt\n@@\n-from\n+new")
    assert not (root / "a.txt").exists()
    assert read(root, "b.txt") == b"new\n"
    assert result.summary == ["R a.txt -> b.txt (replaced the existing b.txt)"]


def test_move_without_content_change(root: Path) -> None:
    write(root, "a.txt", "same\n")
    result = apply(root, "*** Update File: a.txt\n*** Move to: b.txt\n@@\n same")
    assert read(root, "b.txt") == b"same\n"
    assert not (root / "a.txt").exists()
    assert "(moved, content unchanged)" in result.diff


def test_move_keeps_the_mode(root: Path) -> None:
    path = write(root, "tool.sh", "echo 1\n")
    path.chmod(0o700)
    apply(root, "*** Update File: tool.sh\n*** Move to: bin/tool.sh\n@@\n-echo 1\n+echo 2")
    assert stat.S_IMODE((root / "bin/tool.sh").stat().st_mode) == 0o700


def test_move_to_the_same_path_is_an_update(root: Path) -> None:
    write(root, "a.txt", "x\n")
    apply(root, "*** Update File: a.txt\n*** Move to: ./a.txt\n@@\n-x\n+y")
    assert read(root, "a.txt") == b"y\n"


def test_move_onto_a_directory_fails(root: Path) -> None:
    write(root, "a.txt", "x\n")
    (root / "d").mkdir()
    error = fails(root, wrap("*** Update File: a.txt\n*** Move to: d\n@@\n-x\n+y"))
    assert "Failed to write file d: Is a directory" in str(error)


# -- several operations on the same files -----------------------------------------------


def test_operations_apply_in_order_on_the_same_file(root: Path) -> None:
    apply(
        root,
        "*** Add File: f.txt\n+one\n*** Update File: f.txt\n@@\n-one\n+two\n*** Update File: f.txt\n@@\n-two\n+three",
    )
    assert read(root, "f.txt") == b"three\n"


def test_add_then_delete_changes_nothing_on_disk(root: Path) -> None:
    result = apply(root, "*** Add File: tmp.txt\n+x\n*** Delete File: tmp.txt")
    assert not (root / "tmp.txt").exists()
    assert result.summary == ["A tmp.txt", "D tmp.txt"]
    assert result.changed_paths == []


def test_delete_twice_fails(root: Path) -> None:
    write(root, "f.txt", "x\n")
    error = fails(root, wrap("*** Delete File: f.txt\n*** Delete File: f.txt"))
    assert "Failed to read f.txt: No such file or directory" in str(error)


def test_delete_file_then_add_directory_in_its_place(root: Path) -> None:
    write(root, "thing", "file\n")
    apply(root, "*** Delete File: thing\n*** Add File: thing/inside.txt\n+x")
    assert read(root, "thing/inside.txt") == b"x\n"


def test_add_file_and_file_under_it_conflict(root: Path) -> None:
    error = fails(root, wrap("*** Add File: a\n+x\n*** Add File: a/b\n+y"))
    assert "Failed to create parent directories for a/b: a is a file in this patch" in str(error)


def test_three_files_where_the_third_fails_changes_nothing(root: Path) -> None:
    write(root, "one.txt", "1\n")
    write(root, "two.txt", "2\n")
    write(root, "three.txt", "3\n")
    error = fails(
        root,
        wrap(
            "*** Update File: one.txt\n@@\n-1\n+one\n"
            "*** Add File: new/dir/two.txt\n+2\n"
            "*** Delete File: two.txt\n"
            "*** Update File: three.txt\n@@\n-30\n+three"
        ),
    )
    assert "Failed to find expected lines in three.txt" in str(error)
    assert "No files were changed" in str(error)
    assert not (root / "new").exists()


# --------------------------------------------------------------------------------------
# Safety
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    ["/etc/passwd", "\\\\server\\share", "C:\\x.txt", "../escape.txt", "a/../../escape.txt", "~/x", "."],
)
def test_paths_outside_the_root_are_refused(root: Path, path: str) -> None:
    error = fails(root, wrap(f"*** Add File: {path}\n+x"))
    assert str(error).startswith("patch rejected:")
    assert not (root.parent / "escape.txt").exists()


def test_refusal_wording_matches_codex(root: Path) -> None:
    error = fails(root, wrap("*** Add File: ../escape.txt\n+outside"))
    assert "patch rejected: writing outside of the project; rejected by user approval settings" in str(error)
    assert "'..'" in str(error)


@pytest.mark.parametrize("path", [".git/config", ".GIT/hooks/pre-commit", "./.Git/x", "sub/.git/HEAD", "a//.git"])
def test_git_directories_are_never_written(root: Path, path: str) -> None:
    write(root, ".git/config", "[core]\n")
    error = fails(root, wrap(f"*** Add File: {path}\n+x"))
    assert ".git" in str(error)


def test_move_into_git_is_refused(root: Path) -> None:
    write(root, "a.txt", "x\n")
    error = fails(root, wrap("*** Update File: a.txt\n*** Move to: .git/a.txt\n@@\n-x\n+y"))
    assert ".git" in str(error)


def test_normalize_path() -> None:
    assert normalize_path("./a//b/./c.txt") == "a/b/c.txt"
    assert normalize_path(".gitignore") == ".gitignore"
    assert normalize_path(".github/workflows/ci.yml") == ".github/workflows/ci.yml"
    for bad in ["", "  ", "/abs", "..", "a/../b", ".git", "x/.GIT/y", "a\x00b"]:
        with pytest.raises(PatchError):
            normalize_path(bad)


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    path = tmp_path / "outside"
    path.mkdir()
    (path / "secret.txt").write_text("secret\n")
    return path


def test_symlinked_directory_leaving_the_root_is_refused(root: Path, outside: Path) -> None:
    (root / "link").symlink_to(outside)
    for body in [
        "*** Add File: link/new.txt\n+x",
        "*** Update File: link/secret.txt\n@@\n-secret\n+pwned",
        "*** Delete File: link/secret.txt",
    ]:
        error = fails(root, wrap(body))
        assert "symbolic link 'link'" in str(error) or "outside the repository root" in str(error)
    assert (outside / "secret.txt").read_text() == "secret\n"
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]


def test_symlinked_file_leaving_the_root_is_refused(root: Path, outside: Path) -> None:
    (root / "s.txt").symlink_to(outside / "secret.txt")
    error = fails(root, wrap("*** Update File: s.txt\n@@\n-secret\n+pwned"))
    assert "resolves through a symlink" in str(error)
    error = fails(root, wrap("*** Add File: s.txt\n+pwned"))
    assert (outside / "secret.txt").read_text() == "secret\n"


def test_move_destination_through_symlink_is_refused(root: Path, outside: Path) -> None:
    write(root, "a.txt", "x\n")
    (root / "link").symlink_to(outside)
    fails(root, wrap("*** Update File: a.txt\n*** Move to: link/a.txt\n@@\n-x\n+y"))
    assert not (outside / "a.txt").exists()


def test_symlink_into_git_is_refused(root: Path) -> None:
    write(root, ".git/config", "[core]\n")
    (root / "g").symlink_to(root / ".git")
    error = fails(root, wrap("*** Update File: g/config\n@@\n-[core]\n+[evil]"))
    assert ".git" in str(error)
    assert read(root, ".git/config") == b"[core]\n"


def test_no_write_goes_through_a_symlink_inside_the_root(root: Path) -> None:
    # The policy judges paths as the patch names them: a link would carry a write past it
    # (src/alias -> secrets). So the engine never writes through one and names the real path.
    write(root, "real/f.txt", "a\n")
    (root / "alias").symlink_to("real")
    (root / "f-link.txt").symlink_to("real/f.txt")
    for body, real in [
        ("*** Update File: alias/f.txt\n@@\n-a\n+b", "use the real path"),
        ("*** Add File: alias/new.txt\n+x", "use the real path"),
        ("*** Update File: f-link.txt\n@@\n-a\n+b", "patch the real path 'real/f.txt'"),
        ("*** Add File: f-link.txt\n+x", "patch the real path 'real/f.txt'"),
        ("*** Update File: real/f.txt\n*** Move to: f-link.txt\n@@\n-a\n+b", "patch the real path"),
    ]:
        error = fails(root, wrap(body))
        assert "symbolic link" in str(error) and real in str(error), str(error)
    assert read(root, "real/f.txt") == b"a\n"
    apply(root, "*** Update File: real/f.txt\n@@\n-a\n+b")  # the real path works
    assert read(root, "real/f.txt") == b"b\n" and (root / "f-link.txt").is_symlink()


def test_deleting_a_symlink_removes_only_the_link(root: Path) -> None:
    write(root, "target.txt", "t\n")
    (root / "link.txt").symlink_to("target.txt")
    apply(root, "*** Delete File: link.txt")
    assert not os.path.lexists(root / "link.txt")
    assert read(root, "target.txt") == b"t\n"


def test_deleting_a_symlink_then_adding_a_file_in_its_place(root: Path) -> None:
    write(root, "target.txt", "t\n")
    (root / "link.txt").symlink_to("target.txt")
    apply(root, "*** Delete File: link.txt\n*** Add File: link.txt\n+own\n")
    assert not (root / "link.txt").is_symlink()
    assert read(root, "link.txt") == b"own\n"
    assert read(root, "target.txt") == b"t\n"


def test_every_path_is_checked_before_anything_is_written(root: Path) -> None:
    write(root, "a.txt", "a\n")
    fails(root, wrap("*** Add File: fine.txt\n+x\n*** Update File: a.txt\n@@\n-a\n+b\n*** Add File: ../bad.txt\n+x"))
    assert not (root.parent / "bad.txt").exists()


def test_special_files_are_refused(root: Path) -> None:
    os.mkfifo(root / "pipe")
    error = fails(root, wrap("*** Update File: pipe\n@@\n-a\n+b"))
    assert "not a regular file" in str(error)


def test_root_must_be_a_directory(tmp_path: Path) -> None:
    with pytest.raises(PatchError, match="not a directory"):
        apply_patch(wrap("*** Add File: a\n+x"), str(tmp_path / "missing"))


# -- limits -----------------------------------------------------------------------------


def test_patch_size_limit(root: Path) -> None:
    error = fails(root, wrap("*** Add File: big.txt\n" + "+xxxxxxxxxx\n" * 100), max_patch_bytes=500)
    assert "over apply_patch's limit of 500 bytes" in str(error)


def test_file_size_limit_on_read(root: Path) -> None:
    write(root, "big.txt", "x" * 2000 + "\n")
    error = fails(root, wrap("*** Update File: big.txt\n@@\n+y"), max_file_bytes=1000)
    assert "Failed to read big.txt: the file is 2001 bytes" in str(error)


def test_file_size_limit_on_result(root: Path) -> None:
    error = fails(root, wrap("*** Add File: big.txt\n" + "+" + "x" * 2000), max_file_bytes=1000)
    assert "the result would be 2001 bytes" in str(error)


def test_diff_is_capped_with_a_note(root: Path) -> None:
    body = "*** Add File: big.txt\n" + "".join(f"+line number {n}\n" for n in range(2000))
    result = apply(root, body, max_diff_chars=2000)
    assert result.diff_truncated
    assert len(result.diff) < 2300
    assert "diff cut:" in result.diff
    assert "lines (" in result.diff
    assert result.diff.startswith("--- /dev/null\n+++ b/big.txt\n")
    assert result.diff.rstrip().endswith("+line number 1999")
    assert read(root, "big.txt").count(b"\n") == 2000


# -- result -------------------------------------------------------------------------------


def test_result_text(root: Path) -> None:
    write(root, "m.txt", "a\n")
    write(root, "d.txt", "d\n")
    write(root, "r.txt", "r\n")
    result = apply(
        root,
        "*** Add File: a.txt\n+new\n*** Update File: m.txt\n@@\n-a\n+b\n*** Delete File: d.txt\n"
        "*** Update File: r.txt\n*** Move to: moved/r.txt\n@@\n-r\n+R",
    )
    assert result.summary == ["A a.txt", "M m.txt", "D d.txt", "R r.txt -> moved/r.txt"]
    assert result.changed_paths == ["d.txt", "r.txt", "a.txt", "m.txt", "moved/r.txt"]
    text = result.text()
    assert text.startswith(
        "Success. Updated the following files:\nA a.txt\nM m.txt\nD d.txt\nR r.txt -> moved/r.txt\n\n"
    )
    assert "--- a/m.txt\n+++ b/m.txt\n@@ -1 +1 @@\n-a\n+b\n" in text


def test_empty_patch_error(root: Path) -> None:
    error = fails(root, "*** Begin Patch\n*** End Patch")
    assert str(error).startswith("patch rejected: empty patch")
    assert error.cli_message == "No files were modified."


# -- rollback ---------------------------------------------------------------------------


def test_failure_while_writing_rolls_back(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(root, "a.txt", "a\n")
    write(root, "b.txt", "b\n")
    write(root, "gone.txt", "gone\n")
    before = snapshot(root)
    real_replace = os.replace
    calls = {"n": 0}

    def flaky_replace(src: str, dst: str) -> None:
        calls["n"] += 1
        if calls["n"] == 3:
            raise OSError(28, "No space left on device")
        real_replace(src, dst)

    monkeypatch.setattr(patch_commit.os, "replace", flaky_replace)
    with pytest.raises(PatchError) as info:
        apply(
            root,
            "*** Delete File: gone.txt\n*** Add File: new/deep/c.txt\n+c\n"
            "*** Update File: a.txt\n@@\n-a\n+A\n*** Update File: b.txt\n@@\n-b\n+B",
        )
    monkeypatch.undo()
    message = str(info.value)
    assert message.startswith("apply_patch failed: Failed to write file b.txt: No space left on device")
    assert "restored" in message
    assert snapshot(root) == before


def test_rollback_puts_back_a_file_replaced_by_a_directory(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(root, "thing", "file\n")
    write(root, "z.txt", "z\n")
    before = snapshot(root)
    real_replace = os.replace
    calls = {"n": 0}

    def flaky_replace(src: str, dst: str) -> None:
        calls["n"] += 1
        if calls["n"] == 2:
            raise OSError(28, "No space left on device")
        real_replace(src, dst)

    monkeypatch.setattr(patch_commit.os, "replace", flaky_replace)
    with pytest.raises(PatchError) as info:
        apply(
            root, "*** Delete File: thing\n*** Add File: thing/deep/inside.txt\n+x\n*** Update File: z.txt\n@@\n-z\n+Z"
        )
    monkeypatch.undo()
    assert "restored" in str(info.value)
    assert snapshot(root) == before


def test_rollback_restores_a_removed_symlink(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(root, "target.txt", "t\n")
    write(root, "a.txt", "a\n")
    (root / "link.txt").symlink_to("target.txt")
    before = snapshot(root)

    def broken_replace(src: str, dst: str) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(patch_commit.os, "replace", broken_replace)
    with pytest.raises(PatchError):
        apply(root, "*** Delete File: link.txt\n*** Update File: a.txt\n@@\n-a\n+b")
    monkeypatch.undo()
    assert snapshot(root) == before


# --------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------


def cli(args: list[str], stdin: bytes) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "sandbox.patch", *args],
        input=stdin,
        capture_output=True,
        cwd=str(REPO),
        env=dict(os.environ, PYTHONPATH=str(REPO)),
        timeout=60,
        check=False,
    )


def test_cli_success(root: Path) -> None:
    write(root, "m.txt", "a\n")
    proc = cli(["--root", str(root)], wrap("*** Add File: x.txt\n+x\n*** Update File: m.txt\n@@\n-a\n+b").encode())
    assert proc.returncode == 0
    assert proc.stdout.decode() == "Success. Updated the following files:\nA x.txt\nM m.txt\n"
    assert proc.stderr == b""
    assert read(root, "x.txt") == b"x\n"
    assert read(root, "m.txt") == b"b\n"


def test_cli_diff_flag(root: Path) -> None:
    proc = cli(["--root", str(root), "--diff"], wrap("*** Add File: x.txt\n+x").encode())
    assert proc.returncode == 0
    assert "+++ b/x.txt" in proc.stdout.decode()


def test_cli_failure_changes_nothing(root: Path) -> None:
    write(root, "m.txt", "a\n")
    before = snapshot(root)
    proc = cli(
        ["--root", str(root)],
        wrap("*** Add File: x.txt\n+x\n*** Update File: m.txt\n@@\n-zzz\n+b").encode(),
    )
    assert proc.returncode == 1
    assert proc.stdout == b""
    assert proc.stderr.decode().startswith("Failed to find expected lines in m.txt:\nzzz\n")
    assert snapshot(root) == before


def test_cli_parse_error_uses_codex_cli_wording(root: Path) -> None:
    proc = cli(["--root", str(root)], wrap("*** Frobnicate File: foo").encode())
    assert proc.returncode == 1
    assert proc.stderr.decode().startswith("Invalid patch hunk on line 2: '*** Frobnicate File: foo'")


def test_cli_rejects_invalid_utf8(root: Path) -> None:
    proc = cli(["--root", str(root)], b"*** Begin Patch\n*** Add File: a\n+\xff\n*** End Patch\n")
    assert proc.returncode == 1
    assert b"not valid UTF-8" in proc.stderr
    assert list(root.iterdir()) == []


def test_cli_patch_size_limit(root: Path) -> None:
    proc = cli(["--root", str(root), "--max-patch-bytes", "20"], wrap("*** Add File: a\n+x").encode())
    assert proc.returncode == 1
    assert b"limit of 20 bytes" in proc.stderr


def test_cli_missing_root(root: Path) -> None:
    proc = cli(["--root", str(root / "nope")], wrap("*** Add File: a\n+x").encode())
    assert proc.returncode == 1
    assert b"not a directory" in proc.stderr


def test_cli_usage_error() -> None:
    proc = cli([], b"")
    assert proc.returncode == 2
    assert b"--root" in proc.stderr


def _python_3_9() -> str | None:
    """A working python 3.9 interpreter (the oldest the sandbox image may have), if installed."""
    candidates = sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.9*/bin/python3.9")))
    candidates.append(shutil.which("python3.9") or "")
    for candidate in candidates:
        if not candidate:
            continue
        probe = subprocess.run(
            [candidate, "-c", "import sys; print(sys.version_info[:2] == (3, 9))"],
            capture_output=True,
            timeout=30,
            check=False,
        )
        if probe.returncode == 0 and probe.stdout.strip() == b"True":
            return candidate
    return None


def test_cli_runs_on_python_3_9(root: Path) -> None:
    python = _python_3_9()
    if python is None:
        pytest.skip("no python3.9 interpreter installed to check the >= 3.9 promise")
    write(root, "m.txt", "one\r\ntwo\r\n")
    write(root, "gone.txt", "x\n")
    text = wrap(
        "*** Add File: new/a.txt\n+a\n*** Delete File: gone.txt\n"
        "*** Update File: m.txt\n*** Move to: n.txt\n@@\n-two\n+TWO"
    )
    proc = subprocess.run(
        [python, "-m", "sandbox.patch", "--root", str(root), "--diff"],
        input=text.encode(),
        capture_output=True,
        cwd=str(REPO),
        env=dict(os.environ, PYTHONPATH=str(REPO)),
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stdout.decode().startswith(
        "Success. Updated the following files:\nA new/a.txt\nD gone.txt\nR m.txt -> n.txt\n"
    )
    assert read(root, "n.txt") == b"one\r\nTWO\r\n"
    bad = subprocess.run(
        [python, "-m", "sandbox.patch", "--root", str(root)],
        input=wrap("*** Update File: n.txt\n@@\n-zzz\n+y").encode(),
        capture_output=True,
        cwd=str(REPO),
        env=dict(os.environ, PYTHONPATH=str(REPO)),
        timeout=60,
        check=False,
    )
    assert bad.returncode == 1
    assert b"Failed to find expected lines in n.txt" in bad.stderr


def test_a_path_that_is_not_utf8_text_is_a_patch_error(root: Path) -> None:
    error = fails(root, wrap("*** Add File: a\ud800.py\n+x"))
    assert "not valid UTF-8" in str(error)
