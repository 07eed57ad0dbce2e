"""The Ray engine: one Ray task per codebox task, on nodes that offer `codebox_slots`.

The driver packs each distinct (repo, base) once into the object store (engines.snapshot),
probes the nodes for the sandbox images and ships a `docker save` of any that one lacks
(engines.node), and submits one task per job with ``resources={"codebox_slots": 1}`` and
``num_cpus=0``. On the node the task reaps leftovers (once per node and batch), makes sure
its image is there, unpacks the snapshot and runs execute_job; the TaskOutcome comes back
by value, and only the driver (agent.batch) writes ``--out``. A small actor on the driver's
node (the board) counts attempts, tells the driver which tasks started, and carries a
cancel to the nodes. Ray itself is imported only when the engine runs: `pip install
'codebox-agent[ray]'`.
"""

from __future__ import annotations

import importlib
import ipaddress
import os
import socket
import tempfile
import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.cancel import CancelToken
from agent.defaults import DEFAULT_IMAGE
from agent.engines.base import AdmitFn, OutcomeFn, StartFn, TaskJob, TaskOutcome, execute_job
from agent.engines.node import ensure_image, local_image_id, missing_images, once_per_run, reap, save_image
from agent.engines.snapshot import Snapshot, SnapshotKind, make_snapshot, shared_source, sweep_sources, unpack_snapshot
from agent.errors import CodeboxError
from agent.protocol import Report, StopReason
from agent.task.runner import failed_report
from agent.task.workspace import WorkspaceError, workspace_root

SLOT_RESOURCE = "codebox_slots"
# Ray rewrites a loopback address to the machine's outward IP before it connects; a cluster
# started with --node-ip-address 127.0.0.1 does not listen there. This variable (named for
# Windows and macOS, where Ray keeps loopback) keeps 127.0.0.1 as given. Only ever set for a
# loopback address: a driver on a real cluster must see its own node's address.
_KEEP_LOOPBACK = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
# What an environment build reads from the process's variables (agent.env.resolve.resolve, .fetch): on a Ray
# node, the variables of the node's `ray start`, never the driver's.
NODE_VARIABLES = ("CODEBOX_FIND_LINKS", "CODEBOX_NO_INDEX", "UV_INDEX_URL", "UV_DEFAULT_INDEX", "UV_EXTRA_INDEX_URL",
                  "UV_INDEX")
_CANCEL_POLL_S = 0.5


class RayEngineError(CodeboxError):
    """The Ray engine cannot run: ray not installed, no cluster at the address, no slots."""


def _import_ray() -> Any:
    try:
        return importlib.import_module("ray")
    except ImportError as exc:
        raise RayEngineError(f"the ray engine needs Ray: pip install 'codebox-agent[ray]' ({exc})") from None


@dataclass
class _Source:
    snapshot: Snapshot
    ref: Any  # the ObjectRef of snapshot.data; dropped when the key's last job is back


@dataclass
class _Pending:
    job: TaskJob
    source_key: tuple[str, str | None]


@dataclass
class _Images:
    """Per image ref a job names: its id on the driver and, for nodes that lack it, the archive."""

    ids: dict[str, str] = field(default_factory=dict)
    archives: dict[str, Any] = field(default_factory=dict)  # image id -> ObjectRef of the docker save


