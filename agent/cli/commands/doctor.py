"""`codebox doctor`: is this machine ready for codebox? One line per part (the engine, its storage driver, the
sandbox image, the runtimes, Podman, the disk, the model, its key, its endpoint), each with the fix when it is
not; exit 1 when a part codebox needs is missing. The key is never shown, only whether its variable is set."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from agent.cli.commands.common import EXIT_OK, EXIT_STOPPED, model_spec
from agent.defaults import DEFAULT_IMAGE
from agent.escape import one_line

if TYPE_CHECKING:
    from agent.backends.docker import EngineBackend
    from agent.containers.engine_api import EngineClient
    from agent.model.config import OpenAIConfig

Level = Literal["ok", "missing", "optional"]
MARKS = {"ok": "✓", "missing": "✗", "optional": "!"}  # !: not needed, or low: works as it is

GIB = 1 << 30
DISK_NEEDED = 1 * GIB  # below this an environment image or a workspace fails midway
DISK_LOW = 5 * GIB  # a few environment images (200-500 MB each) and a batch's workspaces
ENDPOINT_TIMEOUT_S = 10.0


@dataclass
class Finding:
    """One line of the report: a part, its state, what was seen, and the fix when it is not ready."""

    part: str
    level: Level
    said: str
    fix: str | None = None

    def line(self) -> str:
        fix = f" — fix: {self.fix}" if self.fix else ""
        return f"{MARKS[self.level]} {self.part:<9} {one_line(self.said + fix, 600)}"


def cmd_doctor(args: argparse.Namespace) -> int:
    engine, docker_root = engine_findings(args)
    findings = [*engine, disk_finding(docker_root), *model_findings(args)]
    for finding in findings:
        print(finding.line())
    missing = [f.part for f in findings if f.level == "missing"]
    if missing:
        print(f"codebox: not ready: {', '.join(missing)} (see the fixes above)")
        return EXIT_STOPPED
    print("codebox: ready")
    return EXIT_OK


# --- the engine, the image, the runtimes, Podman --------------------------------------------------


def engine_findings(args: argparse.Namespace) -> tuple[list[Finding], Path | None]:
    """The engine's lines, and where it keeps its images (its DockerRootDir, when it says)."""
    from agent.backends.docker import EngineBackend
    from agent.backends.registry import get_backend
    from agent.containers.engine_api import EngineError
    from agent.errors import SandboxError

    backend = get_backend(args.backend)
    if not isinstance(backend, EngineBackend):  # every backend speaks the Engine API today (docs/backends.md)
        return [Finding(args.backend, "optional", "not checked: codebox doctor asks Engine API backends only")], None
    podman = [] if args.backend == "podman" else [podman_finding()]
    try:
        client = backend.connect(args.runtime)
        info = client.info()
    except (SandboxError, EngineError) as exc:  # its message says how to start the daemon or reach it
        unchecked = [Finding(part, "missing", f"not checked: {args.backend} does not answer")
                     for part in ("image", "runtime")]
        return [Finding(args.backend, "missing", str(exc)), *unchecked, *podman], None
    version = str(info.get("ServerVersion") or "?")
    engine = Finding(args.backend, "ok", f"{args.backend} {version} answers at {client.endpoint.url}")
    root = info.get("DockerRootDir")
    findings = [engine, storage_finding(str(info.get("Driver") or "")),
                image_finding(args.image or DEFAULT_IMAGE, client, backend.build_command()),
                *runtime_findings(backend, client, args.runtime), *podman]
    return findings, Path(root) if isinstance(root, str) and root else None


# A FUSE root file system: the kernel asks the FUSE daemon before every path lookup a process other than root
# makes through "/" (measured here, fuse-overlayfs: ~40 µs a lookup as the sandbox's user, ~1 µs as root or on
# the host), and the sandbox never runs repository code as root: a test run that stats a lot (pytest: ~20,000
# lookups for 80 tests) takes 1.3-1.7x its time on the host. docs/performance.md#the-engines-storage-driver.
SLOW_STORAGE = {
    "fuse-overlayfs": "every path lookup by the sandbox's user goes through a FUSE daemon (~40 µs, against ~1 µs "
                      "on the host): test runs take up to 1.7x the host's",
    "vfs": "every layer of every image is a full copy: environment images build slowly and take their full size "
           "each",
}


