"""The environment's part in the settings: CODEBOX_<KEY>, OPENAI_BASE_URL, the config folder, misspelled names.

A setting's variable is CODEBOX_ and its key in capitals (CODEBOX_MAX_STEPS), in any letter case.
OPENAI_BASE_URL is the environment's base_url when CODEBOX_BASE_URL is not set: an explicit
variable beats a file, the user's own config file included. OPENAI_API_KEY is not a setting: it is
the variable api_key_env names by default, read only when a model request is made.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from agent.escape import one_line

ENV_PREFIX = "CODEBOX_"
OPENAI_BASE_URL = "OPENAI_BASE_URL"

# The CODEBOX_ variables that are not settings, and what each does. A variable codebox reads must
# be listed here or be a setting's (a test reads the sources for os.environ lookups of CODEBOX_ names).
OTHER_VARIABLES: dict[str, str] = {
    "CODEBOX_CACHE_DIR": "where downloaded wheels and sdists are kept (default $XDG_CACHE_HOME/codebox)",
    "CODEBOX_RUNTIME_DIR": "where the sandbox server's runtime is copied out of the sandbox image "
                           "(default $CODEBOX_CACHE_DIR/runtime)",
    "CODEBOX_FIND_LINKS": "folders of wheels for environment builds, :-separated",
    "CODEBOX_NO_INDEX": "1: environment builds use CODEBOX_FIND_LINKS only, no package index",
    "CODEBOX_WORKSPACE_ROOT": "where task workspaces are made (default: the temporary folder)",
    "CODEBOX_PULL_BASE": "1: `codebox image build` pulls its base image instead of building it offline",
    "CODEBOX_PODMAN_DIR": "where the Podman backend keeps its services' sockets (default: the temporary folder)",
    "CODEBOX_NODE_GC": "0: a Ray node does not remove leftover containers when it starts",
    "CODEBOX_DEBIAN_MIRROR": "build_base.sh: the Debian mirror of the offline base image",
    "CODEBOX_SUITE": "build_base.sh: the Debian suite of the offline base image",
    "CODEBOX_RUST_TOOLCHAIN": "rustup or debian: the Rust toolchain of a crate's environment (default: the host's "
                              "rustup toolchain when there is one, else Debian's)",
    "CODEBOX_HOST_PYTHONS": "1: the host's own CPython builds (pyenv, uv, /usr/local) are copied into a sandbox "
                            "image when no Debian suite ships the Python a task wants (off by default)",
    "CODEBOX_RUNNER_BASE_IMAGE": "compose.yaml: the runner image's base",
    "CODEBOX_RUNNER_IMAGE": "compose.yaml: the runner image's name (default codebox-runner:latest)",
    "CODEBOX_TASKS": "compose.yaml: the batch's task file",
    "CODEBOX_OUT": "compose.yaml: the batch's output folder",
    "CODEBOX_EXTRAS": "dev.sh: the extras to install",
    "CODEBOX_ALLOW_NO_DOCKER": "tests: let the Docker tests skip in CI",
    "CODEBOX_REQUIRE_CONFORMANCE": "tests: the patch conformance data must be there",
    "CODEBOX_REQUIRE_RUNSC": "tests: the sandbox conformance suite under gVisor (runsc) is required, not skipped",
    "CODEBOX_REQUIRE_PODMAN": "tests: the sandbox conformance suite under Podman is required, not skipped",
    "CODEBOX_CHROMIUM": "tests: the Chromium of the viewer's browser tests",
    "CODEBOX_TEST_ARTIFACTS": "tests: where the browser tests leave screenshots",
    "CODEBOX_TEST_SERVER_PYTHON": "tests: the Python that runs the sandbox server in its tests",
    "CODEBOX_TEST_OPENAI_KEY": "tests: a key variable of the model client tests",
    "CODEBOX_TEST_KEY": "tests: a key variable of the model client tests",
    "CODEBOX_GC_TOOLCHAIN_PREFIX": "tests: the repository prefix of the toolchain images `codebox gc` may remove "
                                   "(default codebox-toolchain-)",
    "CODEBOX_LANG_ROWS_MIRRORS": "tests: where the eval rows' repositories are mirrored (default /work/.mirror)",
}


def config_dir() -> Path:
    """The user's codebox folder: $XDG_CONFIG_HOME/codebox (~/.config/codebox)."""
    root = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(root) / "codebox"


def read_environment(keys: Iterable[str], lists: Iterable[str]) -> tuple[dict[str, Any], dict[str, str]]:
    """The settings the environment sets, and the variable each came from; ValueError (the message)
    for a list that is not JSON.

    A list is written as JSON (``CODEBOX_ALLOW='["src/**"]'``); JSON null leaves the key unset.
    """
    wanted = {ENV_PREFIX + key.upper(): key for key in keys}
    list_keys = frozenset(lists)
    values: dict[str, Any] = {}
    names: dict[str, str] = {}
    base_url = os.environ.get(OPENAI_BASE_URL)
    if base_url and "base_url" in wanted.values():  # below CODEBOX_BASE_URL, which the loop sets over it
        values["base_url"], names["base_url"] = base_url, OPENAI_BASE_URL
    for name, text in os.environ.items():
        key = wanted.get(name.upper())
        if key is None:
            continue
        value: Any = text
        if key in list_keys:
            import json

            try:
                value = json.loads(text)
            except ValueError:
                raise ValueError(
                    f"the environment variable {one_line(name, 60)}: {key}: a list is written as JSON, "
                    f"e.g. {name}='[\"src/**\"]' (got {one_line(text, 60)!r})"
                ) from None
            if value is None:
                continue
        values[key], names[key] = value, name
    return values, names


def unknown_variables(environ: Mapping[str, str], keys: Iterable[str]) -> list[str]:
    """One warning per CODEBOX_ variable codebox does not read, with the closest known name."""
    known = {ENV_PREFIX + key.upper() for key in keys} | set(OTHER_VARIABLES)
    warnings = []
    for name in sorted(environ):
        upper = name.upper()
        if not upper.startswith(ENV_PREFIX) or upper in known:
            continue
        import difflib

        close = difflib.get_close_matches(upper, sorted(known), n=1, cutoff=0.6)
        hint = f"did you mean {close[0]}?" if close else "`codebox config` lists the settings"
        warnings.append(f"{one_line(name, 80)} is not a codebox variable and is ignored ({hint})")
    return warnings
