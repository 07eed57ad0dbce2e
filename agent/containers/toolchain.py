"""A language's toolchain image: Debian's own packages of a suite (trixie's rustc 1.85 and cargo, Go 1.24,
Node 20) debootstrapped on the host with python3 (the tool server's) and ``docker import``-ed by
``build_base.sh``, as the sandbox's base is. Nothing is downloaded in a container and nothing of a repository
runs here. Like the sandbox image (agent/containers/image.py) it is built in Docker's store; a task on another
backend gets a copy in that backend's store (agent/languages/toolchain_store.py).

The script is run as a copy with its package list swapped and, for a suite the host's apt sources do not
name, the host's Debian mirror (one mirror serves every suite): build_base.sh itself stays as it is, so the
sandbox image's format (a hash of that file) does not change with a toolchain.
"""

from __future__ import annotations

import hashlib
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from agent.containers.image import BUILD_BASE_SCRIPT, ImageError, _stop_group, build_lock, image_labels

Log = Callable[[str], None]
REPOSITORY_PREFIX = "codebox-toolchain-"  # every toolchain image's repository: codebox-toolchain-<name>
# Where an image's toolchain came from when it is not a Debian suite (the rustup toolchain a copy holds): the images
# of one source are one toolchain's versions, so `codebox gc` keeps the newest of them (toolchain_gc.py).
SOURCE_LABEL = "codebox.toolchain.source"
_PACKAGES = 'PACKAGES="python3,git,ripgrep,python3-pytest"\n'
_MIRROR = 'MIRROR="$(find_mirror)" \\\n'
_ENV = "    --change 'ENV LANG=C.UTF-8' \\\n"
_ANY_MIRROR = ('HOST_SUITE="$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")"\n'
               '    MIRROR="$(find_mirror)" || MIRROR="$(SUITE="$HOST_SUITE" find_mirror)" \\\n')


def _script(packages: list[str], env: dict[str, str]) -> str:
    text = BUILD_BASE_SCRIPT.read_text(encoding="utf-8")
    if _PACKAGES not in text or _MIRROR not in text or _ENV not in text:
        raise ImageError(f"{BUILD_BASE_SCRIPT.name} has changed: its package list or mirror line is not where "
                         "agent/containers/toolchain.py looks for it")
    packages_line = f'PACKAGES="{",".join(["python3", "git", "ripgrep", *packages])}"\n'
    env_lines = "".join(f"    --change 'ENV {key}={value}' \\\n" for key, value in sorted(env.items()))
    return text.replace(_PACKAGES, packages_line).replace(_MIRROR, _ANY_MIRROR).replace(_ENV, _ENV + env_lines)


def toolchain_tag(name: str, suite: str, packages: list[str], env: dict[str, str] | None = None) -> str:
    """The tag ``ensure_toolchain`` gives ``name``'s image: it names a hash of the script, the suite, the packages
    and ``env`` (no engine is asked: another backend's store is looked up by it before Docker is)."""
    key = hashlib.sha256(f"{suite}\n{_script(packages, env or {})}".encode()).hexdigest()[:12]
    return f"{REPOSITORY_PREFIX}{name}:{suite}-{key}"


def ensure_toolchain(name: str, suite: str, packages: list[str], log: Log, env: dict[str, str] | None = None) -> str:
    """The tag of ``name``'s toolchain image (``env``: variables its config sets), built now in Docker's store
    (minutes, once per machine) unless it is there (``toolchain_tag``)."""
    script = _script(packages, env or {})
    tag = toolchain_tag(name, suite, packages, env)
    if image_labels(tag) is not None:
        return tag
    with build_lock(log):
        if image_labels(tag) is not None:
            return tag
        log(f"making the {name} toolchain image from Debian {suite}'s packages ({', '.join(packages)}), once")
        with tempfile.TemporaryDirectory(prefix="codebox-toolchain-") as tmp:
            path = Path(tmp) / "build_toolchain.sh"
            path.write_text(script, encoding="utf-8")
            _run(["env", f"CODEBOX_SUITE={suite}", "bash", str(path), "--force", "--tag", tag], log, name)
    return tag


def _run(cmd: list[str], log: Log, name: str) -> None:
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                text=True, errors="replace", bufsize=1, start_new_session=True)
    except OSError as exc:
        raise ImageError(f"could not run {BUILD_BASE_SCRIPT}: {exc}") from exc
    assert proc.stdout is not None
    tail: list[str] = []
    try:
        for line in proc.stdout:
            tail = [*tail[-20:], line.rstrip("\n")]
            log(line.rstrip("\n"))
        returncode = proc.wait()
    except BaseException:
        _stop_group(proc)
        raise
    if returncode != 0:
        said = next((line for line in reversed(tail) if "error" in line), tail[-1] if tail else "")
        raise ImageError(f"building the {name} toolchain image failed (build_base.sh exited {returncode}): {said}")
