"""The verdict on one instance, from its evidence alone: eval.json (InstanceEval).

The same function judges a fresh run and a --regrade of a kept one: the named tests and the
eval type come from the instance, the outcomes from the JUnit XML, the rest from the evidence.
Statuses: resolved, unresolved (the tests ran and did not all pass, or could not be trusted),
patch_failed (no command of the apply chain took the model_patch), error (the harness could not
evaluate it: no workspace, no environment, a test_patch that does not apply, a timeout).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Literal

from pydantic import BaseModel, Field

from agent.eval import grading
from agent.eval.dataset import DatasetInfo, EvalType
from agent.eval.job import ApplyRecord, ErrorKind, EvalEvidence, Flag
from agent.eval.junit import XPASS, Key, collection_errors, junit_cases, junit_key, status_map
from agent.protocol import EnvInfo

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
    """Each FAIL_TO_PASS test's outcome: passed, failed, error, skipped, xfail, xpass or missing."""
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
    test_command: list[str] = Field(default_factory=list)
    exit_code: int | None = None
    run_outcome: str | None = None
    env: EnvInfo | None = None
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
          junit_xml: str | None) -> InstanceEval:
    """Fill ``result``'s verdict (status, resolution, outcomes, error) from the evidence and the report.

    ``evidence`` None: a regrade (the evidence fields already in ``result`` are used)."""
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
    _grade(result, junit_xml)
    return result


def _take_evidence(result: InstanceEval, evidence: EvalEvidence) -> None:
    result.model_patch, result.test_patch = evidence.model_patch, evidence.test_patch
    result.flagged, result.reset_files = evidence.flagged, evidence.reset_files
    result.flags, result.changed = evidence.flags, evidence.changed
    result.test_command, result.exit_code = evidence.test_command, evidence.exit_code
    result.run_outcome, result.env, result.image_id = evidence.run_outcome, evidence.env, evidence.image_id
    result.backend, result.runtime = evidence.backend, evidence.runtime
    result.cancelled, result.timings = evidence.cancelled, evidence.timings
    result.notes = [*result.notes, *evidence.notes]
    result.harness_error, result.no_report = evidence.error, evidence.no_report
    result.error_kind = evidence.error_kind


def _grade(result: InstanceEval, junit_xml: str | None) -> None:
    cases: list[tuple[Key, str]] = []
    if junit_xml is not None:
        try:
            cases = junit_cases(junit_xml)
        except ET.ParseError as exc:
            result.error = f"the JUnit report could not be read: {exc}"
    status = status_map(cases)
    xpassed = {key for key, s in cases if s == XPASS}
    named = {n: _resolved(n, status) for n in [*result.fail_to_pass, *result.pass_to_pass]}
    for outcomes in (result.fail_to_pass, result.pass_to_pass):
        for name in outcomes:
            found = named[name]
            outcomes[name] = status[found].lower() if found is not None else (
                "xpass" if junit_key(name) in xpassed else "missing")
    result.missing_tests = [n for n, found in named.items() if found is None and junit_key(n) not in xpassed]
    report = grading.tests_report([(n, named[n]) for n in result.fail_to_pass],
                                  [(n, named[n]) for n in result.pass_to_pass], status, junit_key,
                                  fail_only=result.eval_type == "fail_only")
    result.tests_status = report
    distrust = grading.untrusted(status, result.exit_code)
    result.resolution = grading.NO if distrust else grading.resolution(report)
    result.trusted = distrust is None
    result.status = "resolved" if result.resolution == grading.FULL else "unresolved"
    if distrust and result.error is None:
        result.error = distrust
    elif result.missing_tests and result.error is None:
        missing = _missing_message(result.missing_tests, junit_xml, status)
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


def flag_list(result: InstanceEval) -> str:
    """``path (rule)``, one for each flag (the paths alone for a verdict kept before flags had rules)."""
    if not result.flags:
        return ", ".join(result.flagged)
    return ", ".join(dict.fromkeys(f"{f.path} ({f.rule})" for f in result.flags))


def not_maintained(junit_xml: str, pass_to_pass: list[str]) -> list[str]:
    """The PASS_TO_PASS tests a run did not maintain, by SWE-bench's rule (passed or skipped); every one when the
    report is unreadable or empty."""
    try:
        status = status_map(junit_cases(junit_xml))
    except ET.ParseError:
        return list(pass_to_pass)
    if not status:
        return list(pass_to_pass)
    return [name for name in pass_to_pass if not grading.maintained(_resolved(name, status), status)]


def _resolved(name: str, status: dict[Key, str]) -> Key | None:
    key = junit_key(name)

    def prefixed(case: str) -> list[Key]:
        # With its brackets balanced, an id is cut only where the full one went on with a space.
        balanced = case.count("[") <= case.count("]")
        return [k for k in status if k[0] == key[0] and k[1].startswith(key[1])
                and (not balanced or k[1][len(key[1]):][:1].isspace())]

    return grading.resolve_case(name, key, status, prefixed)


def _missing_message(missing: list[str], junit_xml: str | None, status: dict[Key, str]) -> str:
    """The cause first (a module that could not be collected), then which tests did not run."""
    shown = ", ".join(missing[:3]) + (" ..." if len(missing) > 3 else "")
    broken = collection_errors(junit_xml) if junit_xml else []
    cause = f"collection failed: {'; '.join(broken[:2])}; " if broken else ""
    hint = "" if broken else _deeper_hint(missing, status)
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
