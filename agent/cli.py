"""The `codebox` command: run, batch, eval, env, demo, image, view, gc."""

from __future__ import annotations

import argparse
import atexit
import contextlib
import os
import re
import shlex
import sys
import tempfile
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, get_args

from pydantic import ValidationError

from agent import checks
from agent.config import CodeboxSettings, ConfigError, load_settings, user_config_file
from agent.console.escape import one_line, printable
from agent.console.live import RunConsole
from agent.console.render import ChangeLog, print_summary
from agent.events import EventSink, FanoutSink, JsonlSink
from agent.host_run import HOST_RUN_HELP
from agent.loop import CancelToken, Limits
from agent.policy import Answer, AskFn
from agent.protocol import PolicyName, Report, TaskSpec
from agent.signals import cancel_on_signals
from agent.tools import PreparedCall

if TYPE_CHECKING:
    from agent.containers.pool import WarmPool

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
        "max_tokens": args.max_tokens,
        "tool_choice": args.tool_choice,
        "stream": False if args.no_stream else None,
    }


def _model_spec(args: argparse.Namespace, task: TaskSpec | None = None) -> str | None:
    return (task.model if task and task.model else None) or args.model or os.environ.get("CODEBOX_MODEL")


def _sandbox_config(args: argparse.Namespace) -> Any:
    """SandboxConfig from the flags; ValidationError on a bad value (--memory lots, --pids 5)."""
    from agent.containers.sandbox import SandboxConfig

    options: dict[str, Any] = {"memory": args.memory, "pids_limit": args.pids, "cpus": args.cpus}
    if args.image:
        options["image"] = args.image
    return SandboxConfig(**{k: v for k, v in options.items() if v is not None})


def _prices(args: argparse.Namespace) -> Any:
    """The prices per million tokens, when given; a cost limit needs them (ValueError otherwise)."""
    from agent.budget import Prices

    given = args.price_input is not None or args.price_output is not None
    prices = Prices(input_per_million=args.price_input or 0.0, output_per_million=args.price_output or 0.0)
    wants_cost = args.max_cost is not None or getattr(args, "budget_cost", None) is not None
    if wants_cost and not prices.known:
        raise ValueError("a cost limit needs the prices: --price-input and/or --price-output (per million tokens)")
    return prices if given else None


def _batch_budget(args: argparse.Namespace, prices: Any) -> Any:
    from agent.budget import BatchBudget

    if args.budget_tokens is None and args.budget_cost is None and prices is None:
        return None
    for name in ("budget_tokens", "budget_cost"):
        if getattr(args, name) is not None and getattr(args, name) <= 0:
            raise ValueError(f"--{name.replace('_', '-')} must be more than 0")
    return BatchBudget(args.budget_tokens, args.budget_cost, prices)


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


def _run_task_spec(args: argparse.Namespace, task_id: str) -> tuple[TaskSpec | None, Any, str | None]:
    """The task and the sandbox config from the flags, or the first user mistake in one line."""
    problem = checks.model_option_problems(args.base_url, args.request_timeout, args.temperature)
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
            max_steps=args.max_steps,
            timeout_s=args.timeout,
            max_total_tokens=args.max_total_tokens,
            max_cost=args.max_cost,
        )
        sandbox_config = _sandbox_config(args)
    except ValidationError as exc:
        return None, None, checks.validation_message(exc)
    return task, sandbox_config, None


def _early_sandbox(args: argparse.Namespace, task_id: str) -> WarmPool | None:
    """Start the task's sandbox now: the container boots while the run is set up.

    run_task claims it (agent.containers.pool) if it fits (same repo and config: an environment
    image chosen later does not fit); on any doubt nothing starts here and run_task starts its
    own, or reports why it cannot, as it always does.
    """
    from agent.containers.pool import PlannedTask, WarmPool

    try:
        config = _sandbox_config(args)
    except ValueError:
        return None
    repo = Path(args.repo).expanduser().resolve()
    if not repo.is_dir():
        return None
    pool = WarmPool(1)
    pool.prestart(PlannedTask(task_id, repo, config))
    return pool


def cmd_run(args: argparse.Namespace) -> int:
    task_id = f"task_{uuid.uuid4().hex[:12]}"
    warm = _early_sandbox(args, task_id)
    try:
        return _cmd_run(args, task_id, warm)
    finally:
        if warm is not None:
            warm.close()  # removes the early sandbox if the run never claimed it


