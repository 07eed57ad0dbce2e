"""SWE-bench's grading rules (swebench 5.x, swebench/harness/grading.py), on a status map.

- passed: PASSED or XFAIL; a FAIL_TO_PASS test that is SKIPPED, FAILED, ERROR or absent failed;
- a PASS_TO_PASS test is maintained when it passed or was SKIPPED (a skip is not a regression);
- an id cut short inside its parameters (``test_x[a``: more "[" than "]", as 676 ids of
  SWE-bench Verified are; or cut at a space after a "]", ``test_f[HH]-2018-01-03``) matches the
  tests it prefixes when they agree on pass or fail;
- eval_type fail_only: a test fails only when it is there and FAILED;
- resolved (RESOLVED_FULL): every FAIL_TO_PASS passed and every PASS_TO_PASS was maintained
  (an empty list counts as all); a run whose status map is empty, or whose pytest exited
  non-zero while no test failed or errored, is not trusted (SWE-bench's get_logs_eval).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import TypeVar

PASSED, FAILED, SKIPPED, ERROR, XFAIL = "PASSED", "FAILED", "SKIPPED", "ERROR", "XFAIL"
PASSING = (PASSED, XFAIL)
FULL, PARTIAL, NO = "RESOLVED_FULL", "RESOLVED_PARTIAL", "RESOLVED_NO"
F2P, P2P = "FAIL_TO_PASS", "PASS_TO_PASS"

K = TypeVar("K", bound=Hashable)
TestsReport = dict[str, dict[str, list[str]]]


def resolve_case(case: str, key: K, status: dict[K, str], prefixes: Callable[[str], list[K]]) -> K | None:
    """The status map's key for the named test ``case`` (its own key ``key``), or None.

    ``prefixes(case)`` lists the keys that ``case`` prefixes, in the map's order: used only for an
    id that may be cut inside its parameters (more "[" than "]", or balanced ones where the rest of
    the id began with a space: loguru's ``test_formatting[HHmmss]-2018-01-03 11:03:04...]``).
    """
    if key in status:
        return key
    if "[" in case:  # SWE-bench's parser cuts an id at its first whitespace, inside its parameters
        matches = prefixes(case)
        if matches and len({status[k] in PASSING for k in matches}) == 1:
            return matches[0]
    return None


def passed(found: K | None, status: dict[K, str]) -> bool:
    return found is not None and status[found] in PASSING


def maintained(found: K | None, status: dict[K, str]) -> bool:
    return passed(found, status) or (found is not None and status[found] == SKIPPED)


def failed(found: K | None, status: dict[K, str]) -> bool:
    return found is None or status[found] in (FAILED, ERROR, SKIPPED)


def tests_report(f2p: list[tuple[str, K | None]], p2p: list[tuple[str, K | None]], status: dict[K, str],
                 exact: Callable[[str], K], fail_only: bool = False) -> TestsReport:
    """SWE-bench's tests_status: each named test (with the key it resolved to) under success or failure.

    ``exact(name)`` is the test's own key: fail_only looks a test up by it alone, as SWE-bench does.
    """
    report: TestsReport = {F2P: {"success": [], "failure": []}, P2P: {"success": [], "failure": []}}
    for label, named, check in ((F2P, f2p, passed), (P2P, p2p, maintained)):
        for name, found in named:
            if fail_only:
                ok = status.get(exact(name)) != FAILED
            elif check(found, status):
                ok = True
            elif failed(found, status):
                ok = False
            else:
                continue
            report[label]["success" if ok else "failure"].append(name)
    return report


def _ratio(part: dict[str, list[str]]) -> float:
    total = len(part["success"]) + len(part["failure"])
    return 1.0 if total == 0 else len(part["success"]) / total


def resolution(report: TestsReport) -> str:
    f2p, p2p = _ratio(report[F2P]), _ratio(report[P2P])
    if f2p == 1 and p2p == 1:
        return FULL
    if 0 < f2p < 1 and p2p == 1:
        return PARTIAL
    return NO


def untrusted(status: dict[K, str], exit_code: int | None, runner: str = "pytest") -> str | None:
    """Why SWE-bench would not grade this run at all (its get_logs_eval), or None."""
    if not status:
        return "no test result at all (the run reported no test)"
    if exit_code not in (None, 0) and not any(s in (FAILED, ERROR) for s in status.values()):
        return (f"{runner} exited {exit_code} but reported no failed or errored test: the results do not "
                "describe the run (SWE-bench's rule)")
    return None
