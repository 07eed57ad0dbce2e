"""The `swebench` package's own log parser and grading, imported as its harness runs them.

`swebench` (PyPI, pinned in dev.sh) is installed without its dependencies: its harness package's
__init__ imports the Docker, Modal and Hugging Face machinery of a full run (datasets, modal:
~500 MB with pyarrow and pandas), none of which grading touches. So ``swebench.harness`` is
entered as a bare package and its grading.py, log_parsers/ and constants/ load unmodified
from the installed wheel; they need only ``unidiff`` (dev extra).
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import os
import sys
import types
from pathlib import Path
from typing import Any


class Referee:
    """swebench's get_eval_report, parse_log_pytest and TestSpec, and its run report's keys."""

    def __init__(self) -> None:
        spec = importlib.util.find_spec("swebench")
        if spec is None or spec.origin is None:
            raise ImportError("swebench is not installed")
        harness = Path(spec.origin).parent / "harness"
        if "swebench.harness" not in sys.modules:
            bare = types.ModuleType("swebench.harness")
            bare.__path__ = [str(harness)]
            sys.modules["swebench.harness"] = bare
        grading = importlib.import_module("swebench.harness.grading")
        self.version = importlib.import_module("swebench").__version__
        self.get_eval_report = grading.get_eval_report
        self.parse_log_pytest = importlib.import_module("swebench.harness.log_parsers").PARSER_REGISTRY[
            "parse_log_pytest"]
        self.TestSpec = importlib.import_module("swebench.types").TestSpec
        self.report_keys = _report_keys(harness / "reporting.py")

    def grade(self, instance_id: str, f2p: list[str], p2p: list[str], eval_type: str, patch: str,
              log_path: Path, repo: str = "acme/calc", log_parser: str = "parse_log_pytest") -> dict[str, Any]:
        """SWE-bench's per-instance report of this log, as run_instance writes it (``log_parser``: the parser
        SWE-bench reads ``repo``'s logs with)."""
        spec = self.TestSpec(instance_id=instance_id, image="", eval_script_list=[], repo=repo, version="1.0",
                             FAIL_TO_PASS=f2p, PASS_TO_PASS=p2p, log_parser=log_parser, eval_type=eval_type)
        prediction = {"instance_id": instance_id, "model_name_or_path": "acme/model-1", "model_patch": patch}
        report: dict[str, Any] = self.get_eval_report(spec, prediction, str(log_path), include_tests_status=True)
        return report[instance_id]


def _report_keys(reporting: Path) -> set[str]:
    """The keys of the run report make_run_report writes (read from its source: importing it needs Docker's SDK
    and its image builder)."""
    tree = ast.parse(reporting.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        named = isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "report" for t in node.targets)
        if named and isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict):
            return {k.value for k in node.value.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
    raise ValueError(f"no report dict in {reporting}")


def referee_or_skip() -> Referee:
    """The referee; a failure in CI (it is required there), a skip elsewhere."""
    import pytest

    try:
        return Referee()
    except ImportError as exc:
        if os.environ.get("CI"):
            raise
        pytest.skip(f"swebench is not installed ({exc}): ./dev.sh installs it")