class RayEngine:
    """Runs jobs on a Ray cluster at ``address`` ("auto": the cluster this machine belongs to,
    or HOST:PORT of its head). A job whose node is lost is run again by Ray up to
    ``max_retries`` times (each retry pays for the model again); a job lost for good still
    gets one report. ``ship_images``: send a `docker save` of the sandbox image to nodes
    that lack it. ``init_options`` go to ray.init (tests and benches).
    """

    def __init__(
        self,
        address: str = "auto",
        max_retries: int = 1,
        ship_images: bool = True,
        init_options: dict[str, Any] | None = None,
    ) -> None:
        self.address = address
        self.max_retries = max(0, max_retries)
        self.ship_images = ship_images
        self.init_options = init_options or {}
        self._connected_here = False

    def run(
        self,
        jobs: Sequence[TaskJob],
        on_outcome: OutcomeFn,
        cancel: CancelToken,
        on_start: StartFn | None = None,
        admit: AdmitFn | None = None,
    ) -> None:
        """``admit`` is asked when a job is handed to Ray (up to two per slot ahead of their start)."""
        if not jobs:
            return
        ray = self._connect()
        try:
            _Run(ray, self, list(jobs), on_outcome, cancel, on_start, admit).go()
        finally:
            if self._connected_here:
                ray.shutdown()

    def _connect(self) -> Any:
        address = _resolve_address(self.address)
        host, _, port = address.rpartition(":")
        if _is_loopback(host):
            os.environ.setdefault(_KEEP_LOOPBACK, "0")
        ray = _import_ray()
        if ray.is_initialized():
            return ray
        try:
            socket.create_connection((host.strip("[]"), int(port)), timeout=5).close()
        except (OSError, ValueError) as exc:
            raise RayEngineError(f"no Ray cluster answers at {address} ({exc}); start one with "
                                 "`ray start --head ...` or pass --address HOST:PORT") from None
        import logging

        options = {"log_to_driver": False, "logging_level": logging.WARNING, **self.init_options}
        try:
            ray.init(address=address, **options)
        except Exception as exc:  # ConnectionError, RuntimeError: Ray's own words are the clearest
            raise RayEngineError(f"cannot join the Ray cluster at {address}: {exc}") from None
        self._connected_here = True
        return ray


def driver_only_variables(environ: dict[str, str] | None = None) -> str | None:
    """A note when this process sets what an environment build reads: the nodes build with their own variables."""
    names = [name for name in NODE_VARIABLES if (environ if environ is not None else os.environ).get(name)]
    if not names:
        return None
    return (f"{', '.join(names)} {'is' if len(names) == 1 else 'are'} set here, but with --engine ray every node "
            "builds the environments with its own variables: set them where each node's `ray start` runs")


def _source_key(job: TaskJob) -> tuple[str, str | None]:
    return str(Path(job.task.repo).expanduser().resolve()), job.task.base_commit


