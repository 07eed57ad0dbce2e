"""The attacks of issue 36 on `codebox eval`, each judged on its harm: the verdict --strict gives a forged
fix, the kernel an instance's tests ran on, a file's content in the output folder, whose repository ran.

Forged verdicts: a conftest.py whose diff names end in a date after a space, a pytest11 entry point the
rebuilt environment loads, a PASS_TO_PASS test file that turns every test into a no-op. Each one
resolves the instance without fixing it (the run without --strict shows the forgery took effect);
--strict must turn it down. Dataset lines: a runtime, an image, a repository folder that a line names.
"""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path
from typing import Any

import pytest

from agent.cli.parser import main
from tests.agent.eval.repos import diff_of, make_repo
from tests.e2e.eval_fixtures import CALC, P2P, SPOOF_CONFTEST, Case, build, write_inputs
from tests.e2e.installed_wheels import pytest_wheelhouse
from tests.engine import build as build_image
from tests.engine import remove_image
from tests.repos import sh

pytestmark = pytest.mark.docker
DATED = " 2020-01-01 00:00:00.000000000 +0000"
NO_OP_RUNTEST = "import _pytest.python\n\n_pytest.python.Function.runtest = lambda self: None\n\n"
SECRET = "codebox-secret-7f3a91"


def evaluate(*args: str) -> int:
    return main(["eval", "--jobs", "2", *args])


def verdict(out: Path, iid: str) -> dict[str, Any]:
    result: dict[str, Any] = json.loads((out / iid / "eval.json").read_text())
    return result


def strict_after_all(out: Path, iid: str) -> dict[str, Any]:
    """The same kept evidence judged with --strict."""
    assert evaluate("--regrade", str(out), "--strict") == 0
    return verdict(out, iid)


def everything_in(out: Path) -> str:
    """Every byte the run wrote into its output folder, the gzip logs decompressed."""
    texts = []
    for path in out.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            texts.append((gzip.decompress(data) if path.suffix == ".gz" else data).decode(errors="replace"))
    return "\n".join(texts)


def test_a_conftest_whose_diff_names_end_in_a_date_is_flagged(tmp_path: Path) -> None:
    """(a) `+++ b/tests/conftest.py 2020-01-01 00:00:00.000000000 +0000`: git applies tests/conftest.py."""
    repos = tmp_path / "repos"
    base, test_patch, _ = build(repos / "acme" / "calc")
    body = "".join(f"+{line}\n" for line in SPOOF_CONFTEST.splitlines())
    forged = (f"--- a/tests/conftest.py{DATED}\n+++ b/tests/conftest.py{DATED}\n"
              f"@@ -0,0 +1,{len(SPOOF_CONFTEST.splitlines())} @@\n{body}")
    tasks, preds = write_inputs(tmp_path, base, test_patch, {"forged": Case(forged, "resolved")})
    out = tmp_path / "out"
    evaluate("--tasks", str(tasks), "--predictions", str(preds), "--out", str(out), "--repos", str(repos))
    forged_verdict = verdict(out, "forged")
    assert forged_verdict["status"] == "resolved", forged_verdict["error"]  # the forgery worked: add still subtracts
    assert strict_after_all(out, "forged")["status"] == "unresolved"
    assert forged_verdict["changed"] == ["tests/conftest.py"]


