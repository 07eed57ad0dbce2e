"""The `codebox` command: run, batch, eval, demo, image, gc, view."""

from __future__ import annotations

import argparse
import os
import re
import shlex
import sys
import tempfile
from pathlib import Path
from typing import Any, TextIO

from agent.errors import CodeboxError
from agent.events import ConsoleSink, EventSink, FanoutSink, JsonlSink
from agent.loop import CancelToken, Limits
from agent.policy import Answer
from agent.protocol import Report, TaskSpec
from agent.signals import cancel_on_signals
from agent.tools import PreparedCall

EXIT_OK, EXIT_STOPPED, EXIT_USAGE, EXIT_CANCELLED = 0, 1, 2, 130


def terminal_ask(call: PreparedCall) -> Answer:
    """The `ask` policy's question, on the terminal (not stdin: that may be a pipe)."""
    with open("/dev/tty", encoding="utf-8") as tty_in, open("/dev/tty", "w", encoding="utf-8") as tty:
        # Paths and patch lines come from the model: no terminal escape may redraw the question.
        paths = ", ".join(_printable(p) for p in call.write_paths)
        tty.write(f"\ncodebox: the model wants to write: {paths}\n")
        patch = str(getattr(call.args, "patch", ""))
        for line in patch.splitlines()[:40]:
            tty.write(f"  {_printable(line)}\n")
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


def _printable(text: str) -> str:
    """Control characters shown as escapes (\\x1b ...), the rest as it is."""
    return "".join(c if c.isprintable() or c == "\t" else repr(c)[1:-1] for c in text)


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


def _sandbox_config(args: argparse.Namespace) -> Any:
    from agent.containers.sandbox import SandboxConfig

    options: dict[str, Any] = {"memory": args.memory, "pids_limit": args.pids, "cpus": args.cpus}
    if args.image:
        options["image"] = args.image
    return SandboxConfig(**{k: v for k, v in options.items() if v is not None})


def _exit_code(report: Report) -> int:
    if report.status == "completed":
        return EXIT_OK
    return EXIT_CANCELLED if report.status == "cancelled" else EXIT_STOPPED


# --- commands ------------------------------------------------------------------------------------


def cmd_run(args: argparse.Namespace) -> int:
    from agent.runner import run_task_isolated

    patch_text = ""
    try:
        task = TaskSpec(
            repo=str(Path(args.repo).expanduser().resolve()),
            goal=args.goal,
            policy=args.policy,
            allow=args.allow,
            deny=args.deny,
            test_cmd=shlex.split(args.test_cmd) if args.test_cmd else [],
            test_in_copy=args.test_in_copy,
            image=args.image,
            max_steps=args.max_steps,
            timeout_s=args.timeout,
        )
        sandbox_config = _sandbox_config(args)
    except ValueError as exc:  # shlex's unbalanced quote, or a ValidationError (--max-steps 0 ...)
        return _usage_error(f"bad arguments: {exc}")
    if task.policy == "ask" and not _has_terminal():
        print("codebox: --policy ask needs a terminal to ask on; use workspace-write with --allow", file=sys.stderr)
        return EXIT_USAGE
    console_stream = sys.stderr if args.json else sys.stdout
    sinks: list[EventSink] = []
    if not args.quiet:
        sinks.append(ConsoleSink(console_stream))
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
            options: dict[str, Any] = dict(
                sandbox_config=sandbox_config,
                cancel=cancel,
                limits=Limits(max_steps=args.max_steps, timeout_s=args.timeout),
                ask=terminal_ask if task.policy == "ask" else None,
            )
            spec, model_options = _model_spec(args, task), _openai_options(args)
            if args.isolated:
                report, patch_text, _ = run_task_isolated(task, spec, model_options, sink, **options)
            else:
                report = _run_in_place(task, spec, model_options, sink, options)
    finally:
        sink.close()
    _finish_report(report, args.report, console_stream)
    if args.isolated and report.patch is not None:
        _write_patch(patch_text, args.patch or str(Path(tempfile.gettempdir()) / f"codebox-{task.id}.diff"),
                     task.repo, console_stream)
    return _exit_code(report)


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
    print(f"codebox: {message}", file=sys.stderr)
    return EXIT_USAGE


