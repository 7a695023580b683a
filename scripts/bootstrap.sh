#!/usr/bin/env bash
# Make .venv exist with kinrun (editable) and its test extras. Idempotent; quick when done.
# Usage: scripts/bootstrap.sh   (prints nothing on success when already set up)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv="$root/.venv"
stamp="$venv/.kinrun-installed"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
if [ ! -f "$stamp" ] || [ "$root/pyproject.toml" -nt "$stamp" ]; then
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip >&2
  "$venv/bin/python" -m pip install -q --disable-pip-version-check -e "$root[test]" >&2
  touch "$stamp"
fi
