"""`codebox run`: one task, from the flags to the report, with the live console, the ask prompt and the patch out."""

from __future__ import annotations

import argparse
import shlex
import sys
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from agent.cli.commands.common import (
    EXIT_CANCELLED,
    EXIT_OK,
    EXIT_STOPPED,
    env_progress,
    error_exit,
    flag_problem,
    model_spec,
    openai_options,
    prices_from_flags,
    sandbox_config_from_flags,
    setting_origin,
    usage_error,
    write_out,
)
from agent.escape import one_line, printable

if TYPE_CHECKING:
    from agent.backends.pool import WarmPool
    from agent.console.live import RunConsole
    from agent.console.render import ChangeLog
    from agent.protocol import Report, TaskSpec
    from agent.task.events import EventSink
    from agent.task.found_tests import ChosenTests
    from agent.task.policy import Answer, AskFn
    from agent.tools import PreparedCall

# cmd_run starts the task's container first (_early_sandbox), then imports the loop, the
# policy, the tools, the console and the runner: the daemon creates and boots the container
# while they import. Keep this module's own imports light for that reason.


def terminal_ask(call: PreparedCall) -> Answer:
    """The `ask` policy's question, on the terminal (not stdin: that may be a pipe)."""
    with open("/dev/tty", encoding="utf-8") as tty_in, open("/dev/tty", "w", encoding="utf-8") as tty:
        # Paths and patch lines come from the model: no terminal escape may redraw the question.
        paths = ", ".join(printable(p) for p in call.write_paths)
        tty.write(f"\ncodebox: the model wants to write: {paths}\n")
        patch = str(getattr(call.args, "patch", ""))
        for line in patch.splitlines()[:40]:
            tty.write(f"  {printable(line)}\n")
        while True:
            tty.write("Allow? [y]es / [n]o / [a]lways for these paths: ")
            tty.flush()
            answer = tty_in.readline()
            if not answer:  # the terminal went away
                return "no"
            answer = answer.strip().lower()
            if answer in ("y", "yes"):
                return "yes"
            if answer in ("a", "always"):
                return "always"
            if answer in ("n", "no", ""):
                return "no"


def _asking(console: RunConsole | None) -> AskFn:
    """terminal_ask, with the live status line paused while the question is on screen."""
    if console is None:
        return terminal_ask

    def ask(call: PreparedCall) -> Answer:
        with console.paused():
            return terminal_ask(call)

    return ask


def _has_terminal() -> bool:
    try:
        with open("/dev/tty", encoding="utf-8"):
            return sys.stdin.isatty()
    except OSError:
        return False


def exit_code(report: Report, require_tests: bool = False) -> int:
    if report.status == "cancelled":
        return EXIT_CANCELLED
    if report.status != "completed":
        return EXIT_STOPPED
    if require_tests and (report.last_test is None or report.last_test.outcome != "ok"):
        return EXIT_STOPPED
    return EXIT_OK


def _tests_note(report: Report) -> str | None:
    """Why --require-tests turns a completed run into exit 1, or None."""
    if report.status != "completed":
        return None
    if report.last_test is None:
        return "--require-tests: the run completed but no test ran"
    if report.last_test.outcome != "ok":
        test = report.last_test
        return f"--require-tests: the last test run ended {one_line(test.outcome)} (exit {test.exit_code})"
    return None


# --- commands ------------------------------------------------------------------------------------


