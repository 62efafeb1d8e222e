"""Checks one app run with --gpu (on a real or the simulated GPU): its JSON record and its
stderr. Used by scripts/test.sh (apps on the simulated GPU) and scripts/gpu-check.sh.

Usage: check-gpu-record.py RECORD STDERR TOLERANCE [--strict] [--legion] [--app APP]
                           [--label TEXT]

Every run: the check within TOLERANCE, tasks issued, point tasks on the GPU (gpu_points >
0) and kernels launched there in the timed iterations, no warning on stderr that work ran
on the CPU instead, and for the solvers convergence (rtol 1e-8) before the iteration cap.
--strict adds steady-state residency: no bytes copied between host and device per timed
iteration and at most one device synchronization (the flush) per iteration. --legion: a run
on the Legion backend, whose GPU point tasks launch their kernels on Realm's streams (no
device counters: kernel launches are not required; Legion moves the data).

Prints one JSON line (app, label, the counters, ok, problems) and exits 1 when a check
failed. Standard library only: it runs where the bundle of gpu-check.sh runs.
"""

import argparse
import json
import re
import sys

# stderr lines saying that work meant for the GPU ran on the CPU.
CPU_FALLBACK = re.compile(r"no GPU kernel|running on the CPU|fallback|no GPU on this machine"
                          r"|fused kernels run on the CPU|run on CPUs", re.IGNORECASE)
# Terminal colours (tracing's log lines carry them).
COLOUR = re.compile(r"\x1b\[[0-9;]*m")
COUNTERS = ("check", "gpu_points", "h2d_bytes_per_iter", "d2h_bytes_per_iter",
            "device_syncs_per_iter", "kernel_launches_per_iter", "seconds_per_iter")


def problems_of(record, stderr, tolerance, strict, app, legion=False):
    """What is wrong with the run of `app` (an empty list when nothing is)."""
    problems = []
    if app is not None and record["app"] != app:
        problems.append(f"the record is {record['app']}'s, not {app}'s")
    if not record["check"] <= tolerance:
        problems.append(f"check {record['check']} exceeds {tolerance}")
    if not (record["tasks_issued_per_iter"] > 0 and record["seconds_per_iter"] > 0):
        problems.append("no tasks issued or no time measured")
    if not record["gpu_points"] > 0:
        problems.append("no point task ran on the GPU (gpu_points 0)")
    if not legion and not record["kernel_launches_per_iter"] > 0:
        problems.append("no kernel launched on the device in the timed iterations")
    fallback = [line for line in COLOUR.sub("", stderr).splitlines() if CPU_FALLBACK.search(line)]
    if fallback:
        more = f" (and {len(fallback) - 1} more such lines)" if len(fallback) > 1 else ""
        problems.append(f"stderr says work ran on the CPU: {fallback[0].strip()[:300]}{more}")
    if record["iterations"] is not None and not (
            record["converged"] is True and record["residual"] < 1e-8
            and record["iterations"] < 1000):
        problems.append(f"not converged: {record['iterations']} iterations, "
                        f"residual {record['residual']}")
    if strict:
        for counter in ("h2d_bytes_per_iter", "d2h_bytes_per_iter"):
            if record[counter] != 0:
                problems.append(f"{counter} {record[counter]} in steady state (want 0)")
        if not record["device_syncs_per_iter"] <= 1:
            problems.append(f"device_syncs_per_iter {record['device_syncs_per_iter']} "
                            "(want at most 1)")
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("record")
    parser.add_argument("stderr")
    parser.add_argument("tolerance", type=float)
    parser.add_argument("--strict", action="store_true",
                        help="also no host-device copies and at most one sync per iteration")
    parser.add_argument("--legion", action="store_true",
                        help="a Legion run: kernel launches are not counted")
    parser.add_argument("--app", help="the app the record must be of (named in the verdict "
                                      "also when there is no record)")
    parser.add_argument("--label", default="", help="a word kept in the verdict")
    args = parser.parse_args()
    with open(args.stderr, errors="replace") as f:
        stderr = f.read()
    try:
        with open(args.record) as f:
            record = json.loads(f.read().strip().splitlines()[-1])
        problems = problems_of(record, stderr, args.tolerance, args.strict, args.app,
                               args.legion)
        verdict = {"app": record["app"], **{c: record.get(c) for c in COUNTERS}}
    except (OSError, ValueError, IndexError, KeyError, TypeError) as e:
        problems = [f"no usable record in {args.record}: {e!r}"]
        verdict = {"app": args.app}
    verdict.update(label=args.label, strict=args.strict, ok=not problems, problems=problems)
    print(json.dumps(verdict))
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
