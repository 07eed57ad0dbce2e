#!/usr/bin/env bash
# Set-up and the two everyday jobs, on a fresh machine with Docker:
#   ./dev.sh demo   install into .venv, build the sandbox image (offline if no registry), run `codebox demo`
#   ./dev.sh test   the same set-up, then ruff, mypy and the whole test suite (Docker tests included)
set -euo pipefail
cd "$(dirname "$0")"
export TESTCONTAINERS_RYUK_DISABLED=true  # its reaper image cannot be pulled without a registry

python=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' ||
    { echo "codebox needs Python >= 3.11 (set PYTHON=/path/to/python3.11)" >&2; exit 1; }
  "$python" -m venv .venv ||
    { rm -rf .venv; echo "cannot create a venv: on Debian/Ubuntu, apt-get install python3-venv" >&2; exit 1; }
fi
stamp=.venv/.codebox-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  .venv/bin/python -m pip install --quiet --upgrade pip
  .venv/bin/python -m pip install --quiet -e '.[dev]'
  touch "$stamp"
fi
export PATH="$PWD/.venv/bin:$PATH"

case "${1:-}" in
  demo)
    exec codebox demo "${@:2}"
    ;;
  test)
    ruff check agent sandbox
    mypy
    codebox image build
    exec python -m pytest "${@:2}"
    ;;
  *)
    echo "usage: ./dev.sh demo | test [pytest args]" >&2
    exit 2
    ;;
esac
