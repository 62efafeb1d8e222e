#!/usr/bin/env bash
# The full test suite: formatting, lints, every crate's tests, and a smoke run of the demo.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
start=$(date +%s)
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --quiet -- -D warnings
mkdir -p target
status=0
cargo test --workspace >target/test-output.txt 2>&1 || status=$?
grep -E "^test result" target/test-output.txt | grep -v " 0 passed; 0 failed" >&2 || true
if [ "$status" -ne 0 ]; then
    tail -n 80 target/test-output.txt >&2
    echo "tests failed (exit $status); full output in target/test-output.txt" >&2
    exit 1
fi
passed=$(grep -oE "[0-9]+ passed" target/test-output.txt | awk '{s += $1} END {print s + 0}')
echo "tests: $passed passed" >&2
# Smoke run of the main job: it must print a check within tolerance.
cargo build --release --quiet -p diffuse-examples
target/release/diffuse-examples stencil-ir --n 257 --iters 3 --procs 2 --json | tee target/demo-smoke.json
python3 - <<'PY'
import json
r = json.load(open("target/demo-smoke.json"))
assert r["check"] <= 1e-12, f"demo check {r['check']} exceeds 1e-12"
PY
echo "test.sh: all green in $(( $(date +%s) - start ))s" >&2
