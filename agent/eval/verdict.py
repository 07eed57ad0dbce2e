"""The verdict on one instance, from its evidence alone: eval.json (InstanceEval).

The same function judges a fresh run and a --regrade of a kept one: the named tests and the
eval type come from the instance, the outcomes from the JUnit XML (pytest, its ids as SWE-bench's parser for the
repository writes them) or the runner's log (sympy, Django, unittest: agent/languages/python/runners), the rest
from the evidence. A named entry that is no test id of the runner (a shipped row's ``[100%]``) is not graded, and
the verdict says so.
Statuses: resolved, unresolved (the tests ran and did not all pass, or could not be trusted),
patch_failed (no command of the apply chain took the model_patch), error (the harness could not
evaluate it: no workspace, no environment, a test_patch that does not apply, a timeout).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Callable
from typing import Literal

from pydantic import BaseModel, Field

from agent.eval import grading
from agent.eval.dataset import DatasetInfo, EvalType
from agent.eval.job import ApplyRecord, ErrorKind, EvalEvidence, Flag
from agent.eval.junit import XPASS, Key, collection_errors, junit_cases, junit_key, status_map
from agent.languages.python.runners.pytest import PYTEST, repo_parser, rewrite
from agent.languages.registry import language_named, log_runner_named, runner_named
from agent.languages.runner import LogRunner
from agent.protocol import EnvInfo, PythonChoice

EvalStatus = Literal["resolved", "unresolved", "patch_failed", "error"]
STATUSES: tuple[EvalStatus, ...] = ("resolved", "unresolved", "patch_failed", "error")
EMPTY_PATCH = "empty model_patch: SWE-bench lists it under empty_patch_ids without running it; the tests ran at base"


class InstanceEval(BaseModel):
    """OUT/<id>/eval.json: what happened to one instance, each named test's outcome, and the evidence kept."""

    instance_id: str
    status: EvalStatus
    resolution: str = grading.NO
    """SWE-bench's RESOLVED_FULL / RESOLVED_PARTIAL / RESOLVED_NO."""
    trusted: bool = False
    """The tests ran and their results can be graded (SWE-bench's patch_successfully_applied)."""
    error: str | None = None
    """Why the instance is not resolved, when one thing says it (the harness's error, pytest's own)."""
    harness_error: str | None = None
    """Why the harness could not evaluate the instance (status error): no workspace, environment, timeout."""
    error_kind: ErrorKind | None = None
    no_report: str | None = None
    """Why pytest wrote no JUnit report: the first lines of the real error."""
    notes: list[str] = Field(default_factory=list)
    """What the dataset line and the run noted (an eval_script not run, an image not here, a missing test file)."""
    verdict_notes: list[str] = Field(default_factory=list)
    """What the judgement noted (an empty patch, absent tests that fail_only forgives); rewritten by a regrade."""
    model_name_or_path: str | None = None
    empty_patch: bool = False
    eval_type: EvalType = "pass_and_fail"
    fail_to_pass: dict[str, str] = Field(default_factory=dict)
    """Each FAIL_TO_PASS test's outcome: passed, failed, error, skipped, xfail, xpass, missing, or not_a_test (an
    entry that is no test id of the runner: not graded)."""
    pass_to_pass: dict[str, str] = Field(default_factory=dict)
    tests_status: dict[str, dict[str, list[str]]] = Field(default_factory=dict)
    """SWE-bench's report: FAIL_TO_PASS / PASS_TO_PASS, each with its success and failure lists."""
    missing_tests: list[str] = Field(default_factory=list)
    flagged: list[str] = Field(default_factory=list)
    """The paths of ``flags``: what in the model_patch changes how the tests run (conftest.py, pytest's settings...)."""
    flags: list[Flag] = Field(default_factory=list)
    """Which rule (integrity.RULES; docs/evaluation.md's table) flagged which path, and why."""
    changed: list[str] = Field(default_factory=list)
    """The paths the model_patch changed, as git saw the workspace after it applied."""
    strict: bool = False
    model_patch: ApplyRecord | None = None
    """How the model_patch went in: the command that applied it (None: empty patch)."""
    test_patch: ApplyRecord | None = None
    reset_files: list[str] = Field(default_factory=list)
    runner: str = "pytest"
    """The test runner the named tests ran with, whose output the verdict reads: pytest, sympy, django, unittest;
    rust, go, node: graded by the language's own test names."""
    test_command: list[str] = Field(default_factory=list)
    exit_code: int | None = None
    run_outcome: str | None = None
    env: EnvInfo | None = None
    python: PythonChoice | None = None
    """The Python the tests ran on, the one the spec or the user asked for, and why."""
    backend: str | None = None
    runtime: str | None = None
    """The OCI runtime the tests ran under (runc, runsc...): recorded, and part of the fingerprint."""
    image_id: str | None = None
    dataset: DatasetInfo = Field(default_factory=DatasetInfo)
    files: dict[str, str] = Field(default_factory=dict)
    """The evidence kept beside eval.json: junit (junit.xml), log (test_output.txt.gz), patch (patch.diff)."""
    log_bytes: int = 0
    fingerprint: str = ""
    """The inputs' hash: a resumed run skips this instance only when it is unchanged."""
    cancelled: bool = False
    node: str | None = None
    duration_s: float = 0.0
    timings: dict[str, float] = Field(default_factory=dict)