def _resolve_address(address: str) -> str:
    """HOST:PORT for "auto" (RAY_ADDRESS, else the address file of the cluster started on this machine)."""
    if address != "auto":
        return address
    if os.environ.get("RAY_ADDRESS"):
        return os.environ["RAY_ADDRESS"]
    base = os.environ.get("RAY_TMPDIR") or os.environ.get("TMPDIR") or "/tmp"
    try:
        found = (Path(base) / "ray" / "ray_current_cluster").read_text().strip()
    except OSError:
        found = ""
    if not found:
        raise RayEngineError("--address auto found no Ray cluster started on this machine "
                             "(`ray start --head ...`); pass --address HOST:PORT of the head")
    return found


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class _Run:
    """One engine.run: submit, watch, hand outcomes back; the driver side of everything."""

    def __init__(self, ray: Any, engine: RayEngine, jobs: list[TaskJob], on_outcome: OutcomeFn,
                 cancel: CancelToken, on_start: StartFn | None, admit: AdmitFn | None = None) -> None:
        self.ray, self.engine, self.jobs = ray, engine, jobs
        self.on_outcome, self.cancel, self.on_start, self.admit = on_outcome, cancel, on_start, admit
        self.sources: dict[tuple[str, str | None], _Source] = {}
        self.bad_sources: dict[tuple[str, str | None], str] = {}
        self.pending: dict[Any, _Pending] = {}
        self.started: set[str] = set()
        self.by_id = {job.task.id: job for job in jobs}
        self.left = Counter(_source_key(job) for job in jobs)  # jobs per source not yet back

    def go(self) -> None:
        ray = self.ray
        slots = int(ray.cluster_resources().get(SLOT_RESOURCE, 0))
        if slots <= 0:
            raise RayEngineError(f"no node of the Ray cluster offers {SLOT_RESOURCE}; start nodes with "
                                 f"`ray start ... --resources '{{\"{SLOT_RESOURCE}\": 4}}'`")
        here = ray.get_runtime_context().get_node_id()
        strategy = ray.util.scheduling_strategies.NodeAffinitySchedulingStrategy(node_id=here, soft=False)
        self.board = ray.remote(_Board).options(num_cpus=0, scheduling_strategy=strategy).remote()
        self.remote = ray.remote(_run_on_node)
        self.images = self._plan_images()
        in_flight = max(4, 2 * slots)  # bounds what the object store holds at once
        queue = list(self.jobs)
        told_cancel = False
        try:
            while queue or self.pending:
                if self.cancel.cancelled:
                    queue.clear()  # never started: a later batch run picks them up
                    if not told_cancel:
                        self.board.cancel.remote(self.cancel.reason or "cancelled")
                        told_cancel = True
                while queue and len(self.pending) < in_flight:
                    job = queue.pop(0)
                    if self.admit is not None and not self.admit(job):
                        self._skip(job)  # the batch's budget is spent: never started, no outcome
                        continue
                    self._submit(job)
                if not self.pending:
                    continue
                # Back as soon as one is done (a cancel or a start notice is seen within 0.2 s),
                # then take every other one that is done too.
                refs = list(self.pending)
                ready, rest = ray.wait(refs, num_returns=1, timeout=0.2)
                if ready and rest:
                    ready += ray.wait(rest, num_returns=len(rest), timeout=0)[0]
                self._drain_starts()
                for ref in ready:
                    self._finish(ref)
        finally:
            ray.kill(self.board)

    # -- images ---------------------------------------------------------------------------

    def _plan_images(self) -> _Images:
        """Each image the jobs name: by id when the driver knows it; archived once if a node lacks it."""
        plan = _Images()
        # codebox's sandbox image too: a node copies the sandbox server's runtime out of it
        # (agent.containers.runtime), whatever image its tasks run in.
        for ref in sorted({job.task.image or job.sandbox.image for job in self.jobs} | {DEFAULT_IMAGE}):
            image_id = local_image_id(ref)
            if image_id is not None:
                plan.ids[ref] = image_id
        if not plan.ids or not self.engine.ship_images:
            return plan
        ids = sorted(set(plan.ids.values()))
        lacking: set[str] = set()
        for missing in self.ray.get([self._probe(node, ids) for node in self._slot_nodes()]):
            lacking.update(missing)
        for ref, image_id in plan.ids.items():
            if image_id in lacking and image_id not in plan.archives:
                plan.archives[image_id] = self.ray.put(save_image(ref))
        return plan

    def _slot_nodes(self) -> list[str]:
        return [n["NodeID"] for n in self.ray.nodes() if n.get("Alive") and n.get("Resources", {}).get(SLOT_RESOURCE)]

    def _probe(self, node_id: str, ids: list[str]) -> Any:
        strategy = self.ray.util.scheduling_strategies.NodeAffinitySchedulingStrategy(node_id=node_id, soft=False)
        return self.ray.remote(missing_images).options(num_cpus=0, scheduling_strategy=strategy).remote(ids)

    # -- jobs -----------------------------------------------------------------------------

    def _source(self, job: TaskJob) -> tuple[tuple[str, str | None], _Source | None]:
        key = _source_key(job)
        if key not in self.sources and key not in self.bad_sources:
            try:
                snapshot = make_snapshot(Path(key[0]), key[1])
            except (WorkspaceError, OSError) as exc:
                self.bad_sources[key] = f"no workspace: {exc}"
            else:
                self.sources[key] = _Source(snapshot, self.ray.put(snapshot.data))
        return key, self.sources.get(key)

    def _submit(self, job: TaskJob) -> None:
        key, source = self._source(job)
        if source is None:  # the same report the local engine gives: the task cannot run as given
            self._start(job)
            self._hand_back(_lost(job, "invalid_task", self.bad_sources[key], job.attempt))
            return
        # The snapshot's one commit IS the task's base: the node has no other (the report gets the driver's back).
        job = job.model_copy(update={"task": job.task.model_copy(update={"base_commit": None})})
        image = job.task.image or job.sandbox.image
        image_id = self.images.ids.get(image)
        if image_id is not None:  # run on exactly the driver's image, whatever tags say on the node
            job = job.model_copy(update={"sandbox": job.sandbox.replace(image=image_id),
                                         "task": job.task.model_copy(update={"image": image_id})})
        shipments = [(found, [self.images.archives.get(found)], name)
                     for name, found in ((image, image_id), (DEFAULT_IMAGE, self.images.ids.get(DEFAULT_IMAGE)))
                     if found is not None]
        ref = self.remote.options(
            num_cpus=0, resources={SLOT_RESOURCE: 1}, max_retries=self.engine.max_retries,
            retry_exceptions=False, name=f"codebox:{job.task.id}",
        ).remote(job.model_dump_json(), source.snapshot.kind, source.ref, source.snapshot.digest, shipments,
                 self.board)
        self.pending[ref] = _Pending(self.by_id[job.task.id], key)

    def _drain_starts(self) -> None:
        for task_id in self.ray.get(self.board.take_started.remote()):
            job = self.by_id.get(task_id)
            if job is not None:
                self._start(job)

    def _start(self, job: TaskJob) -> None:
        if job.task.id not in self.started:
            self.started.add(job.task.id)
            if self.on_start is not None:
                self.on_start(job)

    def _skip(self, job: TaskJob) -> None:
        key = _source_key(job)
        self.left[key] -= 1
        if self.left[key] == 0:
            self.sources.pop(key, None)

    def _finish(self, ref: Any) -> None:
        pending = self.pending.pop(ref)
        job = pending.job
        source = self.sources[pending.source_key]
        self.left[pending.source_key] -= 1
        if self.left[pending.source_key] == 0:
            del self.sources[pending.source_key]  # its ObjectRef goes: the object store may drop the snapshot
        try:
            text = self.ray.get(ref)
        except self.ray.exceptions.RayTaskError as exc:  # the task function itself failed: a bug
            outcome = _lost(job, "internal_error", f"the Ray task failed: {exc}".splitlines()[0],
                            self._attempt(job))
        except self.ray.exceptions.RayError as exc:  # node or worker lost, retries used up
            outcome = _lost(job, "sandbox_error", f"lost on the Ray cluster after {self._attempts(job)} "
                            f"attempt(s): {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}",
                            self._attempt(job))
        else:
            if text is None:
                return  # never started (cancelled first): no outcome, a later run picks it up
            outcome = TaskOutcome.model_validate_json(text)
            update = {"base_commit": source.snapshot.source_commit, "base_dirty": source.snapshot.dirty}
            outcome.report = outcome.report.model_copy(update=update)
        self._drain_starts()
        self._start(job)  # a start notice lost with a node still counts as a start
        self._hand_back(outcome)

    def _attempts(self, job: TaskJob) -> int:
        try:
            return int(self.ray.get(self.board.starts.remote(job.task.id), timeout=10))
        except Exception:
            return 0

    def _attempt(self, job: TaskJob) -> int:
        return job.attempt + max(self._attempts(job), 1) - 1

    def _hand_back(self, outcome: TaskOutcome) -> None:
        report = outcome.report.model_copy(update={"attempt": outcome.attempt, "node": outcome.node})
        self.on_outcome(outcome.model_copy(update={"report": report}))


