#!/usr/bin/env bash
# TorchSWE v0.1 (the Diffuse paper's shallow-water solver) on NumPy and on diffuse, its one
# NumPy import changed (benches/peers/torchswe.py). Not part of CI: CI reaches only the
# package registries, and TorchSWE is not on PyPI.
#
#   ./scripts/torchswe.sh [ARGS...]     (ARGS go to benches/peers/torchswe.py)
#
# TorchSWE comes from TORCHSWE_SRC (a checkout of tag v0.1) or is cloned once into
# target/torchswe-src. Its requirements (pyyaml, pydantic 1, netCDF4) are installed into
# target/python-venv beside diffuse. Records go to target/peers/torchswe.jsonl, the median
# table to stderr.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/python-setup.sh >/dev/null
venv=target/python-venv
if ! "$venv/bin/python" -c 'import yaml, pydantic, netCDF4' 2>/dev/null; then
    "$venv/bin/pip" install --quiet pyyaml 'pydantic<2' netCDF4
fi
src="${TORCHSWE_SRC:-target/torchswe-src}"
if [ ! -d "$src/torchswe" ]; then
    git clone --quiet --depth 1 --branch v0.1 https://github.com/piyueh/TorchSWE "$src"
fi
mkdir -p target/peers
"$venv/bin/python" benches/peers/torchswe.py --source "$src" --out target/peers/torchswe.jsonl "$@"
