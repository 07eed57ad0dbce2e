"""The `codebox` command: run, batch, demo, image, gc, view."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any, TextIO

from pydantic import ValidationError

from agent import checks
from agent.config import CodeboxSettings, ConfigError, load_settings, user_config_file
from agent.console.escape import one_line, printable
from agent.console.live import RunConsole
from agent.console.render import ChangeLog, print_summary
from agent.events import EventSink, FanoutSink, JsonlSink
from agent.loop import CancelToken, Limits
from agent.model.base import ModelClient, ModelError
from agent.policy import Answer, AskFn
from agent.protocol import Report, TaskSpec
from agent.signals import cancel_on_signals
from agent.tools import PreparedCall

# 0: the task completed; 1: it did not (stopped, error; or --require-tests and the last test
# failed or never ran); 2: a usage error, found before anything ran; 130: cancelled.
EXIT_OK, EXIT_STOPPED, EXIT_USAGE, EXIT_CANCELLED = 0, 1, 2, 130
PASSING_OUTCOMES = ("ok", "passed")


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


def _openai_options(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "base_url": args.base_url,
        "api_key_env": args.api_key_env,
        "request_timeout_s": args.request_timeout,
        "temperature": args.temperature,
        "api": args.api,
    }


def _model_spec(args: argparse.Namespace, task: TaskSpec | None = None) -> str | None:
    return (task.model if task and task.model else None) or args.model or os.environ.get("CODEBOX_MODEL")


def _make_model(args: argparse.Namespace, task: TaskSpec) -> ModelClient:
    """A batch task's model (a ModelError when none is given or it cannot be built)."""
    from agent.model.factory import build_model

    spec = _model_spec(args, task)
    if not spec:
        raise ModelError("no model given: pass --model NAME (or scripted:FILE), or set CODEBOX_MODEL")
    return build_model(spec, **_openai_options(args))


def _sandbox_config(args: argparse.Namespace) -> Any:
    """SandboxConfig from the flags; ValidationError on a bad value (--memory lots, --pids 5)."""
    from agent.containers.sandbox import SandboxConfig

    options: dict[str, Any] = {"memory": args.memory, "pids_limit": args.pids, "cpus": args.cpus}
    if args.image:
        options["image"] = args.image
    return SandboxConfig(**{k: v for k, v in options.items() if v is not None})


def _exit_code(report: Report, require_tests: bool = False) -> int:
    if report.status == "cancelled":
        return EXIT_CANCELLED
    if report.status != "completed":
        return EXIT_STOPPED
    if require_tests and (report.last_test is None or report.last_test.outcome not in PASSING_OUTCOMES):
        return EXIT_STOPPED
    return EXIT_OK


def _tests_note(report: Report) -> str | None:
    """Why --require-tests turns a completed run into exit 1, or None."""
    if report.status != "completed":
        return None
    if report.last_test is None:
        return "--require-tests: the run completed but no test ran"
    if report.last_test.outcome not in PASSING_OUTCOMES:
        test = report.last_test
        return f"--require-tests: the last test run ended {one_line(test.outcome)} (exit {test.exit_code})"
    return None


# --- commands ------------------------------------------------------------------------------------


def _run_task_spec(args: argparse.Namespace) -> tuple[TaskSpec | None, Any, str | None]:
    """The task and the sandbox config from the flags, or the first user mistake in one line."""
    problem = checks.model_option_problems(args.base_url, args.request_timeout, args.temperature)
    test_cmd, split_problem = checks.split_test_command(args.test_cmd)
    if problem or split_problem:
        return None, None, problem or split_problem
    try:
        task = TaskSpec(
            repo=str(Path(args.repo).expanduser().resolve()),
            goal=args.goal,
            policy=args.policy,
            allow=args.allow,
            deny=args.deny,
            test_cmd=test_cmd,
            test_in_copy=args.test_in_copy,
            image=args.image,
            max_steps=args.max_steps,
            timeout_s=args.timeout,
        )
        sandbox_config = _sandbox_config(args)
    except ValidationError as exc:
        return None, None, checks.validation_message(exc)
    return task, sandbox_config, None


def cmd_run(args: argparse.Namespace) -> int:
    from agent.runner import run_spec

    task, sandbox_config, problem = _run_task_spec(args)
    if problem or task is None:
        return _usage_error(problem or "bad arguments")
    if task.policy == "ask" and not _has_terminal():
        return _usage_error("--policy ask needs a terminal to ask on; use workspace-write with --allow")
    problem = (
        checks.output_file_problem(args.report, "--report")
        or checks.output_file_problem(args.output_last_message, "--output-last-message")
        or checks.missing_test_program(task, sandbox_config.image)
    )
    if problem:
        return _usage_error(problem)
    console_stream = sys.stderr if args.json else sys.stdout
    console = None if args.quiet else RunConsole(console_stream)
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
            return _usage_error(f"cannot write the events file {args.events}: {exc}")
    sink = FanoutSink(*sinks)
    cancel = CancelToken()
    try:
        with cancel_on_signals(cancel):
            report = run_spec(
                task,
                _model_spec(args, task),
                _openai_options(args),
                sink,
                sandbox_config=sandbox_config,
                cancel=cancel,
                limits=Limits(max_steps=args.max_steps, timeout_s=args.timeout),
                ask=_asking(console) if task.policy == "ask" else None,
            )
    finally:
        sink.close()
    _finish_report(report, args, console_stream, None if args.no_diff else changes)
    return _exit_code(report, args.require_tests)


