#!/usr/bin/env bash
# Set-up and the everyday jobs, on a fresh machine with Docker and Python >= 3.11:
#   ./dev.sh demo          install codebox into .venv (its run-time dependencies only), build the sandbox
#                          image (offline if no registry), run `codebox demo`
#   ./dev.sh test          the same with the dev extra, then ruff, mypy and the whole test suite (what CI runs)
#   ./dev.sh test fast     the edit loop: ruff, mypy and the tests that need no Docker, browser, Ray or install
#   ./dev.sh wheels [DIR]  codebox's wheel and its dependencies' wheels into DIR (default .wheels/): what the
#                          compose runner image installs, offline (Dockerfile.runner)
set -euo pipefail
cd "$(dirname "$0")"

say() { printf '\033[1mdev.sh:\033[0m %s\n' "$*" >&2; }  # what it is doing, on stderr
styled=1
if [ -n "${NO_COLOR:-}" ] || [ ! -t 2 ]; then styled=0; say() { printf 'dev.sh: %s\n' "$*" >&2; }; fi

case "${1:-}" in
  demo|wheels) extras="" ;;               # the demo needs codebox's run-time dependencies only
  test) extras=${CODEBOX_EXTRAS:-dev} ;;  # CI adds ray and parquet: their tests are required there
  *) echo "usage: ./dev.sh demo | test [fast] [pytest args] | wheels [DIR]" >&2; exit 2 ;;
esac
SWEBENCH="swebench==5.0.2"  # tests/e2e/test_eval_parity.py: SWE-bench's own grading is the referee

# The install is one progress line (rewritten in place on a terminal); pip's own output goes to a log,
# shown only when pip fails.
log=.venv/install.log
quietly() {  # quietly WHAT CMD...: run CMD with its output in $log, one line saying WHAT and the seconds
  local what=$1 started=$SECONDS pid status
  shift
  "$@" >>"$log" 2>&1 &
  pid=$!
  if [ "$styled" = 1 ]; then
    while kill -0 "$pid" 2>/dev/null; do
      printf '\r\033[1mdev.sh:\033[0m %s … %d s\033[K' "$what" $((SECONDS - started)) >&2
      sleep 1
    done
  else
    say "$what …"
  fi
  status=0; wait "$pid" || status=$?
  [ "$styled" = 1 ] && printf '\r\033[K' >&2
  if [ "$status" != 0 ]; then
    say "$what: failed after $((SECONDS - started)) s; the last lines of $log:"
    tail -n 25 "$log" >&2
    exit 1
  fi
}

# Whether the venv holds every extra of "$1" (comma-separated; the stamp lists what was installed).
stamp=.venv/.codebox-installed
has_extras() {
  [ -f "$stamp" ] && [ ! pyproject.toml -nt "$stamp" ] || return 1
  local want have=",$(cat "$stamp"),"
  for want in ${1//,/ }; do
    case "$have" in *",$want,"*) ;; *) return 1 ;; esac
  done
}

if ! has_extras "$extras"; then
  started=$SECONDS
  if [ ! -x .venv/bin/python ]; then
    python=${PYTHON:-python3}
    "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null ||
      { echo "codebox needs Python >= 3.11 (set PYTHON=/path/to/python3.11)" >&2; exit 1; }
    "$python" -m venv .venv >/dev/null ||
      { rm -rf .venv; echo "cannot create a venv: on Debian/Ubuntu, apt-get install python3-venv" >&2; exit 1; }
  fi
  : >"$log"
  # The distribution was named "codebox" before it became codebox-agent: drop that old install first.
  if .venv/bin/python -m pip show --quiet codebox >/dev/null 2>&1; then
    .venv/bin/python -m pip uninstall --quiet --yes codebox >>"$log" 2>&1
  fi
  spec="."; what="codebox and its run-time dependencies"
  if [ -n "$extras" ]; then spec=".[$extras]"; what="codebox with [$extras]"; fi
  pip=(.venv/bin/python -m pip install --disable-pip-version-check --progress-bar off)
  quietly "installing $what into .venv (the first time: about a minute)" "${pip[@]}" -e "$spec"
  case ",$extras," in *,dev,*)  # the eval parity test's referee, without its run-harness dependencies
    quietly "installing $SWEBENCH (no dependencies: its grading needs only unidiff)" "${pip[@]}" --no-deps "$SWEBENCH" ;;
  esac
  # What was there before counts too: a demo after a test run keeps the dev extra.
  previous=$(cat "$stamp" 2>/dev/null || true)
  echo "$(printf '%s\n' ${previous//,/ } ${extras//,/ } | sort -u | paste -sd, -)" >"$stamp"
  say "installed codebox into .venv in $((SECONDS - started)) s"
fi
export PATH="$PWD/.venv/bin:$PATH"

case "$1" in
  demo)
    exec codebox demo "${@:2}"
    ;;
  test)
    say "ruff: lint"
    ruff check agent sandbox tests bench
    say "mypy: types"
    mypy
    if [ "${2:-}" = fast ]; then
      # No engine, browser, cluster or fresh install: what the edit loop needs back in under 2 minutes.
      say "pytest: the fast tier (no Docker, browser, Ray or wheel install)"
      exec python -m pytest -q -m "not docker and not browser and not ray and not install" "${@:3}"
    fi
    say "the sandbox image (built only if missing)"
    codebox image build
    say "pytest: the whole suite"
    exec python -m pytest "${@:2}"
    ;;
  wheels)  # for the compose runner: its base images' Python (3.11 on Debian bookworm) on this machine's CPU
    out=${2:-.wheels}
    mkdir -p "$out" && rm -f "$out"/*.whl
    : >"$log"
    quietly "building codebox's wheel into $out" python -m pip wheel --disable-pip-version-check --no-deps -w "$out" .
    arch=$(uname -m)
    quietly "downloading the wheels of its dependencies (CPython 3.11, $arch) into $out" \
      python -m pip download --disable-pip-version-check --progress-bar off -d "$out" --only-binary=:all: \
        --implementation cp --python-version 3.11 --abi cp311 --abi abi3 --abi none \
        --platform "manylinux2014_$arch" --platform "manylinux_2_17_$arch" --platform "manylinux_2_28_$arch" \
        --platform any "$(ls "$out"/codebox_agent-*.whl)" pip
    say "$out: $(ls "$out"/*.whl | wc -l) wheels, $(du -sh "$out" | cut -f1) (docker-compose build installs them offline)"
    ;;
esac
