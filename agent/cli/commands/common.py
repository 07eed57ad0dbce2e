"""What every `codebox` command shares: exit codes, the model and sandbox flags, one-line errors.

Imported before any command runs (agent.cli.parser reports its usage errors with it): nothing heavy at
module level (no pydantic, no Docker client); what a helper needs, it imports when called.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.escape import printable

if TYPE_CHECKING:
    from agent.protocol import TaskSpec
    from agent.sandboxes.config import SandboxConfig, SandboxConfigError

# 0: the task completed; 1: it did not (stopped, error; or --require-tests and the last test
# failed or never ran); 2: a usage error, found before anything ran; 130: cancelled.
EXIT_OK, EXIT_STOPPED, EXIT_USAGE, EXIT_CANCELLED = 0, 1, 2, 130


def openai_options(args: argparse.Namespace) -> dict[str, Any]:
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


def setting_origin(args: argparse.Namespace, key: str, flag: str) -> str:
    """How a message names where a setting's value came from: its flag, its variable, or its file and key."""
    settings = getattr(args, "settings", None)
    source = settings.sources.get(key) if settings is not None else None
    if source is None or source.kind in ("flag", "default"):
        return flag
    if source.kind == "environment":
        return str(source.where)
    return f"{source.where}: {source.key}"


def model_spec(args: argparse.Namespace, task: TaskSpec | None = None) -> str | None:
    return (task.model if task and task.model else None) or args.model or os.environ.get("CODEBOX_MODEL")


def _sandbox_options(args: argparse.Namespace) -> dict[str, Any]:
    """The sandbox flags given (the rest: the config's defaults)."""
    options: dict[str, Any] = {"memory": args.memory, "pids_limit": args.pids, "cpus": args.cpus,
                               "backend": getattr(args, "backend", None), "runtime": getattr(args, "runtime", None)}
    if args.image:
        options["image"] = args.image
    return {k: v for k, v in options.items() if v is not None}


def sandbox_config_from_flags(args: argparse.Namespace) -> SandboxConfig:
    """SandboxConfig from the flags (no pydantic: `codebox run`'s early start uses it too);
    SandboxConfigError on a bad value (--memory lots, --pids 5): say it with ``flag_problem``."""
    from agent.sandboxes.config import SandboxConfig

    return SandboxConfig(**_sandbox_options(args))


def flag_problem(exc: SandboxConfigError) -> str:
    """A bad sandbox setting in the words of the flag that gave it: ``--pids: must be at least 16 (got 5)``."""
    from agent.settings.checks import FLAG_FOR_FIELD

    return f"{FLAG_FOR_FIELD.get(exc.field, exc.field)}: {str(exc).split(': ', 1)[1]}"


def prices_from_flags(args: argparse.Namespace) -> Any:
    """The prices per million tokens, when given; a cost limit needs them (ValueError otherwise)."""
    from agent.task.budget import Prices

    given = args.price_input is not None or args.price_output is not None
    prices = Prices(input_per_million=args.price_input or 0.0, output_per_million=args.price_output or 0.0)
    wants_cost = args.max_cost is not None or getattr(args, "budget_cost", None) is not None
    if wants_cost and not prices.known:
        raise ValueError("a cost limit needs the prices: --price-input and/or --price-output (per million tokens)")
    return prices if given else None


def usage_error(message: str) -> int:
    print(f"codebox: {printable(message)}", file=sys.stderr)
    return EXIT_USAGE


def write_out(path: str | None, text: str, flag: str) -> None:
    """Checked up front; a write that still fails (a full disk) is a message, not a traceback."""
    if not path:
        return
    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(text, encoding="utf-8")
    except OSError as exc:
        print(f"codebox: {flag}: cannot write {printable(path)}: {printable(exc)}", file=sys.stderr)


def env_progress(line: str) -> None:
    print(f"codebox: env: {line}", file=sys.stderr, flush=True)


def error_exit(exc: Exception) -> int:
    """A codebox error on stderr, escaped (its text may quote a hostile repository), and the exit
    code it means: 2 when it is the user's input (an error with ``usage`` set), else 1."""
    print(f"codebox: {printable(exc)}", file=sys.stderr)
    return EXIT_USAGE if getattr(exc, "usage", False) else EXIT_STOPPED
