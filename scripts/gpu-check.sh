#!/usr/bin/env bash
# The GPU check: every app on a GPU (correct, on the device, data staying there) and
# diffuse's GPU and CPU times next to CuPy's and JAX's, on a machine without a Rust toolchain.
#
#   scripts/gpu-check.sh --bundle DIR     (the build machine) builds the apps (release) and
#       packs what the check needs into DIR, at most 50 MiB: diffuse-examples.tar.xz (the
#       stripped binary and the shared libraries it was linked with, glibc's loader
#       included, used only where the machine's own do not do), legion.tar.xz (the Legion
#       libraries the Legion backend opens, in the layout of scripts/legion-setup.sh's
#       installation, and the shim the binary was built with; ~16 MB; left out, with a
#       notice, when the binary has no Legion), peers/ (benches/peers/*.py), this script,
#       check-gpu-record.py and MANIFEST. Nothing else is needed where it runs: no
#       toolchain, no LLVM (linked into the binary), no network.
#   DIR/gpu-check.sh --from DIR OUT       (the GPU machine: NVIDIA driver, python3 with
#       NumPy, CuPy and JAX) unpacks the bundle into a temporary directory and, bounded to
#       GPU_CHECK_BUDGET seconds (default 480) in all with `timeout` on every run:
#       (a) smoke: every app with --gpu --jit sync at scripts/test.sh's smoke sizes,
#           checked by check-gpu-record.py (tolerance, gpu_points > 0, kernels launched,
#           no CPU-fallback warning; for GPU_STRICT apps no host-device copies and at most
#           one device sync per timed iteration);
#       (b) timings, medians of GPU_CHECK_ROUNDS (default 3) interleaved rounds: diffuse with --gpu --jit sync, diffuse
#           on the CPU (--procs GPU_CHECK_PROCS, default 16 or the cores there are), CuPy
#           and JAX (peers/gpu_peers.py); with the bundle's Legion (DIFFUSE_LEGION_DIR set
#           to its unpacked copy) stencil, Black-Scholes and cg also on the Legion backend,
#           on the CPUs and with --gpu -ll:gpu 1 (the point task's GPU variant; those three
#           also get a smoke check on Legion's GPU first: the CPU's tolerance, gpu_points >
#           0, no notice that work ran on CPUs);
#       (c) OUT/records.jsonl (every JSON record, tagged with part, system and round),
#           OUT/smoke.jsonl (the smoke verdicts), OUT/logs.tar.gz (each run's stderr and
#           output, packed so that OUT holds four files: a device machine returns few) and
#           OUT/summary.md (the smoke table and ms/iter medians per problem and system).
#       Without a GPU (no nvidia-smi, or it lists none) the smoke runs on the simulated GPU
#       (DIFFUSE_DEVICE=sim, marked simulated), the CPU timings run, and the summary says
#       that the GPU part was skipped and why (the Legion CPU timings still run). Exit
#       status 1 when a smoke check or a run failed.
#   scripts/gpu-check.sh --smoke BIN OUT  part (a) alone with the apps' binary BIN, on the
#       GPU DIFFUSE_DEVICE names (scripts/test.sh runs it on the simulated one); verdicts
#       in OUT/smoke.jsonl, exit status 1 when one failed.
#
# Environment: GPU_CHECK_QUICK=1 runs small timing sizes (for a machine with few cores),
# GPU_CHECK_ROUNDS the timing rounds (0 runs the smoke alone),
# PYTHON the interpreter for the peers (default python3), GPU_SMOKE_APPS the apps the smoke
# runs (default all), GPU_STRICT the apps checked for residency (default "stencil
# stencil-ir black-scholes black-scholes-poly jacobi cfd"), GPU_CHECK_PROFILE=1 profiles
# steady-state kernels of stencil, both Black-Scholes forms and cg with Nsight Compute
# (`ncu`, when the machine has it) after the timings, within the budget: per kernel its
# grid, duration and share of DRAM and SM peak, in OUT/profile.txt.
set -euo pipefail

usage() {
    sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
    exit 2
}

