"""`codebox eval` per instance against the host's own pytest on the same tests, as ratios from one run.

Fixture projects are built here (a flat package with no dependencies: the sandbox image as it
is; a src/ package declaring pytest: an environment built for it), several instances each, and
a host venv with the same packages (the environment's lock, or the image's pytest version).
Per rep, interleaved and in alternating order: the host runs `python -m pytest -q FILES` in a
checkout of each instance (base + gold patch + test patch, made beforehand); codebox runs
`codebox eval --jobs 1 --predictions gold` over the same instances, as a user would (a
process, an empty --out). The ratio is codebox's wall time per instance over the host's.
Also printed: the single-instance ratio (one instance alone: every fixed cost shows) and the
median of each step of an instance (workspace, env, sandbox, apply, tests; eval.json's timings).

    python bench/eval_speed.py [--reps 5] [--instances 4] [--dataset FILE --repos DIR [--as-of now]]

--dataset/--repos add real instances, all in one eval run (their gold patches; on the host, a venv
from each one's environment lock).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.agent.eval.repos import diff_of, make_repo  # noqa: E402

UV = str(Path(sys.executable).with_name("uv"))
CODEBOX = [sys.executable, "-m", "agent.cli"]
SOURCE = "def shout(s):\n    return s.upper()\n\n\ndef words(s):\n    return s.split()\n"


@dataclass
class Project:
    name: str
    dataset: Path
    repos: Path
    ids: list[str]
    checkouts: dict[str, Path] = field(default_factory=dict)
    files: dict[str, list[str]] = field(default_factory=dict)
    roots: dict[str, str] = field(default_factory=dict)
    """Per instance: where its packages are (PYTHONPATH on the host: "src" or ".")."""
    pythons: dict[str, str] = field(default_factory=dict)
    """Per instance: the host venv's python (one venv per distinct lock)."""


def _module(n: int, tests: int) -> str:
    body = [f"from textutil import shout, words\n\n\ndef test_shout_{n}():\n    assert shout('a') == 'A!'\n"]
    body += [f"\n\ndef test_words_{n}_{i}():\n    assert words('a b {i}') == ['a', 'b', '{i}']\n" for i in range(tests)]
    body.append(f"\n\nimport pytest\n\n\n@pytest.mark.parametrize('x', range({tests}))\n"
                f"def test_param_{n}(x):\n    assert shout(str(x)) == str(x) + '!'\n")
    return "".join(body)


def build_flat(folder: Path, count: int) -> Project:
    """textutil: flat, declares nothing (the sandbox image's own pytest), one test module per instance."""
    repo = folder / "repos" / "bench" / "textutil"
    files = {"textutil.py": SOURCE, "tests/__init__.py": ""} | {
        f"tests/test_m{n}.py": _module(n, 60) for n in range(count)}
    base = make_repo(repo, files)
    gold = diff_of(repo, {"textutil.py": files["textutil.py"].replace("s.upper()", "s.upper() + '!'")})
    return _project("textutil", folder, repo, base, gold, [[f"tests/test_m{n}.py::test_shout_{n}"]
                                                            for n in range(count)], ".")


def build_src(folder: Path, count: int) -> Project:
    """srcpkg: src/ layout, pyproject with a test extra (an environment is built for it)."""
    repo = folder / "repos" / "bench" / "srcpkg"
    files = {"pyproject.toml": '[project]\nname = "textutil"\nversion = "1.0"\n\n'
                               '[project.optional-dependencies]\ntest = ["pytest"]\n',
             "src/textutil/__init__.py": SOURCE, "tests/__init__.py": ""} | {
                 f"tests/test_m{n}.py": _module(n, 60) for n in range(count)}
    base = make_repo(repo, files)
    gold = diff_of(repo, {"src/textutil/__init__.py": files["src/textutil/__init__.py"].replace(
        "s.upper()", "s.upper() + '!'")})
    return _project("srcpkg", folder, repo, base, gold, [[f"tests/test_m{n}.py::test_shout_{n}"]
                                                          for n in range(count)], "src")