def _lost(job: TaskJob, reason: StopReason, error: str, attempt: int) -> TaskOutcome:
    lines = _Lines()
    report: Report = failed_report(job.task, job.model or "?", reason, error, lines)
    return TaskOutcome(task_id=job.task.id, report=report, events=lines.lines, attempt=attempt, node="?")


class _Lines:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def emit(self, event: Any) -> None:
        self.lines.append(event.model_dump_json())

    def close(self) -> None:
        pass


class _Board:
    """The actor on the driver's node: attempts per task, starts the driver has not seen, the cancel."""

    def __init__(self) -> None:
        self._starts: dict[str, int] = {}
        self._new: list[str] = []
        self._cancel: str | None = None

    def start(self, task_id: str) -> int:
        """This task's attempt number in this run (1, 2, ...); 0: cancelled, do not start."""
        if self._cancel is not None:
            return 0
        count = self._starts.get(task_id, 0) + 1
        self._starts[task_id] = count
        if count == 1:
            self._new.append(task_id)
        return count

    def take_started(self) -> list[str]:
        new, self._new = self._new, []
        return new

    def starts(self, task_id: str) -> int:
        return self._starts.get(task_id, 0)

    def cancel(self, reason: str) -> None:
        self._cancel = reason

    def cancelled(self) -> str | None:
        return self._cancel


