//! The Krylov solvers: equal to the sequential loops of `solvers/reference.rs` (dot products
//! summed in another order, so to rounding) on 1 to 3 processors, from any `x0`, with and
//! without a preconditioner and however far apart the checks; SciPy's `rtol`, `atol`,
//! `maxiter`, `callback` and `info`; and multigrid-preconditioned CG.

#[path = "solvers/reference.rs"]
mod reference;

use std::sync::Arc;

use diffuse_array::{Array, ArrayContext};
use diffuse_sparse::solvers::{
    self, injection, interpolation, BiCgStab, Callback, Cg, Cgs, Krylov, Restriction,
    SharedPreconditioner, Solution, SolveOptions, Status, VCycle,
};
use diffuse_sparse::{generators, CsrMatrix, HostCsr, IndexWidth, SparseError, Triplets};

use crate::spmv::{bits, cx, matrix, vector};

/// A reference loop: `(a, m, b, x0, iterations) -> x`.
type Reference = fn(&HostCsr, Option<&HostCsr>, &[f64], &[f64], usize) -> Vec<f64>;

/// The Poisson matrix of an `n x n` grid, on the host and in `c`.
fn poisson(c: &ArrayContext, n: i64) -> (HostCsr, CsrMatrix) {
    matrix(c, &generators::poisson_2d(n).unwrap(), IndexWidth::I32)
}

/// A diagonal SPD preconditioner with uneven entries, on the host and in `c`.
fn jacobi_like(c: &ArrayContext, rows: i64) -> (HostCsr, CsrMatrix) {
    let mut t = Triplets::new(rows, rows).unwrap();
    for i in 0..rows {
        t.push(i, i, 1.0 / (4.0 + (i % 3) as f64)).unwrap();
    }
    matrix(c, &t, IndexWidth::I32)
}

fn max_error(got: &[f64], want: &[f64]) -> f64 {
    assert_eq!(got.len(), want.len());
    got.iter()
        .zip(want)
        .map(|(g, w)| (g - w).abs())
        .fold(0.0, f64::max)
}

/// `K` for exactly `iterations` iterations (no tolerance).
fn exactly<K: Krylov>(
    a: &CsrMatrix,
    b: &Array,
    x0: Option<Array>,
    m: Option<SharedPreconditioner>,
    iterations: usize,
    check_every: usize,
) -> Solution<K> {
    let options = SolveOptions {
        x0,
        rtol: 0.0,
        maxiter: Some(iterations),
        m,
        check_every,
        ..SolveOptions::default()
    };
    solvers::solve::<K>(a, b, &options, &mut ()).unwrap()
}

fn agrees_with_reference<K: Krylov>(reference: Reference) {
    let rows = 49usize;
    let b_host: Vec<f64> = (0..rows).map(|i| 1.0 + (i % 5) as f64).collect();
    let x0_host: Vec<f64> = (0..rows).map(|i| ((i * 7) % 11) as f64 / 11.0).collect();
    for procs in 1..=3 {
        let c = cx(procs);
        let (host, a) = poisson(&c, 7);
        let (m_host, m) = jacobi_like(&c, rows as i64);
        let b = vector(&c, &b_host);
        for with_x0 in [false, true] {
            for with_m in [false, true] {
                let start = if with_x0 {
                    x0_host.clone()
                } else {
                    vec![0.0; rows]
                };
                let want = reference(&host, with_m.then_some(&m_host), &b_host, &start, 12);
                let mut xs = Vec::new();
                for check_every in [1, 5] {
                    let solution = exactly::<K>(
                        &a,
                        &b,
                        with_x0.then(|| vector(&c, &x0_host)),
                        with_m.then(|| Arc::new(m.clone()) as SharedPreconditioner),
                        12,
                        check_every,
                    );
                    assert_eq!(solution.iterations, 12);
                    assert_eq!(solution.status, Status::NotConverged);
                    assert_eq!(solution.info(), 12);
                    let x = solution.x().to_vec::<f64>().unwrap();
                    let error = max_error(&x, &want);
                    assert!(
                        error <= 1e-10,
                        "{} procs {procs} x0 {with_x0} M {with_m}: x differs from the \
                         reference by {error}",
                        K::NAME
                    );
                    xs.push(bits(&x));
                }
                assert_eq!(xs[0], xs[1], "{}: checks change the result", K::NAME);
            }
        }
    }
}

#[test]
fn cg_equals_the_sequential_loops() {
    agrees_with_reference::<Cg>(reference::cg);
}

#[test]
fn bicgstab_equals_the_sequential_loops() {
    agrees_with_reference::<BiCgStab>(reference::bicgstab);
}

#[test]
fn cgs_equals_the_sequential_loops() {
    agrees_with_reference::<Cgs>(reference::cgs);
}

