"""The `codebox` command: run, batch, eval, env, config, trust, demo, image, view, doctor, gc."""

from __future__ import annotations

import argparse
import atexit
import contextlib
import importlib
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from agent.cli.commands.common import usage_error
from agent.cli.errors import OneLineParser, parse_args
from agent.defaults import BACKEND_NAMES, DEFAULT_EVAL_TIMEOUT_S, SETTINGS
from agent.settings.environment import unknown_variables
from agent.settings.sources import KNOWN_KEYS, CodeboxSettings, ConfigError, load_settings, shown, user_config_file
from agent.task.host_run import HOST_RUN_HELP

# The parser names each command's function as "module:function"; main() imports only the chosen
# one, so `codebox --help` or `codebox view` never pays for what `codebox run` imports.
Command = Callable[[argparse.Namespace], int]


def command_function(target: str) -> Command:
    """The function a "module:function" target names, imported now."""
    module, _, name = target.partition(":")
    function: Command = getattr(importlib.import_module(module), name)
    return function


def _add_env_recipe_options(p: argparse.ArgumentParser, c: CodeboxSettings) -> None:
    """The environment recipe, date and candidates (agent/cli/env_flags.py folds them into each task's env)."""
    g = p.add_argument_group("environment recipe")
    g.add_argument("--pip", action="append", default=[], metavar="PKG",
                   help="a package the environment gets by name (PEP 508, from the index) beyond what the repo "
                        "declares")
    g.add_argument("--apt", action="append", default=[], metavar="PKG", help="a Debian package the tests need")
    g.add_argument("--extra", action="append", default=[], metavar="NAME",
                   help="an optional-dependencies extra to add (test, tests, testing, dev are taken by default)")
    g.add_argument("--group", action="append", default=[], metavar="NAME", help="a [dependency-groups] group")
    g.add_argument("--requirements", action="append", default=[], metavar="FILE",
                   help="a requirements file inside the repo")
    g.add_argument("--pre-install", action="append", default=[], metavar="CMD",
                   help="a shell command run in the build container (offline, unprivileged) in the project copy "
                        "before its build")
    g.add_argument("--recipes", metavar="FILE",
                   help="a JSON or TOML file: repository name -> recipe (pip, apt, requirements, pre_install)")
    g.add_argument("--as-of", metavar="DATE|now",
                   help="resolve packages as they were on DATE (default: the later of the task's created_at and its "
                        "commit's date; for run, HEAD's)")
    _setting(g, "env_candidates", c)
    _setting(g, "env_candidate_timeout", c)


def _add_env_parser(sub: Any, c: CodeboxSettings) -> None:
    backend = c.backend
    env = sub.add_parser("env", help="dependency environments (images with the repo's declared dependencies)")
    env_sub = env.add_subparsers(dest="env_command", required=True)
    build = env_sub.add_parser("build", help="build or reuse the environment of a repository; prints the image")
    build.add_argument("--repo", required=True, help="the repository whose declared dependencies to install")
    build.add_argument("--image", help="the base image (default codebox-sandbox:latest)")
    _add_env_backend_option(build, backend)
    build.add_argument("--find-links", action="append", default=[], metavar="DIR", help="a local folder of wheels")
    build.add_argument("--no-index", action="store_true", help="only --find-links folders, no package index")
    _add_fallback_option(build)
    build.add_argument("--print-declared", action="store_true",
                       help="print what is read from the repository (JSON) and build nothing")
    _add_env_recipe_options(build, c)
    build.set_defaults(func="agent.cli.commands.env:cmd_env_build")
    ls = env_sub.add_parser("ls", help="list environment images")
    _add_env_backend_option(ls, backend)
    ls.set_defaults(func="agent.cli.commands.env:cmd_env_ls")
    rm = env_sub.add_parser("rm", help="remove environment images")
    rm.add_argument("images", nargs="*", help="images to remove (codebox-env:... only)")
    rm.add_argument("--all", action="store_true", help="remove every environment image")
    _add_env_backend_option(rm, backend)
    rm.set_defaults(func="agent.cli.commands.env:cmd_env_rm")


def _add_env_backend_option(p: argparse.ArgumentParser, backend: str) -> None:
    p.add_argument("--backend", choices=list(BACKEND_NAMES), default=backend,
                   help="the engine whose image store holds the environments (the one the tasks run on)")


