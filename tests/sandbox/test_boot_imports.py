"""What the in-container programs import: a sandbox's boot and its first read_file and search
pay only for what they use (each module here is memory of every idle sandbox, and time of
every first call)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# Not needed by the boot, nor by a read_file or a search (subprocess only when rg runs):
# argparse (with gettext, locale, shutil, bz2, lzma), typing, difflib (only a missing file's
# "did you mean"), dataclasses; nor by run_test (but subprocess): shutil (only for copy_repo),
# tempfile (shutil again, random, weakref).
NOT_NEEDED = (
    "argparse", "gettext", "shutil", "typing", "difflib", "dataclasses", "subprocess", "tempfile", "bz2", "lzma"
)


def _loaded_after(code: str) -> list[str]:
    program = f"import json, sys\n{code}\nprint(json.dumps([m for m in {NOT_NEEDED!r} if m in sys.modules]))"
    done = subprocess.run([sys.executable, "-S", "-c", program], capture_output=True, text=True, cwd=REPO,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    loaded: list[str] = json.loads(done.stdout.splitlines()[-1])
    return loaded


def test_the_boot_imports_none_of_them() -> None:
    assert _loaded_after("import sandbox.container_init, sandbox.server\n"
                         "sandbox.server._parse_args(['--root', '/', '--reap-all'])") == []


@pytest.mark.parametrize("tool", ["read_file", "search", "run_test"])
def test_a_first_call_imports_none_of_them(tool: str, tmp_path: Path) -> None:
    (tmp_path / "f.py").write_text("needle\n")
    args = {"read_file": {"path": "f.py"}, "search": {"query": "needle"}, "run_test": {"argv": ["true"]}}[tool]
    # a literal search under gVisor is the server's own walk: rg (and subprocess) not even imported
    engine = "literal" if tool == "search" else "auto"
    loaded = _loaded_after(
        "import sandbox.server\n"
        f"ctx = sandbox.server.Context({str(tmp_path)!r}, rg='/usr/bin/rg', literal_in_python={engine == 'literal'})\n"
        "from sandbox.tools import catalog\n"
        f"result = catalog.load({tool!r})(ctx, {args!r}, None)\n"
        "assert result.ok, result.output"
    )
    assert loaded == (["subprocess"] if tool == "run_test" else [])
