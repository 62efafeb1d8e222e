#!/usr/bin/env bash
# The main job: the Diffuse paper's 5-point stencil (Figure 2(a)), written with the array
# library over five aliasing slices of one grid, on the embedded backend, with its check
# against a plain sequential loop. Extra arguments go to the application
# (e.g. `--n 4096 --iters 20 --json`).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cargo build --release --quiet -p diffuse-examples
exec target/release/diffuse-examples stencil "$@"
