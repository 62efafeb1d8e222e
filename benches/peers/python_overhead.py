"""Per-operation cost of the Python layer: microseconds per array operation on a tiny array
(8 elements), for NumPy and diffuse.numpy (fused or unfused, as DIFFUSE_FUSION says; held by
NumPy, unless DIFFUSE_EAGER_ELEMENTS=0 makes it deferred).

Usage: python_overhead.py numpy|diffuse [--ops N]   (prints one JSON record)
Each iteration is ``y = x + 1.0; y = y * 2.0; y = y - x; y = y / 3.0`` (4 operations), and
every 100 iterations a scalar is read back, as a solver reading its residual would.
"""

import argparse
import json
import time


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("module", choices=["numpy", "diffuse"])
    parser.add_argument("--ops", type=int, default=200_000)
    args = parser.parse_args()
    if args.module == "diffuse":
        import diffuse.numpy as np
    else:
        import numpy as np
    x = np.ones(8)
    iters = args.ops // 4

    def run(n):
        y = x
        for i in range(n):
            y = x + 1.0
            y = y * 2.0
            y = y - x
            y = y / 3.0
            if i % 100 == 99:
                float(y.sum())
        return float(y.sum())

    run(200)  # warm-up: compiles and memoizes
    start = time.perf_counter()
    run(iters)
    seconds = time.perf_counter() - start
    record = {"module": args.module, "ops": iters * 4, "us_per_op": seconds / (iters * 4) * 1e6}
    if args.module == "diffuse":
        from diffuse import _state

        record["eager_elements"] = _state.eager_limit
    print(json.dumps(record))


if __name__ == "__main__":
    main()