die() {
    echo "gpu-check: $*" >&2
    exit 1
}

# The bundle's size limit.
MAX_BUNDLE_BYTES=$((50 * 1024 * 1024))

# --bundle DIR: builds and packs the bundle.
bundle() {
    local dir="$1" root stage started bytes
    root=$(cd "$(dirname "$0")/.." && pwd)
    [ -f "$root/Cargo.toml" ] || die "--bundle runs from the repository's scripts/"
    started=$SECONDS
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    (cd "$root" && cargo build --release --quiet -p diffuse-examples)
    stage=$(mktemp -d)
    # shellcheck disable=SC2064 # the directory is known now
    trap "rm -rf '$stage'" EXIT
    mkdir -p "$stage/bin" "$stage/lib"
    cp "${CARGO_TARGET_DIR:-$root/target}/release/diffuse-examples" "$stage/bin/"
    strip "$stage/bin/diffuse-examples"
    # The shared libraries the binary loads (glibc's loader too): the unpacked bundle uses
    # them where the machine's own are missing or too old.
    ldd "$stage/bin/diffuse-examples" | awk '/=> \// {print $3} /^\t\/.*ld-linux/ {print $1}' |
        while read -r lib; do cp -L "$lib" "$stage/lib/"; done
    tar -C "$stage" -cf - bin lib | xz -6 -T0 >"$dir/diffuse-examples.tar.xz"
    legion_bundle "$root" "$dir" "$stage/legion" "${CARGO_TARGET_DIR:-$root/target}/release/diffuse-examples"
    rm -rf "$dir/peers"
    mkdir -p "$dir/peers"
    cp "$root"/benches/peers/*.py "$dir/peers/"
    cp "$root/scripts/gpu-check.sh" "$root/scripts/check-gpu-record.py" "$dir/"
    {
        echo "commit $(git -C "$root" rev-parse HEAD)$(
            git -C "$root" diff --quiet HEAD -- . || echo ' (with uncommitted changes)')"
        echo "built $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -n)"
        echo "binary $(stat -c %s "$stage/bin/diffuse-examples") bytes stripped, needs $(
            objdump -T "$stage/bin/diffuse-examples" | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -n 1)"
        echo "libraries $(cd "$stage/lib" && echo *)"
        if [ -f "$dir/legion.tar.xz" ]; then
            echo "legion $(stat -c %s "$dir/legion.tar.xz") bytes: $(cd "$stage/legion" && find . -name '*.so*' | sort | tr '\n' ' ')"
        else
            echo "legion none"
        fi
    } >"$dir/MANIFEST"
    bytes=$(du -sb "$dir" | cut -f1)
    echo "bundle $dir: $bytes bytes ($((bytes / 1024 / 1024)) MiB) in $((SECONDS - started)) s" >&2
    if [ "$bytes" -gt "$MAX_BUNDLE_BYTES" ]; then
        du -ab "$dir" | sort -n | tail -n 5 >&2
        die "the bundle is $bytes bytes, more than the $MAX_BUNDLE_BYTES (50 MiB) it may take"
    fi
}

# What the Legion backend opens (legion-bridge/src/library.rs), relative to the installation
# scripts/legion-setup.sh unpacks from the wheels: Legion, Realm (which links UCC), UCX and
# the libcuda stub, taken where the machine has no NVIDIA driver.
LEGION_FILES=(
    site/legate/lib64/liblegion-legate.so
    site/legate/lib64/librealm-legate.so.25
    site/libucx/lib/libucp.so.0
    site/libucx/lib/libucs.so.0
    site/libucx/lib/libuct.so.0
    site/libucx/lib/libucm.so.0
    site/nvidia/libcal/cu12/lib/libucc.so.1
    stub/libcuda.so.1
)

# legion_bundle ROOT DIR STAGE BIN: packs the Legion installation BIN was built against
# (DIFFUSE_LEGION_DIR's, else scripts/legion-setup.sh's) into DIR/legion.tar.xz: the
# LEGION_FILES and, as diffuse/libdiffuse_legion_shim.so, the shim BIN names, so that the
# unpacked copy is a complete installation wherever it lies. Nothing (and a notice) when
# Legion is not installed or BIN was built without it.
legion_bundle() {
    local root="$1" dir="$2" stage="$3" bin="$4" install shim
    install=${DIFFUSE_LEGION_DIR:-$HOME/.cache/diffuse/legion-26.1.0}
    rm -f "$dir/legion.tar.xz"
    shim=$(strings "$bin" | grep -o "${CARGO_TARGET_DIR:-$root/target}/release/build/diffuse-legion-[0-9a-f]*/out/libdiffuse_legion_shim\.so" | head -n 1 || true)
    if [ ! -f "$install/ready" ] || [ -z "$shim" ] || [ ! -f "$shim" ]; then
        echo "gpu-check: the bundle has no Legion (none installed at $install, or the binary was built without it)" >&2
        return
    fi
    mkdir -p "$stage/diffuse"
    (cd "$install" && cp --parents -L "${LEGION_FILES[@]}" "$stage/")
    cp "$shim" "$stage/diffuse/libdiffuse_legion_shim.so"
    tar -C "$stage" -cf - . | xz -6 -T0 >"$dir/legion.tar.xz"
}

