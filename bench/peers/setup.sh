#!/bin/sh
# Creates (or reuses) the Python venv of the LangGraph peer, bench/peers/.venv, with the pinned
# packages of bench/peers/requirements.txt, and prints its interpreter's path on stdout.
#
#   bench/peers/setup.sh              # then: ./target/release/caf bench --peer langgraph
#   PYTHON=python3.12 bench/peers/setup.sh
#
# The first run installs from PyPI; later runs reuse the venv unless requirements.txt changed.
set -eu

here=$(CDPATH= cd -- "$(dirname -- "$0")" && pwd)
venv="$here/.venv"
req="$here/requirements.txt"
stamp="$venv/.requirements"
py="$venv/bin/python"

if [ -x "$py" ] && [ -f "$stamp" ] && cmp -s "$req" "$stamp"; then
    echo "$py"
    exit 0
fi

python=${PYTHON:-python3}
if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
    echo "error: $python is missing or older than 3.10 (set PYTHON=/path/to/python3.10+)" >&2
    exit 1
fi
echo "setting up $venv …" >&2
"$python" -m venv "$venv"
"$py" -m pip install --quiet --disable-pip-version-check -r "$req" >&2
cp "$req" "$stamp"
echo "$py"