def _add_fallback_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--allow-public-fallback", action="store_true",
                   help="resolve the packages a repository's own package sources (private indexes, git/path "
                        "sources) would serve from your index instead of refusing (those sources are never used)")


# --- parser --------------------------------------------------------------------------------------

# The namespace attribute that lists the settings given as flags (agent.settings.sources's "flag" source).
GIVEN = "_given_settings"


def _note_given(namespace: argparse.Namespace, dest: str) -> None:
    setattr(namespace, GIVEN, {*getattr(namespace, GIVEN, ()), dest})


class _SettingFlag(argparse.Action):
    """`store` for a setting's flag, noting that it was given (its default is the setting in effect)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        setattr(namespace, self.dest, values)
        _note_given(namespace, self.dest)


class _SettingListFlag(argparse.Action):
    """`append` for a list setting's flag (--allow, --deny): the flags' list replaces the setting's."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        setattr(namespace, self.dest, [*(getattr(namespace, self.dest, None) or []), values])
        _note_given(namespace, self.dest)


def _setting(p: Any, key: str, c: CodeboxSettings, what: str = "", **extra: Any) -> None:
    """A setting's flag (--key-name): its type, choices and help from agent.defaults.SETTINGS, its default the
    setting in effect (agent.settings.sources), noted as given when given. ``what`` ends the help line."""
    setting = SETTINGS[key]
    options: dict[str, Any] = {"default": getattr(c, key), "action": _SettingFlag, "help": setting.help + what}
    if setting.kind in ("integer", "number"):
        options["type"] = int if setting.kind == "integer" else float
    if setting.choices:
        options["choices"] = list(setting.choices)
    p.add_argument("--" + key.replace("_", "-"), **{**options, **extra})


class _HelpFormatter(argparse.HelpFormatter):
    """Shows each option's default (after the config file) unless it has none."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if "%(default)" in text or action.default in (None, False, [], argparse.SUPPRESS):
            return text
        return text + " (default: %(default)s)"


def _add_model_options(p: argparse.ArgumentParser, c: CodeboxSettings) -> None:
    g = p.add_argument_group("model")
    for key in ("model", "base_url", "api_key_env", "request_timeout", "temperature", "api"):
        _setting(g, key, c)
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
    _setting(g, "image", c)
    g.add_argument("--env", default=None, metavar="auto|none|IMAGE",
                   help="dependency environment: auto builds or reuses one from what the repo declares (default "
                        "for run; for batch, the task's own `env`, which may also be a recipe object), none uses the "
                        "image as it is, IMAGE an image from `codebox env ls` (or any local image)")
    for key in ("memory", "pids", "cpus", "backend"):
        _setting(g, key, c)
    _setting(g, "runtime", c, metavar="NAME")
    _setting(g, "python", c, metavar="X.Y")
    _setting(g, "python_pull", c)
    g.add_argument("--python-images", action=_SettingListFlag, default=None, metavar="X.Y=IMAGE",
                   help=f"{SETTINGS['python_images'].help} (repeatable; replaces the configured list)")


def _add_write_options(p: argparse.ArgumentParser, c: CodeboxSettings) -> None:
    _setting(p, "policy", c)
    p.add_argument("--allow", action=_SettingListFlag, default=None, metavar="GLOB",
                   help=f"{SETTINGS['allow'].help} (default: {' '.join(c.allow) or '**'}). "
                   + HOST_RUN_HELP)
    p.add_argument("--deny", action=_SettingListFlag, default=None, metavar="GLOB",
                   help=f"{SETTINGS['deny'].help} (default: {' '.join(c.deny) or 'none'})")
    p.set_defaults(_allow=c.allow, _deny=c.deny)


def _add_settings_parsers(sub: Any, c: CodeboxSettings, epilog: str) -> None:
    config = sub.add_parser("config", help="every setting in effect and where it comes from (flag, variable, file)",
                            formatter_class=_HelpFormatter, epilog=epilog)
    config.add_argument("--repo", help="also the settings of this repository (as `codebox run --repo` reads them)")
    config.add_argument("--json", action="store_true", help="as one JSON object")
    _add_write_options(config, c)
    _setting(config, "test_cmd", c)
    _add_test_timeouts(config, c)
    _setting(config, "jobs", c)
    _setting(config, "env_candidates", c)
    _setting(config, "env_candidate_timeout", c)
    _add_limits(config, c, c.max_steps, c.timeout, "")
    _add_model_options(config, c)
    _add_sandbox_options(config, c)
    config.set_defaults(func="agent.cli.commands.config:cmd_config")

    trust = sub.add_parser("trust", help="let a project's own settings loosen or redirect (shown before recorded)")
    trust.add_argument("path", nargs="?", help="the project folder (its pyproject.toml [tool.codebox], codebox.toml)")
    trust.add_argument("--list", action="store_true", help="the trusted projects, and whether they changed since")
    trust.add_argument("--revoke", metavar="PATH", help="stop trusting this project")
    trust.add_argument("--yes", action="store_true", help="trust without asking (the changes are still printed)")
    trust.set_defaults(func="agent.cli.commands.config:cmd_trust")


def _add_limits(p: argparse.ArgumentParser, c: CodeboxSettings, max_steps: int | None, timeout: float | None,
                what: str) -> None:
    _setting(p, "max_steps", c, what, default=max_steps)
    _setting(p, "timeout", c, what, default=timeout)
    _add_budget_options(p, c, what)


def _add_test_timeouts(p: argparse.ArgumentParser, c: CodeboxSettings) -> None:
    _setting(p, "test_timeout", c)
    _setting(p, "max_test_timeout", c)


def _add_budget_options(p: argparse.ArgumentParser, c: CodeboxSettings, what: str) -> None:
    g = p.add_argument_group("budget")
    _setting(g, "max_total_tokens", c, f": the run stops (reason budget) before a request that would pass it{what}")
    _setting(g, "max_cost", c, f": the same for the cost{what}")
    _setting(g, "price_input", c, metavar="PRICE")
    _setting(g, "price_output", c, metavar="PRICE")


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
    "Settings, highest first: the flags, the environment (CODEBOX_*; OPENAI_BASE_URL), {user}, a trusted "
    "project, the built-in defaults. A project's settings (pyproject.toml [tool.codebox], codebox.toml; in "
    "this folder and in --repo) may only tighten the defaults until you `codebox trust` it; `codebox config` "
    "shows each setting and its source. Exit codes: 0 completed, 1 the task did not complete "
    "(or --require-tests and the last test failed or never ran), 2 usage error, 130 cancelled."
)


class _Ignored:
    """What a command's parser is while another command runs: every call is taken and ignored."""

    def __getattr__(self, name: str) -> Callable[..., _Ignored]:
        return lambda *args, **kwargs: self


