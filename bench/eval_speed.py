"""`codebox eval` per instance against the host's own pytest on the same tests, as ratios from one run.

Fixture projects are built here (a flat package with no dependencies: the sandbox image as it
is; a src/ package declaring pytest: an environment built for it), several instances each, and
a host venv with the same packages (the environment's lock, or the image's pytest version).
Per rep, interleaved and in alternating order: the host runs `python -m pytest -q FILES` in a
checkout of each instance (base + gold patch + test patch, made beforehand); codebox runs
`codebox eval --jobs 1 --predictions gold` over the same instances, as a user would (a
process, an empty --out). The ratio is codebox's wall time per instance over the host's.

Both sides read bytecode as an installed package has it: codebox's is written on the uncounted
warm-up (this machine sets PYTHONDONTWRITEBYTECODE; the child runs without it), the host venv's
pytest is installed with --compile-bytecode. Neither caches the tests' own bytecode: the
sandbox cannot write into /repo and sets PYTHONDONTWRITEBYTECODE, and so does the host's run here.

One instance alone shows every fixed cost: its ratio, the overhead in seconds (codebox's wall
minus the host's), codebox's own cost (its wall minus its test process's, as the sandbox's server
timed that process: eval.json's test_process), and where codebox's time goes:
  cli        a resumed run of the same instance (process start, imports, dataset, Python choice,
             preflight, summaries; nothing evaluated), timed in the same rep;
  workspace, env, sandbox, apply, image, tests   the instance's steps (eval.json's timings);
             container_start: create to first answer, in the background from "sandbox" on;
             test_process: the test command's own wall time in the sandbox, inside "tests";
  outside_the_instance   the wall time outside the instance's steps: the CLI, the engine's start,
             the summaries and the wait for the container's removal at the end of the run.
Each rep's load average (1 min) is printed beside its numbers. On a loaded machine the raw ratio
says little: containers here share one cgroup (cgroup v1, /docker: 1024 shares for all of them,
every engineer's) against every host process, so the sandbox's test process is slowed far more
than the host's pytest. Codebox's own cost and "(own + host) / host" (the ratio were the test
process as fast as the host's) move less with the load; only a quiet machine gives the ratio.

    python bench/eval_speed.py [--reps 5] [--instances 4] [--codebox DIR]... [--single-only]
                               [--dataset FILE --repos DIR [--as-of now]] [--backend podman]
                               [--variant LABEL=FLAGS]...
                               [--cold-python 3.9 [--cold-only]]

--codebox DIR (repeatable): the checkout whose `python -m agent.cli` runs (default: this one);
given twice (main and a branch), both run in the same reps, interleaved: a before/after at one load.
--variant LABEL=FLAGS (repeatable): the last checkout again with more `codebox eval` flags, in the same
reps (podman='--backend podman', runsc='--runtime runsc'): engines and runtimes at one load.
--dataset/--repos add real instances, all in one eval run (their gold patches; on the host, a venv
from each one's environment lock).
--cold-python X.Y: a cold environment for a new Python: a project declaring pytest and six, its
environment (dependencies image + project layer) removed before each rep, `codebox eval --python
X.Y` against the host's `uv venv -p pythonX.Y` + `uv pip install` of the same lock (uv's download
cache warm, as codebox's wheel cache is) + its pytest run.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shlex
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
LAST_STDERR: list[str] = [""]  # the last `codebox eval`'s stderr (an environment build's progress lines)


@dataclass(frozen=True)
class Runner:
    """What runs `codebox eval`: a checkout's `python -m agent.cli`, with flags of its own (a variant)."""

    checkout: Path
    flags: tuple[str, ...] = ()
    label: str = ""

    def __str__(self) -> str:
        return self.label or str(self.checkout)


@dataclass
class Single:
    """One rep of one instance alone."""

    eval_s: float
    host_s: float
    cli_s: float
    load: float
    steps: dict[str, float]
    duration_s: float


