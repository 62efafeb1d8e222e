"""NumPy programs as people write them that diffuse runs entirely natively: views with
steps, newaxis and transposes, reductions along axes, arg reductions, integer and bitwise
arithmetic. Run as `native.py numpy|diffuse`: the import line is the only difference; any
fallback to NumPy is an error here; prints the results as JSON."""

import json
import sys
import warnings

if sys.argv[1] == "diffuse":
    import diffuse.numpy as np

    warnings.filterwarnings("error", message="diffuse.numpy")
else:
    import numpy as np
out = {}

# 1. k-means: distances by broadcasting, labels by argmin, centers by masked sums.
np.random.seed(4)
pts = np.random.rand(300, 2)
centers = pts[:3].copy()
for _ in range(5):
    d = ((pts[:, None, :] - centers[None, :, :]) ** 2).sum(axis=2)
    labels = d.argmin(axis=1)
    for k in range(3):
        mask = labels == k
        centers[k] = (pts * mask[:, None]).sum(axis=0) / mask.sum()
out["kmeans"] = float(centers.sum())
out["kmeans_sizes"] = [int((labels == k).sum()) for k in range(3)]

# 2. Linear regression by gradient descent (X.T products).
np.random.seed(5)
X = np.random.rand(120, 4)
y = X @ np.array([1.0, -2.0, 0.5, 3.0]) + 0.1
w = np.zeros(4)
for _ in range(200):
    w -= 0.1 * (X.T @ (X @ w - y)) / X.shape[0]
out["regression"] = [float(v) for v in w]

# 3. Red-black Gauss-Seidel on a 1-d Poisson problem (strided slices).
u = np.zeros(65)
u[-1] = 1.0
for _ in range(100):
    u[1:-1:2] = 0.5 * (u[0:-2:2] + u[2::2])
    u[2:-1:2] = 0.5 * (u[1:-2:2] + u[3::2])
out["gauss_seidel"] = float(u.sum())

# 4. N-body accelerations (newaxis broadcasting, reductions along axes).
np.random.seed(6)
pos = np.random.rand(50, 3)
mass = np.random.rand(50) + 0.5
diff = pos[None, :, :] - pos[:, None, :]
r2 = (diff ** 2).sum(axis=-1) + 0.01
inv = r2 ** -1.5
acc = (diff * (inv * mass[None, :])[:, :, None]).sum(axis=1)
out["nbody"] = float(np.abs(acc).max())

# 5. Game of life on an integer grid (bitwise logic on bools).
g = np.zeros((20, 20), dtype=np.int64)
g[1, 2] = g[2, 3] = g[3, 1] = g[3, 2] = g[3, 3] = 1
for _ in range(8):
    n = (g[:-2, :-2] + g[:-2, 1:-1] + g[:-2, 2:] + g[1:-1, :-2] + g[1:-1, 2:]
         + g[2:, :-2] + g[2:, 1:-1] + g[2:, 2:])
    alive = g[1:-1, 1:-1] == 1
    g[1:-1, 1:-1] = ((n == 3) | (alive & (n == 2))).astype(np.int64)
out["life"] = int(g.sum())
out["life_where"] = [int(v) for v in np.argmax(g, axis=0)[:8]]

# 6. Image pyramid and transposes (steps, .T, keepdims normalisation).
img = np.arange(64.0 * 48).reshape(64, 48) % 17
half = 0.25 * (img[::2, ::2] + img[1::2, ::2] + img[::2, 1::2] + img[1::2, 1::2])
norm = half.T / half.T.max(axis=1, keepdims=True)
out["pyramid"] = float(norm.sum())
out["flip"] = float((img[::-1, ::-3] * img[:, ::3]).mean())

# 7. Integer arithmetic: modular hashing, floor division, shifts, counts.
a = np.arange(1000, dtype=np.int64)
h = (a * 2654435761 + 12345) % 1024
out["hash"] = int(((h >> 3) ^ (h & 7)).sum())
out["floordiv"] = int((a // 7 - (-a) // 7).sum())
out["count"] = int(np.count_nonzero(h % 3 == 0))
out["any_all"] = [bool(np.any(h > 1000)), bool(np.all(h >= 0)),
                  int(np.any(h.reshape(10, 100) > 1000, axis=1).sum())]

# 8. Power iteration (matrix-vector products, norms, in-place division).
M = (np.arange(36.0).reshape(6, 6) % 5) + np.eye(6) * 3
v = np.ones(6)
for _ in range(50):
    v = M @ v
    v /= np.linalg.norm(v)
out["power"] = float(v @ (M @ v))

# 9. Column statistics (mean/min/max/prod along axes, ravel, argmax flat).
T = (np.arange(30.0).reshape(5, 6) % 7) - 2.5
out["colstats"] = [float(x) for x in T.mean(axis=0)] + [float(T.min(axis=1).sum()),
                                                     float(T.max(axis=0).sum()),
                                                     float(np.prod(T[:2], axis=0).sum())]
out["argmax"] = int(T.argmax())
out["ravel"] = float(T.T.ravel()[::4].sum())

print(json.dumps(out))