def _cmd_run(args: argparse.Namespace, task_id: str, warm: WarmPool | None) -> int:
    from agent.runner import run_task_isolated

    task, sandbox_config, problem = _run_task_spec(args, task_id)
    if problem or task is None:
        return _usage_error(problem or "bad arguments")
    try:
        prices = _prices(args)
    except ValueError as exc:
        return _usage_error(str(exc))
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
    prepared = _prepare_env(task, sandbox_config.image)
    if isinstance(prepared, int):
        for s in sinks:
            s.close()
        return prepared
    sink = FanoutSink(*sinks)
    cancel = CancelToken()
    patch_text = ""
    try:
        with cancel_on_signals(cancel):
            options: dict[str, Any] = dict(
                sandbox_config=sandbox_config,
                cancel=cancel,
                limits=Limits(max_steps=args.max_steps, timeout_s=args.timeout, prices=prices),
                ask=_asking(console) if task.policy == "ask" else None,
                prepared_env=prepared,
                warm=None if args.isolated else warm,  # an isolated run mounts its workspace, not the repo
            )
            spec, model_options = _model_spec(args, task), _openai_options(args)
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
    return _exit_code(report, args.require_tests)


def _prepare_env(task: TaskSpec, base_image: str) -> Any:
    """The task's environment, chosen before the run (EnvInfo or None), or the exit code of a failure."""
    from agent.env.choose import choose_env
    from agent.env.errors import EnvError
    from agent.errors import CodeboxError

    try:
        return choose_env(task.env, Path(task.repo), base_image, _env_progress)
    except KeyboardInterrupt:
        print("codebox: cancelled while preparing the environment", file=sys.stderr)
        return EXIT_CANCELLED
    except EnvError as exc:
        print(f"codebox: {exc}", file=sys.stderr)
        return EXIT_USAGE if exc.usage else EXIT_STOPPED
    except CodeboxError as exc:
        print(f"codebox: {exc}", file=sys.stderr)
        return EXIT_STOPPED


def _env_progress(line: str) -> None:
    print(f"codebox: env: {line}", file=sys.stderr, flush=True)

def _run_in_place(
    task: TaskSpec, spec: str | None, model_options: dict[str, Any], sink: EventSink, options: dict[str, Any]
) -> Report:
    """The run edits the user's tree; a second writing run on the same tree is refused, not raced."""
    from agent.runner import failed_report, run_spec
    from agent.workspace import WorkspaceError, repo_write_lock

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
    from agent.batch import load_tasks, run_batch, select_tasks
    from agent.console.batch_view import BatchView, print_table
    from agent.engines import JobLimits

    problem = checks.model_option_problems(args.base_url, args.request_timeout, args.temperature) or (
        checks.number_problem("--jobs", args.jobs, minimum=1)
        or checks.number_problem("--max-steps", args.max_steps, minimum=1)
        or checks.number_problem("--timeout", args.timeout, minimum=0, inclusive=False)
    )
    if problem:
        return _usage_error(problem)
    try:
        sandbox_config = _sandbox_config(args)
        prices = _prices(args)
        budget = _batch_budget(args, prices)
        # Each task's own limits apply; the flags, when given, cap them all.
        limits = JobLimits(max_steps=args.max_steps, timeout_s=args.timeout, max_total_tokens=args.max_total_tokens,
                           max_cost=args.max_cost, prices=prices)
    except ValidationError as exc:
        return _usage_error(checks.validation_message(exc))
    except ValueError as exc:
        return _usage_error(str(exc))
    tasks, errors = load_tasks(Path(args.tasks))
    if errors:
        print(f"codebox: {printable(args.tasks)} has {len(errors)} bad line(s); nothing was run:", file=sys.stderr)
        for error in errors:
            print(f"  {printable(error)}", file=sys.stderr)
        return EXIT_USAGE
    if not tasks:
        return _usage_error(f"{args.tasks} has no tasks")
    if args.env:  # the flag, when given, sets every task's environment
        tasks = [task.model_copy(update={"env": args.env}) for task in tasks]
    try:
        selected = select_tasks(tasks, args.filter)
    except re.error as exc:
        return _usage_error(f"bad --filter: {exc}")
    if not selected:
        return _usage_error(f"--filter {args.filter!r} matches no task id in {args.tasks}")
    for task in selected:
        problem = checks.missing_test_program(task, task.image or sandbox_config.image)
        if problem:
            return _usage_error(f"task {task.id}: {problem} (nothing was run)")
    out = Path(args.out)
    cancel = CancelToken()
    view = BatchView(len(selected), sys.stderr)
    try:
        with cancel_on_signals(cancel):
            reports = run_batch(
                tasks,
                out,
                model=args.model or os.environ.get("CODEBOX_MODEL"),
                model_options=_openai_options(args),
                jobs=args.jobs,
                sandbox_config=sandbox_config,
                limits=limits,
                cancel=cancel,
                retry_errors=args.retry_errors,
                keep_workspaces=args.keep_workspaces,
                selected=selected,
                view=view,
                budget=budget,
            )
    finally:
        view.close()
    print_table(reports, sys.stdout)
    if budget is not None:
        not_started = 0 if cancel.cancelled else len(selected) - len(reports)
        print(budget.describe() + (f"; {not_started} task(s) not started" if not_started else ""))
    print(f"\nsummary: {out / 'summary.jsonl'} · predictions: {out / 'predictions.jsonl'}"
          f" · per task: {out}/<id>/report.json, events.jsonl, patch.diff")
    if cancel.cancelled:
        return EXIT_CANCELLED
    return EXIT_OK if all(r.status == "completed" for r in reports) and len(reports) == len(selected) else EXIT_STOPPED