class _OnlyChosen:
    """``add_parser`` of the subcommands when one of them is known to run (``chosen``): each command is
    still listed with its help (`codebox --help`, the choices of an error, the did-you-mean), but only
    the chosen one's parser gets its arguments. A parser's arguments cost ~50 us each (argparse makes
    a help formatter per argument and looks up translations per parser): the whole tree is ~10 ms
    of every command's start, a third of it before a cache hit of `codebox env build` could start."""

    def __init__(self, sub: Any, chosen: str | None) -> None:
        self.sub = sub
        self.chosen = chosen

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:
        parser: argparse.ArgumentParser = self.sub.add_parser(name, **kwargs)
        return parser if self.chosen in (None, name) else cast(argparse.ArgumentParser, _Ignored())


def chosen_command(argv: list[str]) -> str | None:
    """The subcommand argv names (the first word that is no option: `codebox` has no option with a value)."""
    for word in argv:
        if word == "--":
            return None
        if not word.startswith("-"):
            return word
    return None


def build_parser(settings: CodeboxSettings | None = None, chosen: str | None = None) -> argparse.ArgumentParser:
    """The parser; its defaults are ``settings`` (the config files), built-in ones when None.

    ``chosen``: the command that runs; the other commands' arguments are left out (``_OnlyChosen``).
    """
    c = settings or CodeboxSettings()
    epilog = CONFIG_EPILOG.format(user=user_config_file())
    parser = OneLineParser(  # one-line errors with a did-you-mean; the subcommands inherit it
        prog="codebox",
        description="A coding agent whose every tool call runs in a network-less Docker sandbox.",
        epilog=epilog,
    )
    parser.add_argument("--version", action=_VersionAction, help="print the version and the sandbox image it expects")
    sub: Any = _OnlyChosen(parser.add_subparsers(dest="command", required=True), chosen)

    run = sub.add_parser("run", help="run one task on a repository", formatter_class=_HelpFormatter, epilog=epilog)
    run.add_argument("goal", help="what the agent should do")
    run.add_argument("--repo", required=True,
                     help="the repository (mounted read-only unless the policy allows writes)")
    _add_write_options(run, c)
    run.add_argument("--test-cmd", default=c.test_cmd, action=_SettingFlag,
                     help='the test command run_test runs, e.g. "python3 -m pytest -q" '
                          "(none given: that, where the repository shows pytest)")
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
    run.add_argument("--events", help="append every event to this JSONL file (a line each; each carries its task_id)")
    run.add_argument("--report", help="write the report to this JSON file")
    run.add_argument("--output-last-message", metavar="FILE", help="write the model's final message to FILE")
    run.add_argument("--json", action="store_true", help="events as JSON lines on stdout (progress goes to stderr)")
    run.add_argument("--quiet", action="store_true", help="no live progress (the summary is still printed)")
    run.add_argument("--no-diff", action="store_true", help="do not print the diff of what the run changed")
    run.add_argument("--require-tests", action="store_true",
                     help="exit 1 unless the last test run passed (a failing or missing test run fails the command)")
    _add_limits(run, c, c.max_steps, c.timeout, "")
    _add_test_timeouts(run, c)
    _add_model_options(run, c)
    _add_sandbox_options(run, c)
    _add_fallback_option(run)
    _add_env_recipe_options(run, c)
    run.set_defaults(func="agent.cli.commands.run:cmd_run")

    batch = sub.add_parser("batch", help="run a JSONL file of tasks, N at a time", formatter_class=_HelpFormatter,
                           epilog=epilog)
    batch.add_argument("tasks", help="JSONL: one task a line (id, repo, goal, policy, test_cmd, ...)")
    _setting(batch, "jobs", c)
    batch.add_argument("--out", default="codebox-out", help="folder for reports, event logs, patches and the summary")
    batch.add_argument("--filter", metavar="REGEX", help="run only the tasks whose id matches (re.search)")
    batch.add_argument("--retry-errors", action="store_true", help="run again the tasks that ended in error")
    batch.add_argument("--keep-workspaces", action="store_true", help="leave each task's working copy on disk")
    batch.add_argument("--no-warm", action="store_true",
                       help="do not prepare the next tasks' workspaces and sandboxes while tasks run (local engine)")
    batch.add_argument("--engine", choices=["local", "ray"], default="local",
                       help="where tasks run: local threads (default) or a Ray cluster "
                       "(pip install 'codebox-agent[ray]')")
    batch.add_argument("--address", default="auto",
                       help="with --engine ray: the head's HOST:PORT, or auto (the cluster this machine is part of)")
    batch.add_argument("--max-retries", type=int, default=1, metavar="N",
                       help="with --engine ray: runs again of a task whose node was lost (each pays for the model)")
    batch.add_argument("--budget-tokens", type=int, default=None,
                       help="tokens the whole batch may spend: no task starts once they are spent")
    batch.add_argument("--budget-cost", type=float, default=None, help="the same for the cost (needs the prices)")
    _add_limits(batch, c, None, None, " (caps every task's own value; default: the task's)")
    _add_test_timeouts(batch, c)
    _add_model_options(batch, c)
    _add_sandbox_options(batch, c)
    _add_fallback_option(batch)
    _add_env_recipe_options(batch, c)
    batch.set_defaults(func="agent.cli.commands.batch:cmd_batch")

    ev = sub.add_parser("eval", help="grade predictions as SWE-bench does: each instance's tests, offline, in its "
                        "environment", formatter_class=_HelpFormatter, epilog=epilog)
    ev.add_argument("--tasks", "--dataset", dest="tasks", metavar="FILE",
                    help="the dataset as shipped (SWE-bench, SWE-Gym, SWE-smith lines): JSONL, a JSON list or parquet")
    ev.add_argument("--predictions", metavar="FILE|gold",
                    help="JSONL or JSON: instance_id, model_name_or_path, model_patch; gold: each instance's own patch")
    ev.add_argument("--out", help="folder for results.json, report.json (SWE-bench's keys) and <id>/ (the evidence)")
    ev.add_argument("--repos", metavar="DIR",
                    help="where owner/name repositories are: DIR/owner/name or DIR/owner__name (a clone or a mirror)")
    ev.add_argument("--trust-dataset", metavar="FILE", action="append", default=[],
                    help="take every key of FILE's lines (the --tasks or --predictions file): task settings such as "
                    "runtime, env, image or limits, as a task file's (default: a line carries data only; repeatable)")
    ev.add_argument("--dataset-image", metavar="GLOB", action="append", default=[],
                    help="use a line's own image (SWE-bench's image, SWE-smith's image_name) when its name (or its "
                    "last part) matches GLOB and it is on this machine, e.g. 'sweb.eval.*' "
                    "(repeatable; default: never)")
    ev.add_argument("--regrade", metavar="OUT", help="judge every instance of a kept run again from its evidence")
    ev.add_argument("--strict", action="store_true", default=None,
                    help="an instance whose patch touches test infrastructure (flagged) counts as unresolved")
    ev.add_argument("--jobs", type=int, default=c.jobs, help="instances at once")
    ev.add_argument("--timeout", type=float, default=DEFAULT_EVAL_TIMEOUT_S, help="seconds for one instance's tests")
    ev.add_argument("--filter", metavar="REGEX", help="evaluate only the instances whose id matches (re.search)")
    ev.add_argument("--split", help="evaluate only the lines of this split (a dataset with a split column)")
    ev.add_argument("--retry-errors", action="store_true", help="evaluate again the instances that ended in error")
    ev.add_argument("--no-warm", action="store_true",
                    help="do not prepare the next instances' workspaces and sandboxes while others run (local engine)")
    ev.add_argument("--engine", choices=["local", "ray"], default="local",
                    help="where instances run: local threads (default) or a Ray cluster")
    ev.add_argument("--address", default="auto", help="with --engine ray: the head's HOST:PORT, or auto")
    ev.add_argument("--max-retries", type=int, default=1, metavar="N",
                    help="with --engine ray: runs again of an instance whose node was lost")
    ev.add_argument("--specs", metavar="FILE|none",
                    help="the dataset's per-repository, per-version specs as JSON ({\"owner/name\": {\"version\": "
                         "{\"python\": ...}}}); default: SWE-bench 4.1.0's, fetched once from the package index and "
                         "read as data; none: no specs")
    ev.add_argument("--find-links", action="append", default=[], metavar="DIR",
                    help="a local folder of wheels the environments may use (repeatable; relative to here)")
    _add_sandbox_options(ev, c)
    _add_env_recipe_options(ev, c)
    ev.set_defaults(func="agent.cli.commands.evaluation:cmd_eval")

    demo = sub.add_parser("demo", help="the whole pipeline on a bundled buggy repo, with a scripted model")
    demo.add_argument("--keep", action="store_true", help="keep the demo's temporary repository")
    demo.add_argument("--image", help="sandbox image to use")
    demo.add_argument("--runtime", default=c.runtime, metavar="NAME",
                      help="OCI runtime of the sandbox: runc, runsc (gVisor), or any the engine lists")
    demo.set_defaults(func="agent.cli.commands.maintenance:cmd_demo")

    image = sub.add_parser("image", help="sandbox image")
    image_sub = image.add_subparsers(dest="image_command", required=True)
    build = image_sub.add_parser("build", help="build the sandbox image (offline: debootstrap base if needed)")
    build.add_argument("--force", action="store_true", help="rebuild even if it exists")
    build.add_argument("--pull", action="store_true", help="build on the registry base (pulled) instead of offline")
    build.add_argument("--backend", choices=list(BACKEND_NAMES), default="docker",
                       help="the engine whose store gets it (podman: Docker's image, copied over)")
    build.set_defaults(func="agent.cli.commands.maintenance:cmd_image")
    python = image_sub.add_parser("python", help="where each Python version comes from: list them, register an "
                                  "image for one, or build its Debian suite's image now")
    python.add_argument("version", nargs="?", metavar="X.Y", help="the Python version (default: every one)")
    python.add_argument("--image", metavar="NAME", help="register NAME as the sandbox image of X.Y (taken as it is)")
    python.add_argument("--forget", action="store_true", help="forget the image registered for X.Y")
    python.add_argument("--build", action="store_true",
                        help="build X.Y's image now, offline: its Debian suite's, else the host's own build copied in")
    python.set_defaults(func="agent.cli.commands.maintenance:cmd_image_python")

    _add_env_parser(sub, c)
    _add_settings_parsers(sub, c, epilog)

    view = sub.add_parser("view", help="runs and batches as one HTML page (a batch --out folder, events or report)")
    view.add_argument("path", help="a batch --out folder, a task folder, an events .jsonl or a report .json")
    view.add_argument("--out", help="the HTML file to write (default: PATH/view.html, or FILE.html next to a file)")
    view.add_argument("--serve", action="store_true", help="serve the page on 127.0.0.1 (re-read at each reload)")
    view.add_argument("--port", type=int, default=8765, help="port for --serve (0: any free port)")
    view.set_defaults(func="agent.cli.commands.maintenance:cmd_view")

    doctor = sub.add_parser("doctor", help="is this machine ready? the engine, the sandbox image, the runtimes, "
                            "Podman, the disk, the model, its key and endpoint: a line each, with the fix",
                            formatter_class=_HelpFormatter)
    # The settings the checks read, as `codebox run` reads them (flags, CODEBOX_*, the config files).
    for key in ("backend", "image", "model", "base_url", "api_key_env", "api"):
        _setting(doctor, key, c)
    _setting(doctor, "runtime", c, metavar="NAME")
    doctor.set_defaults(func="agent.cli.commands.doctor:cmd_doctor")

    gc = sub.add_parser("gc", help="remove leftover codebox containers of dead runs (their owner process is gone, "
                        "or their lifetime has passed), the runtime folders of other codebox versions that no "
                        "container mounts, and the superseded toolchain images (an older image of a language's "
                        "toolchain) that no image or container uses")
    gc.add_argument("--backend", choices=list(BACKEND_NAMES), default=c.backend, help="the engine to clean")
    gc.add_argument("--dry-run", action="store_true",
                    help="remove nothing: say which containers, runtime folders and toolchain images (with their "
                         "sizes) would be removed and which are kept, and why")
    gc.add_argument("--owner", type=int, metavar="PID",
                    help="only the containers of this process (its pid on this machine, as `docker ps` shows in "
                         "the codebox.owner label)")
    gc.set_defaults(func="agent.cli.commands.maintenance:cmd_gc")
    return parser