def _finish_report(report: Report, path: str | None, stream: TextIO) -> None:
    if path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(report.model_dump_json(indent=2), encoding="utf-8")
    stream.write("\n" + report.render() + "\n")
    if path:
        stream.write(f"report: {path}\n")
    stream.flush()


def cmd_batch(args: argparse.Namespace) -> int:
    from agent.batch import load_tasks, render_table, run_batch, select_tasks
    from agent.engines import JobLimits

    tasks, errors = load_tasks(Path(args.tasks))
    if errors:
        print(f"codebox: {args.tasks} has {len(errors)} bad line(s); nothing was run:", file=sys.stderr)
        for error in errors:
            print(f"  {error}", file=sys.stderr)
        return EXIT_USAGE
    if not tasks:
        print(f"codebox: {args.tasks} has no tasks", file=sys.stderr)
        return EXIT_USAGE
    try:
        selected = select_tasks(tasks, args.filter)
        sandbox_config = _sandbox_config(args)
        # Each task's own max_steps / timeout_s apply; the flags, when given, cap them all.
        limits = JobLimits(max_steps=args.max_steps, timeout_s=args.timeout)
    except re.error as exc:
        return _usage_error(f"bad --filter: {exc}")
    except ValueError as exc:
        return _usage_error(f"bad arguments: {exc}")
    if not selected:
        return _usage_error(f"--filter {args.filter!r} matches no task id in {args.tasks}")
    out = Path(args.out)
    cancel = CancelToken()
    engine = None
    if args.engine == "ray":
        from agent.engines.ray import RayEngine

        engine = RayEngine(address=args.address, max_retries=args.max_retries)
    with cancel_on_signals(cancel):
        try:
            reports = run_batch(
                tasks,
                out,
                model=args.model or os.environ.get("CODEBOX_MODEL"),
                model_options=_openai_options(args),
                jobs=args.jobs,
                engine=engine,
                sandbox_config=sandbox_config,
                limits=limits,
                cancel=cancel,
                retry_errors=args.retry_errors,
                keep_workspaces=args.keep_workspaces,
                selected=selected,
            )
        except CodeboxError as exc:  # the engine could not run (no Ray, no cluster, no slots)
            print(f"codebox: {exc}", file=sys.stderr)
            return EXIT_USAGE
    print(render_table(reports))
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
        if args.force:
            with build_lock(print):
                base = REGISTRY_BASE_IMAGE if image_exists(REGISTRY_BASE_IMAGE) else BASE_IMAGE
                if base == BASE_IMAGE:
                    build_base()  # reused when present
                tag = build_sandbox(base=base, force=True)
        else:
            tag = ensure_sandbox_image(offline=False if args.pull else None)
        print(f"codebox: sandbox image ready: {tag}")
    except ImageError as exc:
        print(f"codebox: {exc}", file=sys.stderr)
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
        removed = reap_leftovers(log=print)
    except SandboxError as exc:
        print(f"codebox: {exc}", file=sys.stderr)
        return EXIT_STOPPED
    print(f"codebox: removed {len(removed)} leftover container(s)")
    return EXIT_OK


# --- parser --------------------------------------------------------------------------------------


def _add_model_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("model")
    g.add_argument("--model", help="model name for an OpenAI-compatible API, or scripted:FILE (env CODEBOX_MODEL)")
    g.add_argument("--base-url", help="OpenAI-compatible endpoint (env OPENAI_BASE_URL)")
    g.add_argument("--api-key-env", default=None, help="variable that holds the API key (default OPENAI_API_KEY)")
    g.add_argument("--request-timeout", type=float, default=None, help="seconds per model request")
    g.add_argument("--temperature", type=float, default=None)
    g.add_argument("--api", choices=["chat", "responses"], default=None, help="Chat Completions (default) or Responses")