def _project(name: str, folder: Path, repo: Path, base: str, gold: str, f2p: list[list[str]], root: str) -> Project:
    lines = [{"repo": f"bench/{repo.name}", "instance_id": f"{name}-{n}", "base_commit": base, "patch": gold,
              "test_patch": "", "FAIL_TO_PASS": tests, "PASS_TO_PASS": []} for n, tests in enumerate(f2p)]
    dataset = folder / f"{name}.jsonl"
    dataset.write_text("".join(json.dumps(line) + "\n" for line in lines))
    project = Project(name, dataset, folder / "repos", [str(line["instance_id"]) for line in lines])
    for line in lines:
        checkout = folder / "host" / str(line["instance_id"])
        subprocess.run(["git", "clone", "-q", str(repo), str(checkout)], check=True)
        subprocess.run(["git", "apply", "-"], input=gold.encode(), cwd=checkout, check=True)
        project.checkouts[str(line["instance_id"])] = checkout
        project.files[str(line["instance_id"])] = sorted({t.split("::")[0] for t in line["FAIL_TO_PASS"]})
        project.roots[str(line["instance_id"])] = root
    return project


def real_project(folder: Path, dataset: Path, repos: Path) -> Project:
    """Real instances, all in one eval run: each host checkout is base + gold patch + test patch."""
    rows = [json.loads(line) for line in dataset.read_text().splitlines() if line.strip()]
    project = Project("real", dataset, repos, [row["instance_id"] for row in rows])
    for row in rows:
        name = row["repo"].replace("/", "__")
        src = next(p for p in (repos / row["repo"], repos / name) if p.exists())
        checkout = folder / "host" / row["instance_id"]
        subprocess.run(["git", "clone", "-q", "--shared", str(src), str(checkout)], check=True)
        subprocess.run(["git", "checkout", "-q", row["base_commit"]], cwd=checkout, check=True)
        for patch in (row["patch"], row["test_patch"]):
            if patch:
                subprocess.run(["git", "apply", "-"], input=patch.encode(), cwd=checkout, check=True)
        tests = [*_tests(row["FAIL_TO_PASS"]), *_tests(row["PASS_TO_PASS"])]
        project.files[row["instance_id"]] = sorted({t.split("::")[0] for t in tests})
        project.checkouts[row["instance_id"]] = checkout
        project.roots[row["instance_id"]] = "src" if (checkout / "src").is_dir() else "."
    return project


def _tests(value: str | list[str]) -> list[str]:
    return list(json.loads(value)) if isinstance(value, str) else list(value)


EXTRA: list[str] = []  # flags for every `codebox eval` (--as-of)


def run_eval(project: Project, ids: list[str], out: Path) -> float:
    """Wall time of `codebox eval --jobs 1` over ``ids`` (gold patches), from an empty --out."""
    shutil.rmtree(out, ignore_errors=True)
    pattern = "^(" + "|".join(ids) + ")$"
    started = time.monotonic()
    proc = subprocess.run([*CODEBOX, "eval", "--tasks", str(project.dataset), "--predictions", "gold", "--out",
                           str(out), "--repos", str(project.repos), "--jobs", "1", "--filter", pattern, *EXTRA],
                          capture_output=True, text=True, cwd=ROOT)
    elapsed = time.monotonic() - started
    results = json.loads((out / "results.json").read_text()) if (out / "results.json").exists() else {}
    if proc.returncode != 0 or len(results.get("resolved", [])) != len(ids):
        raise SystemExit(f"eval of {project.name} did not resolve every gold patch:\n{proc.stdout}\n{proc.stderr}")
    return elapsed


def run_host(project: Project, ids: list[str]) -> float:
    started = time.monotonic()
    for iid in ids:
        env = {**os.environ, "PYTHONPATH": project.roots[iid], "PYTEST_ADDOPTS": "-p no:cacheprovider"}
        proc = subprocess.run([project.pythons[iid], "-m", "pytest", "-q", *project.files[iid]],
                              cwd=project.checkouts[iid], env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"host pytest failed on {iid}:\n{proc.stdout[-2000:]}")
    return time.monotonic() - started


