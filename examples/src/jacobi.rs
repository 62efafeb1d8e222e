//! Dense Jacobi iteration for `A x = b`, written with the array library as the cuNumeric
//! benchmark writes it: split `A = D + R` once, then iterate `x = (b - R @ x) / d`.
//!
//! `A` is a seeded random `n x n` matrix made strictly diagonally dominant (so the iteration
//! converges); each timed iteration is one matvec and two vector operations. The check
//! compares `x` after all iterations with a plain sequential Jacobi loop from the same start.

use diffuse_array::{random, Array, DType, Distribution};

use crate::common::{ensure_square_fits, extent, max_error, AppArgs, RunRecord, Runtime};

/// The matrix's off-diagonal part `R` (row-major, zero diagonal) and its diagonal `d`, from
/// uniform entries in [0, 1) with `n` added to the diagonal.
fn split_system(entries: &[f64], n: usize) -> (Vec<f64>, Vec<f64>) {
    let mut off_diagonal = entries.to_vec();
    let mut diagonal = Vec::with_capacity(n);
    for i in 0..n {
        diagonal.push(entries[i * n + i] + n as f64);
        off_diagonal[i * n + i] = 0.0;
    }
    (off_diagonal, diagonal)
}

/// `iters` Jacobi sweeps from `x = 0` as plain loops.
fn reference(off_diagonal: &[f64], diagonal: &[f64], b: &[f64], iters: usize) -> Vec<f64> {
    let n = b.len();
    let mut x = vec![0.0; n];
    let mut next = vec![0.0; n];
    for _ in 0..iters {
        for i in 0..n {
            let row = &off_diagonal[i * n..(i + 1) * n];
            let rx: f64 = row.iter().zip(&x).map(|(r, x)| r * x).sum();
            next[i] = (b[i] - rx) / diagonal[i];
        }
        std::mem::swap(&mut x, &mut next);
    }
    x
}

/// Runs the benchmark: one warm-up sweep, `iters` timed ones, then the check.
pub fn run(args: &AppArgs) -> anyhow::Result<RunRecord> {
    anyhow::ensure!(args.n >= 1, "--n must be at least 1");
    // The matrix is read back, split into its off-diagonal part, and that copied into a
    // store: three n x n host matrices.
    ensure_square_fits(args, 3, args.n as u128, "matrix")?;
    let rt = Runtime::start(args)?;
    let cx = &rt.arrays;
    let n = extent(args.n)?;
    let unit = Distribution::Uniform {
        low: 0.0,
        high: 1.0,
    };
    let entries = random(cx, &[n, n], unit, 11, DType::F64)?.to_vec::<f64>()?;
    let (off_host, diag_host) = split_system(&entries, args.n);
    let b = random(cx, &[n], unit, 12, DType::F64)?;
    let off_diagonal = Array::from_vec(cx, &[n, n], off_host.clone())?;
    let diagonal = Array::from_vec(cx, &[n], diag_host.clone())?;

    let mut x = diffuse_array::zeros(cx, &[n], DType::F64)?;
    let m = rt.measure(args.iters, || {
        x = ((&b - off_diagonal.matvec(&x)?)? / &diagonal)?;
        Ok(())
    })?;

    let expected = reference(&off_host, &diag_host, &b.to_vec()?, args.iters + 1);
    let x = x.to_vec()?;
    Ok(rt
        .record("jacobi", args, m, max_error(&x, &expected))
        .with_result(&[&x]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::check_app;

    #[test]
    fn jacobi_matches_the_sequential_loop() {
        // The matvec runs over a 2-d grid and the vector operations over a 1-d one: only the
        // subtraction and the division fuse.
        check_app(run, (37, 4), &[1, 2, 3, 4], 3.0, (3.0, 2.0));
    }

    #[test]
    fn the_reference_converges_to_the_solution() {
        let n = 5;
        let entries: Vec<f64> = (0..n * n).map(|k| ((k * 7) % 11) as f64 / 11.0).collect();
        let (off, diag) = split_system(&entries, n);
        let b: Vec<f64> = (0..n).map(|i| i as f64 + 1.0).collect();
        let x = reference(&off, &diag, &b, 60);
        for i in 0..n {
            let ax: f64 = (0..n).map(|j| off[i * n + j] * x[j]).sum::<f64>() + diag[i] * x[i];
            assert!((ax - b[i]).abs() < 1e-10, "row {i}: {ax} vs {}", b[i]);
        }
    }
}
