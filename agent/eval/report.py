"""A run's summaries: OUT/results.json (codebox's lists), OUT/report.json (SWE-bench's run report keys), the table."""

from __future__ import annotations

import json
from pathlib import Path

from agent.escape import printable
from agent.eval.job import INFRASTRUCTURE
from agent.eval.verdict import STATUSES, InstanceEval, flag_list

RESULTS, RUN_REPORT = "results.json", "report.json"
AMBIGUOUS = ("timeout", "no_report")  # the environment or the patch: reported apart, never counted as either


def results_summary(results: list[InstanceEval], strict: bool) -> dict[str, object]:
    """codebox's results.json: the ids by status, the flagged ones with their files, the empty patches."""
    summary: dict[str, object] = {status: [r.instance_id for r in results if r.status == status]
                                  for status in STATUSES}
    summary["total"] = len(results)
    summary["empty_patch"] = [r.instance_id for r in results if r.empty_patch]
    summary["flagged"] = {r.instance_id: r.flagged for r in results if r.flagged}
    summary["flags"] = {r.instance_id: [f.model_dump() for f in r.flags] for r in results if r.flags}
    summary["python"] = {r.instance_id: r.python.line() for r in results if r.python is not None}
    # Which candidate environment graded each row that had more than one, and the rows of a version that differ.
    summary["environment"] = {r.instance_id: _candidate(r) for r in results
                              if r.env is not None and r.env.candidates > 1}
    summary["strict"] = strict
    return summary


def _candidate(result: InstanceEval) -> str:
    assert result.env is not None
    split = next((n for n in result.notes if n.startswith("rows of version ")), None)
    return f"candidate {result.env.candidate} of {result.env.candidates}" + (f"; {split}" if split else "")


def swebench_report(results: list[InstanceEval], instance_ids: list[str], submitted: list[str]) -> dict[str, object]:
    """SWE-bench's run report (make_run_report, schema 2) for these verdicts.

    As SWE-bench counts: an empty patch is only in empty_patch_ids; an instance without a
    prediction in incomplete_ids; resolved and unresolved ones are completed; a patch that did
    not apply, a harness error, or a predicted instance with no verdict yet is in error_ids.
    infra_failure_ids (the environment could not be built, the sandbox failed) and
    ambiguous_failure_ids (a timeout; pytest could not start) are codebox's own knowledge of why,
    advisory as SWE-bench's: those instances stay in error_ids / unresolved_ids.
    """
    by_id = {r.instance_id: r for r in results}
    predicted = [i for i in instance_ids if i in set(submitted)]
    empty = sorted(i for i in predicted if i in by_id and by_id[i].empty_patch)
    judged = [by_id[i] for i in predicted if i in by_id and not by_id[i].empty_patch]
    resolved = sorted(r.instance_id for r in judged if r.status == "resolved")
    unresolved = sorted(r.instance_id for r in judged if r.status == "unresolved")
    done = set(resolved) | set(unresolved) | set(empty)
    errors = sorted(i for i in predicted if i not in done)
    reasons = {r.instance_id: _failure_reason(r) for r in judged if r.status != "resolved"}
    infra = sorted(i for i, reason in reasons.items() if reason in INFRASTRUCTURE)
    ambiguous = sorted(i for i, reason in reasons.items() if reason in AMBIGUOUS)
    return {
        "total_instances": len(instance_ids),
        "submitted_instances": len(submitted),
        "completed_instances": len(resolved) + len(unresolved),
        "resolved_instances": len(resolved),
        "unresolved_instances": len(unresolved),
        "empty_patch_instances": len(empty),
        "infra_failure_instances": len(infra),
        "ambiguous_failure_instances": len(ambiguous),
        "error_instances": len(errors),
        "completed_ids": sorted([*resolved, *unresolved]),
        "incomplete_ids": sorted(i for i in instance_ids if i not in set(submitted)),
        "empty_patch_ids": empty,
        "submitted_ids": sorted(submitted),
        "resolved_ids": resolved,
        "unresolved_ids": unresolved,
        "infra_failure_ids": infra,
        "ambiguous_failure_ids": ambiguous,
        "failure_reasons": {i: reasons[i] for i in sorted([*infra, *ambiguous])},
        "error_ids": errors,
        "schema_version": 2,
        "not_evaluated_ids": sorted(i for i in predicted if i not in by_id),
    }


def _failure_reason(result: InstanceEval) -> str | None:
    """Why an instance was not resolved when it was not the patch's fault for sure (SWE-bench's #586 tiers)."""
    if result.error_kind is not None:
        return result.error_kind
    if result.no_report is not None:
        return "no_report"  # pytest could not start: the environment, or a patch that breaks the import
    return None


def write_summaries(out: Path, results: list[InstanceEval], instance_ids: list[str], submitted: list[str],
                    strict: bool) -> None:
    for name, data in ((RESULTS, results_summary(results, strict)),
                       (RUN_REPORT, swebench_report(results, instance_ids, submitted))):
        tmp = out / f"{name}.tmp"
        tmp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
        tmp.replace(out / name)


def render_table(results: list[InstanceEval]) -> str:
    """The final table as plain text (escaped), the counts below."""
    header = ("instance", "status", "F2P", "P2P", "time", "note")
    rows = [(printable(r.instance_id), r.status, _ratio(r, "FAIL_TO_PASS"), _ratio(r, "PASS_TO_PASS"),
             f"{r.duration_s:.1f}s", printable(_note(r))[:100]) for r in results]
    widths = [max(len(h), *(len(row[i]) for row in rows)) if rows else len(h) for i, h in enumerate(header)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(header, widths, strict=True)).rstrip()]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    counts = " · ".join(f"{sum(r.status == s for r in results)} {s}" for s in STATUSES)
    flagged = sum(bool(r.flagged) for r in results)
    return "\n".join([*lines, "", f"{len(results)} instances: {counts}" + (f" · {flagged} flagged" if flagged else "")])


def _note(result: InstanceEval) -> str:
    if result.error:
        return result.error
    if result.flagged:
        return f"flagged: {flag_list(result)}"
    if result.empty_patch:
        return "empty patch (report.json: empty_patch_ids)"
    return ""


def _ratio(result: InstanceEval, label: str) -> str:
    """Named tests that count as passed (SWE-bench's success list) / named tests."""
    named = result.fail_to_pass if label == "FAIL_TO_PASS" else result.pass_to_pass
    if not named:
        return "-"
    return f"{len(result.tests_status.get(label, {}).get('success', []))}/{len(named)}"