def storage_finding(driver: str) -> Finding:
    """The engine's storage driver: one that makes every sandbox slower is said, with the way out."""
    if not driver:
        return Finding("storage", "optional", "the engine does not say which storage driver it uses")
    slow = SLOW_STORAGE.get(driver)
    if slow is None:
        return Finding("storage", "ok", f"{driver}")
    return Finding("storage", "optional", f"{driver}: {slow}",
                   "the engine's overlay2 driver (kernel overlayfs), or --backend podman where its store uses "
                   "overlay (`podman info`: graphDriverName)")


def image_finding(tag: str, client: EngineClient, build: str) -> Finding:
    from agent.containers.image import LABEL_FORMAT, LABEL_VERSION, image_labels, image_problem

    problem = image_problem(tag, client, build=build)
    if problem:
        return Finding("image", "missing", problem.split("; ")[0], f"`{build}`")
    labels = image_labels(tag, client) or {}
    if labels.get("codebox.image") != "sandbox":
        return Finding("image", "ok", f"{tag} is there (not built by codebox: taken as it is)")
    return Finding("image", "ok", f"{tag} is there and current (built by codebox {labels.get(LABEL_VERSION)}, "
                                  f"image format {labels.get(LABEL_FORMAT)})")


def runtime_findings(backend: EngineBackend, client: EngineClient, runtime: str) -> list[Finding]:
    """The runtime the sandboxes use (needed), and gVisor's runsc (optional) when that is another."""
    from agent.errors import SandboxError

    try:
        known = backend.runtimes(client)
    except SandboxError as exc:
        return [Finding("runtime", "missing", str(exc))]
    listed = ", ".join(sorted(known)) or "none"
    if runtime not in known:
        return [Finding("runtime", "missing", f"{runtime} is not registered (the engine lists: {listed})",
                        backend.register_hint(runtime))]
    used = Finding("runtime", "ok", f"{runtime} (what the sandboxes run under) is registered; all: {listed}")
    if runtime.startswith("runsc"):
        return [used]
    if "runsc" in known:
        return [used, Finding("gvisor", "ok", "runsc is registered: --runtime runsc puts gVisor under the sandboxes")]
    return [used, Finding("gvisor", "optional", "runsc is not registered (optional: --runtime runsc)",
                          backend.register_hint("runsc"))]


def podman_finding() -> Finding:
    """Podman, for --backend podman (optional while the backend is Docker)."""
    program = shutil.which("podman")
    if program is None:
        return Finding("podman", "optional", "not installed (optional: --backend podman)", "apt-get install podman")
    try:
        said = subprocess.run([program, "--version"], capture_output=True, text=True, timeout=20).stdout.strip()
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Finding("podman", "optional", f"{program} does not answer --version: {exc}")
    return Finding("podman", "ok", f"{said or program} (for --backend podman)")


# --- the disk -------------------------------------------------------------------------------------


def disk_finding(docker_root: Path | None) -> Finding:
    """Free space where codebox writes: the workspaces, the wheel cache, and the engine's images (when they are
    on this machine: a remote daemon's disk is not measured)."""
    from agent.env.resolve.fetch import cache_dir
    from agent.task.workspace import workspace_root

    places = {"workspaces": workspace_root() or Path(tempfile.gettempdir()), "cache": cache_dir()}
    if docker_root is not None and docker_root.exists():
        places["images"] = docker_root
    by_device: dict[int, tuple[list[str], int]] = {}  # one figure per file system
    for what, path in places.items():
        existing = next((p for p in (path, *path.parents) if p.exists()), None)
        if existing is None:
            continue
        try:
            stats, device = os.statvfs(existing), existing.stat().st_dev
        except OSError:
            continue
        names, _ = by_device.get(device, ([], 0))
        by_device[device] = ([*names, f"{what} ({path})"], stats.f_bavail * stats.f_frsize)
    if not by_device:
        return Finding("disk", "optional", "no place codebox writes to could be measured")
    said = "; ".join(f"{size / GIB:.1f} GiB free for {', '.join(names)}" for names, size in by_device.values())
    least = min(size for _, size in by_device.values())
    if least < DISK_NEEDED:
        return Finding("disk", "missing", said, "free some space (docker image prune removes unused "
                       "images; codebox env rm --all the environment images)")
    if least < DISK_LOW:
        return Finding("disk", "optional", f"{said}: low", "codebox env rm --all, docker image prune")
    return Finding("disk", "ok", said)


