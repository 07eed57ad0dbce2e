"""Policies: which tool calls may run. Every mutating call is judged before it runs.

A policy sees the prepared call, with the paths a patch would write (read out of the
parsed patch on the host), so it judges paths, not tool names alone.
"""

from __future__ import annotations

import re
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal

from agent.task.globs import GlobRules, glob_match, normalize
from agent.task.host_run import HOST_RUN_GLOBS, names_explicitly
from agent.tools import PreparedCall
from sandbox.patch.paths import path_problem as shared_path_problem

__all__ = ["glob_match", "normalize"]  # re-exported: the one glob dialect lives in agent.task.globs

Decision = Literal["allow", "deny"]
Answer = Literal["yes", "no", "always"]


@dataclass(frozen=True)
class Verdict:
    decision: Decision
    reason: str
    asked: bool = False

    @property
    def allowed(self) -> bool:
        return self.decision == "allow"


class Policy(ABC):
    name: str

    def decide(self, call: PreparedCall) -> Verdict:
        if not call.handler.writes:
            return Verdict("allow", "reads are always allowed")
        return self.decide_write(call)

    @abstractmethod
    def decide_write(self, call: PreparedCall) -> Verdict: ...


class ReadOnlyPolicy(Policy):
    name = "read-only"

    def decide_write(self, call: PreparedCall) -> Verdict:
        return Verdict("deny", f"{call.handler.name} writes files and the policy is read-only")


# --- paths ---------------------------------------------------------------------------------------


def path_problem(path: str) -> str | None:
    """Why a repository-relative path may never be written, or None.

    The sandbox checks paths again against the real tree (symlinks included);
    this is the host's early, independent check.
    """
    if not path.strip() or "\x00" in path:
        return shared_path_problem(path)  # empty, or a NUL byte: said before the stricter rules
    if "\\" in path:
        return "backslash in path"
    if _CONTROL.search(path):
        return "control character in path"
    return shared_path_problem(path)  # the rule the patch engine applies too


# C0, DEL and C1 controls: a path carrying an escape sequence would reach terminals and tools raw.
# Bidi overrides and line separators too: they reorder or break the line a path is shown on.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


class WorkspaceWritePolicy(Policy):
    """Writes allowed to paths matching an allow glob and no deny glob; .git never; files the host
    runs by itself (agent.task.host_run) only when an allow rule names them explicitly.

    Globs are gitignore's dialect plus ``{a,b}`` (agent.task.globs says it all): ``*.pem``
    matches at any depth, a folder's name covers what is under it.
    """

    name = "workspace-write"

    def __init__(
        self, allow: Iterable[str] = ("**",), deny: Iterable[str] = (), protected: Iterable[str] = HOST_RUN_GLOBS
    ) -> None:
        self.allow = list(allow) or ["**"]
        self.deny = [*deny, ".git/**"]
        self.protected = list(protected)
        self._allow_rules = GlobRules(self.allow)
        # Deny rules ignore letter case (the repo may live on a case-insensitive filesystem:
        # SRC/Secrets is src/secrets there); allow rules do not, which errs on the safe side.
        self._deny_rules = GlobRules(self.deny, ignore_case=True)

    def _host_run_problem(self, path: str) -> str | None:
        for area in self.protected:
            if not glob_match(path.lower(), area.lower()):
                continue
            named = [a for a in self.allow if names_explicitly(a, area) and glob_match(path, a)]
            if not named:
                example = normalize(path) if area.startswith("**/") else area
                return (
                    f"the host runs files under {area!r} by itself (hooks, editor or shell config); "
                    f"writable only if the user allows it by name (--allow '{example}')"
                )
        return None

    def path_verdict(self, path: str) -> str | None:
        """Why this path may not be written, or None."""
        problem = path_problem(path)
        if problem:
            return problem
        if self._deny_rules.matches(path):
            return "matches a deny rule"
        if not self._allow_rules.matches(path):
            return f"matches no allow rule ({', '.join(self.allow)})"
        return self._host_run_problem(path)

    def decide_write(self, call: PreparedCall) -> Verdict:
        if not call.write_paths:
            return Verdict("deny", "the call names no path to write")
        refused = [(p, why) for p in call.write_paths if (why := self.path_verdict(p))]
        if refused:
            detail = "; ".join(f"{p!r}: {why}" for p, why in refused)
            return Verdict("deny", f"write refused: {detail}")
        return Verdict("allow", "all paths allowed: " + ", ".join(normalize(p) for p in call.write_paths))


AskFn = Callable[[PreparedCall], Answer]


class ApproveOncePolicy(Policy):
    """Asks a callback for each write: yes, no, or always for these paths.

    The path rules of a WorkspaceWritePolicy still apply first: `.git`, `..` and deny
    globs are refused without asking.
    """

    name = "ask"

    def __init__(self, ask: AskFn, rules: WorkspaceWritePolicy | None = None) -> None:
        self.ask = ask
        self.rules = rules or WorkspaceWritePolicy()
        self.approved: set[str] = set()
        self._lock = threading.Lock()

    def decide_write(self, call: PreparedCall) -> Verdict:
        hard = self.rules.decide_write(call)
        if not hard.allowed:
            return hard
        paths = {normalize(p) for p in call.write_paths}
        with self._lock:
            if paths <= self.approved:
                return Verdict("allow", "approved earlier for these paths")
            answer = self.ask(call)
            if answer == "always":
                self.approved |= paths
                return Verdict("allow", "approved for these paths from now on", asked=True)
            if answer == "yes":
                return Verdict("allow", "approved once", asked=True)
            return Verdict("deny", "the user refused this write", asked=True)
