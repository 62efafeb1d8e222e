"""TorchSWE (the shallow-water solver of the Diffuse paper) on NumPy and on diffuse, unmodified
but for its one NumPy import, as JSON records.

Usage: torchswe.py --source DIR [--sizes 64x16,256x256,1024x1024] [--steps 20,100]
                   [--reps 3] [--backends embedded[,legion]] [--out FILE]

DIR holds TorchSWE v0.1 (github.com/piyueh/TorchSWE, tag v0.1: its `torchswe` package and
`cases/`); scripts/torchswe.sh fetches it. The program is not copied into diffuse: this script
makes two copies of its package in a temporary folder, one as it is and one whose
`import numpy as nplike` reads `import diffuse.numpy as nplike`, then runs the Kurganov and
Petrova (2007) case 4.2 set-up (its own `create_data.py`) at each size for a fixed number of
time steps (SSP-RK2, dt 1e-4), as `python -m torchswe CASE` in fresh processes.

For every size and step count, REPS repetitions interleave NumPy and diffuse (each backend),
and one record per run gives the solver's own "Run time (wall time)" (the time-marching loop)
and ms per step. diffuse runs with its fallback warnings as errors (a fallback fails the
run), and each diffuse run's saved solutions must equal, bit for bit, those of a NumPy run
with NumPy's AVX-512 loops off (`NPY_DISABLE_CPU_FEATURES`): on AVX-512 machines NumPy's
vectorized `pow` differs from libm's in the last bit, and `pow(h, 4)` is in the solver. The
diffuse runs turn them off too, as the arrays diffuse runs eagerly on NumPy (small ones) must
compute as that NumPy does.
Needs pyyaml, pydantic<2 and netCDF4 beside NumPy and diffuse.
"""

import argparse
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

# The case: Kurganov & Petrova (2007), 4.2, with a fixed step count and no adaptive dt.
CASE = "kurganov_petrova_2007/case_4.2"
NUMPY_IMPORT = "    import numpy as nplike\n"
DIFFUSE_IMPORT = "    import diffuse.numpy as nplike\n"
BASELINE_NUMPY = {"NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512_ICL"}
RUN_TIME = re.compile(r"Run time \(wall time\): ([0-9.eE+-]+) seconds")


def variants(source, root):
    """Copies of the `torchswe` package under root/numpy and root/diffuse (the second with
    the import changed); returns their PYTHONPATH folders."""
    paths = {}
    for name in ("numpy", "diffuse"):
        dest = root / name
        shutil.copytree(source / "torchswe", dest / "torchswe")
        paths[name] = dest
    init = paths["diffuse"] / "torchswe" / "__init__.py"
    text = init.read_text()
    if text.count(NUMPY_IMPORT) != 1:
        sys.exit(f"{init}: expected one line {NUMPY_IMPORT.strip()!r} (is this TorchSWE v0.1?)")
    init.write_text(text.replace(NUMPY_IMPORT, DIFFUSE_IMPORT))
    return paths


def make_case(source, numpy_path, folder, nx, ny, steps):
    """The case folder (config and initial data) for an nx x ny grid and `steps` steps."""
    folder.mkdir(parents=True)
    config = (source / "cases" / CASE / "config.yaml").read_text()
    config, found = re.subn(r"discretization: \[\d+, \d+\]",
                            f"discretization: [{nx}, {ny}]", config)
    config, found_out = re.subn(
        r'output: \[.*\]',
        f'output: ["t_start every_steps multiple", 0., {steps}, 1]\n'
        "  dt: 1.0e-4\n  adaptive: false", config)
    if found != 1 or found_out != 1:
        sys.exit(f"{CASE}/config.yaml: no discretization or output line to set")
    (folder / "config.yaml").write_text(config)
    shutil.copy(source / "cases" / CASE / "create_data.py", folder)
    subprocess.run([sys.executable, "create_data.py"], cwd=folder, check=True,
                   env=dict(os.environ, PYTHONPATH=str(numpy_path)), timeout=600)