/// `||b - A x|| / ||b||` on the host, with `b` all ones.
fn true_residual(host: &HostCsr, x: &[f64]) -> f64 {
    let ax = host.matvec(x).unwrap();
    let r: f64 = ax.iter().map(|ax| (1.0 - ax) * (1.0 - ax)).sum();
    (r / x.len() as f64).sqrt()
}

/// Each method stops at the first check under `max(atol, rtol ||b||)`: its residual is
/// below, one iteration fewer is not (SciPy's `info` = the iterations run), and the callback
/// sees every iterate, the last one the solution.
fn stops_at_the_tolerance<K: Krylov>() {
    let c = cx(2);
    let (host, a) = poisson(&c, 12);
    let b = vector(&c, &[1.0; 144]);
    let b_norm = 12.0;
    for (rtol, atol) in [(1e-8, 0.0), (0.0, 1e-3), (1e-8, 1e-3)] {
        let tol = f64::max(atol, rtol * b_norm);
        let mut seen = Vec::new();
        let options = SolveOptions {
            rtol,
            atol,
            ..SolveOptions::default()
        };
        let mut callback = Callback(|x: &Array| -> Result<(), SparseError> {
            seen.push(x.to_vec::<f64>()?);
            Ok(())
        });
        let solution = solvers::solve::<K>(&a, &b, &options, &mut callback).unwrap();
        let (iterations, name) = (solution.iterations, K::NAME);
        assert_eq!(solution.info(), 0, "{name} rtol {rtol} atol {atol}");
        assert!(
            solution.residual < tol,
            "{name}: {} >= {tol}",
            solution.residual
        );
        assert!(iterations > 2 && iterations < 1440, "{name}: {iterations}");
        let x = solution.x().to_vec::<f64>().unwrap();
        assert!(true_residual(&host, &x) < 10.0 * tol / b_norm, "{name}");
        assert_eq!(seen.len(), iterations, "{name}");
        // BiCGSTAB may stop half-way through an iteration it neither counts nor reports.
        if name != BiCgStab::NAME {
            assert_eq!(seen.last().map(|v| bits(v)), Some(bits(&x)), "{name}");
        }
        let short = SolveOptions {
            maxiter: Some(iterations - 1),
            ..options
        };
        let cut = solvers::solve::<K>(&a, &b, &short, &mut ()).unwrap();
        assert_eq!(cut.status, Status::NotConverged, "{name}");
        assert_eq!(cut.info(), iterations as i64 - 1, "{name}");
        assert!(cut.residual >= tol, "{name}");
    }
}

#[test]
fn solvers_stop_at_the_tolerance() {
    stops_at_the_tolerance::<Cg>();
    stops_at_the_tolerance::<BiCgStab>();
    stops_at_the_tolerance::<Cgs>();
}

/// Without `maxiter` a method stops at 10 times the rows, as SciPy; a system it solves
/// exactly between two checks (the 2 x 2 grid) converges rather than breaking down.
#[test]
fn maxiter_defaults_to_ten_times_the_rows_and_exact_solutions_converge() {
    let c = cx(1);
    let mut t = Triplets::new(3, 3).unwrap();
    for (row, col, value) in [(0, 0, 1.0), (1, 1, 1.0), (2, 2, 1.0), (0, 1, 5.0)] {
        t.push(row, col, value).unwrap();
    }
    let (_, skew) = matrix(&c, &t, IndexWidth::I32);
    let b = vector(&c, &[1.0; 3]);
    let options = SolveOptions {
        rtol: 1e-300,
        ..SolveOptions::default()
    };
    let solution = solvers::solve::<Cg>(&skew, &b, &options, &mut ()).unwrap();
    assert_eq!(solution.status, Status::NotConverged);
    assert_eq!((solution.iterations, solution.info()), (30, 30));
    let (host, a) = poisson(&c, 2);
    let b = vector(&c, &[1.0; 4]);
    for check_every in [1, 10] {
        let options = SolveOptions {
            rtol: 0.0,
            maxiter: Some(200),
            check_every,
            ..SolveOptions::default()
        };
        for solution in [
            solvers::solve::<Cg>(&a, &b, &options, &mut ()).map(|s| (s.info(), s.x().clone())),
            solvers::solve::<Cgs>(&a, &b, &options, &mut ()).map(|s| (s.info(), s.x().clone())),
        ] {
            let (info, x) = solution.unwrap();
            assert_eq!(info, 0);
            assert!(true_residual(&host, &x.to_vec::<f64>().unwrap()) < 1e-12);
        }
    }
}

