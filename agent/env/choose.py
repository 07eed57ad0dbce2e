"""A task's ``env`` setting (auto | none | IMAGE) turned into the image its sandbox runs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from agent.env.cancel import NEVER, Cancel
from agent.env.declared import NO_DEPENDENCIES, read_declared
from agent.env.errors import EnvError
from agent.protocol import EnvInfo

AUTO, NONE = "auto", "none"
Log = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


def choose_env(env: str, repo: Path, base_image: str, log: Log = _quiet, cancel: Cancel = NEVER,
               allow_public_fallback: bool = False) -> EnvInfo | None:
    """None for ``none``; the built or reused environment for ``auto``; the named image otherwise.

    ``cancel`` stops a build under way (EnvCancelled). ``allow_public_fallback``: see EnvRequest.
    """
    if env == NONE:
        return None
    if env == AUTO:
        # A repository that declares nothing (the common quick run) needs no builder: the
        # builder, docker-py and the resolver are loaded only when there is something to build.
        if not read_declared(repo).needs_env:
            return EnvInfo(image=base_image, base_image=base_image, notes=[NO_DEPENDENCIES])
        from agent.env.build import EnvRequest, ensure_env

        return ensure_env(EnvRequest(repo=repo, base_image=base_image, allow_public_fallback=allow_public_fallback),
                          log, cancel)
    return _named(env)


def _named(env: str) -> EnvInfo:
    """``--env IMAGE``: an environment image of ours (its lock and labels), or any local image."""
    import docker.errors

    from agent.containers.docker_client import connect
    from agent.env import images

    client = connect(EnvError)
    try:
        found = images.get_env_image(client, env)
        if found is None:
            try:
                client.images.get(env)
            except docker.errors.ImageNotFound:
                raise EnvError(f"--env {env}: no such image (use auto, none, or an image from `codebox env ls`)",
                               usage=True) from None
            return EnvInfo(image=env, base_image=env)
    finally:
        client.close()
    lock = found.labels.get(images.LABEL_LOCK, "")
    return EnvInfo(image=env, base_image=found.base, lock=lock, installed=lock.split(),
                   python=found.python, apt=found.labels.get(images.LABEL_APT, "").split())