def run(path, case, env_extra, strict):
    """One solver run in a fresh process on a fresh copy of `case`; (seconds, solutions)."""
    work = pathlib.Path(tempfile.mkdtemp(dir=case.parent))
    shutil.copytree(case, work, dirs_exist_ok=True)
    command = [sys.executable]
    if strict:
        command += ["-W", "error:diffuse.numpy"]
    command += ["-m", "torchswe", str(work)]
    env = dict(os.environ, PYTHONPATH=str(path), **env_extra)
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=3600)
    found = RUN_TIME.search(done.stdout + done.stderr)
    if done.returncode != 0 or not found:
        sys.exit(f"TorchSWE failed ({' '.join(command)}):\n{done.stdout}\n{done.stderr}")
    return float(found.group(1)), solutions(work / "solutions.nc")


def solutions(path):
    """The saved states (w, hu, hv at every saved time) as NumPy arrays."""
    import netCDF4
    import numpy

    with netCDF4.Dataset(path) as data:
        return {k: numpy.array(data[k][:]) for k in ("w", "hu", "hv")}


def same_bits(a, b):
    import numpy

    return all(a[k].tobytes() == b[k].tobytes() and a[k].shape == b[k].shape
               for k in ("w", "hu", "hv")) and not any(
                   numpy.isnan(a[k]).any() for k in a)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=pathlib.Path, required=True)
    parser.add_argument("--sizes", default="64x16,256x256,1024x1024")
    parser.add_argument("--steps", default="20,100")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--backends", default="embedded")
    parser.add_argument("--out", type=pathlib.Path)
    args = parser.parse_args()
    for module in ("yaml", "pydantic", "netCDF4", "diffuse.numpy"):
        try:
            __import__(module)
        except ImportError:
            sys.exit(f"torchswe.py needs {module} (scripts/torchswe.sh installs it)")
    if not (args.source / "torchswe").is_dir():
        sys.exit(f"{args.source}: no torchswe package (pass a TorchSWE v0.1 checkout)")
    out = open(args.out, "a") if args.out else sys.stdout
    records = []
    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp)
        paths = variants(args.source, root)
        for size in args.sizes.split(","):
            nx, ny = (int(v) for v in size.split("x"))
            for steps in (int(s) for s in args.steps.split(",")):
                case = root / f"case-{nx}x{ny}-{steps}"
                make_case(args.source, paths["numpy"], case, nx, ny, steps)
                _, reference = run(paths["numpy"], case, BASELINE_NUMPY, False)
                systems = [("numpy", paths["numpy"], {}, False)] + [
                    (f"diffuse-{b}", paths["diffuse"], {"DIFFUSE_BACKEND": b, **BASELINE_NUMPY},
                     True)
                    for b in args.backends.split(",")]
                for rep in range(args.reps):
                    for system, path, env, strict in systems:
                        seconds, got = run(path, case, env, strict)
                        record = {"app": "torchswe", "system": system, "nx": nx, "ny": ny,
                                  "steps": steps, "rep": rep, "seconds": seconds,
                                  "ms_per_step": seconds / steps * 1e3}
                        if strict:
                            record["bitwise_numpy"] = same_bits(got, reference)
                        print(json.dumps(record), file=out, flush=True)
                        records.append(record)
                        if strict and not record["bitwise_numpy"]:
                            sys.exit(f"{system} at {size}, {steps} steps: not NumPy's bits")
    summarize(records)


def summarize(records):
    """Median ms per step per system, size and step count, and diffuse's ratio to NumPy,
    as a Markdown table on stderr."""
    import statistics

    medians = {}
    for r in records:
        medians.setdefault((r["nx"], r["ny"], r["steps"]), {}).setdefault(
            r["system"], []).append(r["ms_per_step"])
    print("| size | steps | system | ms/step (median) | x NumPy's time |", file=sys.stderr)
    print("|---|---|---|---|---|", file=sys.stderr)
    for (nx, ny, steps), systems in medians.items():
        numpy_ms = statistics.median(systems["numpy"])
        for system, values in systems.items():
            ms = statistics.median(values)
            print(f"| {nx}x{ny} | {steps} | {system} | {ms:.2f} | {ms / numpy_ms:.2f} |",
                  file=sys.stderr)


if __name__ == "__main__":
    main()
