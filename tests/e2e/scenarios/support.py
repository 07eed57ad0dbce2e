"""Helpers for the scenarios: a digest of a tree, and what a run left behind."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from agent.console.render import summary_text
from agent.model.scripted import ScriptedModel
from agent.protocol import AgentEvent, Report, ToolResultMessage


def tree_digest(root: Path) -> dict[str, str]:
    """Every file (and link) under root with a hash of its content: to prove nothing changed."""
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_symlink():
            out[str(p.relative_to(root))] = "link:" + str(p.readlink())
        elif p.is_file():
            out[str(p.relative_to(root))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


@dataclass
class Run:
    report: Report
    events: list[AgentEvent]
    model: ScriptedModel

    def results(self) -> list[ToolResultMessage]:
        """Every tool result the model was sent, in order (the report, when there is none)."""
        seen: dict[str, ToolResultMessage] = {}
        for _, messages, _ in self.model.requests:
            for m in messages:
                if isinstance(m, ToolResultMessage):
                    seen[m.call_id] = m
        assert seen or not self.report.tool_calls, summary_text(self.report)
        assert seen or self.report.stop_reason == "final_message", summary_text(self.report)
        return list(seen.values())
