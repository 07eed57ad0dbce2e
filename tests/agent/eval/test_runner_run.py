"""A log runner's run: its command under the boot program, the whole log teed out and bundled, its variables."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from agent.eval import boot_command
from agent.eval.pytest_run import BOOT_VARIABLE, read_bundle
from agent.eval.runner_run import BOOT_SOURCE, command_argv, command_environment
from agent.languages.python.runners.django import DJANGO
from agent.languages.python.runners.sympy import SYMPY


def test_the_command_and_its_environment() -> None:
    argv = command_argv(["python3", "bin/test", "-C", "--verbose", "sympy/core/tests/test_arit.py"])
    assert argv[:2] == ["python3", "-c"] and BOOT_VARIABLE in argv[2] and argv[3:5] == ["python3", "bin/test"]
    env = command_environment(SYMPY, "/repo", False)
    assert env[BOOT_VARIABLE] == BOOT_SOURCE and env["PYTHONPATH"] == "/repo"
    assert env["PYTHONWARNINGS"] == "ignore::UserWarning,ignore::SyntaxWarning"
    assert command_environment(DJANGO, None, False)["LC_ALL"] == "C.UTF-8"


class _Stdout:
    def __init__(self) -> None:
        self.buffer = io.BytesIO()


def test_the_runner_s_output_is_teed_and_bundled_with_its_exit_status(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(boot_command, "BUNDLE", str(tmp_path / "b.txt"))
    monkeypatch.setattr(boot_command, "LOG", str(tmp_path / "l.txt"))
    shown = _Stdout()
    monkeypatch.setattr(sys, "stdout", shown)
    code = "import sys; print('test_a ok'); print('boom', file=sys.stderr); sys.exit(3)"
    with pytest.raises(SystemExit) as exited:
        monkeypatch.setattr(sys, "argv", ["boot", sys.executable, "-c", code])
        boot_command.main()
    assert exited.value.code == 3
    bundle = read_bundle((tmp_path / "b.txt").read_text())
    assert bundle is not None and bundle.exit_code == 3 and bundle.junit is None
    assert bundle.log == "test_a ok\nboom\n" == shown.buffer.getvalue().decode()
    monkeypatch.setattr(sys, "argv", ["boot", str(tmp_path / "no-such-program")])
    with pytest.raises(SystemExit) as missing:
        boot_command.main()
    assert missing.value.code == boot_command.NOT_STARTED
    bundle = read_bundle((tmp_path / "b.txt").read_text())
    assert bundle is not None and "cannot run" in bundle.log
