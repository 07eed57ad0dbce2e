"""`codebox env build|ls|rm`: dependency environments by hand."""

from __future__ import annotations

import argparse
import contextlib
import gc
import io
import json
import sys
from collections.abc import Iterator
from pathlib import Path

from agent.cli.commands.common import (
    EXIT_CANCELLED,
    EXIT_OK,
    error_exit,
    usage_error,
)
from agent.escape import printable


@contextlib.contextmanager
def _imports_without_gc() -> Iterator[None]:
    """The cyclic collector off while a command imports, and what the imports made (modules, classes,
    pydantic's schemas: they live as long as the process) frozen out of its later passes: they
    would find nothing there, and a full pass over them is ~3% of a cache hit's new process."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


def cmd_env_build(args: argparse.Namespace) -> int:
    with _imports_without_gc():
        from agent.cancel import CancelToken
        from agent.cli.env_flags import EnvFlags
        from agent.cli.signals import cancel_on_signals
        from agent.console.progress import StepProgress
        from agent.defaults import DEFAULT_IMAGE
        from agent.env.cancel import EnvCancelled
        from agent.env.install.ensure import EnvRequest, ensure_env
        from agent.env.resolve import asof
        from agent.env.resolve.resolve import IndexConfig
        from agent.errors import CodeboxError

    repo = Path(args.repo).expanduser().resolve()
    if not repo.is_dir():
        return usage_error(f"the repository {args.repo} is not a directory")
    if args.print_declared:
        return _print_declared(repo, args)
    index = IndexConfig.from_environ()
    links = [str(Path(folder).expanduser().resolve()) for folder in args.find_links]  # uv runs elsewhere
    index = IndexConfig(find_links=[*index.find_links, *links], no_index=index.no_index or args.no_index)
    try:
        flags = EnvFlags(args)
    except CodeboxError as exc:
        return error_exit(exc)
    request = EnvRequest(repo=repo, base_image=args.image or DEFAULT_IMAGE, backend=args.backend, index=index,
                         allow_public_fallback=args.allow_public_fallback,
                         recipe=flags.recipe_for(str(repo)), as_of=flags.as_of or asof.choose(None, repo),
                         candidates=args.env_candidates, candidate_timeout_s=args.env_candidate_timeout)
    cancel = CancelToken()  # Ctrl-C / SIGTERM: uv and the build container stop at once, nothing is tagged
    try:
        # Each step a line; on a terminal a live line under them: the step, its seconds, the total.
        with StepProgress(sys.stderr) as progress, cancel_on_signals(cancel, io.StringIO()):  # quiet: see below
            info = ensure_env(request, progress.log, cancel)
    except EnvCancelled as exc:
        print(f"codebox: {printable(exc)}", file=sys.stderr)
        return EXIT_CANCELLED
    except KeyboardInterrupt:  # a second Ctrl-C
        print("codebox: the environment build was cancelled (interrupted)", file=sys.stderr)
        return EXIT_CANCELLED
    except CodeboxError as exc:  # EnvError (usage or not) and any other
        return error_exit(exc)
    for note in info.notes:
        print(f"codebox: env: note: {printable(note)}", file=sys.stderr)
    print(info.image)
    return EXIT_OK


def _print_declared(repo: Path, args: argparse.Namespace) -> int:
    """`env build --print-declared`: what codebox reads from the repository, as JSON (nothing is built)."""
    from agent.env.errors import EnvError
    from agent.env.read.declared import read_declared

    try:
        declared = read_declared(repo, args.extra, args.group, args.requirements)
    except EnvError as exc:
        return error_exit(exc)
    data = declared.model_dump(mode="json")
    data["metadata_is_dynamic"] = declared.metadata_is_dynamic
    print(json.dumps(data, indent=2, ensure_ascii=True))
    return EXIT_OK


def cmd_env_ls(args: argparse.Namespace) -> int:
    import time

    from agent.env.errors import EnvError
    from agent.env.install.images import EngineImages, list_env_images

    try:
        engine = EngineImages.connect(args.backend)
        found = list_env_images(engine)
        engine.close()
    except EnvError as exc:
        return error_exit(exc)
    # Only the images codebox recorded building: an image made FROM one of them is not listed.
    print(f"{'IMAGE':<32} {'KIND':<5} {'PYTHON':<8} {'PKGS':>5} {'SIZE':>8}  {'CREATED':<16}  {'AS OF':<10}  REPO")
    for env in found:
        e = env.entry
        size = f"{env.size / 1e6:.0f}MB"
        created = time.strftime("%Y-%m-%d %H:%M", time.localtime(e.created))
        print(f"{printable(e.tag):<32} {e.kind:<5} {e.python:<8} {len(e.packages):>5} {size:>8}  {created:<16}  "
              f"{e.as_of[:10]:<10}  {printable(e.repo)}")
    return EXIT_OK


def cmd_env_rm(args: argparse.Namespace) -> int:
    from agent.env.errors import EnvError
    from agent.env.install.images import EngineImages, remove_env_images

    if not args.images and not args.all:
        return usage_error("name the images to remove (see `codebox env ls`), or pass --all")
    try:
        engine = EngineImages.connect(args.backend)
        removed = remove_env_images(engine, args.images)
        engine.close()
    except EnvError as exc:
        return error_exit(exc)
    for tag in removed:
        print(f"removed {tag}")
    return EXIT_OK