# --- the model ------------------------------------------------------------------------------------

NO_KEY_HINT = "no key? --model scripted:FILE drives codebox with a script (docs/scripted-model.md)"


def model_findings(args: argparse.Namespace) -> list[Finding]:
    spec = model_spec(args)
    if not spec:
        return [Finding("model", "optional", "none set (the demo needs none)",
                        f"--model NAME, or CODEBOX_MODEL=NAME; {NO_KEY_HINT}")]
    if spec.startswith("scripted:"):
        return [scripted_finding(spec)]
    from pydantic import ValidationError

    from agent.model.config import OpenAIConfig

    try:
        config = OpenAIConfig.from_options(model=spec, base_url=args.base_url, api_key_env=args.api_key_env,
                                           api=args.api)
    except ValidationError as exc:
        return [Finding("model", "missing", f"{spec}: bad model options: {exc.errors()[0]['msg']}")]
    model = Finding("model", "ok", f"{spec} at {config.display_base_url} ({config.api} API)")
    key = key_finding(config.api_key_env, config.uses_openai_endpoint)
    if key.level == "missing":
        return [model, key, Finding("endpoint", "missing", "not asked: no key to ask with")]
    return [model, key, endpoint_finding(config)]


def scripted_finding(spec: str) -> Finding:
    from agent.model.base import ModelError
    from agent.model.scripted import ScriptedModel

    try:
        script = ScriptedModel.from_file(Path(spec.removeprefix("scripted:")).expanduser())
    except ModelError as exc:
        return Finding("model", "missing", str(exc), "docs/scripted-model.md says the script's format")
    turns = f"{len(script.turns)} turn" + ("" if len(script.turns) == 1 else "s")
    return Finding("model", "ok", f"{spec}: a script of {turns} (no key, no endpoint needed)")


def key_finding(variable: str, openai_endpoint: bool) -> Finding:
    """Whether the key's variable is set: never its value, nor its length."""
    if os.environ.get(variable, "").strip():
        return Finding("key", "ok", f"{variable} is set")
    if openai_endpoint:
        return Finding("key", "missing", f"{variable} is not set (OpenAI's endpoint needs a key)",
                       f"export {variable}=... (or --api-key-env NAME), or --base-url a local server; {NO_KEY_HINT}")
    return Finding("key", "ok", f"{variable} is not set: a local server needs none (a placeholder is sent)")


def endpoint_finding(config: OpenAIConfig) -> Finding:
    """One GET /models, no retry: does the endpoint answer, take the key, and list the model?"""
    from agent.model.base import ModelError
    from agent.model.factory import make_client
    from agent.model.openai_base import OpenAIClientBase

    where = config.display_base_url
    try:
        client = make_client(config.model_copy(update={"request_timeout_s": ENDPOINT_TIMEOUT_S}))
        if not isinstance(client, OpenAIClientBase):
            return Finding("endpoint", "optional", f"not checked: {type(client).__name__} lists no models")
        models = client.listed_models()
    except ModelError as exc:
        if exc.status in (401, 403):
            return Finding("endpoint", "missing", f"{where} refused the key: {exc}",
                           f"check {config.api_key_env} (or --api-key-env NAME)")
        if exc.status == 404:
            return Finding("endpoint", "ok", f"{where} answers (it lists no models: {exc})")
        return Finding("endpoint", "missing", f"{where} does not answer: {exc}",
                       "start the server, or point --base-url (CODEBOX_BASE_URL, OPENAI_BASE_URL) at it")
    if config.model in models:
        return Finding("endpoint", "ok", f"{where} answers and lists {config.model} ({len(models)} models)")
    shown = ", ".join(models[:5]) + (", …" if len(models) > 5 else "")
    return Finding("endpoint", "optional", f"{where} answers, but does not list {config.model} "
                   f"({len(models)} models: {shown or 'none'})", "--model one of the listed names")
