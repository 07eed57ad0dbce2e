"""`codebox eval`: a dataset and its predictions graded as SWE-bench grades them; `--regrade OUT` from what was kept."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

from agent.cancel import CancelToken
from agent.cli.commands.common import (
    EXIT_CANCELLED,
    EXIT_OK,
    EXIT_STOPPED,
    EXIT_USAGE,
    flag_problem,
    sandbox_config_from_flags,
    usage_error,
)
from agent.cli.signals import cancel_on_signals
from agent.errors import CodeboxError
from agent.escape import printable
from agent.sandboxes.config import SandboxConfig, SandboxConfigError
from agent.settings import checks


def cmd_eval(args: argparse.Namespace) -> int:
    if args.regrade:
        return _regrade(args)
    missing = [flag for flag, value in (("--tasks", args.tasks), ("--predictions", args.predictions),
                                        ("--out", args.out)) if not value]
    if missing:
        return usage_error(f"eval needs {', '.join(missing)} (or --regrade OUT to judge a kept run again)")
    problem = (checks.number_problem("--jobs", args.jobs, minimum=1)
               or checks.number_problem("--timeout", args.timeout, minimum=0, inclusive=False))
    if problem:
        return usage_error(problem)
    try:
        config = sandbox_config_from_flags(args)
        pattern = re.compile(args.filter) if args.filter else None
    except SandboxConfigError as exc:
        return usage_error(flag_problem(exc))
    except re.error as exc:
        return usage_error(f"bad --filter: {exc}")
    problem = _find_links(args.find_links)
    if problem:
        return usage_error(problem)
    inputs = _inputs(args, pattern.pattern if pattern else None, config)
    if isinstance(inputs, int):
        return inputs
    instances, predictions, bad_input = inputs
    try:
        instances = _with_env_flags(args, _with_specs(args, instances))
    except CodeboxError as exc:  # EnvError: a bad --recipes file, --as-of date or --specs file
        return usage_error(str(exc))
    from agent.backends.registry import backend_for

    try:  # each instance's Python (no engine is asked for the default image's); a --python no source has
        instances, unavailable, said = _with_python(args, instances)
        # no engine, no runtime, no sandbox image the instances run in: said before any instance starts
        for image in sorted({i.task.image or config.image for i in instances}):
            backend_for(config).preflight(config.replace(image=image))
    except CodeboxError as exc:
        return usage_error(str(exc))
    for line in said:
        print(f"codebox: {printable(line)}", file=sys.stderr)
    bad_input = bad_input or unavailable
    if not instances:
        return usage_error("no instance's Python can be had here (above)")
    return _run(args, instances, predictions, config, bad_input)


def _with_env_flags(args: argparse.Namespace, instances: list[Any]) -> list[Any]:
    """--pip, --pre-install, --recipes, --as-of folded into each instance's env, as batch folds them; a
    recipes file is keyed by the repository's name as the dataset gives it (owner/name), not by its clone."""
    from agent.cli.env_flags import EnvFlags

    flags = EnvFlags(args)
    folded = []
    for instance in instances:
        task = instance.task
        named = flags.apply(task.model_copy(update={"repo": instance.dataset.repo or task.repo}))
        folded.append(instance.model_copy(update={"task": named.model_copy(update={"repo": task.repo})}))
    return folded


def _find_links(folders: list[str]) -> str | None:
    """--find-links DIR...: each an existing folder, made absolute, handed to every environment build (before the
    user's CODEBOX_FIND_LINKS); the problem when one is not a folder."""
    import os

    found = []
    for folder in folders:
        path = Path(folder).expanduser().resolve()
        if not path.is_dir():
            return f"--find-links {folder}: not a directory"
        found.append(str(path))
    if found:
        os.environ["CODEBOX_FIND_LINKS"] = os.pathsep.join(
            [*found, *(p for p in os.environ.get("CODEBOX_FIND_LINKS", "").split(os.pathsep) if p)])
    return None


