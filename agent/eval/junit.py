"""pytest's JUnit XML as the status map SWE-bench's parser would read from the same run's -rA summary.

Keys are JUnit's (classname, name), which pytest derives from the node id (junit_key); where the
run's rootdir is not /repo, the key of the id the summary wrote (codebox's plugin gives it). Statuses
are SWE-bench's: PASSED, FAILED, ERROR, SKIPPED, XFAIL; an XPASS (a non-strict xfail that
passed: JUnit shows it as passed, codebox's pytest plugin marks it) is left out, as SWE-bench's
parser has no such status. A test reported twice (a failure, then an error at teardown) ends as
the later line of the -rA summary would say: its sections come in the order P s x X E f.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from agent.eval.grading import ERROR, FAILED, PASSED, SKIPPED, XFAIL
from agent.languages.python.runners.pytest import node_file as node_file  # its home: the pytest runner

Key = tuple[str, str]
XPASS = "XPASS"
XPASS_PROPERTY = "codebox.outcome"  # the plugin's property on an xpassed testcase (value "xpassed")
NODEID_PROPERTY = "codebox.nodeid"  # the plugin's: the id the summary wrote, when not JUnit's (another rootdir)
SUMMARY_ORDER = (PASSED, SKIPPED, XFAIL, ERROR, FAILED)  # -rA's sections, XPASS left out


def junit_key(node_id: str) -> Key:
    """The (classname, name) pytest's JUnit XML gives the test with this node id."""
    head, bracket, params = node_id.partition("[")
    parts = head.split("::")
    module = parts[0].removesuffix(".py").replace("/", ".")
    return ".".join([module, *parts[1:-1]]), parts[-1] + bracket + params


def junit_cases(xml_text: str) -> list[tuple[Key, str]]:
    """Every testcase of the report, in file order: its key and its SWE-bench status (or XPASS).

    Raises ET.ParseError for a report that is not XML.
    """
    cases = []
    for case in ET.fromstring(xml_text).iter("testcase"):
        key = (case.get("classname", ""), case.get("name", ""))
        for prop in case.iter("property"):
            if prop.get("name") == NODEID_PROPERTY and prop.get("value"):
                key = junit_key(prop.get("value", ""))
        cases.append((key, _status(case)))
    return cases


def _status(case: ET.Element) -> str:
    if case.find("failure") is not None:
        return FAILED
    if case.find("error") is not None:
        return ERROR
    skipped = case.find("skipped")
    if skipped is not None:
        return XFAIL if skipped.get("type") == "pytest.xfail" else SKIPPED
    for prop in case.iter("property"):
        if prop.get("name") == XPASS_PROPERTY and prop.get("value") == "xpassed":
            return XPASS
    return PASSED


def status_map(cases: list[tuple[Key, str]]) -> dict[Key, str]:
    """The map SWE-bench's parse_log_pytest builds from the -rA summary of the same run: keys in the
    order they first appear there, each with the status of its last line."""
    found: dict[Key, str] = {}
    for status in SUMMARY_ORDER:
        for key, case_status in cases:
            if case_status == status:
                found[key] = status
    return found


def collection_errors(xml_text: str) -> list[str]:
    """The messages of modules that could not be collected (their testcase has no class name)."""
    messages = []
    for case in ET.fromstring(xml_text).iter("testcase"):
        error = case.find("error")
        if error is not None and not case.get("classname"):
            text = (error.text or error.get("message") or "").strip().splitlines()
            cause = next((line for line in reversed(text) if line.startswith("E ")), text[-1] if text else "")
            messages.append(f"{case.get('name', '?')}: {cause.removeprefix('E').strip()}")
    return messages


def junit_from_outcomes(outcomes: dict[str, str]) -> str:
    """A JUnit report of another runner's per-test outcomes (libtest's: passed, failed, skipped by test name),
    each case keyed as a node id of that name would be (its name kept in NODEID_PROPERTY): graded as pytest's."""
    suite = ET.Element("testsuite", {"name": "codebox", "tests": str(len(outcomes))})
    for name, outcome in outcomes.items():
        classname, short = junit_key(name)
        case = ET.SubElement(suite, "testcase", {"classname": classname, "name": short})
        properties = ET.SubElement(case, "properties")
        ET.SubElement(properties, "property", {"name": NODEID_PROPERTY, "value": name})
        if outcome == "failed":
            ET.SubElement(case, "failure", {"message": "failed"})
        elif outcome == "skipped":
            ET.SubElement(case, "skipped", {"message": "ignored"})
    return ET.tostring(ET.Element("testsuites", {}), encoding="unicode").replace(
        "<testsuites />", f"<testsuites>{ET.tostring(suite, encoding='unicode')}</testsuites>")