# The profiled runs: app and flags, kernel launches skipped (warm-up) and profiled.
PROFILED=(
    "stencil --n 4096 --iters 8|6|2"
    "black-scholes --n 10000000 --iters 5|2|1"
    "black-scholes-poly --n 10000000 --iters 5|2|1"
    "cg --n 1000 --iters 40 --rtol 0|150|14"
)

# profile: Nsight Compute on the PROFILED runs (--gpu --jit sync), the lines that matter per
# kernel into OUT/profile.txt, the full reports into the logs.
profile() {
    local case run skip count app log
    if ! command -v ncu >/dev/null; then
        echo "no ncu on this machine: nothing profiled" >"$out/profile.txt"
        return
    fi
    : >"$out/profile.txt"
    for case in "${PROFILED[@]}"; do
        IFS='|' read -r run skip count <<<"$case"
        app=${run%% *}
        log="$out/logs/ncu-$app.txt"
        # shellcheck disable=SC2086 # the run is an app and its flags
        bounded 60 "$log.err" ncu --launch-skip "$skip" --launch-count "$count" \
            --section SpeedOfLight --section LaunchStats "${apps[@]}" $run --gpu --jit sync \
            >"$log" || echo "ncu on $app: exit $?" >>"$out/profile.txt"
        {
            echo "## $run (kernels $((skip + 1)) to $((skip + count)))"
            grep -E '^  [A-Za-z_0-9]+ \(|Duration|DRAM Throughput|Compute \(SM\) Throughput|Grid Size' "$log" || true
        } >>"$out/profile.txt"
    done
}

# --- --from DIR OUT ----------------------------------------------------------------------

# State of the run below: the deadline (in $SECONDS), the apps' command (the binary, or
# the bundled loader running it), and the output directory.
deadline=0
apps=()
out=""
failed=0

# Seconds left before the deadline.
left() { echo $((deadline - SECONDS)); }

# bounded CAP LOG CMD...: runs CMD with stdout to the caller and stderr to LOG, killed
# after CAP seconds or at the deadline; returns its status (124: killed, 125: not started,
# no time left).
bounded() {
    local cap="$1" log="$2" limit
    shift 2
    limit=$(left)
    [ "$limit" -lt "$cap" ] && cap=$limit
    if [ "$cap" -lt 5 ]; then
        echo "not started: the ${GPU_CHECK_BUDGET:-480} s budget is spent" >"$log"
        return 125
    fi
    timeout -k 5 "$cap" "$@" 2>"$log"
}

# tag PART SYSTEM ROUND: the JSON record on stdin as one line of records.jsonl.
tag() {
    local line
    line=$(grep '^{' | tail -n 1 || true)
    [ -n "$line" ] && echo "{\"part\":\"$1\",\"system\":\"$2\",\"round\":$3,${line#\{}" >>"$out/records.jsonl"
    [ -n "$line" ]
}