def _with_specs(args: argparse.Namespace, instances: list[Any]) -> list[Any]:
    """Each row's dataset spec (SWE-bench's, by repository and version; or --specs FILE) folded in: its recipe into
    the row's environment, its notes into the row's, its Python kept for the choice (``dataset.spec``)."""
    if args.specs == "none" or not any(i.task.version for i in instances):
        return instances  # before the imports: the specs' readers are a tenth of an eval's start
    from agent.cli.commands.common import env_progress
    from agent.env.recipe import EnvSpec
    from agent.eval.specs import load_specs

    specs = load_specs(Path(args.specs).expanduser() if args.specs else None, env_progress)
    if specs is None:
        return instances
    out = []
    for instance in instances:
        spec = specs.for_row(instance.dataset.repo, instance.task.version)
        if spec is None:
            out.append(instance)
            continue
        task, env = instance.task, instance.task.env
        if env == "auto" or isinstance(env, EnvSpec):
            own = env if isinstance(env, EnvSpec) else EnvSpec()
            task = task.model_copy(update={"env": EnvSpec(**spec.recipe.plus(own.recipe()).model_dump(),
                                                          as_of=own.as_of)})
        dataset = instance.dataset.model_copy(update={"notes": [*instance.dataset.notes, *spec.notes],
                                                      "spec_python": spec.python, "spec": spec.where})
        out.append(instance.model_copy(update={"task": task, "dataset": dataset}))
    return out


def _with_python(args: argparse.Namespace, instances: list[Any]) -> tuple[list[Any], bool, list[str]]:
    """Each instance's Python and its image (agent/cli/python_flags.py); an instance whose Python no source has is
    named and left out (the rest run); one line to say per distinct choice."""
    from collections import Counter

    from agent.cli.commands.common import env_progress
    from agent.cli.env_flags import EnvFlags
    from agent.cli.python_flags import PythonFlags
    from agent.containers.pythons import PythonUnavailable
    from agent.env.python.requires import at_commit
    from agent.env.recipe import EnvSpec
    from agent.env.resolve import asof

    python = PythonFlags(args, env_progress)
    flags = EnvFlags(args)
    out, said, unavailable = [], Counter[str](), False
    for instance in instances:
        task, info = instance.task, instance.dataset
        spec = (info.spec_python, info.spec) if info.spec_python else None
        when = flags.as_of or (task.env.as_of if isinstance(task.env, EnvSpec) else None) or (
            asof.normalize(task.created_at, "the task's created_at") if task.created_at else None)
        try:
            task = python.apply(task, at_commit(Path(task.repo), task.base_commit or "HEAD"), when, spec,
                                flags.book.setting_for(info.repo or task.repo, task.version, "python"))
        except PythonUnavailable as exc:
            if python.asked:
                raise
            print(f"codebox: {instance.where}: {printable(str(exc))} (skipped)", file=sys.stderr)
            unavailable = True
            continue
        if task.python_choice is not None:
            said[task.python_choice.line()] += 1
        out.append(instance.model_copy(update={"task": task}))
    lines = [f"{line} [{count} instance{'s' if count != 1 else ''}]" for line, count in said.items()]
    return out, unavailable, lines


