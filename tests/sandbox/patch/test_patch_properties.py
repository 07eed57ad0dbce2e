"""Property tests of sandbox.patch (hypothesis).

- For random files and random edits, a patch generated from the edit applies and gives
  exactly the edited file (LF or CRLF, with or without a final newline).
- Random paths and operations never write outside the root, nor into .git.
- Random patch-like text only ever fails with PatchError, and a failure changes nothing.
"""

from __future__ import annotations

import contextlib
import difflib
import os
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sandbox.patch import PatchError, apply_patch, parse_patch

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Lines: a few that repeat a lot (to make repeated context likely) and arbitrary text.
# No "\r" (it would read as a CRLF ending), no "\n", no BOM (a file-level marker).
LINE = st.one_of(
    st.sampled_from(["", "a", "b", "  a", "a  ", "}", "\t", "x = 1", "- item", "+ plus", "@@", "*** End Patch"]),
    st.text(
        alphabet=st.characters(blacklist_characters="\r\n\ufeff", blacklist_categories=["Cs"]),
        max_size=12,
    ),
)


def _count(lines: list[str], pattern: list[str], start: int) -> list[int]:
    m = len(pattern)
    return [i for i in range(start, len(lines) - m + 1) if lines[i : i + m] == pattern]


def make_patch(path: str, old: list[str], new: list[str], eof_marker: bool, bare_blanks: bool) -> str | None:
    """An Update File patch turning old into new, with enough context to be unambiguous."""
    opcodes = [op for op in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes()]
    edits = [op for op in opcodes if op[0] != "equal"]
    if not edits:
        return None
    n = len(old)
    for context in range(1, n + 2):
        # Group edits whose context windows touch, in old-file coordinates.
        groups: list[list[tuple[str, int, int, int, int]]] = []
        for op in edits:
            if groups and op[1] - groups[-1][-1][2] <= 2 * context:
                groups[-1].append(op)
            else:
                groups.append([op])
        chunks: list[tuple[int, int, int, int]] = []
        for group in groups:
            a = max(0, group[0][1] - context)
            b = min(n, group[-1][2] + context)
            c = group[0][3] - (group[0][1] - a)
            d = group[-1][4] + (b - group[-1][2])
            chunks.append((a, b, c, d))
        position = 0
        valid = True
        for a, b, _c, _d in chunks:
            pattern = old[a:b]
            if not pattern:
                valid = a == n  # only an empty file gives a chunk without old lines
                break
            hits = _count(old, pattern, position)
            if not hits or hits[0] != a or (position == 0 and len(hits) > 1):
                valid = False
                break
            position = b
        if valid:
            break
    else:  # pragma: no cover - the whole file as context is always valid
        raise AssertionError("no valid patch")
    out = ["*** Begin Patch", "*** Update File: " + path]
    for a, b, c, d in chunks:
        out.append("@@")
        for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old[a:b], new[c:d], autojunk=False).get_opcodes():
            if tag == "equal":
                for line in old[a + i1 : a + i2]:
                    out.append("" if bare_blanks and line == "" else " " + line)
                continue
            out.extend("-" + line for line in old[a + i1 : a + i2])
            out.extend("+" + line for line in new[c + j1 : c + j2])
        if eof_marker and b == n and n > 0:
            out.append("*** End of File")
    out.append("*** End Patch")
    return "\n".join(out) + "\n"


def render(lines: list[str], ending: str, final_newline: bool) -> bytes:
    text = ending.join(lines)
    if lines and final_newline:
        text += ending
    return text.encode("utf-8")


@st.composite
def edits(draw: Any) -> tuple[list[str], list[str]]:
    old = draw(st.lists(LINE, max_size=25))
    new = list(old)
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        kind = draw(st.sampled_from(["insert", "delete", "replace"]))
        if kind == "insert" or not new:
            at = draw(st.integers(min_value=0, max_value=len(new)))
            new[at:at] = draw(st.lists(LINE, min_size=1, max_size=3))
        else:
            at = draw(st.integers(min_value=0, max_value=len(new) - 1))
            size = draw(st.integers(min_value=1, max_value=min(3, len(new) - at)))
            new[at : at + size] = [] if kind == "delete" else draw(st.lists(LINE, min_size=1, max_size=3))
    return old, new


@SETTINGS
@given(
    change=edits(),
    ending=st.sampled_from(["\n", "\r\n"]),
    final_newline=st.booleans(),
    eof_marker=st.booleans(),
    bare_blanks=st.booleans(),
)
def test_generated_patch_gives_exactly_the_edited_file(
    change: tuple[list[str], list[str]], ending: str, final_newline: bool, eof_marker: bool, bare_blanks: bool
) -> None:
    old, new = change
    if old and old[-1] == "":
        final_newline = True  # an empty last line without its newline is no line at all
    text = make_patch("dir/f.txt", old, new, eof_marker, bare_blanks)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp, "dir", "f.txt")
        path.parent.mkdir()
        original = render(old, ending, final_newline)
        path.write_bytes(original)
        if text is None:
            return
        result = apply_patch(text, tmp)
        # A file with no line ending yet (empty, or one unterminated line) gets LF.
        has_ending = len(old) >= 2 or (len(old) == 1 and final_newline)
        expected = render(new, ending if has_ending else "\n", True)
        assert path.read_bytes() == expected
        assert result.summary == ["M dir/f.txt"]
        assert result.changed_paths == (["dir/f.txt"] if expected != original else [])