# Picks how to run the unpacked binary: directly, with the bundled libraries for the ones
# the machine lacks, or under the bundled loader (a glibc older than the build machine's).
choose_runner() {
    local root="$1" bin="$1/bin/diffuse-examples"
    if "$bin" --help >/dev/null 2>&1; then
        apps=("$bin")
    elif LD_LIBRARY_PATH="$root/lib" "$bin" --help >/dev/null 2>&1; then
        export LD_LIBRARY_PATH="$root/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
        apps=("$bin")
    else
        apps=("$root/lib/ld-linux-x86-64.so.2" --library-path "$root/lib" "$bin")
        "${apps[@]}" --help >/dev/null 2>"$out/logs/runner.txt" ||
            die "the bundled binary does not run here: $(head -n 3 "$out/logs/runner.txt")"
    fi
}

# The smoke cases: app, tolerance, flags (scripts/test.sh's smoke sizes).
SMOKE=(
    "stencil 1e-12 --n 257 --iters 3"
    "stencil-ir 1e-12 --n 257 --iters 3"
    "black-scholes 1e-12 --n 100000 --iters 2"
    "black-scholes-poly 1e-12 --n 100000 --iters 2"
    "jacobi 1e-9 --n 500 --iters 5"
    "cfd 1e-9 --n 41 --iters 3"
    "cg 1e-7 --n 40 --iters 1000"
    "bicgstab 1e-7 --n 40 --iters 1000"
    "cgs 1e-7 --n 40 --iters 1000"
    "gmg 1e-7 --n 63 --iters 1000"
)

# The Legion flags of a Legion run on one GPU.
LEGION_GPU=(--backend legion -ll:gpu 1 -ll:fsize 4096 -ll:zsize 512)

# smoke LABEL: every smoke case (of GPU_SMOKE_APPS) with --gpu, checked; LABEL is gpu,
# simulated, or legion-gpu (on the Legion backend, LEGION_GPU, stencil, Black-Scholes and cg
# unless GPU_SMOKE_APPS says otherwise; not checked for residency: Legion moves the data).
smoke() {
    local label="$1" case app tolerance flags strict status chosen backend=() checks=()
    chosen=${GPU_SMOKE_APPS:-${SMOKE[*]%% *}}
    if [ "$label" = legion-gpu ]; then
        chosen=${GPU_SMOKE_APPS:-stencil black-scholes cg}
        backend=("${LEGION_GPU[@]}")
        checks=(--legion)
    fi
    for case in "${SMOKE[@]}"; do
        read -r app tolerance flags <<<"$case"
        [[ " $chosen " == *" $app "* ]] || continue
        strict=()
        [[ "$label" != legion-gpu && " ${GPU_STRICT:-stencil stencil-ir black-scholes black-scholes-poly jacobi cfd} " == *" $app "* ]] && strict=(--strict)
        local log="$out/logs/smoke-$label-$app.txt" json="$out/logs/smoke-$label-$app.json"
        status=0
        # shellcheck disable=SC2086 # the flags are several words
        bounded 120 "$log" "${apps[@]}" "$app" $flags --procs 2 --fusion on --jit sync --gpu --json \
            "${backend[@]}" >"$json" || status=$?
        tag smoke "diffuse-$label" 0 <"$json" || true
        if ! python3 "$here/check-gpu-record.py" "$json" "$log" "$tolerance" "${strict[@]}" \
            "${checks[@]}" --app "$app" --label "$label" >>"$out/smoke.jsonl"; then
            failed=1
            echo "gpu-check: smoke $app ($label) failed (exit $status): $(tail -n 1 "$out/smoke.jsonl")" >&2
        fi
    done
}