def cmd_eval(args: argparse.Namespace) -> int:
    from agent.batch import load_tasks
    from agent.eval import load_predictions, match, render_table, run_eval

    tasks, task_errors = load_tasks(Path(args.tasks))
    predictions, prediction_errors = load_predictions(Path(args.predictions))
    if task_errors or prediction_errors:
        print("codebox: bad input; nothing was evaluated:", file=sys.stderr)
        for error in [*(f"{args.tasks} {e}" for e in task_errors), *map(str, prediction_errors)]:
            print(f"  {error}", file=sys.stderr)
        return EXIT_USAGE
    pairs, orphans, unpredicted = match(tasks, predictions)
    for pid in orphans:
        print(f"codebox: prediction {pid!r} matches no task in {args.tasks}: skipped", file=sys.stderr)
    if not pairs:
        return _usage_error(f"no prediction in {args.predictions} matches a task in {args.tasks}")
    if unpredicted:
        print(f"codebox: {len(unpredicted)} task(s) have no prediction and are not evaluated", file=sys.stderr)
    try:
        config = _sandbox_config(args)
    except ValueError as exc:
        return _usage_error(f"bad arguments: {exc}")
    cancel = CancelToken()
    with cancel_on_signals(cancel):
        results = run_eval(pairs, Path(args.out), jobs=args.jobs, config=config, timeout_s=args.timeout,
                           cancel=cancel)
    print(render_table(results))
    print(f"\nresults: {Path(args.out) / 'results.json'} · per instance: {args.out}/<id>/eval.json")
    return EXIT_CANCELLED if cancel.cancelled else EXIT_OK


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


def cmd_env_build(args: argparse.Namespace) -> int:
    from agent.env.build import EnvRequest, ensure_env
    from agent.env.errors import EnvError
    from agent.env.resolve import IndexConfig
    from agent.errors import CodeboxError

    repo = Path(args.repo).expanduser().resolve()
    if not repo.is_dir():
        return _usage_error(f"the repository {args.repo} is not a directory")
    index = IndexConfig.from_environ()
    index = IndexConfig(find_links=[*index.find_links, *args.find_links], no_index=index.no_index or args.no_index)
    request = EnvRequest(repo=repo, base_image=args.image or "codebox-sandbox:latest", extras=args.extra,
                         groups=args.group, requirements=args.requirements, apt=args.apt, index=index)
    try:
        info = ensure_env(request, _env_progress)
    except EnvError as exc:
        print(f"codebox: {exc}", file=sys.stderr)
        return EXIT_USAGE if exc.usage else EXIT_STOPPED
    except CodeboxError as exc:
        print(f"codebox: {exc}", file=sys.stderr)
        return EXIT_STOPPED
    for note in info.notes:
        print(f"codebox: env: note: {note}", file=sys.stderr)
    print(info.image)
    return EXIT_OK