/// An indefinite matrix where `p . A p` is exactly 0 in the first iteration: a breakdown,
/// `info < 0`, found however far apart the checks are.
#[test]
fn a_breakdown_is_a_negative_info() {
    let c = cx(1);
    let mut t = Triplets::new(2, 2).unwrap();
    t.push(0, 0, 1.0).unwrap();
    t.push(1, 1, -1.0).unwrap();
    let (_, a) = matrix(&c, &t, IndexWidth::I32);
    let b = vector(&c, &[1.0, 1.0]);
    for check_every in [1, 7] {
        let options = SolveOptions {
            maxiter: Some(30),
            check_every,
            ..SolveOptions::default()
        };
        let solution = solvers::solve::<Cg>(&a, &b, &options, &mut ()).unwrap();
        assert_eq!(solution.status, Status::Breakdown);
        assert!(solution.info() < 0);
        assert_eq!(solution.iterations, 1);
    }
}

/// Vectors of the wrong size and options out of range are errors naming them; a failing
/// callback stops the run with its error.
#[test]
fn bad_inputs_are_errors() {
    let c = cx(1);
    let (_, a) = poisson(&c, 3);
    let short = vector(&c, &[1.0; 4]);
    let b = vector(&c, &[1.0; 9]);
    let message = |r: Result<Solution<Cg>, SparseError>| r.err().unwrap().to_string();
    let m = message(solvers::solve(
        &a,
        &short,
        &SolveOptions::default(),
        &mut (),
    ));
    assert!(m.contains("b has shape") && m.contains("9 rows"), "{m}");
    let options = SolveOptions {
        x0: Some(short),
        ..SolveOptions::default()
    };
    let m = message(solvers::solve(&a, &b, &options, &mut ()));
    assert!(m.contains("x0 has shape"), "{m}");
    for options in [
        SolveOptions {
            check_every: 0,
            ..SolveOptions::default()
        },
        SolveOptions {
            rtol: f64::NAN,
            ..SolveOptions::default()
        },
        SolveOptions {
            atol: -1.0,
            ..SolveOptions::default()
        },
    ] {
        let m = message(solvers::solve(&a, &b, &options, &mut ()));
        assert!(m.contains("bad solver option"), "{m}");
    }
    let mut failing = Callback(|_: &Array| -> Result<(), SparseError> {
        Err(SparseError::Caller {
            what: "callback",
            reason: "stop".into(),
        })
    });
    let m = message(solvers::solve(
        &a,
        &b,
        &SolveOptions::default(),
        &mut failing,
    ));
    assert_eq!(m, "callback failed: stop");
    let (_, not_a_grid) = poisson(&c, 4);
    let m = VCycle::new(&c, &not_a_grid, Restriction::Injection)
        .err()
        .unwrap()
        .to_string();
    assert!(m.contains("n = 2^k - 1") && m.contains("16 x 16"), "{m}");
}

#[test]
fn transfers_are_what_their_stencils_say() {
    // Interpolation of a constant coarse field is the constant inside and tapers at the
    // boundary; injection picks the odd points.
    let p = interpolation(7, 3).unwrap();
    let sums: f64 = p.entries().iter().map(|&(_, _, v)| v).sum();
    assert_eq!(sums, 9.0 * 4.0, "each coarse point spreads weight 4");
    let r = injection(7, 3).unwrap();
    assert!(r
        .entries()
        .iter()
        .all(|&(row, col, v)| v == 1.0 && col == (2 * (row / 3) + 1) * 7 + 2 * (row % 3) + 1));
    assert_eq!(solvers::grid_side(49), Some(7));
    assert_eq!(solvers::grid_side(36), None);
}

/// CG preconditioned by the V-cycle solves the Poisson system in far fewer iterations than
/// CG alone, on any processor count; with full weighting in a handful at any size.
#[test]
fn multigrid_preconditioned_cg_converges_fast() {
    let iterations = |procs: usize, n: i64, restriction: Option<Restriction>| {
        let c = cx(procs);
        let (host, a) = poisson(&c, n);
        let rows = (n * n) as usize;
        let b = vector(&c, &vec![1.0; rows]);
        let m =
            restriction.map(|r| Arc::new(VCycle::new(&c, &a, r).unwrap()) as SharedPreconditioner);
        let options = SolveOptions {
            rtol: 1e-8,
            m,
            ..SolveOptions::default()
        };
        let solution = solvers::solve::<Cg>(&a, &b, &options, &mut ()).unwrap();
        assert_eq!(solution.info(), 0);
        let x = solution.x().to_vec::<f64>().unwrap();
        assert!(true_residual(&host, &x) < 1e-7);
        solution.iterations
    };
    let cg = iterations(2, 31, None);
    for procs in 1..=3 {
        let gmg = iterations(procs, 31, Some(Restriction::Injection));
        assert!(gmg * 3 < cg * 2, "gmg {gmg} iterations vs cg {cg}");
    }
    for n in [31, 63] {
        let gmg = iterations(2, n, Some(Restriction::FullWeighting));
        assert!(gmg <= 9, "n {n}: {gmg}");
    }
}