# The timed problems: app, n, iterations, extra flags; GPU_CHECK_QUICK=1 picks small ones.
timing_cases() {
    if [ "${GPU_CHECK_QUICK:-0}" = 1 ]; then
        printf '%s\n' "stencil 512 10" "stencil 1024 5" "black-scholes 1000000 3" \
            "black-scholes-poly 1000000 3" "cg 200 60 --rtol 0" "cfd 128 2" "jacobi 1024 10" \
            "gmg 255 60 --rtol 0"
    else
        # About 4 minutes on a 16-core machine with an H100 (the apps' sequential
        # references and inputs take most of it). The solvers' first 20 or so iterations
        # are their warm-up, untimed.
        printf '%s\n' "stencil 4096 30" "stencil 16384 5" "black-scholes 10000000 10" \
            "black-scholes-poly 10000000 10" "cg 1000 200 --rtol 0" "cfd 512 10" \
            "jacobi 4096 50" "gmg 1023 80 --rtol 0"
    fi
}

# time_run SYSTEM ROUND CASE: one timed run of CASE on SYSTEM (diffuse-gpu, diffuse-cpu,
# legion-cpu, legion-gpu, cupy or jax), its record tagged into records.jsonl.
time_run() {
    local system="$1" round="$2" app n iters extra status=0 log command
    read -r app n iters extra <<<"$3"
    log="$out/logs/$system-$app-$n-$round.txt"
    # shellcheck disable=SC2206 # the extra flags are several words
    case "$system" in
    diffuse-gpu) command=("${apps[@]}" "$app" --n "$n" --iters "$iters" $extra --gpu --jit sync --json) ;;
    diffuse-cpu) command=("${apps[@]}" "$app" --n "$n" --iters "$iters" $extra --procs "$procs" --jit sync --json) ;;
    legion-cpu) command=("${apps[@]}" "$app" --n "$n" --iters "$iters" $extra --procs "$procs" --jit sync --json --backend legion) ;;
    legion-gpu) command=("${apps[@]}" "$app" --n "$n" --iters "$iters" $extra --gpu --jit sync --json "${LEGION_GPU[@]}") ;;
    *) command=("${PYTHON:-python3}" "$here/peers/gpu_peers.py" "$app" --n "$n" --iters "$iters" --module "$system") ;;
    esac
    bounded 150 "$log" "${command[@]}" >"$log.json" || status=$?
    if [ "$status" = 3 ] || [ "$status" = 125 ]; then
        no_record "$system" "$round" "$app" "$n" skipped "$(tail -n 1 "$log")"
    elif [ "$status" != 0 ] || ! tag timing "$system" "$round" <"$log.json"; then
        failed=1
        no_record "$system" "$round" "$app" "$n" failed "$status"
        echo "gpu-check: $system $app --n $n failed (exit $status): $(tail -n 2 "$log" | tr '\n' ' ')" >&2
    fi
}

# no_record SYSTEM ROUND APP N KEY TEXT: the records.jsonl line of a timed run that gave no
# record: skipped (TEXT: the reason) or failed (TEXT: the exit status).
no_record() {
    python3 -c 'import json, sys
system, round, app, n, key, text = sys.argv[1:]
print(json.dumps({"part": "timing", "system": system, "round": int(round), "app": app,
                  "n": int(n), key: text}))' "$@" >>"$out/records.jsonl"
}

