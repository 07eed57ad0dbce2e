"""`codebox batch`: many tasks through an engine (a workspace each, a patch out of each), resumable."""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agent.cancel import CancelToken
from agent.cli.commands.common import (
    EXIT_CANCELLED,
    EXIT_OK,
    EXIT_STOPPED,
    EXIT_USAGE,
    flag_problem,
    model_spec,
    openai_options,
    prices_from_flags,
    sandbox_config_from_flags,
    setting_origin,
    usage_error,
)
from agent.cli.signals import cancel_on_signals
from agent.errors import CodeboxError
from agent.escape import printable
from agent.sandboxes.config import SandboxConfigError
from agent.settings import checks


def _batch_budget(args: argparse.Namespace, prices: Any) -> Any:
    from agent.task.budget import BatchBudget

    if args.budget_tokens is None and args.budget_cost is None and prices is None:
        return None
    for name in ("budget_tokens", "budget_cost"):
        if getattr(args, name) is not None and getattr(args, name) <= 0:
            raise ValueError(f"--{name.replace('_', '-')} must be more than 0")
    return BatchBudget(args.budget_tokens, args.budget_cost, prices)


def _tasks_file_problem(path: str) -> str | None:
    """The tasks file must be there: a plain "no such file", not a bad line 0."""
    file = Path(path).expanduser()
    if not file.exists():
        return f"{path}: no such file (the tasks file: one JSON task a line)"
    if file.is_dir():
        return f"{path} is a folder, not a tasks file"
    return None


def _task_model_problem(args: argparse.Namespace, task: Any) -> str | None:
    """Each task has a model (its own, the flag's or CODEBOX_MODEL), a script that exists, a key.
    On Ray the script and the key are the nodes' (their files, their environment): only the name."""
    from agent.cli import preflight

    spec = model_spec(args, task)
    if args.engine == "ray":
        return None if spec else preflight.model_problem(None, "", None)
    return preflight.model_problem(spec, args.api_key_env or "OPENAI_API_KEY", args.base_url)


def cmd_batch(args: argparse.Namespace) -> int:
    from agent.batch import load_tasks, run_batch, select_tasks
    from agent.console.batch_view import BatchView, print_table
    from agent.engines import JobLimits

    problem = _tasks_file_problem(args.tasks) or checks.model_option_problems(
        args.base_url, args.request_timeout, args.temperature, setting_origin(args, "base_url", "--base-url")
    ) or (
        checks.number_problem("--jobs", args.jobs, minimum=1)
        or checks.number_problem("--max-steps", args.max_steps, minimum=1)
        or checks.number_problem("--timeout", args.timeout, minimum=0, inclusive=False)
    )
    if problem:
        return usage_error(problem)
    try:
        sandbox_config = sandbox_config_from_flags(args)
        prices = prices_from_flags(args)
        budget = _batch_budget(args, prices)
        # Each task's own limits apply; the flags, when given, cap them all.
        limits = JobLimits(max_steps=args.max_steps, timeout_s=args.timeout, max_total_tokens=args.max_total_tokens,
                           max_cost=args.max_cost, prices=prices, test_timeout_s=args.test_timeout,
                           max_test_timeout_s=args.max_test_timeout)
    except SandboxConfigError as exc:
        return usage_error(flag_problem(exc))
    except ValidationError as exc:
        return usage_error(checks.validation_message(exc))
    except ValueError as exc:
        return usage_error(str(exc))
    tasks, errors = load_tasks(Path(args.tasks))
    if errors:
        print(f"codebox: {printable(args.tasks)} has {len(errors)} bad line(s); nothing was run:", file=sys.stderr)
        for error in errors:
            print(f"  {printable(error)}", file=sys.stderr)
        return EXIT_USAGE
    if not tasks:
        return usage_error(f"{args.tasks} has no tasks")
    if args.env:  # the flag, when given, sets every task's environment
        tasks = [task.model_copy(update={"env": args.env}) for task in tasks]
    if args.allow_public_fallback:
        tasks = [task.model_copy(update={"allow_public_fallback": True}) for task in tasks]
    from agent.cli.env_flags import EnvFlags


    try:  # --pip, --pre-install, --recipes, --as-of complete each task's env; --python and the rest its Python
        flags = EnvFlags(args)
        tasks = _with_python(args, flags, [flags.apply(task) for task in tasks])
    except CodeboxError as exc:
        return usage_error(str(exc))
    try:
        selected = select_tasks(tasks, args.filter)
    except re.error as exc:
        return usage_error(f"bad --filter: {exc}")
    if not selected:
        return usage_error(f"--filter {args.filter!r} matches no task id in {args.tasks}")
    for task in selected:
        problem = _task_model_problem(args, task) or checks.missing_test_program(
            task, task.image or sandbox_config.image, sandbox_config.allow_shell
        )
        if problem:
            return usage_error(f"task {task.id}: {problem} (nothing was run)")
    out = Path(args.out)
    cancel = CancelToken()
    engine = None
    if args.engine == "ray":
        from agent.engines.ray import RayEngine, driver_only_variables

        engine = RayEngine(address=args.address, max_retries=args.max_retries)
        note = driver_only_variables()
        if note:
            print(f"codebox: {note}", file=sys.stderr)
    view = BatchView(len(selected), sys.stderr)
    try:
        with cancel_on_signals(cancel, view):
            reports = run_batch(
                tasks,
                out,
                model=args.model or os.environ.get("CODEBOX_MODEL"),
                model_options=openai_options(args),
                jobs=args.jobs,
                engine=engine,
                sandbox_config=sandbox_config,
                limits=limits,
                cancel=cancel,
                retry_errors=args.retry_errors,
                keep_workspaces=args.keep_workspaces,
                selected=selected,
                view=view,
                budget=budget,
                warm=not args.no_warm,
            )
    except CodeboxError as exc:  # the engine could not run (no Ray, no cluster, no slots)
        return usage_error(str(exc))
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


def _with_python(args: argparse.Namespace, flags: Any, tasks: list[Any]) -> list[Any]:
    """Each task's Python and its image (agent/cli/python_flags.py): read at its base commit when it names one."""
    from agent.cli.commands.common import env_progress
    from agent.cli.python_flags import PythonFlags
    from agent.env.python.requires import at_commit, in_folder
    from agent.env.recipe import EnvSpec
    from agent.env.resolve import asof

    python = PythonFlags(args, env_progress)
    out = []
    for task in tasks:
        repo = Path(task.repo).expanduser()
        read = at_commit(repo, task.base_commit) if task.base_commit else in_folder(repo)
        when = flags.as_of or asof.choose(task.env.as_of if isinstance(task.env, EnvSpec) else None, repo,
                                          task.created_at, task.base_commit)
        out.append(python.apply(task, read, when, recipe_python=flags.book.setting_for(task.repo, task.version,
                                                                                       "python")))
    return out