def _usage_error(message: str) -> int:
    print(f"codebox: {printable(message)}", file=sys.stderr)
    return EXIT_USAGE


def _finish_report(report: Report, args: argparse.Namespace, stream: TextIO, changes: ChangeLog | None) -> None:
    _write_out(args.report, report.model_dump_json(indent=2), "--report")
    # A file, not the terminal: the message as the model wrote it ("" when there was none).
    _write_out(args.output_last_message, report.final_message or "", "--output-last-message")
    print_summary(report, stream, changes)
    if args.report:
        stream.write(f"report: {printable(args.report)}\n")
    note = _tests_note(report) if args.require_tests else None
    if note:
        stream.write(f"codebox: {note}\n")
    stream.flush()


def _write_out(path: str | None, text: str, flag: str) -> None:
    """Checked up front; a write that still fails (a full disk) is a message, not a traceback."""
    if not path:
        return
    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(text, encoding="utf-8")
    except OSError as exc:
        print(f"codebox: {flag}: cannot write {printable(path)}: {printable(exc)}", file=sys.stderr)


def cmd_batch(args: argparse.Namespace) -> int:
    from agent.batch import load_tasks, run_batch
    from agent.console.batch_view import BatchView, print_table

    problem = checks.model_option_problems(args.base_url, args.request_timeout, args.temperature) or (
        checks.number_problem("--jobs", args.jobs, minimum=1)
        or checks.number_problem("--max-steps", args.max_steps, minimum=1)
        or checks.number_problem("--timeout", args.timeout, minimum=0, inclusive=False)
    )
    if problem:
        return _usage_error(problem)
    try:
        sandbox_config = _sandbox_config(args)
    except ValidationError as exc:
        return _usage_error(checks.validation_message(exc))
    tasks, errors = load_tasks(Path(args.tasks))
    if errors:
        print(f"codebox: {printable(args.tasks)} has {len(errors)} bad line(s); nothing was run:", file=sys.stderr)
        for error in errors:
            print(f"  {printable(error)}", file=sys.stderr)
        return EXIT_USAGE
    if not tasks:
        return _usage_error(f"{args.tasks} has no tasks")
    for task in tasks:
        problem = checks.missing_test_program(task, task.image or sandbox_config.image)
        if problem:
            return _usage_error(f"task {task.id}: {problem} (nothing was run)")
    out = Path(args.out)
    cancel = CancelToken()
    view = BatchView(len(tasks), sys.stderr)
    try:
        with cancel_on_signals(cancel):
            reports = run_batch(
                tasks,
                out,
                lambda task: _make_model(args, task),
                jobs=args.jobs,
                sandbox_config=sandbox_config,
                # Each task's own max_steps / timeout_s apply; the flags, when given, cap them all.
                limits=Limits(
                    max_steps=args.max_steps if args.max_steps is not None else 10**9,
                    timeout_s=args.timeout if args.timeout is not None else float("inf"),
                ),
                cancel=cancel,
                view=view,
            )
    finally:
        view.close()
    print_table(reports, sys.stdout)
    print(f"\nsummary: {out / 'summary.jsonl'} · per task: {out}/<id>/report.json, events.jsonl")
    if cancel.cancelled:
        return EXIT_CANCELLED
    return EXIT_OK if all(r.status == "completed" for r in reports) and len(reports) == len(tasks) else EXIT_STOPPED


def cmd_demo(args: argparse.Namespace) -> int:
    from agent.demo_run import run_demo

    return run_demo(keep=args.keep, image=args.image)


def cmd_image(args: argparse.Namespace) -> int:
    from agent.containers.image import (
        BASE_IMAGE,
        REGISTRY_BASE_IMAGE,
        ImageError,
        build_base,
        build_lock,
        build_sandbox,
        ensure_sandbox_image,
        image_exists,
    )

    try:
        def log(line: str) -> None:  # docker's build output: escaped like everything foreign
            print(printable(line))

        if args.force:
            with build_lock(log):
                base = REGISTRY_BASE_IMAGE if image_exists(REGISTRY_BASE_IMAGE) else BASE_IMAGE
                if base == BASE_IMAGE:
                    build_base(log=log)  # reused when present
                tag = build_sandbox(base=base, force=True, log=log)
        else:
            tag = ensure_sandbox_image(offline=False if args.pull else None, log=log)
        print(f"codebox: sandbox image ready: {tag}")
    except ImageError as exc:
        print(f"codebox: {printable(exc)}", file=sys.stderr)
        return EXIT_STOPPED
    return EXIT_OK


