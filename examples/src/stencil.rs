//! The 5-point stencil of the Diffuse paper's Figure 2(a), written with the array library.
//!
//! ```text
//! center = grid[1:-1, 1:-1]; north = grid[:-2, 1:-1]; east = grid[1:-1, 2:]
//! west = grid[1:-1, :-2];     south = grid[2:, 1:-1]
//! for _ in range(iters):
//!     average = center + north + east + west + south
//!     work = 0.2 * average
//!     center[:] = work
//! ```
//! The five views alias one grid; the library turns each line into index tasks.

use anyhow::Context as _;
use diffuse_array::{s, Array};

use crate::common::{
    ensure_square_fits, extent, max_error, AppArgs, Measurement, RunRecord, Runtime,
};

/// Deterministic initial grid values in [0, 1), row-major over a `side x side` grid.
pub fn initial_grid(side: usize) -> Vec<f64> {
    (0..side * side)
        .map(|k| ((k / side) * 37 + (k % side) * 101 + 13) % 97)
        .map(|v| v as f64 / 97.0)
        .collect()
}

/// The stencil as a plain sequential loop over a row-major (n+2)^2 grid.
pub fn reference(grid: &mut [f64], n: usize, iters: usize) {
    let side = n + 2;
    let mut work = vec![0.0; n * n];
    for _ in 0..iters {
        for i in 0..n {
            for j in 0..n {
                let at = |di: usize, dj: usize| grid[(i + di) * side + (j + dj)];
                let avg = at(1, 1) + at(0, 1) + at(1, 2) + at(1, 0) + at(2, 1);
                work[i * n + j] = 0.2 * avg;
            }
        }
        for i in 0..n {
            grid[(i + 1) * side + 1..(i + 1) * side + 1 + n]
                .copy_from_slice(&work[i * n..(i + 1) * n]);
        }
    }
}

/// The side of the `(n + 2) x (n + 2)` grid of `--n`, once the grid and its host copies
/// (the initial values, the result read back, the reference's) fit in memory.
pub fn grid_side(args: &AppArgs) -> anyhow::Result<usize> {
    anyhow::ensure!(args.n >= 1, "--n must be at least 1");
    ensure_square_fits(args, 3, args.n as u128 + 2, "grid")?;
    // Fits in memory, so in `usize`.
    Ok(args.n + 2)
}

/// Runs the stencil: one warm-up iteration, `iters` timed ones, then the check.
pub fn run(args: &AppArgs) -> anyhow::Result<RunRecord> {
    let side = grid_side(args)?;
    let rt = Runtime::start(args)?;
    let n = extent(args.n)?;
    let init = initial_grid(side);
    let grid =
        Array::from_vec(&rt.arrays, &[n + 2, n + 2], init.clone()).context("creating the grid")?;
    let center = grid.slice(&s![1..-1, 1..-1])?;
    let north = grid.slice(&s![..-2, 1..-1])?;
    let east = grid.slice(&s![1..-1, 2..])?;
    let west = grid.slice(&s![1..-1, ..-2])?;
    let south = grid.slice(&s![2.., 1..-1])?;

    let m = rt.measure(args.iters, || {
        let average = (&center + &north + &east + &west + &south)?;
        let work = (0.2 * average)?;
        center.assign(&work)?;
        Ok(())
    })?;

    Ok(checked_record(
        &rt,
        "stencil",
        args,
        m,
        &grid.to_vec()?,
        init,
    ))
}

/// The record of the stencil run `app` (`args`, measured `m`) whose grid ended as `result`,
/// checked against the sequential loop run from the start grid `init` for the warm-up and
/// the timed iterations.
pub fn checked_record(
    rt: &Runtime,
    app: &'static str,
    args: &AppArgs,
    m: Measurement,
    result: &[f64],
    init: Vec<f64>,
) -> RunRecord {
    let mut expected = init;
    reference(&mut expected, args.n, args.iters + 1);
    rt.record(app, args, m, max_error(result, &expected))
        .with_result(&[result])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::check_app;

    #[test]
    fn stencil_matches_the_sequential_loop() {
        // Figure 2(d): the five arithmetic tasks fuse, the copy stays apart.
        check_app(run, (29, 3), &[1, 2, 3], 6.0, (6.0, 2.0));
    }
}
