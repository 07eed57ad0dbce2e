"""`codebox demo`, `image build`, `view` and `gc`: the commands around the runs."""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path

from agent.cli.commands.common import (
    EXIT_OK,
    EXIT_STOPPED,
    usage_error,
)
from agent.errors import CodeboxError
from agent.escape import printable


def cmd_demo(args: argparse.Namespace) -> int:
    from agent.cli.demo import run_demo

    return run_demo(keep=args.keep, image=args.image, runtime=args.runtime)


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
    from agent.errors import SandboxError

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
        if getattr(args, "backend", "docker") == "podman":  # the same image, into Podman's store
            from agent.backends.podman import copy_image_from_docker

            log(f"{tag} into Podman's image store (Docker's save, Podman's load, unless it is there)")
            if not copy_image_from_docker(tag):
                log(f"Podman's store has {tag} already (the same image id as Docker's)")
        where = " (podman)" if getattr(args, "backend", "") == "podman" else ""
        print(f"codebox: sandbox image ready: {tag}{where}")
    except (ImageError, SandboxError) as exc:
        print(f"codebox: {printable(exc)}", file=sys.stderr)
        return EXIT_STOPPED
    return EXIT_OK


def cmd_image_python(args: argparse.Namespace) -> int:
    """`codebox image python [X.Y] [--image NAME | --forget | --build]`: where each Python comes from."""
    from agent.cli.python_flags import register, registered_images
    from agent.containers.host_python_image import built_image, ensure_host_sandbox
    from agent.containers.image import ImageError, image_exists
    from agent.containers.pythons import SUITES, PythonImages, ensure_suite_sandbox, sandbox_tag
    from agent.python_versions import key, minor_of

    minor = minor_of(args.version) if args.version else None
    if args.version and minor is None:
        return usage_error(f"image python {args.version!r}: expected a Python version such as 3.9")
    if (args.image or args.forget or args.build) and minor is None:
        return usage_error("image python: --image, --forget and --build need the version (X.Y)")
    if minor is not None and (args.image or args.forget):
        path = register(minor, None if args.forget else args.image)
        said = f"forgot the image of Python {minor}" if args.forget else f"Python {minor}: {args.image}"
        print(f"codebox: {printable(said)} (in {path})")
        return EXIT_OK
    hosts = PythonImages().host_pythons()  # folders listed, nothing run
    if minor is not None and args.build:
        if minor not in SUITES and minor not in hosts:
            return usage_error(f"no Debian suite here ships Python {minor} (bullseye 3.9, bookworm 3.11, trixie 3.13)"
                               f" and this machine has no build of it under pyenv, uv or /usr/local")
        say = lambda line: print(printable(line))  # noqa: E731
        try:
            tag = ensure_suite_sandbox(minor, say) if minor in SUITES else ensure_host_sandbox(hosts[minor], say)
            print(f"codebox: Python {minor}: {tag}")
        except ImageError as exc:
            print(f"codebox: {printable(exc)}", file=sys.stderr)
            return EXIT_STOPPED
        return EXIT_OK
    try:
        registered = registered_images(list(args.settings.python_images))
    except CodeboxError as exc:
        return usage_error(str(exc))
    for version in sorted(set(SUITES) | set(registered) | set(hosts), key=key):
        if minor is not None and version != minor:
            continue
        links = [f"registered {registered[version]}"] if version in registered else []
        if version in SUITES:
            tag = sandbox_tag(version)
            links.append(f"Debian {SUITES[version]} ({tag}, {'built' if image_exists(tag) else 'built on first use'})")
        if version in hosts:
            built = built_image(hosts[version])
            links.append(f"{hosts[version].describe()} ({hosts[version].prefix}, "
                         f"{f'copied into {built}' if built else 'copied in on first use'})")
        print(printable(f"{version}: {' > '.join(links)}"))
    return EXIT_OK


def cmd_view(args: argparse.Namespace) -> int:

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
        return usage_error(str(exc))
    except OSError as exc:  # the output file, or the port
        return usage_error(f"view: {exc}")
    print(f"codebox: serving {path} at http://127.0.0.1:{server.server_port}/ (Ctrl-C stops)", flush=True)
    with contextlib.suppress(KeyboardInterrupt), server:
        server.serve_forever()
    return EXIT_OK


def cmd_gc(args: argparse.Namespace) -> int:
    from agent.backends.registry import get_backend
    from agent.errors import SandboxError

    if args.owner is not None and args.owner <= 0:
        return usage_error(f"--owner must be a process id (more than 0), not {args.owner}")
    backend = get_backend(getattr(args, "backend", None) or "docker")
    try:
        removed = backend.reap(log=lambda line: print(printable(line)), dry_run=args.dry_run, owner=args.owner)
    except SandboxError as exc:
        print(f"codebox: {printable(exc)}", file=sys.stderr)
        return EXIT_STOPPED
    whose = f" of process {args.owner}" if args.owner is not None else ""
    done = "would remove" if args.dry_run else "removed"
    print(f"codebox: {done} {len(removed)} leftover container(s){whose} ({backend.name})")
    if args.owner is not None:
        return EXIT_OK  # a process's containers only: runtimes are not a process's
    try:
        old = backend.reap_runtimes(log=lambda line: print(printable(line)), dry_run=args.dry_run)
    except SandboxError as exc:
        print(f"codebox: {printable(exc)}", file=sys.stderr)
        return EXIT_STOPPED
    print(f"codebox: {done} {len(old)} old runtime folder(s) no container of {backend.name} mounts")
    try:
        superseded = backend.reap_toolchains(log=lambda line: print(printable(line)), dry_run=args.dry_run)
    except SandboxError as exc:
        print(f"codebox: {printable(exc)}", file=sys.stderr)
        return EXIT_STOPPED
    print(f"codebox: {done} {len(superseded)} superseded toolchain image(s) no image or container of "
          f"{backend.name} uses")
    return EXIT_OK
