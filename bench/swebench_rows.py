"""SWE-bench-shaped rows from a project's real fix commit, the way SWE-bench made its own.

For a commit that fixes a bug and adds or changes a test: base_commit = its parent, `test_patch` =
the diff of its test files, `patch` = the rest; the named test files run on the host, in a throwaway
venv that has the project (from the base) and `--pip` packages, first with the test patch alone, then
with both patches: FAIL_TO_PASS = the tests that failed (or were not there) before and pass after,
PASS_TO_PASS = the tests that passed both times. Ids as pytest's `-rA` summary writes them (SWE-bench's
parser reads the same lines). The row is printed as one JSON line (SWE-bench's 12 keys, lists as JSON
strings as SWE-bench ships them).

    python bench/swebench_rows.py --mirror /work/.mirror/tkem+cachetools/repo --repo tkem/cachetools \
        --commit 1234abc --version 3.1 --pip 'pytest<8' >> bench/data/five_projects.jsonl

Runs the project's tests on the host: only for repositories you chose to trust.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

_TEST_PATH = re.compile(r"(^|/)(tests?|testing)(/|$)|(^|/)test_[^/]*\.py$|_tests?\.py$")
_SUMMARY = re.compile(r"^(PASSED|FAILED|ERROR|XFAIL|XPASS|SKIPPED) (\S+)")


def git(repo: Path, *args: str, stdin: str | None = None) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], input=stdin, capture_output=True, text=True,
                          check=True).stdout


def split_diff(mirror: Path, commit: str) -> tuple[str, str, list[str]]:
    """(patch, test_patch, the test files) of the commit against its parent."""
    files = git(mirror, "diff", "--name-only", f"{commit}^", commit).split()
    tests = [f for f in files if _TEST_PATH.search(f)]
    code = [f for f in files if f not in tests]
    patch = git(mirror, "diff", f"{commit}^", commit, "--", *code) if code else ""
    test_patch = git(mirror, "diff", f"{commit}^", commit, "--", *tests) if tests else ""
    return patch, test_patch, [f for f in tests if f.endswith(".py")]


def outcomes(venv: Path, tree: Path, test_files: list[str], path: bool, image: str | None) -> dict[str, str]:
    present = [f for f in test_files if (tree / f).exists()]
    pytest = ["-m", "pytest", "-rA", "--color=no", "-p", "no:cacheprovider", *present]
    code = "/repo/src" if (tree / "src").is_dir() else "/repo"
    if image:  # the image's python3, the packages from --target, no network
        command = ["docker", "run", "--rm", "--network", "none", "--label", "swebench_rows=1", "-v", f"{tree}:/repo",
                   "-v", f"{venv}:/site:ro", "-w", "/repo", "-e", f"PYTHONPATH=/site:{code}", image, "python3", *pytest]
        proc = subprocess.run(command, capture_output=True, text=True)
    else:
        env = dict(os.environ, PYTHONPATH=code.replace("/repo", str(tree))) if path else None
        proc = subprocess.run([str(venv / "bin" / "python"), *pytest], cwd=tree, capture_output=True, text=True,
                              env=env)
    found: dict[str, str] = {}
    for line in proc.stdout.splitlines():
        if m := _SUMMARY.match(line):
            found[m.group(2)] = m.group(1)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mirror", type=Path, required=True, help="a clone or bare mirror of the project")
    parser.add_argument("--repo", required=True, help="owner/name")
    parser.add_argument("--commit", required=True, help="the fix commit")
    parser.add_argument("--version", required=True, help="the project's version at the base (SWE-bench's `version`)")
    parser.add_argument("--pip", action="append", default=[], help="what the host venv needs beyond the project")
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--no-install", action="store_true",
                        help="do not pip install the project: put it (or its src/) on PYTHONPATH")
    parser.add_argument("--image", help="run the tests in this image's python3 (network none; the project on "
                        "PYTHONPATH, --pip wheels unpacked for --image-python): a project older than the host's Python")
    parser.add_argument("--image-python", default="3.9")
    args = parser.parse_args()

    commit = git(args.mirror, "rev-parse", args.commit).strip()
    base = git(args.mirror, "rev-parse", f"{commit}^").strip()
    patch, test_patch, test_files = split_diff(args.mirror, commit)
    if not patch or not test_patch:
        sys.exit(f"swebench_rows: {commit[:10]} must change both code and tests")
    with tempfile.TemporaryDirectory(prefix="swebench-rows-") as tmp:
        tree, venv = Path(tmp, "tree"), Path(tmp, "venv")
        subprocess.run(["git", "clone", "-q", "--no-checkout", str(args.mirror), str(tree)], check=True)
        git(tree, "checkout", "-q", base)
        if args.image:  # wheels for the image's Python, unpacked on the host into the folder it mounts
            subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--target", str(venv),
                            "--only-binary", ":all:", "--python-version", args.image_python,
                            "--platform", "manylinux2014_x86_64",
                            *(args.pip or ["pytest"])], check=True)
        else:
            subprocess.run([args.python, "-m", "venv", str(venv)], check=True)
            pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
            subprocess.run([*pip, *(args.pip or ["pytest"])], check=True)
            if not args.no_install:
                subprocess.run([*pip, "-e", str(tree)], check=True)
        git(tree, "apply", "-", stdin=test_patch)
        before = outcomes(venv, tree, test_files, args.no_install, args.image)
        git(tree, "apply", "-", stdin=patch)
        after = outcomes(venv, tree, test_files, args.no_install, args.image)
    passing = {"PASSED", "XFAIL"}
    fail_to_pass = sorted(t for t, o in after.items() if o in passing and before.get(t) not in passing)
    pass_to_pass = sorted(t for t, o in after.items() if o in passing and before.get(t) in passing)
    if not fail_to_pass:
        sys.exit(f"swebench_rows: no test fails before and passes after ({len(after)} run after)")
    name = args.repo.replace("/", "__")
    number = git(args.mirror, "log", "-1", "--format=%s", commit).strip()
    row = {
        "repo": args.repo, "instance_id": f"{name}-{commit[:10]}", "base_commit": base, "patch": patch,
        "test_patch": test_patch, "problem_statement": number,
        "hints_text": "", "created_at": git(args.mirror, "log", "-1", "--format=%aI", commit).strip(),
        "version": args.version, "FAIL_TO_PASS": json.dumps(fail_to_pass), "PASS_TO_PASS": json.dumps(pass_to_pass),
        "environment_setup_commit": base,
    }
    print(json.dumps(row))
    print(f"swebench_rows: {row['instance_id']}: {len(fail_to_pass)} FAIL_TO_PASS, {len(pass_to_pass)} PASS_TO_PASS",
          file=sys.stderr)


if __name__ == "__main__":
    main()