def _inputs(args: argparse.Namespace, pattern: str | None,
            config: SandboxConfig) -> tuple[list[Any], dict[str, Any], bool] | int:
    """The instances with a prediction and the predictions; each bad line named (the rest still run). A line's
    image is used when the sandbox's backend has it (``config``'s)."""
    from agent.backends.registry import backend_for
    from agent.eval.dataset import LineRules, load_dataset
    from agent.eval.predictions import GOLD, InputError, gold_predictions, load_predictions, match

    repos = Path(args.repos).expanduser() if args.repos else None
    if repos is not None and not repos.is_dir():
        return usage_error(f"--repos {args.repos}: not a directory")
    trusted = _trusted_files(args)
    if isinstance(trusted, int):
        return trusted
    def local_image(name: str) -> bool:
        try:
            return backend_for(config).image_id(config.replace(image=name)) is not None  # None: not there, or no engine
        except CodeboxError:  # a name no sandbox can be made with: not here
            return False

    rules = LineRules(trusted="tasks" in trusted, image_globs=list(args.dataset_image))
    loaded = load_dataset(Path(args.tasks), repos_dir=repos, env=args.env, split=args.split, pattern=pattern,
                          image_exists=local_image, rules=rules)
    if args.predictions == GOLD:
        predictions = gold_predictions({i.task.id: i.task.patch for i in loaded.instances})
        prediction_errors: list[InputError] = []
    else:
        predictions, prediction_errors = load_predictions(Path(args.predictions), trusted="predictions" in trusted)
    errors = [*loaded.errors, *prediction_errors]
    for error in errors:
        print(f"codebox: {printable(str(error))} (skipped)", file=sys.stderr)
    ids = [i.task.id for i in loaded.instances]
    paired, orphans, unpredicted = match(ids, predictions)
    for pid in orphans:
        print(f"codebox: prediction {printable(repr(pid))} matches no instance in {args.tasks}: skipped",
              file=sys.stderr)
    if loaded.skipped_split:
        print(f"codebox: {loaded.skipped_split} instance(s) of other splits than {args.split!r} left out",
              file=sys.stderr)
    if not paired:
        return usage_error(f"no prediction in {args.predictions} matches an instance in {args.tasks}"
                           if loaded.instances else f"{args.tasks} has no instance to evaluate")
    if unpredicted:
        print(f"codebox: {len(unpredicted)} instance(s) have no prediction and are not evaluated", file=sys.stderr)
    return loaded.instances, predictions, bool(errors)


def _trusted_files(args: argparse.Namespace) -> set[str] | int:
    """Which input files --trust-dataset names ("tasks", "predictions"); a usage error for any other file."""
    named: set[str] = set()
    for given in args.trust_dataset:
        path = Path(given).expanduser().resolve()
        matches = {flag for flag, value in (("tasks", args.tasks), ("predictions", args.predictions))
                   if value and value != "gold" and Path(value).expanduser().resolve() == path}
        if not matches:
            return usage_error(f"--trust-dataset {given}: names neither the --tasks nor the --predictions file")
        named |= matches
    return named


def _run(args: argparse.Namespace, instances: list[Any], predictions: dict[str, Any], config: Any,
         bad_input: bool) -> int:
    from agent.eval.report import render_table
    from agent.eval.run import EvalOptions, run_eval

    engine = None
    if args.engine == "ray":
        from agent.engines.ray import RayEngine, driver_only_variables

        engine = RayEngine(address=args.address, max_retries=args.max_retries)
        note = driver_only_variables()
        if note:
            print(f"codebox: {note}", file=sys.stderr)
    options = EvalOptions(jobs=args.jobs, engine=engine, sandbox=config, timeout_s=args.timeout,
                          strict=bool(args.strict), warm=not args.no_warm, retry_errors=args.retry_errors)
    cancel = CancelToken()
    try:
        with cancel_on_signals(cancel):
            results = run_eval(instances, predictions, Path(args.out), options, cancel)
    except CodeboxError as exc:  # the engine could not run (no Ray, no cluster)
        return usage_error(str(exc))
    print(render_table(results))
    out = Path(args.out)
    print(f"\nresults: {out / 'results.json'} · SWE-bench's report: {out / 'report.json'}"
          f" · per instance: {out}/<id>/eval.json")
    if cancel.cancelled:
        return EXIT_CANCELLED
    return EXIT_STOPPED if bad_input or any(r.status == "error" for r in results) else EXIT_OK


def _regrade(args: argparse.Namespace) -> int:
    from agent.eval.report import render_table
    from agent.eval.run import regrade

    given = [flag for flag, value in (("--tasks", args.tasks), ("--predictions", args.predictions)) if value]
    if given:
        return usage_error(f"--regrade judges a kept run from its own evidence: drop {', '.join(given)}")
    out = Path(args.regrade)
    try:
        results = regrade(out, args.strict, progress=sys.stderr)
    except (OSError, ValueError, KeyError) as exc:
        return usage_error(f"--regrade {args.regrade}: not the --out of a codebox eval run ({exc})")
    print(render_table(results))
    print(f"\nregraded {len(results)} instance(s) from {out}: results.json, report.json, <id>/eval.json rewritten")
    return EXIT_OK if results else EXIT_USAGE