# --from DIR OUT.
from_bundle() {
    local dir="$1" work gpu="" why="" round case system systems
    out="$2"
    deadline=$((SECONDS + ${GPU_CHECK_BUDGET:-480}))
    [ -f "$dir/diffuse-examples.tar.xz" ] || die "$dir has no diffuse-examples.tar.xz (make it with --bundle)"
    mkdir -p "$out/logs"
    out=$(cd "$out" && pwd)
    : >"$out/records.jsonl"
    : >"$out/smoke.jsonl"
    here=$(cd "$dir" && pwd)
    work=$(mktemp -d)
    # shellcheck disable=SC2064 # the directory is known now
    trap "rm -rf '$work'" EXIT
    if command -v xz >/dev/null; then
        tar -C "$work" -xJf "$dir/diffuse-examples.tar.xz"
    else
        python3 -m tarfile -e "$dir/diffuse-examples.tar.xz" "$work"
    fi
    choose_runner "$work"
    legion=()
    if [ -f "$dir/legion.tar.xz" ]; then
        mkdir -p "$work/legion"
        if command -v xz >/dev/null; then
            tar -C "$work/legion" -xJf "$dir/legion.tar.xz"
        else
            python3 -m tarfile -e "$dir/legion.tar.xz" "$work/legion"
        fi
        export DIFFUSE_LEGION_DIR="$work/legion"
        legion=(legion-cpu)
    else
        echo "gpu-check: the bundle has no Legion: no Legion runs" >&2
    fi
    procs=${GPU_CHECK_PROCS:-$(($(nproc) < 16 ? $(nproc) : 16))}

    if ! command -v nvidia-smi >/dev/null; then
        why="no nvidia-smi on this machine (no NVIDIA driver)"
    elif ! gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1) || [ -z "$gpu" ]; then
        why="nvidia-smi finds no GPU: $(echo "$gpu" | head -n 1)"
        gpu=""
    fi
    if [ -n "$gpu" ]; then
        echo "gpu-check: GPU $gpu" >&2
        smoke gpu
        # Legion last: the peers come first where the budget runs short.
        systems=(diffuse-gpu diffuse-cpu cupy jax "${legion[@]}")
        if [ ${#legion[@]} -gt 0 ]; then
            smoke legion-gpu
            systems+=(legion-gpu)
        fi
    else
        echo "gpu-check: the GPU part is SKIPPED: $why; smoke on the simulated GPU, CPU timings only" >&2
        export DIFFUSE_DEVICE=sim
        smoke simulated
        unset DIFFUSE_DEVICE
        systems=(diffuse-cpu "${legion[@]}")
    fi
    for round in $(seq 1 "${GPU_CHECK_ROUNDS:-3}"); do
        while read -r case; do
            for system in "${systems[@]}"; do
                # The peers run stencil and Black-Scholes; CuPy also cg.
                case "$system:${case%% *}" in
                diffuse-*:* | cupy:stencil | cupy:black-scholes* | cupy:cg | jax:stencil | jax:black-scholes* | \
                    legion-*:stencil | legion-*:black-scholes | legion-*:cg)
                    time_run "$system" "$round" "$case"
                    ;;
                esac
            done
        done < <(timing_cases)
    done
    if [ -n "$gpu" ] && [ "${GPU_CHECK_PROFILE:-0}" = 1 ]; then
        profile
    fi
    summarize "$gpu" "$why" "$dir/MANIFEST" >"$out/summary.md"
    tar -C "$out" -czf "$out/logs.tar.gz" logs && rm -rf "$out/logs"
    echo "gpu-check: $(left) s of the budget left; summary in $out/summary.md" >&2
    cat "$out/summary.md"
    return "$failed"
}

