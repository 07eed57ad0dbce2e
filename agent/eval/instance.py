"""One instance, as SWE-bench's harness runs it, on the host and in the sandbox; its evidence out.

1. a workspace at base_commit (made ahead by the engine, or here), its environment (the same as
   batch's), the sandbox starting in the background;
2. the model_patch by SWE-bench's apply chain; what it changed (git's view of the workspace) is
   judged by integrity.py's rules (flagged: test infrastructure, dependencies, plugins); a patch
   that changes what the project's build reads (C, Cython, build files) gets the environment
   built again for the patched tree, as SWE-bench's eval script installs the project again;
3. the files the test_patch touches back to the base commit, then the test_patch (`git apply`);
4. the named tests in the network-off sandbox, by the runner SWE-bench runs them with (runners.choose: pytest on
   their files, JUnit XML and the log back; sympy's bin/test, Django's runtests.py or unittest on the test_patch's
   modules, their whole log back).
Every failure is the evidence's own (error, no_report), never an exception out of here.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from agent.cancel import CancelToken
from agent.defaults import REPO_MOUNT
from agent.env.cancel import EnvCancelled
from agent.env.errors import ProjectBuildFailed
from agent.errors import CodeboxError
from agent.eval import env as envs
from agent.eval import validate
from agent.eval.apply import apply_patch, reset_to_base
from agent.eval.changed import changed_paths, patch_paths
from agent.eval.integrity import flag_environment, flag_patch, flagged_paths
from agent.eval.job import ApplyRecord, EvalEvidence, EvalJob
from agent.eval.junit import junit_from_outcomes
from agent.eval.pytest_run import (
    BUNDLE_PATH,
    failure_cause,
    pytest_argv,
    read_bundle,
    run_environment,
    shown_command,
)
from agent.eval.runner_run import command_argv, command_environment
from agent.eval.verdict import not_maintained
from agent.languages.base import RunsNamedTests
from agent.languages.python.runners.pytest import PYTEST, node_file
from agent.languages.registry import eval_runner, is_test_id, log_runner_named, named_tests
from agent.languages.runner import Runner
from agent.protocol import EnvInfo, TaskSpec
from agent.sandboxes.base import Session
from agent.sandboxes.config import SandboxConfig
from agent.sandboxes.result import ToolResult, wrote_into_repo
from agent.task.workspace import Workspace, WorkspaceError, create_workspace, git

if TYPE_CHECKING:
    from collections.abc import Iterator

    from agent.backends.pool import WarmPool


def invalid_task(task: TaskSpec) -> str | None:
    """Why the instance cannot be evaluated as given, or None."""
    named = [*task.FAIL_TO_PASS, *task.PASS_TO_PASS]
    if not named:
        return "the instance names no FAIL_TO_PASS or PASS_TO_PASS tests"
    if not any(is_test_id(n) for n in named):
        return f"no test id any runner reads among the named tests: {', '.join(named[:5])}"
    return None


def evaluate(
    task: TaskSpec,
    job: EvalJob,
    config: SandboxConfig,
    source: Path,
    cancel: CancelToken,
    *,
    workspace: Workspace | None = None,
    env: EnvInfo | None = None,
    env_chosen: bool = False,
    warm: WarmPool | None = None,
) -> EvalEvidence:
    """Evaluate one instance from ``source`` (its repository on this machine); always returns evidence.

    ``workspace``, ``env`` (with ``env_chosen``) and ``warm``: made ahead by the engine for this job.
    """
    evidence = EvalEvidence()
    problem = invalid_task(task)
    if problem:
        evidence.fail("invalid", problem)
        if workspace is not None:
            workspace.remove()
        return evidence
    run = _Run(task, job, evidence, cancel)
    try:
        run.go(config, source, workspace, env, env_chosen, warm)
    except Exception as exc:  # a bug or an unexpected failure: this instance's error, never the run's end
        evidence.fail("internal", f"{type(exc).__name__}: {exc}")
    finally:
        envs.close_later(run.sandbox, run.workspace)
    if cancel.cancelled:
        evidence.cancelled = True
        evidence.fail("cancelled", f"cancelled ({cancel.reason or 'cancelled'})")
    return evidence


class _Run:
    def __init__(self, task: TaskSpec, job: EvalJob, evidence: EvalEvidence, cancel: CancelToken) -> None:
        self.task, self.job, self.evidence, self.cancel = task, job, evidence, cancel
        self.workspace: Workspace | None = None
        self.sandbox: Session | None = None
        self.test_patch_paths: list[str] = []

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        started = time.monotonic()
        try:
            yield
        finally:
            self.evidence.timings[name] = round(time.monotonic() - started, 3)

    def go(self, config: SandboxConfig, source: Path, workspace: Workspace | None, env: EnvInfo | None,
           env_chosen: bool, warm: WarmPool | None) -> None:
        evidence, task = self.evidence, self.task
        with self.step("workspace"):
            try:
                self.workspace = workspace or create_workspace(source, task.base_commit)
            except (WorkspaceError, OSError) as exc:
                evidence.fail("workspace", f"no workspace: {exc}")
                return
        repo = self.workspace.path.resolve()
        config = envs.sandbox_config(task, config)
        evidence.backend, evidence.runtime = config.backend, config.runtime
        with self.step("env"):
            try:
                if not env_chosen:
                    env = envs.choose(task, repo, config, self.cancel)
            except EnvCancelled:
                return
            except CodeboxError as exc:
                evidence.fail("environment", f"environment: {exc}")
                return
        evidence.env = env
        run_config = config.replace(image=env.run_image) if env is not None else config
        with self.step("sandbox"):
            self.sandbox = envs.open_sandbox(repo, run_config, task.id, warm)
        if validate.applies(task, env, self.job.dataset_image) and self._runs_with_pytest(repo):
            assert env is not None
            with self.step("validate_env"):
                checked = self._validated_env(config, repo, env)
            if checked is None or self.cancel.cancelled:
                return
            evidence.env = env = checked
        if not self._patches(self.workspace.path) or self.cancel.cancelled:
            return
        if env is not None and not self._env_with_the_patch(config, repo, env):
            return
        env = evidence.env
        run_config = config.replace(image=env.run_image) if env is not None else config
        with self.step("image"):
            evidence.image_id = envs.image_id(env, run_config)
        with self.step("tests"):
            assert self.sandbox is not None
            self._tests(self.sandbox, repo, env)
        if self.sandbox.startup_s is not None:  # its create to its first answer, in the background from the
            # "sandbox" step on (or earlier, in the engine's pool): "tests" waited for what was left of it
            evidence.timings["container_start"] = round(self.sandbox.startup_s, 3)

    def _runs_with_pytest(self, repo: Path) -> bool:
        """The validation reads pytest's report: the rows another runner grades are not checked (yet)."""
        named = [*self.task.FAIL_TO_PASS, *self.task.PASS_TO_PASS]
        return named_tests(repo) is None and eval_runner(repo, named)[0] is PYTEST

    def _validated_env(self, config: SandboxConfig, repo: Path, env: EnvInfo) -> EnvInfo | None:
        """The first candidate environment whose PASS_TO_PASS pass at base with the test_patch (validate.py);
        none passing, the one with the fewest failures. None when the tests must not run (cancel, no sandbox)."""
        task, notes = self.task, self.evidence.notes
        tried: list[tuple[int, EnvInfo]] = []
        current = env
        while True:
            failing = validate.recorded(current, task)
            if failing is None:
                failing = self._p2p_at_base(repo, current)
                if failing is None:
                    return None
                validate.record(current, task, failing)
            notes.append(validate.summary(current, failing, len(task.PASS_TO_PASS)))
            tried.append((len(failing), current))
            if not failing:
                self._compare_with_the_version(current, tried)
                return current
            if current.candidate >= current.candidates:
                break
            try:
                following = envs.choose(validate.next_task(task, current), repo, config, self.cancel)
            except EnvCancelled:
                return None
            except CodeboxError as exc:
                notes.append(f"the environment candidates after {current.candidate}: {exc}")
                break
            if following is None or following.candidate <= current.candidate:
                break
            current = following
            self._reopen(repo, config, current)
        best = min(tried, key=lambda item: (item[0], item[1].candidate))[1]
        notes.append(f"no environment candidate passes the PASS_TO_PASS at base with the test_patch: candidate "
                     f"{best.candidate}, with the fewest failures, is used")
        self._compare_with_the_version(best, tried)
        if best.run_image != current.run_image:
            self._reopen(repo, config, best)
        return best

    def _compare_with_the_version(self, chosen: EnvInfo, tried: list[tuple[int, EnvInfo]]) -> None:
        """Record this row's choice for its version (the rows sharing its environment_setup_commit), and say where
        another row of the version chose another candidate."""
        key = validate.version_key(self.task, chosen)
        if key is None:
            return
        outcomes = {env.candidate: failing for failing, env in tried}
        self.evidence.notes += validate.split_notes(self.task, chosen.candidate, outcomes,
                                                    validate.other_rows(key, self.task))
        validate.record_row(key, self.task, chosen.candidate, outcomes)

    def _reopen(self, repo: Path, config: SandboxConfig, env: EnvInfo) -> None:
        envs.close_later(self.sandbox, None)
        self.sandbox = envs.open_sandbox(repo, config.replace(image=env.run_image), self.task.id, None)

    def _p2p_at_base(self, repo: Path, env: EnvInfo) -> list[str] | None:
        """The PASS_TO_PASS not maintained at the base commit with the test_patch in; None when no run happened
        (the evidence says why). The workspace is back at base after it."""
        task = self.task
        touched = patch_paths(repo, task.test_patch or "")
        if not _apply_test_patch(repo, task.test_patch or "").applied:
            return []  # nothing to check with: the evaluation's own test_patch step reports it
        base = self.workspace.base_commit if self.workspace is not None else "HEAD"
        try:
            files = [f for f in _test_files(task.PASS_TO_PASS) if (repo / f).is_file()]
            if not files:
                return []
            root = None if envs.installs_the_repo(env) else envs.import_root(repo)
            request: dict[str, object] = {"argv": pytest_argv(files), "timeout_s": self.job.timeout_s,
                                          "report_file": BUNDLE_PATH, "env": run_environment(root, False),
                                          "copy_repo": True}  # writable as SWE-bench's /testbed; /repo stays base
            assert self.sandbox is not None
            reply = self._run_test(self.sandbox, request)
            if reply is None:
                return None
            if reply.outcome not in ("ok", "failed"):  # the box's end, not the environment's: it is not judged
                self.evidence.notes.append(f"the check of environment candidate {env.candidate} did not finish "
                                           f"({reply.outcome}): the candidate is kept")
                return []
            text = reply.data.get("report_file_text")
            bundle = read_bundle(text) if isinstance(text, str) else None
            junit = bundle.junit if bundle is not None else None
            return not_maintained(junit or "", task.PASS_TO_PASS)
        finally:
            reset_to_base(repo, base, touched)

    def _env_with_the_patch(self, config: SandboxConfig, repo: Path, env: EnvInfo) -> bool:
        """SWE-bench's eval script installs the project again once the model's patch is in; here the
        environment is chosen again for the patched tree when the patch changes what a build reads
        (a compiled project's C or Cython, its build files; see envs.patch_rebuilds). A project built
        by its own backend is keyed by its whole tree, so it is built again, on the same dependencies
        layer; any other is the same cache hit. False when the tests must not run."""
        changed = envs.patch_rebuilds(self.evidence.changed)
        if not changed or self.job.dataset_image or not envs.installs_the_repo(env):
            return True
        with self.step("env_again"):
            try:
                again = envs.choose(self.task, repo, config, self.cancel)
            except EnvCancelled:
                return False
            except ProjectBuildFailed as exc:
                if exc.status >= 128:  # killed (memory, a signal): not the tree's doing
                    self.evidence.fail("environment", f"environment with the model patch ({changed[0]}): {exc}")
                else:  # the patch broke the build: graded, as SWE-bench's run of the tests after a failed install
                    self.evidence.no_report = f"the project does not build with the model patch ({changed[0]}): {exc}"
                return False
            except CodeboxError as exc:
                self.evidence.fail("environment", f"environment with the model patch ({changed[0]}): {exc}")
                return False
        if again is None or again.run_image == env.run_image:
            return True
        self.evidence.flags += flag_environment(env, again)
        self.evidence.flagged = flagged_paths(self.evidence.flags)
        self.evidence.env = again
        self.evidence.notes.append(f"the project was built again with the model patch (it changes {changed[0]}"
                                   + (f" and {len(changed) - 1} more" if len(changed) > 1 else "") + ")")
        envs.close_later(self.sandbox, None)
        with self.step("sandbox_again"):
            self.sandbox = envs.open_sandbox(repo, config.replace(image=again.run_image), self.task.id, None)
        return True

    def _patches(self, path: Path) -> bool:
        """The model_patch, the reset, the test_patch; False when the tests must not run."""
        evidence, task = self.evidence, self.task
        patch = self.job.prediction.model_patch or ""
        with self.step("apply"):
            if patch.strip():
                evidence.model_patch = apply_patch(path, patch)
                if not evidence.model_patch.applied:
                    return False
            test_patch_paths = patch_paths(path, task.test_patch) if task.test_patch else []
            self.test_patch_paths = test_patch_paths
            if patch.strip():
                evidence.changed = changed_paths(path)
                evidence.flags = flag_patch(path, evidence.changed, test_patch_paths,
                                            _test_files([*task.FAIL_TO_PASS, *task.PASS_TO_PASS]))
                evidence.flagged = flagged_paths(evidence.flags)
            base = self.workspace.base_commit if self.workspace is not None else "HEAD"
            evidence.reset_files = reset_to_base(path, base, test_patch_paths)
            if task.test_patch and task.test_patch.strip():
                evidence.test_patch = _apply_test_patch(path, task.test_patch)
                if not evidence.test_patch.applied:
                    evidence.fail("test_patch",
                                  f"the test_patch does not apply after the reset: {evidence.test_patch.tried[-1]}")
                    return False
        return True

    def _tests(self, sandbox: Session, repo: Path, env: EnvInfo | None) -> None:
        evidence, task = self.evidence, self.task
        language = named_tests(repo)
        if language is not None:  # another language than Python, graded by its test names (Rust's cargo test)
            self._named_tests(sandbox, repo, language, env)
            return
        named = [*task.FAIL_TO_PASS, *task.PASS_TO_PASS]
        runner, why = eval_runner(repo, named)
        evidence.runner = runner.name
        if runner is not PYTEST:
            evidence.notes.append(f"tests run with {runner.name}: {why}")
        root = None if envs.installs_the_repo(env) and not self.job.dataset_image else envs.import_root(repo)
        request = self._pytest_request(repo, root) if runner is PYTEST else self._runner_request(runner, repo, root)
        if request is None:
            return
        if task.test_in_copy:
            request["copy_repo"] = True
        reply = self._run_test(sandbox, request)
        rerun = reply is not None and reply.outcome != "timeout" and not task.test_in_copy
        if reply is not None and rerun and _wrote_into_repo(reply.output, reply.data):
            # SWE-bench's /testbed is writable: a run that wrote into /repo (pytest-cov's .coverage under
            # addopts, a test's own file) runs again in a copy of it, so it is graded as there.
            evidence.notes.append(f"the tests wrote into {REPO_MOUNT} (read-only in the sandbox): "
                                  "they ran again in a copy of it, as in SWE-bench's writable /testbed")
            request["copy_repo"] = True
            reply = self._run_test(sandbox, request)
        if reply is not None:
            self._test_process(reply)
            self._read_run(reply.output, reply.outcome, reply.error, reply.data)

    def _test_process(self, reply: ToolResult) -> None:
        """The test command's own wall time in the sandbox (its process, as the sandbox's server timed it): what
        a host's run of the same command compares with; the "tests" step is that plus the wait for the container
        and the round trip."""
        seconds = reply.data.get("duration_s")
        if isinstance(seconds, int | float) and not isinstance(seconds, bool):
            self.evidence.timings["test_process"] = round(float(seconds), 3)

    def _pytest_request(self, repo: Path, root: str | None) -> dict[str, object] | None:
        """pytest on the named tests' files (None: none of them is in the tree)."""
        evidence, task = self.evidence, self.task
        files = _test_files([*task.FAIL_TO_PASS, *task.PASS_TO_PASS])
        evidence.test_files = [f for f in files if (repo / f).is_file()]
        evidence.test_command = shown_command(evidence.test_files)
        missing = [f for f in files if f not in evidence.test_files]
        if missing:
            evidence.notes.append(f"test file(s) not in the tree: {', '.join(missing[:5])}")
        if not evidence.test_files:
            evidence.no_report = f"none of the named tests' files is in the tree ({', '.join(files[:5])})"
            return None
        return {"argv": pytest_argv(evidence.test_files), "timeout_s": self.job.timeout_s, "report_file": BUNDLE_PATH,
                "env": run_environment(root, self.job.dataset_image)}

    def _runner_request(self, runner: Runner, repo: Path, root: str | None) -> dict[str, object] | None:
        """The runner's command on the test_patch's files (SWE-bench's directives; None: nothing to run)."""
        evidence, task = self.evidence, self.task
        named = [n for n in [*task.FAIL_TO_PASS, *task.PASS_TO_PASS] if runner.is_test_id(n)]
        present = [f for f in self.test_patch_paths if (repo / f).is_file()]
        evidence.test_files = present
        targets = runner.targets(named, present)
        if not targets:
            evidence.no_report = (f"nothing for {runner.name} to run: the test_patch changes no test file in the tree"
                                  + (f" ({', '.join(self.test_patch_paths[:5])})" if self.test_patch_paths else ""))
            return None
        evidence.test_command = runner.command(targets)
        return {"argv": command_argv(evidence.test_command), "timeout_s": self.job.timeout_s,
                "report_file": BUNDLE_PATH, "env": command_environment(runner, root, self.job.dataset_image)}

    def _named_tests(self, sandbox: Session, repo: Path, language: RunsNamedTests, env: EnvInfo | None) -> None:
        """The language's own run; its machine output read per test and graded as a JUnit report would be."""
        evidence = self.evidence
        evidence.runner = language.name  # the verdict grades by the language's test names
        run = language.named_tests_run(repo, [*self.task.FAIL_TO_PASS, *self.task.PASS_TO_PASS], env)
        evidence.test_command = run.shown
        request: dict[str, object] = {"argv": run.argv, "timeout_s": self.job.timeout_s, "report_file": run.report_file}
        if self.task.test_in_copy:
            request["copy_repo"] = True
        reply = self._run_test(sandbox, request)
        if reply is None:
            return
        self._test_process(reply)
        report = reply.data.get("report_file_text")
        machine = report if isinstance(report, str) else reply.output
        evidence.run_outcome = reply.outcome
        code = reply.data.get("exit_code")
        evidence.exit_code = code if isinstance(code, int) else None
        evidence.log = f"{reply.output}\n{machine}" if isinstance(report, str) else reply.output
        if reply.outcome == "timeout":
            evidence.fail("timeout", f"the tests timed out after {self.job.timeout_s:g} s")
        elif reply.outcome in ("oom", "container_died", "sandbox_error", "error"):
            evidence.fail("sandbox", f"the test run did not finish ({reply.outcome}): {reply.error or ''}".rstrip(": "))
        outcomes = language.outcomes(machine)
        if outcomes:
            evidence.junit_xml = junit_from_outcomes(outcomes)
        elif evidence.error is None:
            cause = failure_cause(reply.output)
            evidence.no_report = f"the tests reported no outcome (exit {evidence.exit_code}): {cause}"

    def _run_test(self, sandbox: Session, request: dict[str, object]) -> ToolResult | None:
        """run_test in the sandbox (a cancel closes it); None, the evidence's error set, when no container ran."""
        done = threading.Event()
        watch = threading.Thread(target=_close_on_cancel, args=(self.cancel, done, sandbox), daemon=True,
                                 name=f"codebox-eval-cancel-{self.task.id}")
        watch.start()
        try:
            return sandbox.call("run_test", request, timeout_s=self.job.timeout_s)
        except CodeboxError as exc:  # SandboxError: no container could start
            self.evidence.fail("sandbox", f"the sandbox failed: {exc}")
            return None
        finally:
            done.set()

    def _read_run(self, output: str, outcome: str, error: str | None, data: dict[str, object]) -> None:
        """The bundle when the run wrote one (the whole log); else what run_test kept of its output."""
        evidence = self.evidence
        evidence.run_outcome = outcome
        text = data.get("report_file_text")
        bundle = read_bundle(text) if isinstance(text, str) else None
        code = data.get("exit_code")
        evidence.exit_code = bundle.exit_code if bundle else code if isinstance(code, int) else None
        evidence.log = bundle.log if bundle else output
        if outcome == "timeout":
            evidence.fail("timeout", f"the tests timed out after {self.job.timeout_s:g} s")
        elif outcome in ("oom", "container_died", "sandbox_error"):
            evidence.fail("sandbox", f"the test run did not finish ({outcome}): {error or ''}".rstrip(": "))
        elif outcome == "error":  # codebox's own command could not run (the tool server's error): not the patch's
            evidence.fail("sandbox", f"the test run could not start: {error or 'error'}")
        if bundle is not None and bundle.junit is not None:
            evidence.junit_xml = bundle.junit
        elif bundle is not None and (log_runner := log_runner_named(evidence.runner)) is not None:
            if evidence.error is None and not log_runner.statuses(bundle.log):
                evidence.no_report = (f"{evidence.runner} reported no test (exit {bundle.exit_code}): "
                                      f"{failure_cause(bundle.log)}")
            return  # else the runner's log is its report (the verdict reads it)
        elif evidence.error is None:
            signal = data.get("signal")  # a crash (a C extension's SIGSEGV) before pytest could bundle its report
            why = (f"exit {evidence.exit_code}" if bundle else f"killed by {signal}" if isinstance(signal, str)
                   else (data.get("report_file_error") or error or "no report"))
            evidence.no_report = f"{evidence.runner} wrote no report ({why}): {failure_cause(evidence.log)}"


