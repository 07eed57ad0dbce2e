"""SWE-bench-shaped rows of a Rust, Go or Node project from a real fix commit, its tests run in the box.

The same recipe as bench/swebench_rows.py, for the languages codebox grades by their own runner's test names:
for a commit that fixes a bug and adds or changes a test, base_commit = its parent, `test_patch` = the diff of
its test files (the language's rule below), `patch` = the rest. The project's whole suite then runs in the
image codebox's language builds for it (Debian trixie's toolchain; Rust's crates vendored on the host), with
`--network none` and /repo read-only, exactly the command `codebox eval` runs (the language's
`named_tests_run`), first at the base with the test patch alone, then with both patches; each test's outcome is
read from the runner's machine output (go test -json, node's TAP, libtest's JSON):
FAIL_TO_PASS = the tests that did not pass before (failed, or not there) and pass after, PASS_TO_PASS = the
tests that passed both times (Go: only those of the packages the test patch touches). The row is printed as one
JSON line (SWE-bench's 12 keys, lists as JSON strings).

    python bench/lang_rows.py --mirror /work/.mirror/BurntSushi+toml/repo --repo BurntSushi/toml \
        --commit 89aab29 >> bench/lang_rows/rows.jsonl

Runs the project's tests in a container with no network: its code never runs on the host.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agent.env.cancel import NEVER
from agent.env.info import EnvInfo
from agent.languages.base import BuildsEnvironment, RunsNamedTests
from agent.languages.go import gotest
from agent.languages.registry import LANGUAGES, detect

# Which changed files are tests, per language (the rest of the commit is the patch).
TEST_PATHS = {
    "go": re.compile(r"_test\.go$|(^|/)testdata/"),
    "node": re.compile(r"(^|/)(test|tests|__tests__)/|[.-]test\.[cm]?[jt]s$"),
    "rust": re.compile(r"(^|/)(tests|benches)/"),
}
PASSED = "passed"


def git(repo: Path, *args: str, stdin: str | None = None) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], input=stdin, capture_output=True, text=True,
                          check=True).stdout


def split_diff(mirror: Path, commit: str, language: str) -> tuple[str, str]:
    """(patch, test_patch) of the commit against its parent."""
    files = git(mirror, "diff", "--name-only", f"{commit}^", commit).split()
    tests = [f for f in files if TEST_PATHS[language].search(f)]
    code = [f for f in files if f not in tests]
    patch = git(mirror, "diff", f"{commit}^", commit, "--", *code) if code else ""
    test_patch = git(mirror, "diff", f"{commit}^", commit, "--", *tests) if tests else ""
    return patch, test_patch


def run_suite(tree: Path, env: EnvInfo, language: RunsNamedTests, timeout: int) -> str:
    """The runner's machine output of the whole suite, as `codebox eval` runs it (network none, /repo read-only,
    /tmp a scratch folder)."""
    run = language.named_tests_run(tree, [], env)
    image = env.image
    with tempfile.TemporaryDirectory(prefix="lang-rows-tmp-") as scratch:
        command = ["docker", "run", "--rm", "--network", "none", "--label", "lang_rows=1", "-v", f"{tree}:/repo:ro",
                   "-v", f"{scratch}:/tmp", "-w", "/repo", image, *run.argv]
        try:
            proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            sys.exit(f"lang_rows: the suite did not finish in {timeout} s")
        report = Path(scratch, Path(run.report_file).name)
        if not report.is_file():
            sys.exit(f"lang_rows: the run wrote no report (exit {proc.returncode}): {proc.stderr[-500:]}")
        return report.read_text(encoding="utf-8", errors="replace")


def go_packages(tree: Path, test_patch: str) -> set[str]:
    """The import paths of the packages whose test files the test patch touches."""
    module = next((line.split()[1] for line in (tree / "go.mod").read_text().splitlines()
                   if line.startswith("module ")), "")
    folders = {str(Path(path).parent) for path in re.findall(r"^\+\+\+ b/(\S+)", test_patch, re.M)}
    return {module if folder == "." else f"{module}/{folder}" for folder in folders}


def outcomes(language: RunsNamedTests, output: str, packages: set[str] | None) -> dict[str, str]:
    if packages is None:
        return language.outcomes(output)
    kept = "\n".join(json.dumps(e) for e in gotest.events(output) if e.get("Package") in packages)
    return language.outcomes(kept)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mirror", type=Path, required=True, help="a clone or bare mirror of the project")
    parser.add_argument("--repo", required=True, help="owner/name")
    parser.add_argument("--commit", required=True, help="the fix commit")
    parser.add_argument("--version", help="the project's version at the base (default: its latest tag there)")
    parser.add_argument("--timeout", type=int, default=1800, help="seconds for one run of the suite")
    args = parser.parse_args()

    commit = git(args.mirror, "rev-parse", args.commit).strip()
    base = git(args.mirror, "rev-parse", f"{commit}^").strip()
    version = args.version or git(args.mirror, "describe", "--tags", "--abbrev=0", base).strip().lstrip("v")
    with tempfile.TemporaryDirectory(prefix="lang-rows-") as tmp:
        tree = Path(tmp, "tree")
        subprocess.run(["git", "clone", "-q", "--no-checkout", str(args.mirror), str(tree)], check=True)
        git(tree, "checkout", "-q", base)
        found = detect(tree)
        language = next((lang for lang in LANGUAGES if found is not None and lang.name == found.language), None)
        if not isinstance(language, RunsNamedTests) or not isinstance(language, BuildsEnvironment):
            sys.exit(f"lang_rows: {args.repo} at {base[:10]} is not a Rust, Go or Node project codebox grades by "
                     f"test name ({found.language if found else 'no test command found'})")
        if found is not None and found.missing:
            sys.exit(f"lang_rows: {args.repo} at {base[:10]}: {found.missing}")
        patch, test_patch = split_diff(args.mirror, commit, language.name)
        if not patch or not test_patch:
            sys.exit(f"lang_rows: {commit[:10]} must change both code and tests")
        env = language.environment(tree, None, "docker", lambda line: print(line, file=sys.stderr), NEVER, args.repo)
        packages = go_packages(tree, test_patch) if language.name == "go" else None
        git(tree, "apply", "-", stdin=test_patch)
        before = outcomes(language, run_suite(tree, env, language, args.timeout), packages)
        git(tree, "apply", "-", stdin=patch)
        after = outcomes(language, run_suite(tree, env, language, args.timeout), packages)
    fail_to_pass = sorted(t for t, o in after.items() if o == PASSED and before.get(t) != PASSED)
    pass_to_pass = sorted(t for t, o in after.items() if o == PASSED and before.get(t) == PASSED)
    if not fail_to_pass:
        sys.exit(f"lang_rows: no test fails before and passes after ({len(after)} run after)")
    row = {
        "repo": args.repo, "instance_id": f"{args.repo.replace('/', '__')}-{commit[:10]}", "base_commit": base,
        "patch": patch, "test_patch": test_patch,
        "problem_statement": git(args.mirror, "log", "-1", "--format=%B", commit).strip(),
        "hints_text": "", "created_at": git(args.mirror, "log", "-1", "--format=%aI", commit).strip(),
        "version": version, "FAIL_TO_PASS": json.dumps(fail_to_pass), "PASS_TO_PASS": json.dumps(pass_to_pass),
        "environment_setup_commit": base,
    }
    print(json.dumps(row))
    print(f"lang_rows: {row['instance_id']} ({language.name}): {len(fail_to_pass)} FAIL_TO_PASS, "
          f"{len(pass_to_pass)} PASS_TO_PASS; image {env.image}", file=sys.stderr)


if __name__ == "__main__":
    main()
