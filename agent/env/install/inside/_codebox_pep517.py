"""Call one PEP 517 hook of the project's build backend and write its answer as JSON.

Runs inside the build container as the build user, with the build venv's python, in the
project copy: ``python _codebox_pep517.py HOOK OUT.json``. The backend is named by
``PEP517_BACKEND`` (``module:object``) and ``PEP517_BACKEND_PATH`` (folders of the project,
``os.pathsep``-separated), as the host read them from ``[build-system]``. Hooks:

- ``requires``: ``get_requires_for_build_editable`` (``_wheel`` when the backend has no
  editable builds); ``{"requires": [...], "editable": bool}``;
- ``metadata``: ``prepare_metadata_for_build_editable`` / ``_wheel``, or, for a backend
  without them, the dist-info of a wheel it builds; ``{"dist_info", "metadata", "entry_points"}``;
- ``editable``: ``build_editable`` (PEP 660); ``{"wheel": path or null}``.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import zipfile
from typing import Any

META_DIR = "/tmp/codebox-meta"
WHEEL_DIR = "/tmp/codebox-wheel"
MAX_TEXT = 4 * 1024 * 1024


def _backend() -> Any:
    paths = [os.path.abspath(p) for p in os.environ.get("PEP517_BACKEND_PATH", "").split(os.pathsep) if p]
    sys.path[:0] = paths
    module, _, attribute = os.environ["PEP517_BACKEND"].partition(":")
    backend = importlib.import_module(module)
    for part in [p for p in attribute.split(".") if p]:
        backend = getattr(backend, part)
    return backend


def _requires(backend: Any) -> dict[str, Any]:
    editable = hasattr(backend, "build_editable")
    hook = getattr(backend, "get_requires_for_build_editable" if editable else "get_requires_for_build_wheel", None)
    requires = list(hook({})) if hook is not None else []
    return {"requires": [str(r) for r in requires], "editable": editable}


def _read(path: str) -> str:
    if not os.path.isfile(path):
        return ""
    with open(path, "rb") as handle:
        return handle.read(MAX_TEXT).decode("utf-8", "replace")


def _from_wheel(wheel: str) -> dict[str, Any]:
    """The dist-info of a built wheel, for a backend with no prepare_metadata hook."""
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        dist_info = next((n.split("/")[0] for n in names if n.count("/") == 1 and n.split("/")[0].endswith(
            ".dist-info") and n.endswith("/METADATA")), None)
        if dist_info is None:
            raise SystemExit("codebox: the wheel the backend built has no .dist-info/METADATA")

        def member(name: str) -> str:
            path = f"{dist_info}/{name}"
            return archive.read(path)[:MAX_TEXT].decode("utf-8", "replace") if path in names else ""

        return {"dist_info": dist_info, "metadata": member("METADATA"), "entry_points": member("entry_points.txt")}


def _metadata(backend: Any) -> dict[str, Any]:
    os.makedirs(META_DIR, exist_ok=True)
    for name in ("prepare_metadata_for_build_editable", "prepare_metadata_for_build_wheel"):
        hook = getattr(backend, name, None)
        if hook is not None:
            dist_info = str(hook(META_DIR, {}))
            folder = os.path.join(META_DIR, dist_info)
            return {"dist_info": dist_info, "metadata": _read(os.path.join(folder, "METADATA")),
                    "entry_points": _read(os.path.join(folder, "entry_points.txt"))}
    os.makedirs(WHEEL_DIR, exist_ok=True)
    build = getattr(backend, "build_editable", None) or backend.build_wheel
    return _from_wheel(os.path.join(WHEEL_DIR, str(build(WHEEL_DIR, {}))))


def _editable(backend: Any) -> dict[str, str | None]:
    hook = getattr(backend, "build_editable", None)
    if hook is None:
        return {"wheel": None}
    os.makedirs(WHEEL_DIR, exist_ok=True)
    return {"wheel": os.path.join(WHEEL_DIR, str(hook(WHEEL_DIR, {})))}


def _as_setup_py_main() -> None:
    """For setuptools' legacy backend (a setup.py with no ``[build-system]``), ``__main__`` is setup.py, as it is
    when pip runs it: astropy's setup.py (to 3.x) imports astropy, which asks ``__main__.__file__`` whether it is
    being set up, and otherwise checks numpy and rebuilds its own extensions."""
    if os.environ.get("PEP517_BACKEND", "").endswith(":__legacy__") and os.path.isfile("setup.py"):
        sys.modules["__main__"].__file__ = os.path.abspath("setup.py")


def main(argv: list[str]) -> int:
    hook, out = argv[1], argv[2]
    _as_setup_py_main()
    backend = _backend()
    result = {"requires": _requires, "metadata": _metadata, "editable": _editable}[hook](backend)
    with open(out, "w", encoding="utf-8") as handle:
        json.dump(result, handle)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