def codebox_env() -> dict[str, str]:
    """The child's environment: bytecode written and read as an installed package's (not this machine's
    PYTHONDONTWRITEBYTECODE)."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def run_eval(project: Project, ids: list[str], out: Path, runner: Runner = Runner(ROOT), keep: bool = False) -> float:
    """Wall time of `codebox eval --jobs 1` over ``ids`` (gold patches), from an empty --out (``keep``: the
    --out as it is, every instance kept from the run before: the command's own cost alone)."""
    if not keep:
        shutil.rmtree(out, ignore_errors=True)
    pattern = "^(" + "|".join(ids) + ")$"
    env = {**codebox_env(), "PYTHONPATH": str(runner.checkout)}
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "agent.cli", "eval", "--tasks", str(project.dataset),
                           "--predictions", "gold", "--out", str(out), "--repos", str(project.repos), "--jobs", "1",
                           "--filter", pattern, *EXTRA, *runner.flags], capture_output=True, text=True,
                          cwd=runner.checkout, env=env)
    elapsed = time.monotonic() - started
    LAST_STDERR[0] = proc.stderr
    results = json.loads((out / "results.json").read_text()) if (out / "results.json").exists() else {}
    if proc.returncode != 0 or len(results.get("resolved", [])) != len(ids):
        raise SystemExit(f"eval of {project.name} did not resolve every gold patch:\n{proc.stdout}\n{proc.stderr}")
    return elapsed


def run_host(project: Project, ids: list[str]) -> float:
    started = time.monotonic()
    for iid in ids:
        env = {**os.environ, "PYTHONPATH": project.roots[iid], "PYTEST_ADDOPTS": "-p no:cacheprovider",
               "PYTHONDONTWRITEBYTECODE": "1"}  # as the sandbox's run_test: the tests' bytecode is not kept
        proc = subprocess.run([project.pythons[iid], "-m", "pytest", "-q", *project.files[iid]],
                              cwd=project.checkouts[iid], env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"host pytest failed on {iid}:\n{proc.stdout[-2000:]}")
    return time.monotonic() - started


def sandbox_pytest() -> str:
    """The sandbox image's own pytest version."""
    return subprocess.run(["docker", "run", "--rm", "--network", "none", "codebox-sandbox:latest",
                           "python3", "-c", "import pytest; print(pytest.__version__)"],
                          capture_output=True, text=True, check=True).stdout.strip()


def host_venv(folder: Path, lock: str, python: str = "3.11", own: Path | None = None) -> Path:
    """A venv of this host's ``python`` with ``lock`` installed, bytecode compiled (as pip does); the image's
    pytest for no lock; ``own``: that checkout installed too, editable. The lock's hashes are not checked: an
    sdist codebox built into a wheel in its box has that wheel's hash, not the one the host's build makes."""
    key = hashlib.sha256(f"{lock}\0{own or ''}".encode()).hexdigest()[:12]
    venv = folder / f"venv-{python}-{key}"
    if not venv.exists():
        subprocess.run([UV, "venv", "-q", "--no-python-downloads", "-p", find_python(python), str(venv)], check=True)
        pip = [UV, "pip", "install", "-q", "--compile-bytecode", "-p", str(venv / "bin" / "python")]
        if lock.strip():
            (folder / f"{venv.name}.lock").write_text(lock)
            subprocess.run([*pip, "--no-verify-hashes", "-r", str(folder / f"{venv.name}.lock")], check=True)
        else:
            subprocess.run([*pip, f"pytest=={sandbox_pytest()}"], check=True)
        if own is not None:
            subprocess.run([*pip, "--no-deps", "-e", str(own)], check=True)
    return venv / "bin" / "python"


def host_venvs(project: Project, folder: Path, out: Path) -> None:
    """Per instance, a venv with the packages its tests ran with in codebox (its env's lock, or the image's
    pytest) on the Python minor it ran on; one venv per distinct lock and Python. A real instance's own
    project is installed into a venv of its own, editable from its host checkout (as codebox's environment
    has it: a generated version module, entry points)."""
    for iid in project.ids:
        verdict = json.loads((out / iid / "eval.json").read_text())
        env = verdict.get("env") or {}
        own = project.checkouts[iid] if project.name == "real" else None
        project.pythons[iid] = str(host_venv(folder, env.get("lock") or "", _minor(verdict), own))


