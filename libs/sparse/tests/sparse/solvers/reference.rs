//! The methods as plain sequential loops over host vectors, in SciPy's order: the
//! differential tests' reference. Each returns `x` after exactly `iterations` iterations
//! from `x0`, preconditioned by the product with `m` (none: the identity).

use diffuse_sparse::HostCsr;

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(a, b)| a * b).sum()
}

/// `a + s * b` element-wise.
fn axpy(a: &[f64], s: f64, b: &[f64]) -> Vec<f64> {
    a.iter().zip(b).map(|(a, b)| a + s * b).collect()
}

fn product(a: &HostCsr, x: &[f64]) -> Vec<f64> {
    a.matvec(x)
        .expect("the reference multiplies vectors of the matrix's size")
}

/// `m v`, or `v` without a preconditioner.
fn precondition(m: Option<&HostCsr>, v: &[f64]) -> Vec<f64> {
    m.map_or_else(|| v.to_vec(), |m| product(m, v))
}

/// `x0` and `b - A x0`.
fn start(a: &HostCsr, b: &[f64], x0: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let ax = product(a, x0);
    (
        x0.to_vec(),
        b.iter().zip(&ax).map(|(b, ax)| b - ax).collect(),
    )
}

/// CG.
pub fn cg(a: &HostCsr, m: Option<&HostCsr>, b: &[f64], x0: &[f64], iterations: usize) -> Vec<f64> {
    let (mut x, mut r) = start(a, b, x0);
    let (mut p, mut rho_prev) = (r.clone(), 0.0);
    for k in 0..iterations {
        let z = precondition(m, &r);
        let rho = dot(&r, &z);
        p = if k == 0 {
            z
        } else {
            axpy(&z, rho / rho_prev, &p)
        };
        let q = product(a, &p);
        let alpha = rho / dot(&p, &q);
        x = axpy(&x, alpha, &p);
        r = axpy(&r, -alpha, &q);
        rho_prev = rho;
    }
    x
}

/// BiCGSTAB.
pub fn bicgstab(
    a: &HostCsr,
    m: Option<&HostCsr>,
    b: &[f64],
    x0: &[f64],
    iterations: usize,
) -> Vec<f64> {
    let (mut x, mut r) = start(a, b, x0);
    let rtilde = r.clone();
    let (mut p, mut v) = (r.clone(), vec![0.0; b.len()]);
    let (mut rho_prev, mut alpha, mut omega) = (0.0, 0.0, 0.0);
    for k in 0..iterations {
        let rho = dot(&rtilde, &r);
        p = if k == 0 {
            r.clone()
        } else {
            let beta = (rho / rho_prev) * (alpha / omega);
            let pv = axpy(&p, -omega, &v);
            axpy(&r, beta, &pv)
        };
        let phat = precondition(m, &p);
        v = product(a, &phat);
        alpha = rho / dot(&rtilde, &v);
        let s = axpy(&r, -alpha, &v);
        let shat = precondition(m, &s);
        let t = product(a, &shat);
        omega = dot(&t, &s) / dot(&t, &t);
        x = axpy(&axpy(&x, alpha, &phat), omega, &shat);
        r = axpy(&s, -omega, &t);
        rho_prev = rho;
    }
    x
}

/// CGS.
pub fn cgs(a: &HostCsr, m: Option<&HostCsr>, b: &[f64], x0: &[f64], iterations: usize) -> Vec<f64> {
    let (mut x, mut r) = start(a, b, x0);
    let rtilde = r.clone();
    let (mut p, mut q, mut rho_prev) = (r.clone(), vec![0.0; b.len()], 0.0);
    for k in 0..iterations {
        let rho = dot(&rtilde, &r);
        let u = if k == 0 {
            p = r.clone();
            r.clone()
        } else {
            let beta = rho / rho_prev;
            let u = axpy(&r, beta, &q);
            p = axpy(&u, beta, &axpy(&q, beta, &p));
            u
        };
        let vhat = product(a, &precondition(m, &p));
        let alpha = rho / dot(&rtilde, &vhat);
        q = axpy(&u, -alpha, &vhat);
        let uq: Vec<f64> = u.iter().zip(&q).map(|(u, q)| u + q).collect();
        x = axpy(&x, alpha, &precondition(m, &uq));
        r = start(a, b, &x).1;
        rho_prev = rho;
    }
    x
}
