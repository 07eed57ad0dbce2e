"""Every user mistake is found before any container starts or any model is asked, with one line
that names the flag (exit 2); exit codes, --version, --output-last-message, --require-tests."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.cli.commands.common import EXIT_OK, EXIT_STOPPED
from agent.cli.commands.run import exit_code as _exit_code
from agent.cli.parser import main
from agent.protocol import Report, TestRun

RULES = (
    "allow/deny rules choose what may be written, and the read-only policy writes nothing: "
    "use the workspace-write or ask policy, or drop the rules"
)
MISTAKES = [
    (["--allow", "src/**"], RULES),
    (["--policy", "read-only", "--deny", "*.pem"], RULES),
    (["--base-url", "notaurl"], '--base-url "notaurl" is not an http(s) URL: give the endpoint, e.g. '
                                "http://127.0.0.1:8000/v1"),
    (["--base-url", "http://h:99999/v1"], '--base-url "http://h:99999/v1" has a bad port number'),
    (["--memory", "lots"], '--memory: a size is a number with a unit b, k, m or g, e.g. 512m or 2g (got "lots")'),
    (["--memory", "1k"], '--memory: Docker needs at least 6m of memory (got "1k")'),
    (["--max-steps", "0"], "--max-steps: must be at least 1 (got 0)"),
    (["--timeout", "-1"], "--timeout: must be more than 0 (got -1)"),
    (["--pids", "5"], "--pids: must be at least 16 (got 5)"),
    (["--cpus", "0"], "--cpus: must be more than 0 (got 0)"),
    (["--request-timeout", "0"], "--request-timeout must be more than 0 (got 0)"),
    (["--temperature", "3"], "--temperature must be between 0 and 2 (got 3)"),
    (["--test-cmd", "pytest 'unbalanced"], "--test-cmd \"pytest 'unbalanced\" cannot be split into words: "
                                           "No closing quotation"),
    (["--test-cmd", "./run-tests.sh"], "--test-cmd: './run-tests.sh' is not a file in the repository {repo}"),
    (["--report", "{repo}"], '--report "{repo}" is a folder, not a file'),
    (["--output-last-message", "/etc/hostname/last.txt"],
     '--output-last-message "/etc/hostname/last.txt" cannot be written (/etc/hostname is not a writable folder)'),
]


@pytest.mark.parametrize(("flags", "message"), MISTAKES, ids=[" ".join(f) for f, _ in MISTAKES])
def test_each_mistake_is_one_line_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], message: str
) -> None:
    # A script that would run: exit 2 shows the check came before the run.
    script = tmp_path / "script.json"
    script.write_text('{"turns": [{"message": "done"}]}')
    flags = [flag.format(repo=tmp_path) for flag in flags]
    code = main(["run", "--repo", str(tmp_path), "--model", f"scripted:{script}", *flags, "goal"])
    err = capsys.readouterr().err
    assert code == 2
    assert err == f"codebox: {message.format(repo=tmp_path)}\n"


def test_a_bad_base_url_in_the_environment_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "localhost:8000")
    assert main(["run", "--repo", str(tmp_path), "--model", "m", "goal"]) == 2
    assert capsys.readouterr().err == (
        'codebox: OPENAI_BASE_URL "localhost:8000" is not an http(s) URL: give the endpoint, '
        "e.g. http://127.0.0.1:8000/v1\n"
    )


def test_batch_checks_its_numbers_and_its_task_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tasks = tmp_path / "t.jsonl"
    tasks.write_text(json.dumps({"id": "a", "repo": str(tmp_path), "goal": "g", "allow": ["x"]}) + "\n")
    assert main(["batch", str(tasks), "--jobs", "0"]) == 2
    assert capsys.readouterr().err == "codebox: --jobs must be at least 1 (got 0)\n"
    assert main(["batch", str(tasks), "--memory", "lots"]) == 2
    assert "--memory: a size is" in capsys.readouterr().err
    assert main(["batch", str(tasks), "--model", "scripted:x"]) == 2
    assert f"line 1: {RULES}" in capsys.readouterr().err


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.startswith("codebox 0.")


def test_help_shows_the_defaults_and_the_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "(default: 30)" in out and "(default: 1g)" in out and "(default: read-only)" in out
    assert "2 usage error" in out and "--require-tests" in out and "[tool.codebox]" in out


def report(status: str = "completed", test: str | None = "ok") -> Report:
    last = TestRun(command=["pytest"], outcome=test, exit_code=0 if test == "ok" else 1) if test else None
    return Report(task_id="t", goal="g", repo="/r", model="m", status=status,  # type: ignore[arg-type]
                  stop_reason="final_message" if status == "completed" else "max_steps", started_at=0.0,
                  duration_s=1.0, last_test=last)


def test_exit_codes() -> None:
    assert _exit_code(report()) == EXIT_OK
    assert _exit_code(report("stopped")) == EXIT_STOPPED
    assert _exit_code(report("cancelled")) == 130
    assert _exit_code(report(test="failed")) == EXIT_OK  # tests are not required by default
    assert _exit_code(report(test="failed"), require_tests=True) == EXIT_STOPPED
    assert _exit_code(report(test=None), require_tests=True) == EXIT_STOPPED
    assert _exit_code(report(test="ok"), require_tests=True) == EXIT_OK


def test_output_last_message_and_require_tests_without_a_test(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import agent.task.runner as runner

    # The run itself is faked here (no Docker): the report a completed run without tests returns.
    monkeypatch.setattr(runner, "run_task", lambda task, model, sink, **kw: report(test=None).model_copy(
        update={"final_message": "done \x1b]0;t\x07"}))
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"turns": [{"message": "done"}]}))
    last = tmp_path / "out" / "last.txt"
    code = main(["run", "--repo", str(tmp_path), "--model", f"scripted:{script}", "--quiet",
                 "--output-last-message", str(last), "--require-tests", "goal"])
    assert code == EXIT_STOPPED
    assert last.read_text() == "done \x1b]0;t\x07"  # a file gets the message as it is
    out = capsys.readouterr().out
    assert "codebox: --require-tests: the run completed but no test ran" in out
    assert "\x1b" not in out and out.count("done \\x1b]0;t\\x07") == 1


def test_json_keeps_stdout_for_events_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import agent.task.runner as runner
    from agent.protocol import AgentEvent

    def fake_run_task(task: object, model: object, sink: object, **kw: object) -> Report:
        sink.emit(AgentEvent(type="turn.start", task_id="t", seq=1, step=0, data={"goal": "g"}))  # type: ignore[attr-defined]
        return report().model_copy(update={"final_message": "done"})

    monkeypatch.setattr(runner, "run_task", fake_run_task)
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"turns": [{"message": "done"}]}))
    assert main(["run", "--repo", str(tmp_path), "--model", f"scripted:{script}", "--json", "goal"]) == 0
    captured = capsys.readouterr()
    assert [json.loads(line)["type"] for line in captured.out.splitlines()] == ["turn.start"]
    assert "final message:" in captured.err and "■ completed" in captured.err