def _minor(verdict: dict[str, object]) -> str:
    """X.Y of the Python the instance ran on (3.11 where eval.json does not say: the image's)."""
    chosen = verdict.get("python")
    ran = str(chosen.get("ran") or "") if isinstance(chosen, dict) else ""
    env = verdict.get("env")
    ran = ran or (str(env.get("python") or "") if isinstance(env, dict) else "")
    return ".".join(ran.split(".")[:2]) if ran else "3.11"


def measure(project: Project, ids: list[str], out: Path, eval_first: bool, runner: Runner) -> tuple[float, float]:
    """(codebox's wall time, the host's) over ``ids``, in the order asked."""
    if eval_first:
        seconds = run_eval(project, ids, out, runner)
        return seconds, run_host(project, ids)
    host = run_host(project, ids)
    return run_eval(project, ids, out, runner), host


def measure_single(project: Project, out: Path, eval_first: bool, runner: Runner) -> Single:
    """One instance alone, and then the same command again with it kept (the CLI's own cost)."""
    load = os.getloadavg()[0]
    seconds, host = measure(project, project.ids[:1], out, eval_first, runner)
    cli = run_eval(project, project.ids[:1], out, runner, keep=True)
    kept = json.loads((out / project.ids[0] / "eval.json").read_text())
    return Single(seconds, host, cli, load, kept["timings"], kept["duration_s"])


def step_medians(outs: list[Path], ids: list[str]) -> dict[str, float]:
    steps: dict[str, list[float]] = {}
    for out in outs:
        for iid in ids:
            timings = json.loads((out / iid / "eval.json").read_text())["timings"]
            for name, seconds in timings.items():
                steps.setdefault(name, []).append(seconds)
    return {name: round(statistics.median(values), 3) for name, values in steps.items()}


def print_single(name: str, reps: list[Single]) -> None:
    med = statistics.median
    own = [r.eval_s - r.steps.get("test_process", r.eval_s) for r in reps]  # a checkout older than test_process: 0
    mine = (f"codebox's own (eval - its test process) {med(own):.2f}s, (own + host) / host "
            f"{med((o + r.host_s) / r.host_s for o, r in zip(own, reps, strict=True)):.2f}"
            if all("test_process" in r.steps for r in reps) else "no test_process in eval.json (an older codebox)")
    print(f"  one instance: eval {med(r.eval_s for r in reps):.2f}s host {med(r.host_s for r in reps):.2f}s "
          f"ratio {med(r.eval_s / r.host_s for r in reps):.2f} | overhead (eval - host) "
          f"{med(r.eval_s - r.host_s for r in reps):.2f}s | {mine} | "
          f"load {min(r.load for r in reps):.1f}-{max(r.load for r in reps):.1f}")
    for o, r in zip(own, reps, strict=True):
        print(f"    rep: load {r.load:5.1f}  eval {r.eval_s:.2f}s host {r.host_s:.2f}s ratio {r.eval_s / r.host_s:.2f} "
              f"overhead {r.eval_s - r.host_s:.2f}s | test process in the box {r.steps.get('test_process', 0):.2f}s, "
              f"codebox's own {o:.2f}s")
    names = list(dict.fromkeys(k for r in reps for k in r.steps))
    phases = {"cli": med(r.cli_s for r in reps)}
    phases |= {k: med(r.steps.get(k, 0.0) for r in reps) for k in names}
    phases["outside_the_instance"] = med(r.eval_s - r.duration_s for r in reps)
    print("    phases (median s): " + " ".join(f"{k} {v:.3f}" for k, v in phases.items()))


