"""An instance's environment checked the way SWE-bench validated its rows: at the base commit, with the test_patch
in, the PASS_TO_PASS tests pass. A candidate environment (agent/env/read/candidates.py) where they do not is the
wrong one: the next candidate is tried, and when none passes, the one with the fewest failures is kept.

What a check found is kept on disk per environment image, instance and test_patch, so a run again (or a resumed
one) does not repeat it.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from agent.protocol import EnvInfo, TaskSpec

PASSES = "passes"


def applies(task: TaskSpec, env: EnvInfo | None, dataset_image: bool) -> bool:
    """Whether the check can change anything: a PASS_TO_PASS and a test_patch to check with, an environment
    codebox chose among candidates, and a candidate after it to try."""
    return (env is not None and bool(task.PASS_TO_PASS) and bool((task.test_patch or "").strip())
            and not dataset_image and 0 < env.candidate < env.candidates)


def next_task(task: TaskSpec, env: EnvInfo) -> TaskSpec:
    """``task`` asking for the candidates after ``env``'s."""
    from agent.env.recipe import EnvSpec

    own = task.env if isinstance(task.env, EnvSpec) else EnvSpec()
    return task.model_copy(update={"env": own.model_copy(update={"skip_candidates": env.candidate})})


def _record(env: EnvInfo, task: TaskSpec) -> Path:
    from agent.env.resolve.fetch import cache_dir

    material = f"{env.image_id or env.image}\n{task.id}\n{task.test_patch or ''}\n{sorted(task.PASS_TO_PASS)}"
    return cache_dir() / "validated" / hashlib.sha256(material.encode()).hexdigest()[:32]


def recorded(env: EnvInfo, task: TaskSpec) -> list[str] | None:
    """What an earlier check found: the PASS_TO_PASS not maintained ([]: all were), None when never checked."""
    path = _record(env, task)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    if not lines:
        return None
    return [] if lines[0] == PASSES else lines[1:]


def record(env: EnvInfo, task: TaskSpec, failing: list[str]) -> None:
    path = _record(env, task)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(path.name + ".part")
        partial.write_text("\n".join([PASSES] if not failing else ["fails", *failing]) + "\n", encoding="utf-8")
        partial.replace(path)
    except OSError:
        pass  # a cache: the check runs again next time


def summary(env: EnvInfo, failing: list[str], total: int) -> str:
    """One line for the instance's notes."""
    name = next((n.split(", ", 1)[1] for n in env.notes if n.startswith("environment: candidate ")), "")
    which = f"environment candidate {env.candidate} of {env.candidates}" + (f" ({name})" if name else "")
    if not failing:
        return f"{which}: the PASS_TO_PASS pass at base with the test_patch (SWE-bench's validation)"
    return (f"{which}: {len(failing)} of {total} PASS_TO_PASS fail at base with the test_patch "
            f"(first: {failing[0]})")