def cmd_view(args: argparse.Namespace) -> int:
    import contextlib

    from agent.view import ViewError, load, render
    from agent.view.load import default_output
    from agent.view.serve import make_server

    path = Path(args.path)
    try:
        html = render(load(path))
        if args.out or not args.serve:
            out = Path(args.out) if args.out else default_output(path)
            out.write_text(html, encoding="utf-8")
            print(f"codebox: wrote {out} (open it in a browser)")
        if not args.serve:
            return EXIT_OK
        server = make_server(lambda: render(load(path)), args.port)
    except ViewError as exc:
        return _usage_error(str(exc))
    except OSError as exc:  # the output file, or the port
        return _usage_error(f"view: {exc}")
    print(f"codebox: serving {path} at http://127.0.0.1:{server.server_port}/ (Ctrl-C stops)", flush=True)
    with contextlib.suppress(KeyboardInterrupt), server:
        server.serve_forever()
    return EXIT_OK


def cmd_gc(args: argparse.Namespace) -> int:
    from agent.containers.sandbox import SandboxError, reap_leftovers

    try:
        removed = reap_leftovers(log=lambda line: print(printable(line)))
    except SandboxError as exc:
        print(f"codebox: {printable(exc)}", file=sys.stderr)
        return EXIT_STOPPED
    print(f"codebox: removed {len(removed)} leftover container(s)")
    return EXIT_OK


# --- parser --------------------------------------------------------------------------------------


