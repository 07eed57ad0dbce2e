"""The documentation: the MkDocs site builds with warnings as errors (a broken link or anchor, a
page missing from the nav), the README stays a front page whose links, set-up commands and speed
figures are true, and no table cell is a wall of text."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
PAGES = sorted((ROOT / "docs").glob("*.md"))
MAX_CELL = 200
MAX_README_LINES = 230


def _mkdocs_problem() -> str | None:
    try:
        import mkdocs  # noqa: F401
    except ImportError:
        return "mkdocs is not installed (it comes with the dev extra)"
    return None


def test_the_site_builds_with_warnings_as_errors(tmp_path: Path) -> None:
    problem = _mkdocs_problem()
    if problem:
        if os.environ.get("CI"):
            pytest.fail(problem)
        pytest.skip(problem)
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(ROOT / "mkdocs.yml"),
         "--site-dir", str(tmp_path / "site")],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    for page in PAGES:
        name = "index.html" if page.stem == "index" else f"{page.stem}/index.html"
        assert (tmp_path / "site" / name).is_file(), name


def _cells(line: str) -> list[str]:
    """A Markdown table row's cells; a `|` inside a code span or escaped does not split."""
    cells, current, in_code, previous = [], "", False, ""
    for char in line.strip().strip("|"):
        if char == "`":
            in_code = not in_code
        if char == "|" and not in_code and previous != "\\":
            cells.append(current.strip())
            current = ""
        else:
            current += char
        previous = char
    return [*cells, current.strip()]


@pytest.mark.parametrize("path", [README, *PAGES], ids=lambda p: p.name)
def test_no_table_cell_is_a_wall_of_text(path: Path) -> None:
    long = [
        (number, len(cell), cell[:60])
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if line.startswith("|")
        for cell in _cells(line)
        if len(cell) > MAX_CELL
    ]
    assert long == []


def test_the_cell_splitter_keeps_code_spans_whole() -> None:
    assert _cells("| `--env auto|none|IMAGE` | b \\| c |") == ["`--env auto|none|IMAGE`", "b \\| c"]


def test_the_readme_is_a_front_page() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= MAX_README_LINES
    headings = re.findall(r"^## (.+)$", text, re.M)
    assert headings[:3] == ["Install", "First run", "Concepts"]
    assert "pipx install codebox-agent" in text  # the name that is ours on PyPI


def test_the_readme_links_point_at_files_that_exist() -> None:
    text = README.read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    local = [t for t in targets if "://" not in t]
    assert len(local) >= 10
    assert [t for t in local if not (ROOT / t).exists()] == []
    assert {f"docs/{p.name}" for p in PAGES} - {"docs/index.md"} <= set(local)  # every page is linked


def test_the_readme_set_up_commands_are_the_ones_dev_sh_has() -> None:
    text = README.read_text(encoding="utf-8")
    dev = (ROOT / "dev.sh").read_text(encoding="utf-8")
    for job in ("demo", "test"):
        assert f"./dev.sh {job}" in text
        assert re.search(rf"^\s+{job}\)$", dev, re.M), job


def test_every_speed_figure_names_a_bench_script_that_exists() -> None:
    text = README.read_text(encoding="utf-8")
    section = text.split("## Speed", 1)[1].split("\n## ", 1)[0]
    rows = [_cells(line) for line in section.splitlines() if line.startswith("| ") and "---" not in line][1:]
    assert len(rows) >= 5
    for row in rows:
        script = row[-1].strip("`")
        assert (ROOT / "bench" / script).is_file(), row
