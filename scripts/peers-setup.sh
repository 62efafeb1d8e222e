#!/usr/bin/env bash
# Set-up shared by the peer comparisons (scripts/peers.sh, scripts/solvers.sh,
# scripts/legion-peers.sh): the system packages (scripts/setup.sh), PETSc from Debian, the
# peers from PyPI in two venvs (each created or completed only when its packages do not
# import), and the release build of the applications. Prints nothing on success.
#
#   python3-petsc4py         PETSc 3.18 (Debian 12) for the system /usr/bin/python3, run
#                            under Open MPI's mpirun: benches/peers/petsc_solvers.py
#   target/peers-venv        NumPy, SciPy, numexpr, JAX (CPU), Dask array:
#                            benches/peers/numpy_apps.py and scipy_solvers.py
#   target/cupynumeric-venv  cuPyNumeric (Legate) on the CPU: run its programs with
#                            benches/peers/run-cupynumeric.sh, which sets the environment
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh

if ! dpkg-query -W -f='${Status}' python3-petsc4py 2>/dev/null | grep -q "ok installed"; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "peers-setup: python3-petsc4py is missing and installing it needs root" >&2
        exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends python3-petsc4py >/dev/null
fi

# peer_venv VENV CHECK PACKAGES...: unless the function CHECK succeeds (given VENV's python),
# creates VENV and installs PACKAGES into it.
peer_venv() {
    local venv="$1" check="$2"
    shift 2
    if [ ! -x "$venv/bin/python" ] || ! "$check" "$venv/bin/python" >/dev/null 2>&1; then
        python3 -m venv "$venv"
        "$venv/bin/pip" install --quiet "$@"
    fi
}
imports() { "$1" -c 'import numpy, scipy, numexpr, jax, dask.array'; }
# cuPyNumeric imports only in its environment (the wrapper runs the venv's python).
cupynumeric_imports() { benches/peers/run-cupynumeric.sh -c 'import cupynumeric'; }

peer_venv target/peers-venv imports numpy scipy numexpr jax 'dask[array]'
# cuPyNumeric pinned to the release whose CPU-only set-up (the libcuda stub of
# scripts/legion-setup.sh, Legate's flags in run-cupynumeric.sh) was worked out and
# measured; legate needs the CUDA runtime wheel without declaring it.
peer_venv target/cupynumeric-venv cupynumeric_imports \
    nvidia-cupynumeric==26.6.1 'nvidia-cuda-runtime==13.*'

cargo build --release --quiet -p diffuse-examples
