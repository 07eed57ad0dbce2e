"""An instance's environment checked the way SWE-bench validated its rows: at the base commit, with the test_patch
in, the PASS_TO_PASS tests pass. A candidate environment (agent/env/read/candidates.py) where they do not is the
wrong one: the next candidate is tried, and when none passes, the one with the fewest failures is kept.

What a check found is kept on disk per environment image, instance and test_patch, so a run again (or a resumed
one) does not repeat it.
"""

from __future__ import annotations

import hashlib
import json
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


def version_key(task: TaskSpec, env: EnvInfo) -> str | None:
    """What the rows sharing ``task``'s dependency environment have in common (its repository, version and
    environment_setup_commit, the base image); None for a row that names no setup commit."""
    if not task.environment_setup_commit or task.environment_setup_commit == task.base_commit:
        return None
    material = f"{task.repo}\n{task.version}\n{task.environment_setup_commit}\n{env.base_image}\n{env.candidates}"
    return hashlib.sha256(material.encode()).hexdigest()[:32]


def record_row(key: str, task: TaskSpec, chosen: int, tried: dict[int, int]) -> None:
    """This row's choice among the version's candidates (``tried``: candidate -> PASS_TO_PASS failing)."""
    from agent.env.resolve.fetch import cache_dir

    folder = cache_dir() / "validated" / f"version-{key}"
    row = hashlib.sha256(task.id.encode()).hexdigest()[:32]
    try:
        folder.mkdir(parents=True, exist_ok=True)
        partial = folder / f"{row}.part"
        partial.write_text(json.dumps({"task": task.id, "chosen": chosen, "tried": tried}), encoding="utf-8")
        partial.replace(folder / row)
    except OSError:
        pass  # a cache: the note is only missed


def other_rows(key: str, task: TaskSpec) -> list[tuple[str, int, dict[int, int]]]:
    """(id, chosen candidate, tried) of the other rows of the version recorded so far."""
    from agent.env.resolve.fetch import cache_dir

    found = []
    folder = cache_dir() / "validated" / f"version-{key}"
    for path in sorted(folder.glob("[0-9a-f]*")) if folder.is_dir() else []:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            tried = {int(k): int(v) for k, v in data["tried"].items()}
            entry = (str(data["task"]), int(data["chosen"]), tried)
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            continue
        if entry[0] != task.id:
            found.append(entry)
    return found


def split_notes(task: TaskSpec, chosen: int, tried: dict[int, int],
                others: list[tuple[str, int, dict[int, int]]]) -> list[str]:
    """One line per other row of the version whose validation chose another candidate than this row's, with the
    candidate that passes one of the two rows and fails the other."""
    notes = []
    for other, their_choice, theirs in others:
        if their_choice == chosen:
            continue
        differs = [c for c in sorted(set(tried) & set(theirs)) if (tried[c] == 0) != (theirs[c] == 0)]
        why = ""
        if differs:
            c = differs[0]
            passes, fails = (other, task.id) if theirs[c] == 0 else (task.id, other)
            failing = tried[c] or theirs[c]
            why = f": candidate {c} passes {passes}'s PASS_TO_PASS and fails {fails}'s ({failing} failing)"
        notes.append(f"rows of version {task.version} differ{why}; {other} uses candidate {their_choice}, "
                     f"this row candidate {chosen} (each row gets the best candidate for it)")
    return notes
