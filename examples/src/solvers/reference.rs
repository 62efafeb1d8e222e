//! The three methods as plain sequential loops over host vectors: the differential tests'
//! reference. Each returns `x` after exactly `iterations` iterations from `x = 0`.

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

/// CG.
pub fn cg(a: &HostCsr, b: &[f64], iterations: usize) -> Vec<f64> {
    let (mut x, mut r) = (vec![0.0; b.len()], b.to_vec());
    let (mut p, mut rho_prev) = (r.clone(), 0.0);
    for k in 0..iterations {
        let rho = dot(&r, &r);
        p = if k == 0 {
            r.clone()
        } else {
            axpy(&r, rho / rho_prev, &p)
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
pub fn bicgstab(a: &HostCsr, b: &[f64], iterations: usize) -> Vec<f64> {
    let (mut x, mut r, rtilde) = (vec![0.0; b.len()], b.to_vec(), b.to_vec());
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
        v = product(a, &p);
        alpha = rho / dot(&rtilde, &v);
        let s = axpy(&r, -alpha, &v);
        let t = product(a, &s);
        omega = dot(&t, &s) / dot(&t, &t);
        x = axpy(&axpy(&x, alpha, &p), omega, &s);
        r = axpy(&s, -omega, &t);
        rho_prev = rho;
    }
    x
}

/// CGS.
pub fn cgs(a: &HostCsr, b: &[f64], iterations: usize) -> Vec<f64> {
    let (mut x, mut r, rtilde) = (vec![0.0; b.len()], b.to_vec(), b.to_vec());
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
        let vhat = product(a, &p);
        let alpha = rho / dot(&rtilde, &vhat);
        q = axpy(&u, -alpha, &vhat);
        let uhat: Vec<f64> = u.iter().zip(&q).map(|(u, q)| u + q).collect();
        x = axpy(&x, alpha, &uhat);
        let ax = product(a, &x);
        r = b.iter().zip(&ax).map(|(b, ax)| b - ax).collect();
        rho_prev = rho;
    }
    x
}