def _add_sandbox_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("sandbox")
    g.add_argument("--image", help="sandbox image (any image with python3; default codebox-sandbox:latest)")
    g.add_argument("--memory", help="container memory limit, e.g. 1g")
    g.add_argument("--pids", type=int, help="container process limit")
    g.add_argument("--cpus", type=float, help="container CPU limit")


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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="codebox", description="A coding agent whose every tool call runs in a network-less Docker sandbox."
    )
    parser.add_argument("--version", action=_VersionAction, help="print the version and the sandbox image it expects")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run one task on a repository")
    run.add_argument("goal", help="what the agent should do")
    run.add_argument("--repo", required=True, help="the repository (mounted read-only unless the policy allows writes)")
    run.add_argument("--policy", choices=["read-only", "workspace-write", "ask"], default="read-only")
    run.add_argument("--allow", action="append", default=[], metavar="GLOB", help="writable paths")
    run.add_argument("--deny", action="append", default=[], metavar="GLOB", help="paths never written")
    run.add_argument("--test-cmd", help='the test command run_test runs, e.g. "python3 -m pytest -q"')
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
    run.add_argument("--json", action="store_true", help="events as JSON lines on stdout (progress goes to stderr)")
    run.add_argument("--quiet", action="store_true", help="no live progress")
    _add_limits(run, TaskSpec.model_fields["max_steps"].default, TaskSpec.model_fields["timeout_s"].default, "")
    _add_model_options(run)
    _add_sandbox_options(run)
    run.set_defaults(func=cmd_run)

    batch = sub.add_parser("batch", help="run a JSONL file of tasks, N at a time")
    batch.add_argument("tasks", help="JSONL: one task a line (id, repo, goal, policy, test_cmd, ...)")
    batch.add_argument("--jobs", type=int, default=2,
                       help="tasks at once (local engine; on Ray the nodes' codebox_slots decide)")
    batch.add_argument("--out", default="codebox-out", help="folder for reports, event logs, patches and the summary")
    batch.add_argument("--filter", metavar="REGEX", help="run only the tasks whose id matches (re.search)")
    batch.add_argument("--retry-errors", action="store_true", help="run again the tasks that ended in error")
    batch.add_argument("--keep-workspaces", action="store_true", help="leave each task's working copy on disk")
    batch.add_argument("--engine", choices=["local", "ray"], default="local",
                       help="where tasks run: local threads (default) or a Ray cluster (pip install 'codebox[ray]')")
    batch.add_argument("--address", default="auto",
                       help="with --engine ray: the head's HOST:PORT, or auto (the cluster this machine is part of)")
    batch.add_argument("--max-retries", type=int, default=1, metavar="N",
                       help="with --engine ray: runs again of a task whose node was lost (each pays for the model)")
    _add_limits(batch, None, None, " (caps every task's own value; default: the task's)")
    _add_model_options(batch)
    _add_sandbox_options(batch)
    batch.set_defaults(func=cmd_batch)

    ev = sub.add_parser("eval", help="SWE-bench-style evaluation: apply each prediction, run the named tests offline")
    ev.add_argument("--tasks", required=True, help="JSONL task file (SWE-bench lines: base_commit, FAIL_TO_PASS, ...)")
    ev.add_argument("--predictions", required=True, help="JSONL: instance_id, model_name_or_path, model_patch")
    ev.add_argument("--out", required=True, help="folder for <id>/eval.json and results.json")
    ev.add_argument("--jobs", type=int, default=2, help="instances at once")
    ev.add_argument("--timeout", type=float, default=1800.0, help="seconds for one instance's test run")
    _add_sandbox_options(ev)
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
    args = build_parser().parse_args(argv)
    code: int = args.func(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