# --------------------------------------------------------------------------------------
# Paths never leave the root
# --------------------------------------------------------------------------------------

COMPONENT = st.sampled_from(
    [
        "a",
        "f.txt",
        "sub",
        ".",
        "..",
        "",
        ".git",
        ".GIT",
        ".Git",
        "out",
        "outfile",
        "gitlink",
        "in",
        "~",
        " ",
        "x\\..\\y",
    ]
)
PATH = st.builds(
    lambda lead, parts: lead + "/".join(parts),
    st.sampled_from(["", "", "", "/", "./", "../"]),
    st.lists(COMPONENT, min_size=1, max_size=4),
)


def _layout(base: Path) -> Path:
    root = base / "root"
    outside = base / "outside"
    for directory in (root / "sub", root / ".git", outside):
        directory.mkdir(parents=True)
    for path in (root / "f.txt", root / "sub" / "f.txt", root / ".git" / "f.txt", outside / "f.txt"):
        path.write_text("keep\n")
    (root / ".git" / "config").write_text("[core]\n")
    (root / "out").symlink_to("../outside")
    (root / "outfile").symlink_to("../outside/f.txt")
    (root / "gitlink").symlink_to(".git")
    (root / "in").symlink_to("sub")
    return root


def _snapshot(top: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for dirpath, dirs, files in os.walk(top):
        for name in dirs + files:
            path = Path(dirpath, name)
            rel = path.relative_to(top).as_posix()
            if path.is_symlink():
                out[rel] = ("link", os.readlink(path))
            elif path.is_dir():
                out[rel] = ("dir",)
            else:
                out[rel] = ("file", path.read_bytes())
    return out


OPERATION = st.one_of(
    st.builds(lambda p: f"*** Add File: {p}\n+pwned", PATH),
    st.builds(lambda p: f"*** Delete File: {p}", PATH),
    st.builds(lambda p: f"*** Update File: {p}\n@@\n-keep\n+pwned", PATH),
    st.builds(lambda p, q: f"*** Update File: {p}\n*** Move to: {q}\n@@\n-keep\n+pwned", PATH, PATH),
)


@SETTINGS
@given(operations=st.lists(OPERATION, min_size=1, max_size=3))
def test_a_patch_never_writes_outside_the_root(operations: list[str]) -> None:
    text = "*** Begin Patch\n" + "\n".join(operations) + "\n*** End Patch\n"
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        root = _layout(base)
        outside_before = _snapshot(base / "outside")
        git_before = _snapshot(root / ".git")
        root_before = _snapshot(root)
        try:
            result = apply_patch(text, str(root))
        except PatchError:
            assert _snapshot(root) == root_before, "a rejected patch changes nothing"
        else:
            real_root = os.path.realpath(root)
            for rel in result.changed_paths:
                real = os.path.realpath(os.path.join(real_root, rel))
                assert os.path.commonpath([real_root, real]) == real_root
        assert sorted(p.name for p in base.iterdir()) == ["outside", "root"]
        assert _snapshot(base / "outside") == outside_before
        assert _snapshot(root / ".git") == git_before
        for name, target in [("out", "../outside"), ("outfile", "../outside/f.txt"), ("gitlink", ".git")]:
            assert os.readlink(root / name) == target


# --------------------------------------------------------------------------------------
# Garbage in: PatchError out, nothing changed
# --------------------------------------------------------------------------------------

PATCH_LINE = st.one_of(
    st.sampled_from(
        [
            "*** Begin Patch",
            "*** End Patch",
            "*** Add File: f.txt",
            "*** Add File: new.txt",
            "*** Delete File: f.txt",
            "*** Update File: f.txt",
            "*** Move to: g.txt",
            "*** End of File",
            "@@",
            "@@ keep",
            " keep",
            "-keep",
            "+new",
            "",
            "  ",
            "<<'EOF'",
            "EOF",
            "```",
        ]
    ),
    LINE,
)


@SETTINGS
@given(lines=st.lists(PATCH_LINE, max_size=12), wrap=st.booleans())
def test_random_patch_text_fails_only_with_patch_error(lines: list[str], wrap: bool) -> None:
    text = "\n".join(lines)
    if wrap:
        text = "*** Begin Patch\n" + text + "\n*** End Patch"
    with contextlib.suppress(PatchError):
        parse_patch(text)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "f.txt").write_text("keep\nmore\n")
        before = _snapshot(root)
        try:
            apply_patch(text, tmp)
        except PatchError:
            assert _snapshot(root) == before
