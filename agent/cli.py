"""The `codebox` command: run, batch, demo, image, gc, view."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from pathlib import Path
from typing import Any, TextIO

from agent.events import ConsoleSink, EventSink, FanoutSink, JsonlSink
from agent.loop import CancelToken, Limits
from agent.model.base import ModelClient, ModelError
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
        "max_tokens": args.max_tokens,
        "tool_choice": args.tool_choice,
        "stream": False if args.no_stream else None,
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


def _exit_code(report: Report) -> int:
    if report.status == "completed":
        return EXIT_OK
    return EXIT_CANCELLED if report.status == "cancelled" else EXIT_STOPPED


# --- commands ------------------------------------------------------------------------------------


def cmd_run(args: argparse.Namespace) -> int:
    from agent.runner import run_spec

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
            max_total_tokens=args.max_total_tokens,
            max_cost=args.max_cost,
        )
        sandbox_config = _sandbox_config(args)
        prices = _prices(args)
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
            report = run_spec(
                task,
                _model_spec(args, task),
                _openai_options(args),
                sink,
                sandbox_config=sandbox_config,
                cancel=cancel,
                limits=Limits(max_steps=args.max_steps, timeout_s=args.timeout, prices=prices),
                ask=terminal_ask if task.policy == "ask" else None,
            )
    finally:
        sink.close()
    _finish_report(report, args.report, console_stream)
    return _exit_code(report)


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
    from agent.batch import load_tasks, render_table, run_batch

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
        sandbox_config = _sandbox_config(args)
        prices = _prices(args)
        budget = _batch_budget(args, prices)
    except ValueError as exc:
        return _usage_error(f"bad arguments: {exc}")
    out = Path(args.out)
    cancel = CancelToken()
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
                max_total_tokens=args.max_total_tokens,
                max_cost=args.max_cost,
                prices=prices,
            ),
            cancel=cancel,
            budget=budget,
        )
    print(render_table(reports))
    if budget is not None:
        not_started = 0 if cancel.cancelled else len(tasks) - len(reports)
        print(budget.describe() + (f"; {not_started} task(s) not started" if not_started else ""))
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
    g.add_argument("--max-tokens", type=int, default=None, help="cap on the output tokens of one model reply")
    g.add_argument(
        "--tool-choice",
        choices=["auto", "required", "none"],
        default=None,
        help="tool_choice sent with the tools (default auto; required: a tool call every turn, no final message)",
    )
    g.add_argument("--no-stream", action="store_true", help="ask for whole replies (for servers that stream badly)")


def _add_sandbox_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("sandbox")
    g.add_argument("--image", help="sandbox image (any image with python3; default codebox-sandbox:latest)")
    g.add_argument("--memory", help="container memory limit, e.g. 1g")
    g.add_argument("--pids", type=int, help="container process limit")
    g.add_argument("--cpus", type=float, help="container CPU limit")


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
    batch.add_argument("--jobs", type=int, default=2, help="tasks at once")
    batch.add_argument("--out", default="codebox-out", help="folder for reports, event logs and the summary")
    batch.add_argument("--budget-tokens", type=int, default=None,
                       help="tokens the whole batch may spend: no task starts once they are spent")
    batch.add_argument("--budget-cost", type=float, default=None, help="the same for the cost (needs the prices)")
    _add_limits(batch, None, None, " (caps every task's own value; default: the task's)")
    _add_model_options(batch)
    _add_sandbox_options(batch)
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
    args = build_parser().parse_args(argv)
    code: int = args.func(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