class _HelpFormatter(argparse.HelpFormatter):
    """Shows each option's default (after the config file) unless it has none."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if "%(default)" in text or action.default in (None, False, [], argparse.SUPPRESS):
            return text
        return text + " (default: %(default)s)"


def _add_model_options(p: argparse.ArgumentParser, c: CodeboxSettings) -> None:
    g = p.add_argument_group("model")
    g.add_argument("--model", default=c.model,
                   help="model name for an OpenAI-compatible API, or scripted:FILE (env CODEBOX_MODEL)")
    g.add_argument("--base-url", default=c.base_url, help="OpenAI-compatible endpoint (env OPENAI_BASE_URL)")
    g.add_argument("--api-key-env", default=c.api_key_env,
                   help="variable that holds the API key (default OPENAI_API_KEY)")
    g.add_argument("--request-timeout", type=float, default=c.request_timeout, help="seconds per model request")
    g.add_argument("--temperature", type=float, default=c.temperature)
    g.add_argument("--api", choices=["chat", "responses"], default=c.api,
                   help="Chat Completions (default) or Responses")


def _add_sandbox_options(p: argparse.ArgumentParser, c: CodeboxSettings) -> None:
    g = p.add_argument_group("sandbox")
    g.add_argument("--image", default=c.image,
                   help="sandbox image (any image with python3; default codebox-sandbox:latest)")
    g.add_argument("--memory", default=c.memory, help="container memory limit, e.g. 512m or 2g")
    g.add_argument("--pids", type=int, default=c.pids, help="container process limit")
    g.add_argument("--cpus", type=float, default=c.cpus, help="container CPU limit")


def _add_limits(p: argparse.ArgumentParser, max_steps: int | None, timeout: float | None, what: str) -> None:
    p.add_argument("--max-steps", type=int, default=max_steps, help=f"model steps before the run stops{what}")
    p.add_argument("--timeout", type=float, default=timeout, help=f"wall-clock budget per task, seconds{what}")


def version_text() -> str:
    """The version, and the sandbox image it expects (files only: no Docker call)."""
    from agent import __version__
    from agent.containers.image import SANDBOX_IMAGE, image_format

    return f"codebox {__version__} (sandbox image {SANDBOX_IMAGE}, image format {image_format()})"


class _VersionAction(argparse.Action):
    """--version as one unwrapped line (argparse's own action wraps it to the terminal)."""

    def __init__(self, option_strings: list[str], dest: str, help: str | None = None) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        print(version_text())
        parser.exit()


CONFIG_EPILOG = (
    "Defaults come from, highest first: the flags, CODEBOX_* environment variables, [tool.codebox] in "
    "./pyproject.toml, then {user}. Exit codes: 0 completed, 1 the task did not complete "
    "(or --require-tests and the last test failed or never ran), 2 usage error, 130 cancelled."
)


def build_parser(settings: CodeboxSettings | None = None) -> argparse.ArgumentParser:
    """The parser; its defaults are ``settings`` (the config files), built-in ones when None."""
    c = settings or CodeboxSettings.model_construct()
    epilog = CONFIG_EPILOG.format(user=user_config_file())
    parser = argparse.ArgumentParser(
        prog="codebox",
        description="A coding agent whose every tool call runs in a network-less Docker sandbox.",
        epilog=epilog,
    )
    parser.add_argument("--version", action=_VersionAction, help="print the version and the sandbox image it expects")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run one task on a repository", formatter_class=_HelpFormatter, epilog=epilog)
    run.add_argument("goal", help="what the agent should do")
    run.add_argument("--repo", required=True,
                     help="the repository (mounted read-only unless the policy allows writes)")
    run.add_argument("--policy", choices=["read-only", "workspace-write", "ask"], default=c.policy,
                     help="what the model may write: nothing, the --allow paths, or what you approve")
    run.add_argument("--allow", action="append", default=None, metavar="GLOB",
                     help=f"writable paths, gitignore-style globs (default: {' '.join(c.allow) or '**'})")
    run.add_argument("--deny", action="append", default=None, metavar="GLOB",
                     help=f"paths never written, gitignore-style globs (default: {' '.join(c.deny) or 'none'})")
    run.add_argument("--test-cmd", default=c.test_cmd,
                     help='the test command run_test runs, e.g. "python3 -m pytest -q"')
    run.add_argument(
        "--test-in-copy",
        action="store_true",
        help="run the tests in a throwaway copy of the repo inside the sandbox (for suites that write files)",
    )
    run.add_argument("--events", help="write every event to this JSONL file")
    run.add_argument("--report", help="write the report to this JSON file")
    run.add_argument("--output-last-message", metavar="FILE", help="write the model's final message to FILE")
    run.add_argument("--json", action="store_true", help="events as JSON lines on stdout (progress goes to stderr)")
    run.add_argument("--quiet", action="store_true", help="no live progress (the summary is still printed)")
    run.add_argument("--no-diff", action="store_true", help="do not print the diff of what the run changed")
    run.add_argument("--require-tests", action="store_true",
                     help="exit 1 unless the last test run passed (a failing or missing test run fails the command)")
    _add_limits(run, c.max_steps, c.timeout, "")
    _add_model_options(run, c)
    _add_sandbox_options(run, c)
    run.set_defaults(func=cmd_run, _allow=c.allow, _deny=c.deny)

    batch = sub.add_parser("batch", help="run a JSONL file of tasks, N at a time", formatter_class=_HelpFormatter,
                           epilog=epilog)
    batch.add_argument("tasks", help="JSONL: one task a line (id, repo, goal, policy, test_cmd, ...)")
    batch.add_argument("--jobs", type=int, default=c.jobs, help="tasks at once")
    batch.add_argument("--out", default="codebox-out", help="folder for reports, event logs and the summary")
    _add_limits(batch, None, None, " (caps every task's own value; default: the task's)")
    _add_model_options(batch, c)
    _add_sandbox_options(batch, c)
    batch.set_defaults(func=cmd_batch)

    demo = sub.add_parser("demo", help="the whole pipeline on a bundled buggy repo, with a scripted model")
    demo.add_argument("--keep", action="store_true", help="keep the demo's temporary repository")
    demo.add_argument("--image", help="sandbox image to use")
    demo.set_defaults(func=cmd_demo)

    image = sub.add_parser("image", help="sandbox image")
    image_sub = image.add_subparsers(dest="image_command", required=True)
    build = image_sub.add_parser("build", help="build the sandbox image (offline: debootstrap base if needed)")
    build.add_argument("--force", action="store_true", help="rebuild even if it exists")
    build.add_argument("--pull", action="store_true", help="build on the registry base (pulled) instead of offline")
    build.set_defaults(func=cmd_image)

    view = sub.add_parser("view", help="runs and batches as one HTML page (a batch --out folder, events or report)")
    view.add_argument("path", help="a batch --out folder, a task folder, an events .jsonl or a report .json")
    view.add_argument("--out", help="the HTML file to write (default: PATH/view.html, or FILE.html next to a file)")
    view.add_argument("--serve", action="store_true", help="serve the page on 127.0.0.1 (re-read at each reload)")
    view.add_argument("--port", type=int, default=8765, help="port for --serve (0: any free port)")
    view.set_defaults(func=cmd_view)

    gc = sub.add_parser("gc", help="remove leftover codebox containers of dead runs")
    gc.set_defaults(func=cmd_gc)
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        settings = load_settings()
    except ConfigError as exc:
        return _usage_error(str(exc))
    args = build_parser(settings).parse_args(argv)
    if getattr(args, "_allow", None) is not None:  # `run`: a flag replaces the config's list
        args.allow = args._allow if args.allow is None else args.allow
        args.deny = args._deny if args.deny is None else args.deny
    code: int = args.func(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