# The commands whose --repo is a project too (its settings count), and those that say which settings came
# from a project before they run.
REPO_COMMANDS = ("run", "config")
ANNOUNCING_COMMANDS = ("run", "batch", "eval")


def parse(argv: list[str] | None) -> argparse.Namespace | int:
    """The arguments with every setting in effect as their defaults, or the exit code of a usage error.

    Parsed twice when the command has a --repo: its settings can be read only once it is known.
    """
    chosen = chosen_command(sys.argv[1:] if argv is None else argv)
    try:
        settings = load_settings()
        args = parse_args(build_parser(settings, chosen), argv)  # one-line errors, with a did-you-mean
        repo = getattr(args, "repo", None) if args.command in REPO_COMMANDS else None
        if repo:
            settings = load_settings(repo=Path(repo).expanduser())
            args = parse_args(build_parser(settings, chosen), argv)
    except ConfigError as exc:
        return usage_error(str(exc))
    if getattr(args, "_allow", None) is not None:  # a flag replaces the configured list
        args.allow = args._allow if args.allow is None else args.allow
        args.deny = args._deny if args.deny is None else args.deny
    if getattr(args, "python_images", []) is None:  # the flags' list replaces the configured one
        args.python_images = settings.python_images
    settings.given_as_flags({key: getattr(args, key) for key in getattr(args, GIVEN, ())})
    args.settings = settings
    return args


def announce(settings: CodeboxSettings) -> None:
    """One line when a project's file set any setting in effect, one per refused value, one per unread file."""
    from agent.escape import printable

    keys = settings.from_projects()
    if keys:
        by_file: dict[str, list[str]] = {}
        for key in keys:
            source = settings.sources[key]
            trust = "trusted" if source.trusted else "untrusted: tightens the default"
            by_file.setdefault(f"{source.where} ({trust})", []).append(f"{key} = {shown(getattr(settings, key))}")
        text = "; ".join(f"{', '.join(items)} from {where}" for where, items in by_file.items())
        print(f"codebox: settings from a project: {printable(text)}", file=sys.stderr)
    for refusal in settings.refused:
        print(f"codebox: {refusal.line()}", file=sys.stderr)
    for note in settings.notes:
        print(f"codebox: {printable(note)}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    for warning in unknown_variables(os.environ, KNOWN_KEYS):
        print(f"codebox: {warning}", file=sys.stderr)
    args = parse(argv)
    if isinstance(args, int):
        return args
    if args.command in ANNOUNCING_COMMANDS:
        announce(args.settings)
    return command_function(args.func)(args)


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
