"""What an environment build asks of a sandbox backend (``Backend.builder()``): boxes that run its steps,
and the backend's image store (look up, load from layer tars, save, remove). Engine-neutral, stdlib only.

A build's containers and the images it makes live where the backend's sandboxes run, so an
environment built for a Podman task is in Podman's store. agent/containers/builds.py speaks this to
any engine with Docker's Engine API (Docker; Podman's service).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Literal, Protocol, TypedDict

OnOutput = Callable[[int, bytes], None]
"""Gets a step's output as it comes: (1 for its stdout, 2 for its stderr; the bytes)."""


class Bind(TypedDict):
    """A host folder or file seen in the box."""

    bind: str
    """The path inside the box."""
    mode: Literal["ro"]
    """Read-only: a build box never writes to the host."""


class BoxOptions(TypedDict):
    """Every option a build box is made with (agent/env/install/box.py: ``Box.create_options``).

    A builder makes the box with each of them or refuses it (SandboxError): none is dropped."""

    command: list[str]
    """Its first process (it only keeps the box alive, and reaps; the work is ``exec``'d)."""
    user: str
    """uid:gid of that process."""
    network_mode: Literal["none"]
    """No network, ever."""
    cap_drop: list[str]
    cap_add: list[str]
    security_opt: list[str]
    """e.g. no-new-privileges."""
    mem_limit: str
    """Memory limit ("2g"); memory + swap is ``memswap_limit`` (the same: no swap)."""
    memswap_limit: str
    pids_limit: int
    nano_cpus: int
    """CPU quota in 1e-9 CPUs; 0: none."""
    volumes: dict[str, Bind]
    """host path -> where the box sees it (read-only)."""
    tmpfs: dict[str, str]
    """path -> mount options (in memory: counted in the memory limit)."""
    labels: dict[str, str]
    """The owner labels the reaper reads (agent.containers.leftovers.owner_labels)."""
    working_dir: str
    environment: dict[str, str]


class BuildBox(Protocol):
    """One started build container."""

    @property
    def id(self) -> str: ...

    def exec(self, argv: list[str], user: str, env: Mapping[str, str], on_output: OnOutput) -> int | None:
        """Run ``argv`` in the box (working folder ``/``), its output to ``on_output`` as it comes; block until
        it ends (removing the box ends it). Its exit status; None when the engine does not say (the box
        went meanwhile). Raises SandboxError when the engine fails."""
        ...

    def archive(self, path: str) -> Iterator[bytes] | None:
        """The file or folder at ``path`` as a tar stream; None when there is no such path.
        Raises SandboxError (while iterating too) when the engine fails."""
        ...

    def remove(self) -> None:
        """Kill and remove the box; gone on return (or going: a removal already under way). Raises nothing."""
        ...


class ImageStore(Protocol):
    """The images of one backend."""

    name: str
    """The backend's name: where its images live (a build's record says it)."""

    def inspect_image(self, name: str) -> dict[str, Any] | None:
        """The image ``name`` (a tag or an id) as the Engine API describes it (``Id``, ``Config``,
        ``RootFS.Layers``, ``Architecture``, ``Os``, ``Size``); None when there is none. Raises SandboxError."""
        ...

    def load_image(self, archive: Path, watch: Callable[[], None] | None = None) -> None:
        """Load a tar in ``docker save``'s format; a layer the store has already may be an empty file (a
        store reads only the layers it lacks). ``watch`` is called before each MiB is sent (what it raises,
        a cancel, ends the load). Raises SandboxError with the engine's words."""
        ...

    def save_image(self, name: str) -> Iterator[bytes]:
        """The image ``name`` in ``docker save``'s format (its tag kept when ``name`` is one), as it comes.
        Raises SandboxError (while iterating too): no such image, the engine failed."""
        ...

    def remove_image(self, image_id: str) -> bool:
        """Remove an image (never forced). True: gone (or was not there); False: a container or an image
        built on it uses it, so it stays. Raises SandboxError when the engine fails otherwise."""
        ...

    def close(self) -> None:
        """Release the connection, if any. Raises nothing."""
        ...


class Builder(ImageStore, Protocol):
    """An image store whose engine also runs build boxes."""

    def create_box(self, image: str, options: BoxOptions) -> BuildBox:
        """Create and start a box of ``image`` with every one of ``options``. Raises SandboxError (no such
        image, an option this engine cannot honour, the engine refused); nothing is left then."""
        ...
