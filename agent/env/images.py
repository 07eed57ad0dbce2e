"""Environment images on the local engine: their labels, the cache lookup, `env ls` and `env rm`.

Every image codebox makes here is ``codebox-env:<hash>`` and carries ``codebox.image=env``;
its other labels say what it was made from (``codebox.env.inputs`` is the cache key) and
what it holds, so a cache hit costs one image list, with no container and no network.
"""

from __future__ import annotations

from typing import Any

import docker
import docker.errors
from pydantic import BaseModel

from agent.env.errors import EnvError

REPOSITORY = "codebox-env"
LABEL_KIND = "codebox.image"
KIND = "env"
LABEL_INPUTS = "codebox.env.inputs"
LABEL_BASE = "codebox.env.base"
LABEL_BASE_ID = "codebox.env.base_id"
LABEL_REPO = "codebox.env.repo"
LABEL_PYTHON = "codebox.env.python"
LABEL_LOCK = "codebox.env.lock"  # name==version, one a line
LABEL_APT = "codebox.env.apt"
LABEL_FORMAT = "codebox.env.format"


class EnvImage(BaseModel):
    """One environment image as `codebox env ls` shows it."""

    tag: str
    id: str
    repo: str
    base: str
    python: str
    packages: int
    size: int
    created: str
    labels: dict[str, str]


def _describe(image: Any) -> EnvImage:
    labels: dict[str, str] = image.labels or {}
    tags = [t for t in image.tags if t.startswith(REPOSITORY + ":")]
    lock = labels.get(LABEL_LOCK, "")
    return EnvImage(
        tag=tags[0] if tags else image.id[:19],
        id=image.id,
        repo=labels.get(LABEL_REPO, "?"),
        base=labels.get(LABEL_BASE, "?"),
        python=labels.get(LABEL_PYTHON, "?"),
        packages=len([line for line in lock.splitlines() if line.strip()]),
        size=int(image.attrs.get("Size", 0)),
        created=str(image.attrs.get("Created", ""))[:19],
        labels=labels,
    )


def list_env_images(client: docker.DockerClient, inputs: str | None = None) -> list[EnvImage]:
    """Environment images, newest first; only those built from ``inputs`` when given."""
    label = f"{LABEL_INPUTS}={inputs}" if inputs else f"{LABEL_KIND}={KIND}"
    try:
        images = client.images.list(filters={"label": label})
    except docker.errors.APIError as exc:
        raise EnvError(f"Docker could not list images: {exc}") from exc
    found = [_describe(i) for i in images if (i.labels or {}).get(LABEL_KIND) == KIND]
    return sorted(found, key=lambda e: e.created, reverse=True)


def find_env_image(client: docker.DockerClient, inputs: str) -> EnvImage | None:
    found = list_env_images(client, inputs)
    return found[0] if found else None


def get_env_image(client: docker.DockerClient, name: str) -> EnvImage | None:
    """The environment image called ``name`` (tag or id); None when it is not one of ours."""
    try:
        image = client.images.get(name)
    except docker.errors.ImageNotFound:
        return None
    except docker.errors.APIError as exc:
        raise EnvError(f"Docker could not look up {name!r}: {exc}") from exc
    return _describe(image) if (image.labels or {}).get(LABEL_KIND) == KIND else None


def remove_env_images(client: docker.DockerClient, names: list[str]) -> list[str]:
    """Remove the named environment images (all of them when ``names`` is empty); return their tags.

    Refuses images that are not codebox environments: this never removes anyone else's image.
    """
    targets = list_env_images(client) if not names else []
    for name in names:
        env = get_env_image(client, name)
        if env is None:
            raise EnvError(f"{name} is not a codebox environment image; nothing removed", usage=True)
        targets.append(env)
    removed = []
    for env in targets:
        try:
            client.images.remove(env.id, force=False)
        except docker.errors.ImageNotFound:
            continue
        except docker.errors.APIError as exc:
            raise EnvError(f"could not remove {env.tag}: {exc.explanation or exc}") from exc
        removed.append(env.tag)
    return removed