def _wrote_into_repo(output: str, data: dict[str, object]) -> bool:
    """Whether the run failed to write into the read-only /repo (its log, or its output when it wrote no bundle)."""
    text = data.get("report_file_text")
    bundle = read_bundle(text) if isinstance(text, str) else None
    return wrote_into_repo(bundle.log if bundle is not None else output)


def _close_on_cancel(cancel: CancelToken, done: threading.Event, sandbox: Session) -> None:
    """A cancel stops a test run under way (the sandbox closed: the call returns at once)."""
    while not done.is_set():
        if cancel.wait(0.2):
            sandbox.close()
            return


def _test_files(names: list[str]) -> list[str]:
    return sorted({f for f in (node_file(n) for n in names) if f})


def _apply_test_patch(path: Path, patch: str) -> ApplyRecord:
    """The test_patch as SWE-bench's eval script applies it: `git apply -v`, nothing else."""
    data = patch.encode("utf-8", errors="surrogateescape")
    proc = git("apply", "--verbose", "-", cwd=path, stdin=data if data.endswith(b"\n") else data + b"\n", check=False)
    words = (proc.stdout + proc.stderr).decode(errors="replace")
    if proc.returncode == 0:
        return ApplyRecord(command="git apply --verbose", output=words[:4000])
    errors = [line for line in words.splitlines() if line.startswith(("error:", "fatal:"))]
    first = errors[0] if errors else f"exit {proc.returncode}"
    return ApplyRecord(tried=[f"git apply --verbose: {first}"], output=words[:4000])