def cmd_env_ls(args: argparse.Namespace) -> int:
    from agent.containers.docker_client import connect
    from agent.env.errors import EnvError
    from agent.env.images import list_env_images

    try:
        client = connect(EnvError)
        found = list_env_images(client)
        client.close()
    except EnvError as exc:
        print(f"codebox: {exc}", file=sys.stderr)
        return EXIT_STOPPED
    print(f"{'IMAGE':<30} {'PYTHON':<8} {'PKGS':>5} {'SIZE':>8}  {'CREATED':<19}  REPO")
    for env in found:
        size = f"{env.size / 1e6:.0f}MB"
        print(f"{env.tag:<30} {env.python:<8} {env.packages:>5} {size:>8}  {env.created:<19}  {env.repo}")
    return EXIT_OK


def cmd_env_rm(args: argparse.Namespace) -> int:
    from agent.containers.docker_client import connect
    from agent.env.errors import EnvError
    from agent.env.images import remove_env_images

    if not args.images and not args.all:
        return _usage_error("name the images to remove (see `codebox env ls`), or pass --all")
    try:
        client = connect(EnvError)
        removed = remove_env_images(client, args.images)
        client.close()
    except EnvError as exc:
        print(f"codebox: {exc}", file=sys.stderr)
        return EXIT_USAGE if exc.usage else EXIT_STOPPED
    for tag in removed:
        print(f"removed {tag}")
    return EXIT_OK


def _add_env_parser(sub: Any) -> None:
    env = sub.add_parser("env", help="dependency environments (images with the repo's declared dependencies)")
    env_sub = env.add_subparsers(dest="env_command", required=True)
    build = env_sub.add_parser("build", help="build or reuse the environment of a repository; prints the image")
    build.add_argument("--repo", required=True, help="the repository whose declared dependencies to install")
    build.add_argument("--extra", action="append", default=[], metavar="NAME",
                       help="an optional-dependencies extra to add (test, tests, testing, dev are taken by default)")
    build.add_argument("--group", action="append", default=[], metavar="NAME", help="a [dependency-groups] group")
    build.add_argument("--requirements", action="append", default=[], metavar="FILE",
                       help="a requirements file inside the repo")
    build.add_argument("--apt", action="append", default=[], metavar="PKG", help="a Debian package the tests need")
    build.add_argument("--image", help="the base image (default codebox-sandbox:latest)")
    build.add_argument("--find-links", action="append", default=[], metavar="DIR", help="a local folder of wheels")
    build.add_argument("--no-index", action="store_true", help="only --find-links folders, no package index")
    build.set_defaults(func=cmd_env_build)
    ls = env_sub.add_parser("ls", help="list environment images")
    ls.set_defaults(func=cmd_env_ls)
    rm = env_sub.add_parser("rm", help="remove environment images")
    rm.add_argument("images", nargs="*", help="images to remove (codebox-env:... only)")
    rm.add_argument("--all", action="store_true", help="remove every environment image")
    rm.set_defaults(func=cmd_env_rm)


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
    g.add_argument("--max-tokens", type=int, default=None, help="cap on the output tokens of one model reply")
    g.add_argument(
        "--tool-choice",
        choices=["auto", "required", "none"],
        default=None,
        help="tool_choice sent with the tools (default auto; required: a tool call every turn, no final message)",
    )
    g.add_argument("--no-stream", action="store_true", help="ask for whole replies (for servers that stream badly)")


def _add_sandbox_options(p: argparse.ArgumentParser, c: CodeboxSettings) -> None:
    g = p.add_argument_group("sandbox")
    g.add_argument("--image", default=c.image,
                   help="sandbox image (any image with python3; default codebox-sandbox:latest)")
    g.add_argument("--env", default=None, metavar="auto|none|IMAGE",
                   help="dependency environment: auto builds or reuses one from what the repo declares (default "
                        "for run; for batch, the task's own `env`), none uses the image as it is")
    g.add_argument("--memory", default=c.memory, help="container memory limit, e.g. 512m or 2g")
    g.add_argument("--pids", type=int, default=c.pids, help="container process limit")
    g.add_argument("--cpus", type=float, default=c.cpus, help="container CPU limit")