def judge(result: InstanceEval, f2p: list[str], p2p: list[str], evidence: EvalEvidence | None,
          junit_xml: str | None, log: str | None = None) -> InstanceEval:
    """Fill ``result``'s verdict (status, resolution, outcomes, error) from the evidence and the report.

    ``evidence`` None: a regrade (the evidence fields already in ``result`` are used). ``log``: the test run's
    whole log (the report of a runner with no format of its own; None: the evidence's)."""
    if evidence is not None:
        _take_evidence(result, evidence)
    result.verdict_notes = []
    result.fail_to_pass = dict.fromkeys(f2p, "missing")
    result.pass_to_pass = dict.fromkeys(p2p, "missing")
    result.tests_status, result.missing_tests, result.resolution, result.trusted = {}, [], grading.NO, False
    result.error = result.harness_error
    if result.cancelled or result.harness_error is not None:
        result.status = "error"
        return result
    if result.model_patch is not None and not result.model_patch.applied:
        result.status = "patch_failed"
        result.error = "the model_patch does not apply: " + "; ".join(result.model_patch.tried[-2:])
        return result
    result.error = result.no_report
    _grade(result, junit_xml, log if log is not None else evidence.log if evidence is not None else "")
    return result


def _take_evidence(result: InstanceEval, evidence: EvalEvidence) -> None:
    result.model_patch, result.test_patch = evidence.model_patch, evidence.test_patch
    result.flagged, result.reset_files = evidence.flagged, evidence.reset_files
    result.flags, result.changed = evidence.flags, evidence.changed
    result.test_command, result.exit_code = evidence.test_command, evidence.exit_code
    result.runner = evidence.runner
    result.run_outcome, result.env, result.image_id = evidence.run_outcome, evidence.env, evidence.image_id
    result.backend, result.runtime = evidence.backend, evidence.runtime
    result.cancelled, result.timings = evidence.cancelled, evidence.timings
    result.notes = [*result.notes, *evidence.notes]
    result.harness_error, result.no_report = evidence.error, evidence.no_report
    result.error_kind = evidence.error_kind


def _grade(result: InstanceEval, junit_xml: str | None, log: str) -> None:
    # Rust's, Go's, Node's rows: graded by the language's own test names, exactly (no pytest id forms)
    language = language_named(result.runner)
    runner = language or runner_named(result.runner) or PYTEST
    graded = [n for n in [*result.fail_to_pass, *result.pass_to_pass] if runner.is_test_id(n)]
    _not_graded(result, runner.name, set(graded))
    log_runner = log_runner_named(result.runner)
    if log_runner is not None:
        status, xpassed, key_of = _log_outcomes(log_runner, log)
    else:
        status, xpassed = _junit_outcomes(result, junit_xml)
        key_of = junit_key
    named = {n: _resolved(n, status, key_of, prefix_match=log_runner is None and language is None) for n in graded}
    for outcomes in (result.fail_to_pass, result.pass_to_pass):
        for name in outcomes:
            if name not in named:
                continue
            found = named[name]
            outcomes[name] = status[found].lower() if found is not None else (
                "xpass" if key_of(name) in xpassed else "missing")
    result.missing_tests = [n for n, found in named.items() if found is None and key_of(n) not in xpassed]
    report = grading.tests_report([(n, named[n]) for n in result.fail_to_pass if n in named],
                                  [(n, named[n]) for n in result.pass_to_pass if n in named], status, key_of,
                                  fail_only=result.eval_type == "fail_only")
    result.tests_status = report
    # A language's run is its whole suite: a package or target that fails to build (none of the named tests' own)
    # fails the run with no test failed, and its tests are graded as missing, not the run distrusted.
    distrust = grading.untrusted(status, None if language is not None else result.exit_code, runner.name)
    result.resolution = grading.NO if distrust else grading.resolution(report)
    result.trusted = distrust is None
    result.status = "resolved" if result.resolution == grading.FULL else "unresolved"
    if distrust and result.error is None:
        result.error = distrust
    elif result.missing_tests and result.error is None:
        missing = _missing_message(result.missing_tests, junit_xml, status,
                                   pytest=log_runner is None and language is None)
        if result.status == "resolved":  # fail_only: an absent test is no failure
            result.verdict_notes.append(missing)
        else:
            result.error = missing
    if result.empty_patch:
        result.verdict_notes.append(EMPTY_PATCH + (" (and they pass: the instance's FAIL_TO_PASS do not fail at base)"
                                           if result.status == "resolved" else ""))
        result.status = "unresolved"
    if result.status == "resolved" and result.strict and result.flagged:
        result.status = "unresolved"
        result.error = f"--strict: the model_patch changes how the tests run ({flag_list(result)})"


