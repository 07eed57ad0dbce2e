#!/usr/bin/env bash
# Set-up and the two everyday jobs, on a fresh machine with Docker:
#   ./dev.sh demo   install into .venv, build the sandbox image (offline if no registry), run `codebox demo`
#   ./dev.sh test   the same set-up, then ruff, mypy and the whole test suite (Docker tests included)
set -euo pipefail
cd "$(dirname "$0")"
export TESTCONTAINERS_RYUK_DISABLED=true  # its reaper image cannot be pulled without a registry

say() { printf '\033[1mdev.sh:\033[0m %s\n' "$*" >&2; }  # what it is doing, on stderr
if [ -n "${NO_COLOR:-}" ] || [ ! -t 2 ]; then say() { printf 'dev.sh: %s\n' "$*" >&2; }; fi

python=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' ||
    { echo "codebox needs Python >= 3.11 (set PYTHON=/path/to/python3.11)" >&2; exit 1; }
  say "creating the virtual environment .venv with $("$python" --version)"
  "$python" -m venv .venv ||
    { rm -rf .venv; echo "cannot create a venv: on Debian/Ubuntu, apt-get install python3-venv" >&2; exit 1; }
fi
extras=${CODEBOX_EXTRAS:-dev}  # CI adds ray: its engine tests are required there
SWEBENCH="swebench==5.0.2"     # tests/e2e/test_eval_parity.py: SWE-bench's own grading is the referee
stamp=.venv/.codebox-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ "$(cat "$stamp")" != "$extras" ]; then
  started=$SECONDS
  say "step 1/2: upgrading pip in .venv"
  .venv/bin/python -m pip install --quiet --upgrade pip
  # The distribution was named "codebox" before it became codebox-agent: drop that old install first.
  if .venv/bin/python -m pip show --quiet codebox >/dev/null 2>&1; then
    .venv/bin/python -m pip uninstall --quiet --yes codebox
  fi
  say "step 2/2: installing codebox with [$extras] into .venv (first time: about 2 minutes; pip's own lines follow)"
  # Not --quiet: pip's "Collecting ..." lines and progress bars show that it is working.
  .venv/bin/python -m pip install -e ".[$extras]"
  case ",$extras," in *,dev,*)  # the eval parity test's referee, without its run-harness dependencies
    say "installing $SWEBENCH (no dependencies: its grading needs only unidiff, from the dev extra)"
    .venv/bin/python -m pip install --quiet --no-deps "$SWEBENCH" ;;
  esac
  echo "$extras" > "$stamp"
  say "installed in $((SECONDS - started)) s"
else
  say "the .venv is up to date (delete .venv/.codebox-installed to reinstall)"
fi
export PATH="$PWD/.venv/bin:$PATH"

case "${1:-}" in
  demo)
    say "running the demo (it builds the sandbox image first if it is missing)"
    exec codebox demo "${@:2}"
    ;;
  test)
    say "ruff: lint"
    ruff check agent sandbox tests bench
    say "mypy: types"
    mypy
    say "the sandbox image (built only if missing)"
    codebox image build
    say "pytest: the whole suite"
    exec python -m pytest "${@:2}"
    ;;
  *)
    echo "usage: ./dev.sh demo | test [pytest args]" >&2
    exit 2
    ;;
esac
