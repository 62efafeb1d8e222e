"""Classic NumPy snippets as people write them (heat equation by relaxation, Monte Carlo pi,
least squares by the normal equations, softmax, standardizing columns, cumsum and sort,
the logistic map, a distance matrix by broadcasting). Run as `classic.py numpy|diffuse`:
the import line is the only difference; prints the results as JSON."""

import json
import sys
import warnings

warnings.simplefilter("ignore")
if sys.argv[1] == "diffuse":
    import diffuse.numpy as np
else:
    import numpy as np
out = {}
# 1. heat equation (Jacobi relaxation on a grid)
u = np.zeros((64, 64)); u[0, :] = 100.0
for _ in range(50):
    u[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
out["heat"] = float(u.sum())
# 2. Monte Carlo pi
np.random.seed(0)
x = np.random.rand(100000); y = np.random.rand(100000)
out["pi"] = float(4.0 * (x * x + y * y <= 1.0).sum() / 100000)
# 3. least squares by normal equations
np.random.seed(1)
X = np.random.rand(200, 3); w = np.array([1.0, -2.0, 0.5]); t = X @ w + 0.01
out["lstsq"] = [float(v) for v in np.linalg.solve(X.T @ X, X.T @ t)]
# 4. softmax
z = np.linspace(-3, 3, 7); e = np.exp(z - z.max()); out["softmax"] = float((e / e.sum())[3])
# 5. standardize columns (axis reductions)
A = np.arange(12.0).reshape(3, 4); out["std"] = float(((A - A.mean(axis=0)) / A.std(axis=0)).sum())
# 6. cumulative / sorting
out["cumsum"] = float(np.cumsum(np.arange(10))[-1]); out["sort"] = float(np.sort(np.array([3.0, 1.0, 2.0]))[0])
# 7. logistic map, elementwise with scalars
r = np.linspace(2.5, 4.0, 1000); v = np.full(1000, 0.5)
for _ in range(100):
    v = r * v * (1 - v)
out["logistic"] = float(v.mean())
# 8. distance matrix via broadcasting
P = np.arange(6.0).reshape(3, 2); D = np.sqrt(((P[:, None, :] - P[None, :, :]) ** 2).sum(axis=-1)); out["dist"] = float(D.sum())
print(json.dumps(out))
