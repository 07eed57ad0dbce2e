"""A dataset as shipped, line by line: SWE-bench (every version), SWE-Gym, SWE-smith; JSONL, JSON, parquet.

A line becomes an EvalInstance: the TaskSpec the batch machinery runs (workspace, environment,
engines) and what the line says about its own evaluation (DatasetInfo: the log parser, the
eval type, the image, the script codebox does not run). Every bad line is one InputError with
its number; the other lines still load.

A line is data, never settings: it may hold SWE-bench's data keys and the evaluation keys
docs/evaluation.md documents (``LINE_KEYS``); a line with any other key (``runtime``, ``env``,
``policy``, ``timeout_s``...) is refused with one line naming it, unless the user names the file as
trusted (``--trust-dataset FILE``: then every task key applies, as in a task file). A line's
``image`` is used only when it matches a glob the user gives (``--dataset-image 'sweb.eval.*'``) or
the file is trusted, and it is on this machine.
"""

from __future__ import annotations

import fnmatch
import importlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from agent.eval.predictions import InputError
from agent.eval.repos import RepoNotFound, RepoResolver, branch_commit, missing_commits
from agent.protocol import TaskSpec
from agent.settings.checks import error_message

EvalType = Literal["pass_and_fail", "fail_only"]
EVAL_TYPES: tuple[EvalType, ...] = ("pass_and_fail", "fail_only")
_INSTANCE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
# SWE-bench 5.x keys that describe the evaluation itself (kept in DatasetInfo, not in the TaskSpec).
_EVAL_KEYS = {"eval_script", "log_parser", "eval_type", "image_assets", "split", "image", "image_name"}
# The keys a line may hold without --trust-dataset: SWE-bench's data (every version, Verified's difficulty,
# SWE-bench-extra's meta), codebox's own names for two of them (id, goal), the evaluation's keys, and
# test_in_copy (the tests run in a copy of /repo: where, not how they are judged).
DATA_KEYS = {"instance_id", "id", "repo", "base_commit", "patch", "test_patch", "problem_statement", "goal",
             "hints_text", "created_at", "version", "environment_setup_commit", "FAIL_TO_PASS", "PASS_TO_PASS",
             "difficulty", "meta"}
LINE_KEYS = frozenset(DATA_KEYS | _EVAL_KEYS | {"test_in_copy"})
# SWE-bench's parsers of Python repositories' logs: the runners codebox reads (agent/languages/python/runners)
_PYTHON_PARSERS = re.compile(r"parse_log_(pytest\w*|sympy|django|astropy|astroid|flask|marshmallow|matplotlib|pvlib|"
                             r"pydicom|pylint|pyvista|requests|scikit|seaborn|sphinx|sqlfluff|xarray)")
NOT_RUN_SCRIPT = ("eval_script not run: codebox runs the named tests itself (pytest, JUnit XML, no network) "
                  "in the environment built for the repository; the script is SWE-bench's image's own")


class DatasetInfo(BaseModel):
    """What a dataset line says about its own evaluation (eval.json's ``dataset``)."""

    repo: str = ""
    """The line's repository as it names it (owner/name: what a recipes file is keyed by)."""
    log_parser: str | None = None
    eval_type: EvalType = "pass_and_fail"
    eval_script: bool = False
    """The line carried SWE-bench 5.x's eval_script (recorded; codebox does not run it: see NOT_RUN_SCRIPT)."""
    image: str | None = None
    """The line's own image (`image`, or SWE-smith's `image_name`), as given."""
    image_used: bool = False
    """True when that image is on this machine and is the environment the tests run in."""
    image_assets: bool = False
    split: str | None = None
    ignored_keys: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    spec: str | None = None
    """The dataset spec that describes this row (SWE-bench's, by repository and version), when one does."""
    spec_python: str | None = None
    """That spec's Python (X.Y)."""


class EvalInstance(BaseModel):
    """One line of a dataset, ready to evaluate."""

    task: TaskSpec
    dataset: DatasetInfo = Field(default_factory=DatasetInfo)
    where: str = ""
    """The line it came from ("tasks.jsonl line 3")."""


@dataclass
class Loaded:
    instances: list[EvalInstance] = field(default_factory=list)
    errors: list[InputError] = field(default_factory=list)
    skipped_split: int = 0


ImageExists = Callable[[str], bool]