def _add_limits(p: argparse.ArgumentParser, max_steps: int | None, timeout: float | None, what: str) -> None:
    p.add_argument("--max-steps", type=int, default=max_steps, help=f"model steps before the run stops{what}")
    p.add_argument("--timeout", type=float, default=timeout, help=f"wall-clock budget per task, seconds{what}")
    _add_budget_options(p, what)


def _add_budget_options(p: argparse.ArgumentParser, what: str) -> None:
    g = p.add_argument_group("budget")
    g.add_argument("--max-total-tokens", type=int, default=None,
                   help=f"stop (reason budget) before a model request that would pass this many tokens{what}")
    g.add_argument("--max-cost", type=float, default=None, help=f"the same for the cost (needs the prices){what}")
    g.add_argument("--price-input", type=float, default=None, metavar="PRICE", help="price per million input tokens")
    g.add_argument("--price-output", type=float, default=None, metavar="PRICE", help="price per million output tokens")


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
    run.add_argument("--policy", choices=list(get_args(PolicyName)), default=c.policy,
                     help="what the model may write: nothing, the --allow paths, or what you approve")
    run.add_argument("--allow", action="append", default=None, metavar="GLOB",
                     help=f"writable paths, gitignore-style globs (default: {' '.join(c.allow) or '**'}). "
                     + HOST_RUN_HELP)
    run.add_argument("--deny", action="append", default=None, metavar="GLOB",
                     help=f"paths never written, gitignore-style globs (default: {' '.join(c.deny) or 'none'})")
    run.add_argument("--test-cmd", default=c.test_cmd,
                     help='the test command run_test runs, e.g. "python3 -m pytest -q"')
    run.add_argument(
        "--test-in-copy",
        action="store_true",
        help="run the tests in a throwaway copy of the repo inside the sandbox (for suites that write files)",
    )
    run.add_argument("--isolated", action="store_true",
                     help="work on a private copy (HEAD plus uncommitted changes); the repo is left as it is "
                     "and the changes come out as a patch")
    run.add_argument("--patch", metavar="FILE", help="with --isolated: write the patch here "
                     "(default: codebox-<id>.diff in the temporary folder)")
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
    batch.add_argument("--out", default="codebox-out", help="folder for reports, event logs, patches and the summary")
    batch.add_argument("--filter", metavar="REGEX", help="run only the tasks whose id matches (re.search)")
    batch.add_argument("--retry-errors", action="store_true", help="run again the tasks that ended in error")
    batch.add_argument("--keep-workspaces", action="store_true", help="leave each task's working copy on disk")
    batch.add_argument("--budget-tokens", type=int, default=None,
                       help="tokens the whole batch may spend: no task starts once they are spent")
    batch.add_argument("--budget-cost", type=float, default=None, help="the same for the cost (needs the prices)")
    _add_limits(batch, None, None, " (caps every task's own value; default: the task's)")
    _add_model_options(batch, c)
    _add_sandbox_options(batch, c)
    batch.set_defaults(func=cmd_batch)

    ev = sub.add_parser("eval", help="SWE-bench-style evaluation: apply each prediction, run the named tests offline")
    ev.add_argument("--tasks", required=True, help="JSONL task file (SWE-bench lines: base_commit, FAIL_TO_PASS, ...)")
    ev.add_argument("--predictions", required=True, help="JSONL: instance_id, model_name_or_path, model_patch")
    ev.add_argument("--out", required=True, help="folder for <id>/eval.json and results.json")
    ev.add_argument("--jobs", type=int, default=2, help="instances at once")
    ev.add_argument("--timeout", type=float, default=1800.0, help="seconds for one instance's test run")
    _add_sandbox_options(ev, c)
    ev.set_defaults(func=cmd_eval)

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

    _add_env_parser(sub)

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


def entry() -> None:
    """The `codebox` command: main(), then exit without tearing the interpreter down.

    By then the report is written, the sinks closed and the sandboxes removed; the atexit
    hooks run here. Freeing some 40,000 objects one by one at exit only made every command
    slower (about 0.1 s on an idle machine, more under load).
    """
    code = main()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


if __name__ == "__main__":
    entry()