def host_venvs(project: Project, folder: Path, out: Path) -> None:
    """Per instance, a venv with the packages its tests ran with in codebox (its env's lock, or the image's
    pytest); one venv per distinct lock."""
    for iid in project.ids:
        lock = (json.loads((out / iid / "eval.json").read_text()).get("env") or {}).get("lock") or ""
        venv = folder / f"venv-{hashlib.sha256(lock.encode()).hexdigest()[:12]}"
        if not venv.exists():
            subprocess.run([UV, "venv", "-q", "-p", "3.11", str(venv)], check=True)
            if lock.strip():
                (folder / f"{venv.name}.lock").write_text(lock)
                requirement = ["-r", str(folder / f"{venv.name}.lock")]
            else:  # the sandbox image's own pytest
                version = subprocess.run(["docker", "run", "--rm", "--network", "none", "codebox-sandbox:latest",
                                          "python3", "-c", "import pytest; print(pytest.__version__)"],
                                         capture_output=True, text=True, check=True).stdout.strip()
                requirement = [f"pytest=={version}"]
            subprocess.run([UV, "pip", "install", "-q", "-p", str(venv / "bin" / "python"), *requirement], check=True)
        project.pythons[iid] = str(venv / "bin" / "python")


def measure(project: Project, ids: list[str], out: Path, eval_first: bool) -> tuple[float, float]:
    """(codebox's wall time, the host's) over ``ids``, in the order asked."""
    if eval_first:
        seconds = run_eval(project, ids, out)
        return seconds, run_host(project, ids)
    host = run_host(project, ids)
    return run_eval(project, ids, out), host


def step_medians(outs: list[Path], ids: list[str]) -> dict[str, float]:
    steps: dict[str, list[float]] = {}
    for out in outs:
        for iid in ids:
            timings = json.loads((out / iid / "eval.json").read_text())["timings"]
            for name, seconds in timings.items():
                steps.setdefault(name, []).append(seconds)
    return {name: round(statistics.median(values), 3) for name, values in steps.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--instances", type=int, default=4)
    parser.add_argument("--dataset", type=Path)
    parser.add_argument("--repos", type=Path)
    parser.add_argument("--as-of", help="codebox eval's --as-of (the date the real instances' tests were listed at)")
    args = parser.parse_args()
    if args.as_of:
        EXTRA.extend(["--as-of", args.as_of])
    folder = Path(tempfile.mkdtemp(prefix="codebox-eval-bench-"))
    try:
        projects = [build_flat(folder, args.instances), build_src(folder, args.instances)]
        if args.dataset and args.repos:
            projects.append(real_project(folder, args.dataset.resolve(), args.repos.resolve()))
        for project in projects:  # warm-up: environments built, host venvs made, caches filled on both sides
            run_eval(project, project.ids, folder / "warm")
            host_venvs(project, folder, folder / "warm")
            run_host(project, project.ids)
        batch: dict[str, list[tuple[float, float]]] = {p.name: [] for p in projects}
        single: dict[str, list[tuple[float, float]]] = {p.name: [] for p in projects}
        outs: dict[str, list[Path]] = {p.name: [] for p in projects}
        for rep in range(args.reps):  # interleaved: every project in each rep, eval and host in alternating order
            for project in projects:
                out = folder / f"out-{project.name}-{rep}"
                batch[project.name].append(measure(project, project.ids, out, eval_first=rep % 2 == 0))
                single[project.name].append(measure(project, project.ids[:1], folder / "one", eval_first=rep % 2 == 1))
                outs[project.name].append(out)
        print(f"{'project':10} {'instances':>9} {'eval/inst':>10} {'host/inst':>10} {'ratio':>6}   "
              f"single: eval host ratio")
        for project in projects:
            n = len(project.ids)
            many, one = batch[project.name], single[project.name]
            ratio, one_ratio = statistics.median(e / h for e, h in many), statistics.median(e / h for e, h in one)
            print(f"{project.name:10} {n:>9} {statistics.median(e for e, _ in many) / n:>9.2f}s "
                  f"{statistics.median(h for _, h in many) / n:>9.2f}s {ratio:>6.2f}   "
                  f"{statistics.median(e for e, _ in one):.2f}s {statistics.median(h for _, h in one):.2f}s "
                  f"{one_ratio:.2f}")
            print(f"{'':10} steps (median s per instance): {step_medians(outs[project.name], project.ids)}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
