"""The cost of an sdist-only dependency: a cold environment build whose one dependency is an sdist
(built offline in the install container with setuptools) vs the same package as a wheel.

Per rep, interleaved: both cold builds (images removed after each; the download cache stays warm).
setuptools and wheel are downloaded once from the package index (pip download).

    python bench/env_sdist.py [--reps 3]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from agent.containers.image import ensure_sandbox_image  # noqa: E402
from agent.env.install.ensure import EnvRequest, ensure_env  # noqa: E402
from agent.env.resolve.resolve import IndexConfig  # noqa: E402
from tests import engine  # noqa: E402
from tests.agent.env.projects import write  # noqa: E402
from tests.agent.env.wheels import make_sdist, make_wheel, make_wheelhouse, setuptools_pyproject  # noqa: E402


def cold(repo: Path, index: IndexConfig) -> float:
    start = time.perf_counter()
    info = ensure_env(EnvRequest(repo=repo, index=index))
    elapsed = time.perf_counter() - start
    assert info.built and "tinysd==0.1" in info.installed, info
    engine.remove_image(engine.docker(), info.image)
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    ensure_sandbox_image()
    with tempfile.TemporaryDirectory(prefix="codebox-bench-sdist-") as tmp:
        root = Path(tmp)
        wheels = make_wheelhouse(root / "wheels")
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--only-binary", ":all:", "--no-deps",
                        "-d", str(root / "setuptools"), "setuptools>=61", "wheel"], check=True)
        make_sdist(root / "sdists", "tinysd", "0.1", {"pyproject.toml": setuptools_pyproject("tinysd", "0.1", ["beta"]),
                                                      "tinysd/__init__.py": "VALUE = 1\n"})
        make_wheel(root / "as-wheel", "tinysd", "0.1", {"tinysd/__init__.py": "VALUE = 1\n"}, ("beta",))
        links = [str(wheels), str(root / "setuptools")]
        from_sdist = IndexConfig(find_links=[*links, str(root / "sdists")], no_index=True)
        from_wheel = IndexConfig(find_links=[*links, str(root / "as-wheel")], no_index=True)
        repo = write(root / "repo", {"requirements.txt": "tinysd\n", "app.py": ""})
        times: dict[str, list[float]] = {"sdist": [], "wheel": []}
        for _ in range(args.reps):
            times["sdist"].append(cold(repo, from_sdist))
            times["wheel"].append(cold(repo, from_wheel))
    sdist, wheel = statistics.median(times["sdist"]), statistics.median(times["wheel"])
    for name, median in (("sdist", sdist), ("wheel", wheel)):
        reps = " ".join(f"{t:.2f}" for t in times[name])
        print(f"cold build, dependency as {name}: median {median:.2f} s (reps: {reps})")
    print(f"sdist / wheel: {sdist / wheel:.2f}x (+{sdist - wheel:.2f} s: resolve rounds, setuptools, the build)")


if __name__ == "__main__":
    main()
