"""A predictions file as SWE-bench takes it: JSONL, a JSON list, a JSON object by instance_id, or `gold`.

A prediction is data: its keys are SWE-bench's three (``PREDICTION_KEYS``); a line with any other key
is refused with one line naming it, unless the user names the file as trusted (--trust-dataset FILE:
its other keys are then carried and ignored).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

GOLD = "gold"
PREDICTION_KEYS = frozenset({"instance_id", "model_patch", "model_name_or_path"})


class Prediction(BaseModel):
    """One prediction (SWE-bench's keys; other keys, from a trusted file only, are carried and ignored)."""

    model_config = ConfigDict(extra="allow")

    instance_id: str = Field(min_length=1)
    model_patch: str | None = None
    model_name_or_path: str | None = None

    @property
    def empty(self) -> bool:
        """No patch at all (None, or only whitespace): SWE-bench's empty_patch_ids."""
        return not (self.model_patch or "").strip()


@dataclass
class InputError:
    """One bad line (or a whole file that cannot be read), said in one line."""

    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


def load_predictions(path: Path, trusted: bool = False) -> tuple[dict[str, Prediction], list[InputError]]:
    """Every prediction of ``path``; every bad line is reported with its number (the rest load).

    ``trusted``: the user named the file with --trust-dataset (keys beyond SWE-bench's are let through)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return {}, [InputError(str(path), f"cannot read it as UTF-8 text: {exc}")]
    numbered: list[tuple[str, Any]]
    whole = _whole_json(text)
    if whole is not None:  # one JSON document: a list, {instance_id: prediction} (SWE-agent), or one prediction
        items = [whole] if isinstance(whole, dict) and "instance_id" in whole else (
            list(whole.values()) if isinstance(whole, dict) else whole)
        numbered = [(f"{path.name} item {n}", item) for n, item in enumerate(items, start=1)]
    else:
        numbered = [(f"{path.name} line {n}", line) for n, line in enumerate(text.splitlines(), start=1)
                    if line.strip()]
    found: dict[str, Prediction] = {}
    errors: list[InputError] = []
    for where, item in numbered:
        if not isinstance(item, str | dict):
            errors.append(InputError(where, "a prediction is a JSON object (instance_id, model_patch, ...)"))
            continue
        try:
            prediction = _prediction(item, trusted)
        except ValueError as exc:
            errors.append(InputError(where, str(exc)))
            continue
        if prediction.instance_id in found:
            errors.append(InputError(where, f"duplicate instance_id {prediction.instance_id!r}"))
            continue
        found[prediction.instance_id] = prediction
    return found, errors


def _prediction(item: str | dict[str, Any], trusted: bool) -> Prediction:
    """One prediction from its JSON line or object; ValueError with the line's one-line reason."""
    if isinstance(item, str):
        try:
            item = json.loads(item)
        except ValueError as exc:
            raise ValueError(f"not JSON: {exc}") from None
    if not isinstance(item, dict):
        raise ValueError("a prediction is a JSON object (instance_id, model_patch, ...)")
    other = next((str(k) for k in item if k not in PREDICTION_KEYS), None)
    if other is not None and not trusted:
        raise ValueError(f"key {other!r} is not one a prediction may hold (instance_id, model_patch, "
                         "model_name_or_path); pass --trust-dataset FILE to let this file's other keys through")
    try:
        return Prediction.model_validate(item)
    except ValidationError as exc:
        raise ValueError("; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'line'}: {e['msg']}"
                                   for e in exc.errors())) from None


def _whole_json(text: str) -> Any:
    """The file as one JSON list or object, or None (JSONL: one document per line, or not JSON at all)."""
    if not text.lstrip().startswith(("[", "{")):
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def gold_predictions(patches: dict[str, str | None]) -> dict[str, Prediction]:
    """`--predictions gold`: each instance's own `patch`, as SWE-bench's harness makes them."""
    return {iid: Prediction(instance_id=iid, model_patch=patch, model_name_or_path=GOLD)
            for iid, patch in patches.items()}


def match(instance_ids: list[str], predictions: dict[str, Prediction]) -> tuple[list[str], list[str], list[str]]:
    """Instance ids with a prediction (dataset order); prediction ids with no instance; instances with none."""
    known = set(instance_ids)
    paired = [i for i in instance_ids if i in predictions]
    orphans = [pid for pid in predictions if pid not in known]
    unpredicted = [i for i in instance_ids if i not in predictions]
    return paired, orphans, unpredicted