@dataclass
class LineRules:
    """What the user lets a dataset's lines decide: every task key (a trusted file), and which images."""

    trusted: bool = False
    """--trust-dataset names this file: its lines may set any task key (runtime, env, limits...)."""
    image_globs: list[str] = field(default_factory=list)
    """--dataset-image: a line's image is used when its name matches one of these (fnmatch)."""

    def image_allowed(self, image: str) -> bool:
        """A glob matches the whole name or its last part (``sweb.eval.*`` matches ``swebench/sweb.eval.x:latest``)."""
        names = {image, image.rsplit("/", 1)[-1]}
        return self.trusted or any(fnmatch.fnmatchcase(name, glob) for glob in self.image_globs for name in names)


def load_dataset(
    path: Path,
    *,
    repos_dir: Path | None = None,
    env: str | None = None,
    split: str | None = None,
    pattern: str | None = None,
    image_exists: ImageExists | None = None,
    rules: LineRules | None = None,
) -> Loaded:
    """Every line of ``path`` that can be evaluated; one error per line that cannot.

    ``env`` (the --env flag) sets every instance's environment; ``split`` keeps the lines of that
    split; ``pattern`` (re.search) the instance ids that match; ``image_exists`` says whether a
    line's image is on this machine (None: never); ``rules``: what the lines may decide (default:
    data only, no image).
    """
    loaded = Loaded()
    rows, errors = read_rows(path)
    loaded.errors.extend(errors)
    regex = re.compile(pattern) if pattern else None
    resolver = RepoResolver(repos_dir, path.parent)
    seen: dict[str, str] = {}
    exists = _cached(image_exists or (lambda _name: False))
    line_rules = rules or LineRules()
    for where, row in rows:
        try:
            instance = _instance(row, where, resolver, env, exists, line_rules)
        except _LineError as exc:
            loaded.errors.append(InputError(where, str(exc)))
            continue
        if split is not None and instance.dataset.split != split:
            loaded.skipped_split += 1
            continue
        if regex is not None and not regex.search(instance.task.id):
            continue
        if instance.task.id in seen:
            loaded.errors.append(InputError(where, f"duplicate instance_id {instance.task.id!r} "
                                                   f"(first at {seen[instance.task.id]})"))
            continue
        seen[instance.task.id] = where
        loaded.instances.append(instance)
    bad_commits = _check_commits(loaded.instances)
    loaded.errors.extend(bad_commits.values())
    loaded.instances = [i for i in loaded.instances if i.task.id not in bad_commits]
    return loaded


# --- reading -----------------------------------------------------------------------------------------


