"""Node: a repository with a package.json is tested with ``node --test`` (TAP reporter, read per test) when its
test script is node's own runner or it has none, else with ``npm test``; packages come from a committed
node_modules only (no registry is reached), the toolchain is Debian trixie's Node 20 (or the user's image).
Nothing of the repository runs on the host: no install, no lifecycle script; ``npm test``'s pretest and
posttest run in the box.

An ``npm test`` whose script reaches ``node --test`` (``npm run unit && ...``, ``c8 node --test``) runs with
node's TAP reporter chosen through NODE_OPTIONS, so its tests are read one by one as node --test's are; any
other runner's (mocha, jest, tape) is judged by the whole run's exit code only (scripts.py)."""

from __future__ import annotations

import json
import posixpath
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.languages.base import CONTROL, Detection, Log, NamedTestsRun, TestArgsError, check_test_path, refused
from agent.languages.node import scripts, tap

if TYPE_CHECKING:
    from agent.env.cancel import Cancel
    from agent.env.info import EnvInfo

NODE_TEST = ["node", "--test", "--test-reporter=tap"]
NPM_TEST = ["npm", "test"]
# node --test inside npm test (and in each test file's process) writes TAP: NODE_OPTIONS reaches every node it runs
NPM_TAP = ["env", "NODE_OPTIONS=--test-reporter=tap", *NPM_TEST]
SUITE = "trixie"  # Node 20
PACKAGES = ["nodejs"]  # Debian's npm (hundreds of node-* packages) does not debootstrap: bring it in --image
NODE_ENV = {"npm_config_cache": "/tmp/codebox-cache/npm", "npm_config_offline": "true",
            "npm_config_update_notifier": "false", "npm_config_fund": "false", "npm_config_audit": "false"}
EVAL_EVENTS = "/tmp/codebox-eval-tap.txt"
ALLOWED = "test files inside the repository, --test-name-pattern=REGEX"
_MAX_MANIFEST = 1 << 20


def _manifest(repo: Path) -> dict[str, Any] | None:
    from agent.env.errors import EnvError
    from agent.env.read.safe_read import read_bytes

    try:
        data = read_bytes(repo, "package.json", limit=_MAX_MANIFEST)
    except EnvError:
        return None
    if data is None:
        return None
    try:
        parsed = json.loads(data)
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None


def _missing_packages(repo: Path, manifest: dict[str, Any], dev: bool) -> list[str]:
    """The packages the tests need that node_modules lacks: the runtime ones, and with ``dev`` (a third-party
    runner's test script) the development ones too (``node --test`` needs none of a linter's or coverage's)."""
    needed: list[str] = []
    for key in ("dependencies", "devDependencies") if dev else ("dependencies",):
        table = manifest.get(key)
        if isinstance(table, dict):
            needed += [str(name) for name in table]
    return [name for name in needed if not (repo / "node_modules" / name / "package.json").is_file()]


class Node:
    """The Node ecosystem's answers to the language seam (agent.languages.base.Language)."""

    name = "node"

    def detect(self, repo: Path, env: EnvInfo | None) -> Detection | None:
        manifest = _manifest(repo)
        if manifest is None:
            return None
        raw = manifest.get("scripts")
        table = {str(k): str(v) for k, v in raw.items()} if isinstance(raw, dict) else {}
        script = table.get("test") or ""
        own_runner = not script or script.strip().startswith("node --test")
        tap_inside = scripts.runs_node_test(table, "test")
        command = list(NODE_TEST) if own_runner else list(NPM_TAP) if tap_inside else list(NPM_TEST)
        evidence = "package.json" + ("" if not script else ' scripts.test')
        missing = _missing_packages(repo, manifest, dev=not own_runner)
        if missing:
            shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
            return Detection(self.name, command, evidence,
                             missing=f"package.json needs packages that are not in node_modules ({shown}): codebox "
                                     "fetches no npm packages; commit node_modules")
        return Detection(self.name, command, evidence)

    def runs(self, test_cmd: list[str]) -> bool:
        return _node_test(test_cmd) or scripts.is_npm_test(test_cmd)

    def check_test_args(self, test_cmd: list[str], arguments: list[str], repo: Path | None) -> None:
        if not _node_test(test_cmd):  # npm test: whatever its script runs takes them; plain paths only
            from agent.languages.generic import GENERIC

            GENERIC.check_test_args(test_cmd, arguments, repo)
            return
        for arg in arguments:
            if CONTROL.search(arg):
                raise refused(arg, "it contains a control character", ALLOWED)
            if arg.startswith("--test-name-pattern="):
                continue
            try:
                check_test_path(arg, repo)
            except TestArgsError as exc:
                raise refused(arg, str(exc), ALLOWED) from None

    def failing_tests(self, output: str) -> list[str]:
        return tap.failing_tests(output)

    def outcomes(self, output: str) -> dict[str, str]:
        return tap.outcomes(output)

    def is_test_id(self, name: str) -> bool:
        # node's names are the tests' own titles: any text but what starts like a progress mark ("[100%]")
        return bool(name.strip()) and not name.startswith("[")

    def named_tests_run(self, repo: Path, names: list[str], env: EnvInfo | None) -> NamedTestsRun:
        return NamedTestsRun(["sh", "-c", f"node --test --test-reporter=tap > {EVAL_EVENTS}"], EVAL_EVENTS,
                             list(NODE_TEST))

    def environment(self, repo: Path, image: str | None, backend: str, log: Log, cancel: Cancel,
                    repo_name: str) -> EnvInfo:
        from agent.env.info import EnvInfo

        started = time.monotonic()
        if image:
            return EnvInfo(image=image, base_image=image, notes=["node: the toolchain of the image given"])
        from agent.env.install.images import EngineImages
        from agent.languages.toolchain_store import toolchain_image

        engine = EngineImages.connect(backend)
        try:
            tag = toolchain_image(engine, "node", SUITE, PACKAGES, log, NODE_ENV, cancel)
        finally:
            engine.close()
        where = "a committed node_modules" if (repo / "node_modules").is_dir() else "no node_modules"
        return EnvInfo(image=tag, base_image=tag, notes=[f"node: Debian {SUITE}'s Node, {where}"],
                       duration_s=round(time.monotonic() - started, 3))


def _node_test(test_cmd: list[str]) -> bool:
    return len(test_cmd) >= 2 and posixpath.basename(test_cmd[0]) == "node" and test_cmd[1] == "--test"


NODE = Node()