# -- on the node ----------------------------------------------------------------------------


def _run_on_node(
    job_json: str,
    kind: SnapshotKind,
    snapshot: bytes,
    digest: str,
    shipments: list[tuple[str, list[Any], str]],
    board: Any,
) -> str | None:
    """The Ray task: one codebox job on this node; its TaskOutcome as JSON (None: cancelled before start)."""
    ray = _import_ray()
    context = ray.get_runtime_context()
    job = TaskJob.model_validate_json(job_json)
    count = int(ray.get(board.start.remote(job.task.id)))
    if count == 0:
        return None
    job = job.model_copy(update={"attempt": job.attempt + count - 1})
    node = f"{socket.gethostname()}/{context.get_node_id()[:12]}"
    cancel = CancelToken()
    watcher = _CancelWatcher(ray, board, cancel)
    watcher.start()
    try:
        outcome = _run_here(ray, job, kind, snapshot, digest, shipments, cancel, context.get_job_id())
    finally:
        watcher.stop()
    return outcome.model_copy(update={"node": node}).model_dump_json()


# Image ids this worker process has seen on its node: checked once, not before every task.
_IMAGES_HERE: set[str] = set()


def _sources_root() -> Path:
    return Path(tempfile.gettempdir()) / f"codebox-sources-{os.getuid()}"


def _run_here(ray: Any, job: TaskJob, kind: SnapshotKind, snapshot: bytes, digest: str,
              shipments: list[tuple[str, list[Any], str]], cancel: CancelToken, scope: str) -> TaskOutcome:
    node_id = ray.get_runtime_context().get_node_id()
    try:
        # Before this node's first task of the batch: `codebox gc`, and the sources of ended batches go.
        once_per_run(f"{scope}-{node_id}", lambda: (reap(), sweep_sources(_sources_root(), scope)))
        for image_id, (archive_ref,), ref in shipments:  # the task's image, and the sandbox runtime's
            if image_id in _IMAGES_HERE:
                continue
            archive = ray.get(archive_ref) if archive_ref is not None and local_image_id(image_id) is None else None
            ensure_image(image_id, archive, ref)
            _IMAGES_HERE.add(image_id)
    except CodeboxError as exc:
        return _lost(job, "sandbox_error", f"the node is not ready: {exc}", job.attempt)
    try:
        if job.keep_workspace:  # a kept workspace reads its objects from its source: a copy of its own
            home = Path(tempfile.mkdtemp(prefix="codebox-src-", dir=workspace_root()))
            return execute_job(job, unpack_snapshot(kind, snapshot, home), cancel)
        with shared_source(kind, snapshot, digest, scope, _sources_root()) as source:
            return execute_job(job, source, cancel)
    except (WorkspaceError, OSError) as exc:
        return _lost(job, "invalid_task", f"no workspace: the snapshot did not unpack: {exc}", job.attempt)


class _CancelWatcher:
    """Polls the board; a cancel there (or a board that is gone with its driver) cancels the run."""

    def __init__(self, ray: Any, board: Any, cancel: CancelToken) -> None:
        self._ray, self._board, self._cancel = ray, board, cancel
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="codebox-cancel-watch", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _watch(self) -> None:
        while not self._stop.wait(_CANCEL_POLL_S):
            try:
                reason = self._ray.get(self._board.cancelled.remote(), timeout=30)
            except Exception:  # the board died: its driver is gone, nobody will read this result
                self._cancel.cancel("the batch's driver is gone")
                return
            if reason is not None:
                self._cancel.cancel(reason)
                return