# summarize GPU WHY MANIFEST: the markdown summary of OUT's records and verdicts.
summarize() {
    python3 - "$out" "$1" "$2" "$3" "$procs" "$(left)" "${GPU_CHECK_ROUNDS:-3}" <<'PY'
import json, statistics, sys
out, gpu, why, manifest, procs, left, rounds = sys.argv[1:8]
rounds = int(rounds)
records = [json.loads(line) for line in open(f"{out}/records.jsonl")]
verdicts = [json.loads(line) for line in open(f"{out}/smoke.jsonl")]
print("# GPU check\n")
print(f"GPU: {gpu}" if gpu else f"**GPU part SKIPPED**: {why}. The smoke ran on the simulated "
      "GPU (DIFFUSE_DEVICE=sim); only the CPU timings ran.")
try:
    print("\nBundle: " + "; ".join(open(manifest).read().strip().splitlines()))
except OSError:
    pass
print(f"\nBudget left at the end: {left} s.\n")
print("## Smoke (--gpu --jit sync, scripts/test.sh sizes)\n")
print("| app | device | check | gpu points | h2d B/iter | d2h B/iter | syncs/iter | launches/iter | verdict |")
print("|---|---|---|---|---|---|---|---|---|")
for v in verdicts:
    cells = [v.get(k) for k in ("check", "gpu_points", "h2d_bytes_per_iter", "d2h_bytes_per_iter",
                                "device_syncs_per_iter", "kernel_launches_per_iter")]
    verdict = "ok" + (" (strict)" if v["strict"] else "") if v["ok"] else "FAIL: " + "; ".join(v["problems"])
    print(f"| {v['app']} | {v['label']} | " + " | ".join("" if c is None else f"{c:g}" for c in cells)
          + f" | {verdict} |")
print("\n## Timings (ms per iteration, median of the rounds that ran)\n")
systems = [("diffuse-gpu", "diffuse GPU"), ("diffuse-cpu", f"diffuse CPU ({procs} procs)"),
           ("cupy", "CuPy"), ("jax", "JAX"), ("legion-cpu", f"Legion CPU ({procs} procs)"),
           ("legion-gpu", "Legion GPU")]
problems = []
for r in records:
    if r["part"] == "timing" and (r["app"], r["n"]) not in problems:
        problems.append((r["app"], r["n"]))
print("| problem | " + " | ".join(title for _, title in systems)
      + " | CuPy / diffuse GPU | Legion CPU / diffuse CPU |")
print("|---|" + "---|" * (len(systems) + 2))


def cell(app, n, system):
    """The median ms/iter of `system` on the problem (None when no run timed it) and the
    table's text for it."""
    runs = [r for r in records if r["part"] == "timing" and r["system"] == system
            and r["app"] == app and r["n"] == n]
    timed = [r for r in runs if "seconds_per_iter" in r and r["iters"] > 0]
    if timed:
        median = statistics.median(r["seconds_per_iter"] * 1e3 for r in timed)
        text = f"{median:.3f}" + (f" ({len(timed)} of {rounds})" if len(timed) < rounds else "")
        if system == "diffuse-gpu" and not all(r["gpu_points"] > 0 for r in timed):
            text += " (no GPU points!)"
        return median, text
    if any("skipped" in r for r in runs):
        return None, next(r["skipped"] for r in runs if "skipped" in r)
    if not gpu and system not in ("diffuse-cpu", "legion-cpu"):
        return None, "skipped (no GPU)"
    failures = [r["failed"] for r in runs if "failed" in r]
    if failures:
        return None, "failed (exit " + ", ".join(failures) + ")"
    return None, "-"


for app, n in problems:
    cells = {system: cell(app, n, system) for system, _ in systems}
    (ours, _), (cupy, _) = cells["diffuse-gpu"], cells["cupy"]
    (cpu, _), (legion_cpu, _) = cells["diffuse-cpu"], cells["legion-cpu"]
    ratio = f"{cupy / ours:.2f}x" if ours and cupy else "-"
    legion_ratio = f"{legion_cpu / cpu:.2f}x" if cpu and legion_cpu else "-"
    print(f"| {app} {n} | " + " | ".join(text for _, text in cells.values())
          + f" | {ratio} | {legion_ratio} |")
print("\nCuPy / diffuse GPU above 1: diffuse is faster. Exit statuses: 124 killed by the "
      "per-run or overall time limit, 125 not started (budget spent). Every record: "
      "records.jsonl; stderr of every run: logs.tar.gz.")
PY
}

# --smoke BIN OUT.
smoke_only() {
    apps=("$1")
    mkdir -p "$2/logs"
    out=$(cd "$2" && pwd)
    here=$(cd "$(dirname "$0")" && pwd)
    deadline=$((SECONDS + ${GPU_CHECK_BUDGET:-480}))
    : >"$out/records.jsonl"
    : >"$out/smoke.jsonl"
    smoke "$([ "${DIFFUSE_DEVICE:-}" = sim ] && echo simulated || echo gpu)"
    return "$failed"
}

case "${1:-}" in
--bundle)
    [ $# -eq 2 ] || usage
    bundle "$2"
    ;;
--smoke)
    [ $# -eq 3 ] || usage
    smoke_only "$2" "$3"
    ;;
--from)
    [ $# -eq 3 ] || usage
    from_bundle "$2" "$3"
    ;;
*) usage ;;
esac