def test_a_pytest_plugin_the_rebuilt_environment_loads_is_flagged(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """(b) [project.entry-points.pytest11] plus the plugin module: the environment is built again for the
    changed pyproject, pytest loads the plugin, every outcome is rewritten."""
    monkeypatch.setenv("CODEBOX_FIND_LINKS", str(pytest_wheelhouse(tmp_path / "wheels")))
    monkeypatch.setenv("CODEBOX_NO_INDEX", "1")
    monkeypatch.setenv("CODEBOX_CACHE_DIR", str(tmp_path / "cache"))
    pyproject = '[project]\nname = "calcpkg"\nversion = "1.0"\n\n[project.optional-dependencies]\ntest = ["pytest"]\n'
    repo = tmp_path / "repos" / "acme__calcpkg"
    base = make_repo(repo, {"pyproject.toml": pyproject, "src/calcpkg/__init__.py": CALC,
                            "tests/test_calc.py": "from calcpkg import add\n\n\ndef test_add():\n"
                                                  "    assert add(1, 2) == 3\n"})
    forged = diff_of(repo, {"pyproject.toml": pyproject + '\n[project.entry-points.pytest11]\nok = "calcpkg._ok"\n',
                            "src/calcpkg/_ok.py": SPOOF_CONFTEST})
    line = {"repo": "acme/calcpkg", "instance_id": "plugin", "base_commit": base,
            "FAIL_TO_PASS": ["tests/test_calc.py::test_add"], "PASS_TO_PASS": []}
    (tmp_path / "d.jsonl").write_text(json.dumps(line) + "\n")
    (tmp_path / "p.jsonl").write_text(json.dumps({"instance_id": "plugin", "model_patch": forged}) + "\n")
    out = tmp_path / "out"
    evaluate("--tasks", str(tmp_path / "d.jsonl"), "--predictions", str(tmp_path / "p.jsonl"), "--out", str(out),
             "--repos", str(tmp_path / "repos"))
    result = verdict(out, "plugin")
    try:
        assert result["status"] == "resolved", result["error"]  # the plugin ran: add still subtracts
        assert strict_after_all(out, "plugin")["status"] == "unresolved"
        assert result["env"]["pytest_plugins"] == ["ok = calcpkg._ok"]
    finally:
        _remove_built_images(tmp_path / "cache")


def test_a_pass_to_pass_file_that_makes_every_test_a_no_op_is_flagged(tmp_path: Path) -> None:
    """(c) a PASS_TO_PASS test's file the test_patch does not touch replaces Function.runtest at import."""
    repos = tmp_path / "repos"
    base, test_patch, _ = build(repos / "acme" / "calc")
    misc = (repos / "acme" / "calc" / "tests" / "test_misc.py").read_text()
    forged = diff_of(repos / "acme" / "calc", {"tests/test_misc.py": NO_OP_RUNTEST + misc})
    case = Case(forged, "resolved", p2p=[*P2P, "tests/test_misc.py::test_skipped"])
    tasks, preds = write_inputs(tmp_path, base, test_patch, {"no-op": case})
    out = tmp_path / "out"
    evaluate("--tasks", str(tasks), "--predictions", str(preds), "--out", str(out), "--repos", str(repos))
    assert verdict(out, "no-op")["status"] == "resolved"  # the no-op runtest worked: add still subtracts
    strict = strict_after_all(out, "no-op")
    assert strict["status"] == "unresolved" and [f["rule"] for f in strict["flags"]] == ["test-files"]


def test_a_dataset_line_cannot_choose_the_runtime(tmp_path: Path, sandbox_image: str) -> None:
    """`"runtime": "runc"` on one line while the user runs under gVisor: that line's tests must not run on the
    host's kernel. Each instance's test prints the kernel it ran on (/proc/version) into its log."""
    _need_runsc(sandbox_image)
    repos = tmp_path / "repos"
    kernel = "def test_kernel():\n    assert False, open('/proc/version').read()\n"
    base = make_repo(repos / "acme" / "k", {"test_k.py": kernel})
    line = {"repo": "acme/k", "base_commit": base, "FAIL_TO_PASS": ["test_k.py::test_kernel"], "PASS_TO_PASS": []}
    tasks = tmp_path / "d.jsonl"
    tasks.write_text(json.dumps({**line, "instance_id": "mine"}) + "\n"
                     + json.dumps({**line, "instance_id": "host", "runtime": "runc"}) + "\n")
    preds = tmp_path / "p.jsonl"
    preds.write_text("".join(json.dumps({"instance_id": i, "model_patch": ""}) + "\n" for i in ("mine", "host")))
    out = tmp_path / "out"
    evaluate("--tasks", str(tasks), "--predictions", str(preds), "--out", str(out), "--repos", str(repos),
             "--runtime", "runsc", "--env", "none")
    host_kernel = Path("/proc/version").read_text().strip()
    ran = [p.parent.name for p in out.glob("*/eval.json")]
    assert ran == ["mine"] and verdict(out, "mine")["runtime"] == "runsc"
    log = everything_in(out / "mine")
    assert "Linux version" in log and host_kernel not in log  # gVisor's kernel, not the host's
    assert host_kernel not in everything_in(out)


def test_a_dataset_line_cannot_name_a_private_image(tmp_path: Path, sandbox_image: str, docker_client: Any) -> None:
    """`"image"` naming any local image: its /secret.txt must not end up in the output folder."""
    tag = f"codebox-evaltest/private-{tmp_path.name[-6:].lower()}:1"
    context = tmp_path / "image"
    context.mkdir()
    (context / "secret.txt").write_text(SECRET + "\n")
    (context / "Dockerfile").write_text(f"FROM {sandbox_image}\nCOPY secret.txt /secret.txt\n")
    build_image(docker_client, context, tag)
    try:
        repos = tmp_path / "repos"
        steal = "def test_steal():\n    assert False, open('/secret.txt').read()\n"
        base = make_repo(repos / "acme" / "s", {"test_s.py": steal})
        line = {"repo": "acme/s", "instance_id": "steal", "base_commit": base, "image": tag,
                "FAIL_TO_PASS": ["test_s.py::test_steal"], "PASS_TO_PASS": []}
        (tmp_path / "d.jsonl").write_text(json.dumps(line) + "\n")
        (tmp_path / "p.jsonl").write_text(json.dumps({"instance_id": "steal", "model_patch": ""}) + "\n")
        out = tmp_path / "out"
        evaluate("--tasks", str(tmp_path / "d.jsonl"), "--predictions", str(tmp_path / "p.jsonl"), "--out", str(out),
                 "--repos", str(repos), "--env", "none")
        assert (out / "steal" / "eval.json").is_file() and SECRET not in everything_in(out)
        # the user's own glob lets SWE-bench's images in; this one is not one of them
        evaluate("--tasks", str(tmp_path / "d.jsonl"), "--predictions", str(tmp_path / "p.jsonl"), "--out",
                 str(tmp_path / "out2"), "--repos", str(repos), "--dataset-image", "sweb.eval.*")
        assert SECRET not in everything_in(tmp_path / "out2")
    finally:
        remove_image(docker_client, tag)


def test_a_dataset_line_cannot_evaluate_the_users_own_repository(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`"repo": "."` (and an absolute folder) with base_commit HEAD: the user's own repository, where codebox
    runs, must not be the one evaluated; a clone inside --repos is."""
    own = tmp_path / "me" / "project"
    leak = f"def test_leak():\n    assert False, {SECRET!r}\n"
    make_repo(own, {"test_own.py": leak})
    monkeypatch.chdir(own)
    repos = tmp_path / "repos"
    sh("git", "clone", "-q", str(own), str(repos / "acme__ok"), cwd=tmp_path)
    (repos / "acme__ok" / "test_own.py").write_text("def test_leak():\n    pass\n")  # the clone's own commit
    sh("git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "ok", cwd=repos / "acme__ok")
    ok_head = sh("git", "rev-parse", "HEAD", cwd=repos / "acme__ok")
    data = tmp_path / "data"
    data.mkdir()
    line = {"base_commit": "HEAD", "FAIL_TO_PASS": ["test_own.py::test_leak"], "PASS_TO_PASS": []}
    rows = [{**line, "instance_id": "dot", "repo": "."}, {**line, "instance_id": "abs", "repo": str(own)},
            {**line, "instance_id": "ok", "repo": "acme/ok", "base_commit": ok_head}]
    (data / "d.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (data / "p.jsonl").write_text("".join(json.dumps({"instance_id": r["instance_id"], "model_patch": ""}) + "\n"
                                          for r in rows))
    out = tmp_path / "out"
    evaluate("--tasks", str(data / "d.jsonl"), "--predictions", str(data / "p.jsonl"), "--out", str(out),
             "--repos", str(repos), "--env", "none")
    assert sorted(p.parent.name for p in out.glob("*/eval.json")) == ["ok"]
    assert SECRET not in everything_in(out)


def _need_runsc(image: str) -> None:
    from agent.backends.registry import backend_for
    from agent.errors import SandboxError
    from agent.sandboxes.config import SandboxConfig

    config = SandboxConfig(runtime="runsc", image=image)
    try:
        backend_for(config).preflight(config)
    except SandboxError as exc:
        if os.environ.get("CI") and os.environ.get("CODEBOX_REQUIRE_RUNSC") == "1":
            raise
        pytest.skip(f"runsc is not available here: {exc}")


def _remove_built_images(cache: Path) -> None:
    """The environment images this test built (its own cache's records; the shared dependencies images stay)."""
    from agent.env.install import images

    assert str(images.record_dir()).startswith(str(cache))
    for entry in images.entries():
        if entry.kind == "env":
            main(["env", "rm", entry.tag])