def find_python(version: str) -> str:
    """This host's own interpreter of ``version``: pythonX.Y on PATH when it runs (a pyenv shim may not), else
    pyenv's build of it. uv is never let to download one (no GitHub downloads here)."""
    candidates = [shutil.which(f"python{version}") or "", *sorted(
        str(p) for p in Path("~/.pyenv/versions").expanduser().glob(f"{version}.*/bin/python{version}"))]
    for candidate in candidates:
        if candidate and subprocess.run([candidate, "-c", "pass"], capture_output=True).returncode == 0:
            return candidate
    raise SystemExit(f"no Python {version} on this host to compare with")


def cold_python(folder: Path, python: str, reps: int, runner: Runner) -> None:
    """A cold environment for ``python`` (its images removed before each rep) against the host's new venv."""
    from agent.env.install import images

    repo = folder / "repos" / "bench" / "coldpkg"
    files = {"pyproject.toml": '[project]\nname = "coldpkg"\nversion = "1.0"\n\n'
                               '[project.optional-dependencies]\ntest = ["pytest", "six"]\n',
             "src/coldpkg/__init__.py": SOURCE.replace("textutil", "coldpkg"), "tests/__init__.py": "",
             "tests/test_m0.py": _module(0, 60).replace("textutil", "coldpkg")}
    base = make_repo(repo, files)
    gold = diff_of(repo, {"src/coldpkg/__init__.py": files["src/coldpkg/__init__.py"].replace(
        "s.upper()", "s.upper() + '!'")})
    project = _project("coldpkg", folder, repo, base, gold, [["tests/test_m0.py::test_shout_0"]], "src")
    host_python = find_python(python)
    EXTRA.extend(["--python", python])
    try:
        out = folder / "cold"
        run_eval(project, project.ids, out, runner)  # the wheels downloaded once (kept warm, as uv's cache is)
        engine = images.EngineImages.connect()
        cold, host, env_s, host_venv_s = [], [], [], []
        for _ in range(reps):
            info = json.loads((out / project.ids[0] / "eval.json").read_text())["env"]
            entry = images.find(engine, info["image_id"])
            images.remove_env_images(engine, [info["image_id"], *([entry.deps] if entry and entry.deps else [])])
            load = os.getloadavg()[0]
            cold.append(run_eval(project, project.ids, out, runner))
            kept = json.loads((out / project.ids[0] / "eval.json").read_text())
            if not kept["env"]["built"]:
                raise SystemExit("the environment was not built again: not a cold run")
            env_s.append(kept["timings"]["env"])
            shutil.rmtree(folder / "coldvenv", ignore_errors=True)
            started = time.monotonic()
            subprocess.run([UV, "venv", "-q", "--no-python-downloads", "-p", host_python, str(folder / "coldvenv")],
                           check=True)
            (folder / "cold.lock").write_text(kept["env"]["lock"])
            subprocess.run([UV, "pip", "install", "-q", "--compile-bytecode", "-p",
                            str(folder / "coldvenv" / "bin" / "python"), "-r", str(folder / "cold.lock")], check=True)
            host_venv_s.append(time.monotonic() - started)
            project.pythons[project.ids[0]] = str(folder / "coldvenv" / "bin" / "python")
            host.append(host_venv_s[-1] + run_host(project, project.ids))
            print(f"    rep: load {load:5.1f}  cold eval {cold[-1]:.2f}s (env {env_s[-1]:.2f}s) | host venv + install "
                  f"{host_venv_s[-1]:.2f}s + pytest = {host[-1]:.2f}s")
        prefix = "codebox: env: "
        said = [line[len(prefix):] for line in LAST_STDERR[0].splitlines() if line.startswith(prefix)]
        print("    the last cold build's progress: " + " | ".join(said))
        engine.close()
        med = statistics.median
        version = subprocess.run([folder / "coldvenv" / "bin" / "python", "-V"], capture_output=True, text=True)
        print(f"  cold environment, Python {python} ({kept['python']['image']}; host: uv venv -p python{python}, "
              f"{version.stdout.strip()}): "
              f"eval {med(cold):.2f}s (its env step {med(env_s):.2f}s) vs host {med(host):.2f}s "
              f"(venv + install {med(host_venv_s):.2f}s): {med(cold) / med(host):.2f}x")
    finally:
        EXTRA[-2:] = []


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--instances", type=int, default=4)
    parser.add_argument("--codebox", type=Path, action="append", default=[],
                        help="a checkout whose `python -m agent.cli` runs (repeatable; default: this one)")
    parser.add_argument("--single-only", action="store_true", help="one instance alone only (no batch of instances)")
    parser.add_argument("--dataset", type=Path)
    parser.add_argument("--repos", type=Path)
    parser.add_argument("--as-of", help="codebox eval's --as-of (the date the real instances' tests were listed at)")
    parser.add_argument("--backend", help="codebox eval's --backend (docker, podman), for every run")
    parser.add_argument("--variant", action="append", default=[], metavar="LABEL=FLAGS",
                        help="also run the last checkout with these eval flags, interleaved with the others "
                             "(repeatable): podman='--backend podman', runsc='--runtime runsc'")
    parser.add_argument("--cold-python", metavar="X.Y", help="also: a cold environment for Python X.Y (see above)")
    parser.add_argument("--cold-only", action="store_true", help="with --cold-python: that part alone")
    args = parser.parse_args()
    if args.as_of:
        EXTRA.extend(["--as-of", args.as_of])
    if args.backend:
        EXTRA.extend(["--backend", args.backend])
    checkouts = [c.resolve() for c in args.codebox] or [ROOT]
    runners = [Runner(c) for c in checkouts]
    for variant in args.variant:
        label, _, flags = variant.partition("=")
        runners.append(Runner(checkouts[-1], tuple(shlex.split(flags)), label))
    folder = Path(tempfile.mkdtemp(prefix="codebox-eval-bench-"))
    try:
        if args.cold_python and args.cold_only:
            cold_python(folder, args.cold_python, args.reps, runners[-1])
            return
        projects = [build_flat(folder, args.instances), build_src(folder, args.instances)]
        if args.dataset and args.repos:
            projects.append(real_project(folder, args.dataset.resolve(), args.repos.resolve()))
        for project in projects:  # warm-up: environments built, host venvs made, bytecode written, caches filled
            for runner in runners:
                run_eval(project, project.ids, folder / "warm", runner)
            host_venvs(project, folder, folder / "warm")
            run_host(project, project.ids)
        keys = [(p.name, r) for p in projects for r in runners]
        batch: dict[tuple[str, Runner], list[tuple[float, float]]] = {k: [] for k in keys}
        single: dict[tuple[str, Runner], list[Single]] = {k: [] for k in keys}
        outs: dict[tuple[str, Runner], list[Path]] = {k: [] for k in keys}
        loads: list[float] = []
        for rep in range(args.reps):  # interleaved: every project and runner in each rep, eval/host order alternating
            loads.append(os.getloadavg()[0])
            for project in projects:
                for n, runner in enumerate(runners if rep % 2 == 0 else runners[::-1]):
                    key = (project.name, runner)
                    if not args.single_only:
                        out = folder / f"out-{project.name}-{n}-{rep}"
                        batch[key].append(measure(project, project.ids, out, rep % 2 == 0, runner))
                        outs[key].append(out)
                    single[key].append(measure_single(project, folder / "one", rep % 2 == 1, runner))
        print(f"{args.reps} reps, load (1 min) at their starts: {' '.join(f'{x:.1f}' for x in loads)}; "
              f"{os.cpu_count()} cores")
        for project in projects:
            for runner in runners:
                key = (project.name, runner)
                print(f"{project.name} ({len(project.ids)} instances), codebox from {runner}:")
                if batch[key]:
                    n, many = len(project.ids), batch[key]
                    ratio = statistics.median(e / h for e, h in many)
                    print(f"  per instance: eval {statistics.median(e for e, _ in many) / n:.2f}s host "
                          f"{statistics.median(h for _, h in many) / n:.2f}s ratio {ratio:.2f}")
                    print(f"    steps (median s per instance): {step_medians(outs[key], project.ids)}")
                print_single(project.name, single[key])
        if args.cold_python:
            cold_python(folder, args.cold_python, args.reps, runners[-1])
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