def _not_graded(result: InstanceEval, runner: str, graded: set[str]) -> None:
    """Entries of the test lists that are no test id of the runner (a shipped row's ``[100%]``, ``[``): marked
    not_a_test and named in a note; the rest is graded."""
    ignored = [n for n in [*result.fail_to_pass, *result.pass_to_pass] if n not in graded]
    for outcomes in (result.fail_to_pass, result.pass_to_pass):
        for name in outcomes:
            if name not in graded:
                outcomes[name] = "not_a_test"
    if ignored:
        shown = ", ".join(repr(n) for n in list(dict.fromkeys(ignored))[:5])
        result.verdict_notes.append(f"not graded: {len(ignored)} entr{'y is' if len(ignored) == 1 else 'ies are'} "
                                    f"no {runner} test id ({shown}); the instance is graded on the rest")


def _junit_outcomes(result: InstanceEval, junit_xml: str | None) -> tuple[dict[Key, str], set[Key]]:
    """pytest's statuses and XPASSes from the JUnit report, keyed as SWE-bench's parser for the repository
    writes the ids (its per-repository rewrite applied)."""
    cases: list[tuple[Key, str]] = []
    if junit_xml is not None:
        try:
            cases = junit_cases(junit_xml)
        except ET.ParseError as exc:
            result.error = f"the JUnit report could not be read: {exc}"
    quirk = rewrite(repo_parser(result.dataset.repo, result.dataset.log_parser))
    if quirk is not None:
        cases = [((module, quirk(name)), case) for (module, name), case in cases]
    return status_map(cases), {key for key, s in cases if s == XPASS}


def _log_outcomes(runner: LogRunner, log: str) -> tuple[dict[Key, str], set[Key], Callable[[str], Key]]:
    """A log runner's statuses, keyed as its ids are (no XPASS: such a test is left out, as by SWE-bench)."""
    status = {("", name): outcome for name, outcome in runner.statuses(log).items()}
    return status, set(), lambda name: ("", runner.key(name))


def flag_list(result: InstanceEval) -> str:
    """``path (rule)``, one for each flag (the paths alone for a verdict kept before flags had rules)."""
    if not result.flags:
        return ", ".join(result.flagged)
    return ", ".join(dict.fromkeys(f"{f.path} ({f.rule})" for f in result.flags))


def not_maintained(junit_xml: str, pass_to_pass: list[str]) -> list[str]:
    """The PASS_TO_PASS tests a pytest run did not maintain, by SWE-bench's rule (passed or skipped); every one
    when the report is unreadable or empty."""
    try:
        status = status_map(junit_cases(junit_xml))
    except ET.ParseError:
        return list(pass_to_pass)
    if not status:
        return list(pass_to_pass)
    return [name for name in pass_to_pass
            if not grading.maintained(_resolved(name, status, junit_key, True), status)]


def _resolved(name: str, status: dict[Key, str], key_of: Callable[[str], Key], prefix_match: bool) -> Key | None:
    key = key_of(name)

    def prefixed(case: str) -> list[Key]:
        if not prefix_match:
            return []
        # With its brackets balanced, an id is cut only where the full one went on with a space.
        balanced = case.count("[") <= case.count("]")
        return [k for k in status if k[0] == key[0] and k[1].startswith(key[1])
                and (not balanced or k[1][len(key[1]):][:1].isspace())]

    return grading.resolve_case(name, key, status, prefixed)


def _missing_message(missing: list[str], junit_xml: str | None, status: dict[Key, str], pytest: bool = True) -> str:
    """The cause first (a module that could not be collected), then which tests did not run."""
    shown = ", ".join(missing[:3]) + (" ..." if len(missing) > 3 else "")
    broken = collection_errors(junit_xml) if junit_xml else []
    cause = f"collection failed: {'; '.join(broken[:2])}; " if broken else ""
    hint = "" if broken else _deeper_hint(missing, status) if pytest else " (no such test?)"
    return f"{cause}{len(missing)} named test(s) did not run{hint}: {shown}"


def _deeper_hint(missing: list[str], status: dict[Key, str]) -> str:
    """Why a named test was not found: the same test ran under a longer path (the dataset's ids are
    relative to a subfolder, e.g. where a tests/pytest.ini is; SWE-bench's ids, as pytest's summary
    writes them, are from the repository root), or no such test ran at all."""
    for name in missing:
        module, test = junit_key(name)
        for ran_module, ran_test in status:
            if ran_test == test and ran_module.endswith("." + module):
                return (f" (no such id, but {ran_module}::{ran_test} ran: the dataset's test ids look relative "
                        "to a subfolder; they must be from the repository root, as pytest's summary writes them)")
    return " (no such test?)"