def read_rows(path: Path) -> tuple[list[tuple[str, Any]], list[InputError]]:
    """(where, row) for each line (JSONL), item (a JSON list) or row (parquet)."""
    if path.suffix == ".parquet":
        return _parquet_rows(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return [], [InputError(str(path), f"cannot read it as UTF-8 text: {exc}")]
    if text.lstrip().startswith("["):
        try:
            items = json.loads(text)
        except ValueError as exc:
            return [], [InputError(path.name, f"not a JSON list of instances: {exc}")]
        return [(f"{path.name} item {n}", item) for n, item in enumerate(items, start=1)], []
    rows: list[tuple[str, Any]] = []
    errors: list[InputError] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            rows.append((f"{path.name} line {number}", json.loads(line)))
        except ValueError as exc:
            errors.append(InputError(f"{path.name} line {number}", f"not JSON: {exc}"))
    return rows, errors


def _parquet_rows(path: Path) -> tuple[list[tuple[str, Any]], list[InputError]]:
    try:
        pq = importlib.import_module("pyarrow.parquet")  # optional: only parquet datasets need it
    except ImportError:
        return [], [InputError(path.name, "reading parquet needs pyarrow (pip install pyarrow), "
                                          "or give the dataset as JSONL")]
    try:
        table = pq.read_table(str(path))
    except Exception as exc:  # pyarrow's own errors (ArrowInvalid, OSError): its words are the clearest
        return [], [InputError(path.name, f"not a readable parquet file: {exc}")]
    rows: list[dict[str, Any]] = table.to_pylist()
    return [(f"{path.name} row {n}", row) for n, row in enumerate(rows, start=1)], []


# --- one line ----------------------------------------------------------------------------------------


class _LineError(Exception):
    pass


def _instance(row: Any, where: str, resolver: RepoResolver, env: str | None, image_exists: ImageExists,
              rules: LineRules) -> EvalInstance:
    if not isinstance(row, dict):
        raise _LineError("an instance is a JSON object")
    if not rules.trusted:
        _only_data(row)
    info = DatasetInfo()
    fields = _task_fields(row, info)
    image = row.get("image") or row.get("image_name")
    if isinstance(image, str) and image.strip():
        info.image = image
        if not rules.image_allowed(image):
            info.notes.append(f"image {image} not used: it matches no --dataset-image glob (a line does not choose "
                              "the sandbox); the environment is built from the repository instead")
        elif image_exists(image):
            info.image_used = True
            fields["image"] = image
        else:
            info.notes.append(f"image {image} is not on this machine: the environment is built from the "
                              "repository instead")
    fields["env"] = env or fields.get("env") or ("none" if info.image_used else "auto")
    repo = fields.get("repo")
    if not isinstance(repo, str) or not repo.strip():
        raise _LineError("repo: missing (a folder, or owner/name with --repos DIR)")
    try:
        path = resolver.resolve(repo)
    except RepoNotFound as exc:
        raise _LineError(str(exc)) from None
    info.repo, fields["repo"] = repo, str(path)
    iid = fields.get("instance_id") or fields.get("id")
    if not isinstance(iid, str) or not _INSTANCE_ID.fullmatch(iid):
        raise _LineError(f"instance_id {iid!r} must be letters, digits, '.', '_' or '-' (it names a folder)")
    if not fields.get("base_commit"):  # SWE-smith: the instance is the branch named for it
        found = branch_commit(path, iid)
        if found is None:
            raise _LineError(f"no base_commit, and no branch {iid!r} in {repo} (SWE-smith's layout)")
        fields["base_commit"] = found
        info.notes.append(f"base_commit: the branch {iid} ({found[:12]})")
    fields.setdefault("goal", fields.get("problem_statement") or f"evaluate {iid}")
    try:
        task = TaskSpec.model_validate(fields)
    except ValidationError as exc:
        raise _LineError("; ".join(error_message(e, {}) for e in exc.errors(include_url=False))) from None
    return EvalInstance(task=task, dataset=info, where=where)


def _only_data(row: dict[str, Any]) -> None:
    """A line of an untrusted file holds data keys only: the first other key is the line's error."""
    others = [str(key) for key in row if key not in LINE_KEYS]
    if others:
        setting = " (a task setting)" if others[0] in TaskSpec.model_fields else ""
        more = f" (and {len(others) - 1} more: {', '.join(others[1:4])})" if len(others) > 1 else ""
        raise _LineError(f"key {others[0]!r}{setting} is not one a dataset line may set{more}: a line carries "
                         "SWE-bench's data and evaluation keys only; pass --trust-dataset FILE to take every key "
                         "of this file")


def _task_fields(row: dict[str, Any], info: DatasetInfo) -> dict[str, Any]:
    """The TaskSpec's keys of a row; the evaluation's own keys into ``info``; the rest ignored (named)."""
    fields: dict[str, Any] = {}
    for key, value in row.items():
        if key in TaskSpec.model_fields:
            if key != "image":
                fields[key] = str(value) if key == "created_at" and value is not None else value
        elif key not in _EVAL_KEYS:
            info.ignored_keys.append(str(key))
    eval_type = row.get("eval_type") or "pass_and_fail"
    if eval_type not in EVAL_TYPES:
        raise _LineError(f"eval_type {eval_type!r} is not one of {', '.join(EVAL_TYPES)}")
    info.eval_type = eval_type
    parser = row.get("log_parser")
    if isinstance(parser, str) and parser:
        info.log_parser = parser
        if not _PYTHON_PARSERS.fullmatch(parser):
            info.notes.append(f"log_parser {parser} is not one of Python's: codebox runs the named tests with pytest, "
                              "sympy's bin/test, Django's tests/runtests.py or unittest, as the repository shows")
    if isinstance(row.get("eval_script"), str) and row["eval_script"].strip():
        info.eval_script = True
        info.notes.append(NOT_RUN_SCRIPT)
    if row.get("image_assets"):
        info.image_assets = True
        info.notes.append("image_assets not fetched (no network during an eval): tests that need them may fail")
    split = row.get("split")
    info.split = str(split) if split is not None else None
    return fields


def _cached(fn: ImageExists) -> ImageExists:
    known: dict[str, bool] = {}

    def lookup(name: str) -> bool:
        if name not in known:
            known[name] = fn(name)
        return known[name]

    return lookup


def _check_commits(instances: list[EvalInstance]) -> dict[str, InputError]:
    """Base commits that are not in their repository, by instance id: found before anything runs."""
    by_repo: dict[str, list[EvalInstance]] = {}
    for instance in instances:
        by_repo.setdefault(instance.task.repo, []).append(instance)
    bad: dict[str, InputError] = {}
    for repo, group in by_repo.items():
        missing = missing_commits(Path(repo), [i.task.base_commit or "" for i in group])
        for instance in group:
            if instance.task.base_commit in missing:
                bad[instance.task.id] = InputError(
                    instance.where, f"base_commit {instance.task.base_commit} is not a commit in {repo} "
                                    f"(fetch it there: git -C {repo} fetch origin {instance.task.base_commit})")
    return bad