def _run_task_spec(args: argparse.Namespace, task_id: str) -> tuple[TaskSpec | None, Any, str | None]:
    """The task and the sandbox config from the flags, or the first user mistake in one line."""
    from pydantic import ValidationError

    from agent.protocol import TaskSpec
    from agent.sandboxes.config import SandboxConfigError
    from agent.settings import checks

    problem = checks.model_option_problems(args.base_url, args.request_timeout, args.temperature,
                                           setting_origin(args, "base_url", "--base-url"))
    test_cmd, split_problem = checks.split_test_command(args.test_cmd)
    if problem or split_problem:
        return None, None, problem or split_problem
    try:
        task = TaskSpec(
            id=task_id,
            repo=str(Path(args.repo).expanduser().resolve()),
            goal=args.goal,
            policy=args.policy,
            allow=args.allow,
            deny=args.deny,
            test_cmd=test_cmd,
            test_in_copy=args.test_in_copy,
            image=args.image,
            env=args.env or "auto",
            allow_public_fallback=args.allow_public_fallback,
            max_steps=args.max_steps,
            timeout_s=args.timeout,
            max_total_tokens=args.max_total_tokens,
            max_cost=args.max_cost,
        )
        sandbox_config = sandbox_config_from_flags(args)
    except SandboxConfigError as exc:
        return None, None, flag_problem(exc)
    except ValidationError as exc:
        return None, None, checks.validation_message(exc)
    from agent.cli.env_flags import EnvFlags
    from agent.errors import CodeboxError

    try:  # --pip, --pre-install, --recipes, --as-of: the environment this run builds; --python: its Python
        flags = EnvFlags(args)
        task = _with_python(args, flags, flags.apply(task))
    except CodeboxError as exc:
        return None, None, str(exc)
    if task.image and task.image != sandbox_config.image:  # the chosen Python's: the env's base, the test probe's
        sandbox_config = sandbox_config.replace(image=task.image)
    return task, sandbox_config, None


def _with_python(args: argparse.Namespace, flags: Any, task: TaskSpec) -> TaskSpec:
    """The run's Python (agent/cli/python_flags.py), said in one line when it is not the default image's."""
    from agent.cli.python_flags import PythonFlags
    from agent.env.python.requires import in_folder
    from agent.env.recipe import EnvSpec
    from agent.env.resolve import asof

    repo = Path(task.repo)
    when = flags.as_of or asof.choose(task.env.as_of if isinstance(task.env, EnvSpec) else None, repo,
                                      task.created_at, task.base_commit)
    task = PythonFlags(args, env_progress).apply(task, in_folder(repo), when,
                                                 recipe_python=flags.book.setting_for(task.repo, None, "python"))
    if task.python_choice is not None and task.python_choice.source != "default":
        print(f"codebox: {printable(task.python_choice.line())}", file=sys.stderr)
    return task


# How long cmd_run waits for the early start's create request to leave before it imports the rest.
EARLY_SENT_WAIT_S = 2.0


def _early_sandbox(args: argparse.Namespace, task_id: str) -> WarmPool | None:
    """Launch the task's container now: the daemon creates and boots it while the run is set up.

    Pydantic-free (agent.containers.launch): the create request leaves the process before the
    rest of codebox is imported (this waits for that, up to EARLY_SENT_WAIT_S). run_task claims
    the container (agent.backends.pool) if it fits (same repo and config: an environment image
    chosen later does not fit) and its Sandbox sends the first ping. On any doubt about the
    flags nothing starts here, and run_task starts its own sandbox, or reports why it cannot, as
    it always does.
    """
    from agent.backends.pool import PlannedTask, WarmPool
    from agent.sandboxes.config import SandboxConfigError

    if args.isolated or args.env not in (None, "auto", "none"):
        return None  # it would not fit: an isolated run mounts its workspace; --env IMAGE runs that image
    try:
        config = sandbox_config_from_flags(args)
    except SandboxConfigError:
        return None  # run_task's own check says it, in one line
    repo = Path(args.repo).expanduser().resolve()
    if not repo.is_dir():
        return None
    pool = WarmPool(1)
    try:
        pool.launch(PlannedTask(task_id, repo, config), sent_timeout_s=EARLY_SENT_WAIT_S)
    except BaseException:  # Ctrl-C while it waits: the container goes with the pool
        pool.close()
        raise
    return pool


