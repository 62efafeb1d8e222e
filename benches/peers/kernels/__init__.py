"""diffuse's own suite of NumPy kernels (issue 50): ``registry`` lists them, ``run.py`` runs
them on NumPy and on diffuse, validates and times them."""
