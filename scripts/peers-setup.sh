#!/usr/bin/env bash
# Set-up shared by the peer comparisons (scripts/peers.sh, scripts/solvers.sh): the system
# packages (scripts/setup.sh), NumPy and SciPy from PyPI in target/peers-venv (created on
# first use), and the release build of the applications. Prints nothing on success.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
venv=target/peers-venv
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import numpy, scipy' 2>/dev/null; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet numpy scipy
fi
cargo build --release --quiet -p diffuse-examples