def _preflight_problem(args: argparse.Namespace) -> str | None:
    """The command line's mistakes found with the standard library alone: before any container."""
    from agent.cli import preflight

    return (
        preflight.repo_problem(args.repo)
        or (None if args.isolated else preflight.read_only_problem(args.repo, args.policy))
        or preflight.model_problem(model_spec(args), args.api_key_env or "OPENAI_API_KEY", args.base_url)
    )


def _model_problem(args: argparse.Namespace) -> str | None:
    """The model built once as the run will build it: a script that is not one, a bad option."""
    from agent.model.base import ModelError
    from agent.model.factory import build_model

    spec = model_spec(args)
    if spec is None:
        return None
    try:
        build_model(spec, **openai_options(args))
    except ModelError as exc:
        return str(exc)
    return None


def cmd_run(args: argparse.Namespace) -> int:
    problem = _preflight_problem(args)
    if problem:
        return usage_error(problem)
    task_id = f"task_{uuid.uuid4().hex[:12]}"
    warm = _early_sandbox(args, task_id)
    try:
        return _cmd_run(args, task_id, warm)
    finally:
        if warm is not None:
            warm.close()  # removes the early sandbox if the run never claimed it


def _cmd_run(args: argparse.Namespace, task_id: str, warm: WarmPool | None) -> int:
    from agent.cancel import CancelToken
    from agent.cli.signals import cancel_on_signals
    from agent.console.render import ChangeLog
    from agent.settings import checks
    from agent.task.events import FanoutSink, JsonlSink
    from agent.task.loop import Limits
    from agent.task.runner import run_task_isolated

    task, sandbox_config, problem = _run_task_spec(args, task_id)
    if problem or task is None:
        return usage_error(problem or "bad arguments")
    try:
        prices = prices_from_flags(args)
    except ValueError as exc:
        return usage_error(str(exc))
    if task.policy == "ask" and not _has_terminal():
        return usage_error("--policy ask needs a terminal to ask on; use workspace-write with --allow")
    problem = (
        _model_problem(args)
        or checks.output_file_problem(args.report, "--report")
        or checks.output_file_problem(args.output_last_message, "--output-last-message")
        or checks.missing_test_program(task, sandbox_config.image, sandbox_config.allow_shell)
    )
    if problem:
        return usage_error(problem)
    console_stream = sys.stderr if args.json else sys.stdout
    console = None if args.quiet else _live_console(console_stream)
    changes = ChangeLog()
    sinks: list[EventSink] = [changes]
    if console is not None:
        sinks.append(console)
    if args.json:
        sinks.append(JsonlSink.to_stream(sys.stdout))
    if args.events:
        try:
            sinks.append(JsonlSink(args.events))
        except OSError as exc:
            return usage_error(f"cannot write the events file {args.events}: {exc}")
    prepared = _prepare_env(task, sandbox_config)
    if isinstance(prepared, int):
        for s in sinks:
            s.close()
        return prepared
    sink = FanoutSink(*sinks)
    cancel = CancelToken()
    patch_text = ""
    try:
        # On a live console the notice goes above its status line, not through it.
        with cancel_on_signals(cancel, console if console is not None and console.styled else sys.stderr):
            options: dict[str, Any] = dict(
                sandbox_config=sandbox_config,
                cancel=cancel,
                limits=Limits(max_steps=args.max_steps, timeout_s=args.timeout, prices=prices,
                              test_timeout_s=args.test_timeout, max_test_timeout_s=args.max_test_timeout),
                ask=_asking(console) if task.policy == "ask" else None,
                prepared_env=prepared,
                warm=None if args.isolated else warm,  # an isolated run mounts its workspace, not the repo
                # none given anywhere: the command the repository shows (pytest, where it shows it)
                look_for_tests=_say_found_tests(args.quiet) if args.test_cmd is None else None,
            )
            spec, model_options = model_spec(args, task), openai_options(args)
            if args.isolated:
                report, patch_text, _ = run_task_isolated(task, spec, model_options, sink, **options)
            else:
                report = _run_in_place(task, spec, model_options, sink, options)
    finally:
        sink.close()
    _finish_report(report, args, console_stream, None if args.no_diff else changes)
    if args.isolated and report.patch is not None:
        _write_patch(patch_text, args.patch or str(Path(tempfile.gettempdir()) / f"codebox-{task.id}.diff"),
                     task.repo, console_stream)
    return exit_code(report, args.require_tests)


