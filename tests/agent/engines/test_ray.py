"""The Ray engine on a real cluster on 127.0.0.1: slot caps, results back, a lost node, a dead driver.

The cluster (ray.cluster_utils.Cluster: a head and a worker node, 2 codebox_slots each, small
object stores, no dashboard) is started and stopped by this module; a node is killed by its
raylet's pid. Required when CI is set; skipped without Ray otherwise.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# Ray rewrites 127.0.0.1 to the machine's outward address unless told not to (see agent.engines.ray).
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
# The nodes share this machine's Docker with other test runs: their leftovers are theirs to reap.
os.environ["CODEBOX_NODE_GC"] = "0"

if os.environ.get("CI"):
    import ray  # in CI a missing Ray is a failure, not a skip
else:
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'codebox-agent[ray]')")

from agent.batch import run_batch
from agent.cancel import CancelToken
from agent.cli.parser import main
from agent.engines import TaskJob, TaskOutcome
from agent.engines.ray import RayEngine
from agent.protocol import TaskSpec
from tests.repos import sh

pytestmark = [pytest.mark.ray, pytest.mark.docker]

SLOTS = 2
_HEALTH = {"health_check_period_ms": 500, "health_check_failure_threshold": 4, "health_check_initial_delay_ms": 0}
_NODE = {"num_cpus": 1, "resources": {"codebox_slots": SLOTS}, "object_store_memory": 100 * 2**20,
         "node_ip_address": "127.0.0.1"}


@pytest.fixture(scope="module")
def cluster(sandbox_image: str) -> Iterator[Any]:
    from ray.cluster_utils import Cluster

    # A private Ray folder: the cluster's address file and sessions stay out of /tmp/ray.
    ray_tmp = tempfile.mkdtemp(prefix="cbray-", dir="/tmp")  # short: Ray's unix socket paths
    saved = os.environ.get("RAY_TMPDIR")
    os.environ["RAY_TMPDIR"] = ray_tmp
    cluster = Cluster(initialize_head=True, head_node_args={**_NODE, "include_dashboard": False,
                                                            "_system_config": _HEALTH})
    try:
        cluster.add_node(**_NODE)
        cluster.wait_for_nodes()
        yield cluster
    finally:
        if ray.is_initialized():
            ray.shutdown()
        cluster.shutdown()  # kills every process of every node, by the pids it started
        if saved is None:
            os.environ.pop("RAY_TMPDIR", None)
        else:
            os.environ["RAY_TMPDIR"] = saved
        shutil.rmtree(ray_tmp, ignore_errors=True)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    sh("git", "init", "-q", cwd=path)
    (path / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    sh("git", "add", ".", cwd=path)
    sh("git", "commit", "-qm", "init", cwd=path)
    (path / "notes.txt").write_text("uncommitted\n")
    return path


def sleepy_tasks(tmp_path: Path, repo: Path, count: int, sleep_s: float, prefix: str = "t") -> list[TaskSpec]:
    """Tasks that add a file, run a test that sleeps, and finish: each holds its slot for sleep_s."""
    tasks = []
    for i in range(count):
        tid = f"{prefix}{i}"
        patch = f"*** Begin Patch\n*** Add File: {tid}.txt\n+{tid}\n*** End Patch\n"
        turns = [{"tool_calls": [{"name": "apply_patch", "arguments": {"patch": patch}}]},
                 {"tool_calls": [{"name": "run_test", "arguments": {}}]},
                 {"message": f"{tid} done"}]
        script = tmp_path / f"{tid}.json"
        script.write_text(json.dumps({"turns": turns}))
        tasks.append(TaskSpec(id=tid, repo=str(repo), goal="g", policy="workspace-write", model=f"scripted:{script}",
                              test_cmd=["python3", "-c", f"import time; time.sleep({sleep_s}); print('slept')"]))
    return tasks


def events(out: Path, task_id: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / task_id / "events.jsonl").read_text().splitlines()]


def most_at_once(spans: list[tuple[float, float]]) -> int:
    edges = sorted([(start, 1) for start, _ in spans] + [(end, -1) for _, end in spans])
    now = peak = 0
    for _, step in edges:
        now += step
        peak = max(peak, now)
    return peak


def test_every_task_comes_back_whole_and_no_node_runs_more_than_its_slots(
    cluster: Any, tmp_path: Path, repo: Path
) -> None:
    tasks = sleepy_tasks(tmp_path, repo, 8, 1.5)
    out = tmp_path / "out"
    reports = run_batch(tasks, out, engine=RayEngine(address=cluster.address), progress_stream=io.StringIO())
    assert [r.status for r in reports] == ["completed"] * 8
    spans: dict[str, list[tuple[float, float]]] = defaultdict(list)
    head = sh("git", "rev-parse", "HEAD", cwd=repo)
    for report in reports:
        tid = report.task_id
        assert report.attempt == 1 and report.node and report.repo == str(repo)
        assert report.base_commit == head and report.base_dirty  # the driver's base, not the node's copy
        assert report.patch is not None and report.patch.files == [f"{tid}.txt"]
        patch = (out / tid / "patch.diff").read_text()
        assert f"+++ b/{tid}.txt" in patch and "notes.txt" not in patch  # uncommitted work is the base
        run = [e for e in events(out, tid) if e["type"] == "tool.end" and e["data"]["name"] == "run_test"]
        assert "slept" in run[0]["data"]["content"]
        assert json.loads((out / tid / "run.json").read_text())["node"] == report.node
        times = [e["time"] for e in events(out, tid)]
        spans[report.node].append((min(times), max(times)))
    assert len(spans) == 2  # both nodes worked
    assert all(most_at_once(s) <= SLOTS for s in spans.values()), spans
    predictions = (out / "predictions.jsonl").read_text().splitlines()
    assert len(predictions) == 8
    # The snapshot of the base went through the object store; the user's repo is untouched.
    assert sh("git", "status", "--porcelain", cwd=repo) == "?? notes.txt"


def test_a_cancel_ends_running_tasks_as_cancelled_and_starts_no_more(
    cluster: Any, tmp_path: Path, repo: Path
) -> None:
    tasks = sleepy_tasks(tmp_path, repo, 8, 30)
    jobs = [TaskJob(task=t, model=t.model or "") for t in tasks]
    cancel = CancelToken()
    outcomes: list[TaskOutcome] = []
    started: list[str] = []

    def on_start(job: TaskJob) -> None:
        started.append(job.task.id)
        if len(started) == 2:
            threading.Timer(3.0, cancel.cancel, args=("stop",)).start()

    RayEngine(address=cluster.address).run(jobs, outcomes.append, cancel, on_start=on_start)
    assert outcomes and len(outcomes) <= 2 * SLOTS  # at most the tasks that were running
    assert sorted(o.task_id for o in outcomes) == sorted(started)
    assert {o.report.status for o in outcomes} == {"cancelled"}


def test_a_driver_s_environment_build_variables_are_said_to_be_the_nodes(
        tmp_path: Path, repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A one-machine cluster started without CODEBOX_FIND_LINKS built every environment without the driver's
    wheels (zipp's big-O, an sdist only: 'use an --image that has it'), and nothing said the variable stays here."""
    from agent.engines.ray import driver_only_variables

    assert driver_only_variables({"CODEBOX_FIND_LINKS": "", "HOME": "/root"}) is None
    monkeypatch.setenv("CODEBOX_FIND_LINKS", str(tmp_path))
    monkeypatch.setenv("UV_INDEX_URL", "http://127.0.0.1:9/simple")
    tasks_file = tmp_path / "tasks.jsonl"
    tasks_file.write_text(sleepy_tasks(tmp_path, repo, 1, 0)[0].model_dump_json() + "\n")
    code = main(["batch", str(tasks_file), "--engine", "ray", "--address", "127.0.0.1:9", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 2 and "codebox: CODEBOX_FIND_LINKS, UV_INDEX_URL are set here, but with --engine ray" in err
    assert "where each node's `ray start` runs" in err


def test_an_unreachable_cluster_is_a_clear_error(tmp_path: Path, repo: Path) -> None:
    tasks_file = tmp_path / "tasks.jsonl"
    tasks_file.write_text(sleepy_tasks(tmp_path, repo, 1, 0)[0].model_dump_json() + "\n")
    stderr = io.StringIO()
    real = sys.stderr
    sys.stderr = stderr
    try:
        code = main(["batch", str(tasks_file), "--engine", "ray", "--address", "127.0.0.1:9",
                     "--out", str(tmp_path / "out")])
    finally:
        sys.stderr = real
    assert code == 2 and "no Ray cluster answers at 127.0.0.1:9" in stderr.getvalue()


def _parent(pid: int) -> int:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0
    return int(stat[stat.rfind(")") + 2:].split()[1])


def _descends_from(pid: int, ancestor: int) -> bool:
    for _ in range(4):
        pid = _parent(pid)
        if pid == ancestor:
            return True
        if pid <= 1:
            return False
    return False


def _containers(task_id: str | None = None) -> list[dict[str, Any]]:
    """Summaries of codebox containers (of this task), as the docker API lists them."""
    from tests import engine

    found = engine.containers(engine.docker(), "codebox.task")
    return [c for c in found if task_id is None or c["Labels"].get("codebox.task") == task_id]


def _owners() -> dict[str, int]:
    """task id -> the pid that owns its sandbox (on a node: the Ray worker running the task)."""
    return {c["Labels"]["codebox.task"]: int(c["Labels"].get("codebox.owner", "0") or 0) for c in _containers()}


def test_a_node_killed_mid_batch_loses_no_task_and_leaves_no_container(
    cluster: Any, tmp_path: Path, repo: Path
) -> None:
    victim = cluster.add_node(**_NODE)
    cluster.wait_for_nodes()
    raylet = victim.all_processes["raylet"][0].process.pid
    tasks = sleepy_tasks(tmp_path, repo, 6, 8, prefix="k")  # 6 tasks, 6 slots: two land on the victim
    out = tmp_path / "out"
    result: dict[str, Any] = {}
    batch = threading.Thread(target=lambda: result.update(reports=run_batch(
        tasks, out, engine=RayEngine(address=cluster.address, max_retries=2), progress_stream=io.StringIO())))
    batch.start()
    on_victim: dict[str, int] = {}
    deadline = time.monotonic() + 90
    while not on_victim and time.monotonic() < deadline:
        on_victim = {tid: pid for tid, pid in _owners().items()
                     if tid.startswith("k") and _descends_from(pid, raylet)}
        time.sleep(0.2)
    assert on_victim, "no task started on the victim node"
    os.kill(raylet, signal.SIGKILL)  # the node is lost: its raylet, then its workers, then their sandboxes
    batch.join(timeout=240)
    assert not batch.is_alive()
    reports = {r.task_id: r for r in result["reports"]}
    assert sorted(reports) == [t.id for t in tasks]  # one report per task
    assert all(r.status == "completed" for r in reports.values()), {k: r.error for k, r in reports.items()}
    for tid in on_victim:
        assert reports[tid].attempt == 2, tid  # run again, elsewhere
        assert reports[tid].node and victim.node_id[:12] not in reports[tid].node
        assert (out / tid / "patch.diff").read_text().count("+++ b/") == 1  # written once, by the driver
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(pid in on_victim.values() for pid in _owners().values()):
        time.sleep(0.5)
    assert not any(pid in on_victim.values() for pid in _owners().values()), "a sandbox outlived its node"
    cluster.remove_node(victim, allow_graceful=False)


def test_a_driver_that_dies_takes_its_sandboxes_with_it(cluster: Any, tmp_path: Path, repo: Path) -> None:
    task = sleepy_tasks(tmp_path, repo, 1, 300, prefix="orphan")[0]
    tasks_file = tmp_path / "tasks.jsonl"
    tasks_file.write_text(task.model_dump_json() + "\n")
    driver = subprocess.Popen(
        [sys.executable, "-m", "agent.cli", "batch", str(tasks_file), "--engine", "ray", "--address",
         cluster.address, "--out", str(tmp_path / "out")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 90
        while not _containers(task.id) and time.monotonic() < deadline:
            assert driver.poll() is None, "the driver ended before its task started"
            time.sleep(0.2)
        assert _containers(task.id), "the task's sandbox never started"
    finally:
        driver.send_signal(signal.SIGKILL)
        driver.wait()
    deadline = time.monotonic() + 60
    while _containers(task.id) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not _containers(task.id), "the sandbox outlived its driver"


def test_eval_runs_on_the_cluster_with_the_verdicts_of_the_local_engine(cluster: Any, tmp_path: Path) -> None:
    from tests.e2e.eval_fixtures import build, write_inputs

    base, test_patch, cases = build(tmp_path / "repos" / "acme" / "calc")
    picked = {k: cases[k] for k in ("gold", "wrong", "test_file_reset", "fuzz", "broken")}
    tasks, preds = write_inputs(tmp_path, base, test_patch, picked)
    out = tmp_path / "out"
    code = main(["eval", "--tasks", str(tasks), "--predictions", str(preds), "--out", str(out), "--repos",
                 str(tmp_path / "repos"), "--engine", "ray", "--address", cluster.address])
    assert code == 0
    for iid, case in picked.items():
        result = json.loads((out / iid / "eval.json").read_text())
        assert result["status"] == case.expected, (iid, result["error"])
        assert result["node"], iid  # the node it ran on
    assert json.loads((out / "fuzz" / "eval.json").read_text())["model_patch"]["command"].startswith("patch ")