def _say_found_tests(quiet: bool) -> Callable[[ChosenTests], None]:
    """One line on stderr saying which test command the repository shows (agent.task.found_tests), if any."""
    from agent.task.found_tests import tests_line

    def say(choice: ChosenTests) -> None:
        line = tests_line(choice, "--test-cmd to change")
        if line and not quiet:
            print(f"codebox: tests: {line}", file=sys.stderr)

    return say


def _live_console(stream: TextIO) -> RunConsole:
    from agent.console.live import RunConsole  # rich: only when a console is drawn

    return RunConsole(stream)


def _prepare_env(task: TaskSpec, sandbox_config: Any) -> Any:
    """The task's environment, chosen before the run (EnvInfo or None), or the exit code of a failure."""
    import io

    from agent.cancel import CancelToken
    from agent.cli.signals import cancel_on_signals
    from agent.console.progress import StepProgress
    from agent.env.cancel import EnvCancelled
    from agent.errors import CodeboxError
    from agent.languages.registry import choose_env

    cancel = CancelToken()  # Ctrl-C / SIGTERM stop a build under way: its uv and container go at once
    try:
        # Each step a line; on a terminal a live line under them: the step, its seconds, the total.
        with StepProgress(sys.stderr) as progress, cancel_on_signals(cancel, io.StringIO()):  # quiet: see below
            return choose_env(task, Path(task.repo), sandbox_config, progress.log, cancel)
    except (KeyboardInterrupt, EnvCancelled):
        print("codebox: cancelled while preparing the environment", file=sys.stderr)
        return EXIT_CANCELLED
    except CodeboxError as exc:  # EnvError (usage or not) and any other
        return error_exit(exc)


def _run_in_place(
    task: TaskSpec, spec: str | None, model_options: dict[str, Any], sink: EventSink, options: dict[str, Any]
) -> Report:
    """The run edits the user's tree; a second writing run on the same tree is refused, not raced."""
    from agent.task.runner import failed_report, run_spec
    from agent.task.workspace import WorkspaceError, repo_write_lock

    if task.policy == "read-only":
        return run_spec(task, spec, model_options, sink, **options)
    try:
        with repo_write_lock(Path(task.repo)):
            return run_spec(task, spec, model_options, sink, **options)
    except WorkspaceError as exc:
        return failed_report(task, spec or "?", "invalid_task", str(exc), sink)


def _write_patch(patch: str, path: str, repo: str, stream: TextIO) -> None:
    try:
        Path(path).write_text(patch, encoding="utf-8", errors="surrogateescape")
    except OSError as exc:
        stream.write(f"codebox: cannot write the patch to {path}: {exc}\n")
        return
    stream.write(f"patch: {path} (apply it with: git -C {shlex.quote(repo)} apply {shlex.quote(path)})\n")
    stream.flush()


def _finish_report(report: Report, args: argparse.Namespace, stream: TextIO, changes: ChangeLog | None) -> None:
    from agent.console.render import print_summary

    write_out(args.report, report.model_dump_json(indent=2), "--report")
    # A file, not the terminal: the message as the model wrote it ("" when there was none).
    write_out(args.output_last_message, report.final_message or "", "--output-last-message")
    print_summary(report, stream, changes)
    if args.report:
        stream.write(f"report: {printable(args.report)}\n")
    note = _tests_note(report) if args.require_tests else None
    if note:
        stream.write(f"codebox: {note}\n")
    stream.flush()
