//! Dense factorizations and solves (`Array::dense`) of random matrices, on every processor
//! count, against their defining equations computed by plain loops: `L Lᵀ = A` with `L`
//! lower-triangular, `A A⁻¹ = I`, `A x = b` (vector and matrix right-hand sides), and the
//! determinant of a triangular matrix (the product of its diagonal); a matrix that is not
//! positive definite, and a singular one, report `NOT_FACTORED`. Windows of larger arrays
//! are factored as well as whole stores.

use diffuse_array::{Array, ArrayContext, Dense, FACTORED, NOT_FACTORED};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

use crate::{cx, ok, PROCS};

/// A diagonally dominant symmetric matrix of side `n` (positive definite), row-major.
fn spd(n: usize, seed: &[i8]) -> Vec<f64> {
    let mut a = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..=i {
            let v = f64::from(seed[(i * 7 + j * 3) % seed.len()]) / 8.0;
            a[i * n + j] = v;
            a[j * n + i] = v;
        }
        a[i * n + i] = 2.0 * n as f64 + 1.0;
    }
    a
}

/// `a` (row-major `n x n`) as an array: the whole store, or a window inside a larger one.
fn matrix(cx: &ArrayContext, a: &[f64], n: usize, windowed: bool) -> Result<Array, TestCaseError> {
    if !windowed {
        return ok(
            Array::from_vec(cx, &[n as i64, n as i64], a.to_vec()),
            "from_vec",
        );
    }
    let m = n + 2;
    let mut big = vec![99.0; m * m];
    for i in 0..n {
        big[(i + 1) * m + 1..(i + 1) * m + 1 + n].copy_from_slice(&a[i * n..(i + 1) * n]);
    }
    let whole = ok(Array::from_vec(cx, &[m as i64, m as i64], big), "from_vec")?;
    ok(
        whole.slice(&crate::slice_spec(
            &[(1, n + 1), (1, n + 1)],
            &[m, m],
            &[false, false],
        )),
        "slice",
    )
}

fn status(s: &Array) -> Result<i64, TestCaseError> {
    Ok(ok(s.to_vec::<i64>(), "status")?[0])
}

fn near(got: f64, want: f64, what: &str) -> Result<(), TestCaseError> {
    prop_assert!(
        (got - want).abs() <= 1e-9 * (1.0 + want.abs()),
        "{}: {} vs {}",
        what,
        got,
        want
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn factorizations_satisfy_their_equations(
        n in 1usize..=9,
        seed in prop::collection::vec(-8i8..=8, 1..40),
        rhs_columns in 0usize..=3,
        windowed in any::<bool>(),
    ) {
        let a = spd(n, &seed);
        for procs in PROCS {
            let cx = cx(procs);
            let m = matrix(&cx, &a, n, windowed)?;
            // Cholesky: L lower-triangular, L Lᵀ = A.
            let (l, s) = ok(m.dense(Dense::Cholesky, None), "cholesky")?;
            prop_assert_eq!(status(&s)?, FACTORED);
            let l = ok(l.to_vec::<f64>(), "to_vec")?;
            for i in 0..n {
                for j in 0..n {
                    if j > i {
                        prop_assert_eq!(l[i * n + j], 0.0);
                    }
                    let llt: f64 = (0..n).map(|k| l[i * n + k] * l[j * n + k]).sum();
                    near(llt, a[i * n + j], "L Lᵀ")?;
                }
            }
            // Inverse: A A⁻¹ = I.
            let (inv, s) = ok(m.dense(Dense::Inverse, None), "inverse")?;
            prop_assert_eq!(status(&s)?, FACTORED);
            let inv = ok(inv.to_vec::<f64>(), "to_vec")?;
            for i in 0..n {
                for j in 0..n {
                    let p: f64 = (0..n).map(|k| a[i * n + k] * inv[k * n + j]).sum();
                    near(p, if i == j { 1.0 } else { 0.0 }, "A A⁻¹")?;
                }
            }
            // Solve: A x = b, for a vector (0 columns asked) or a matrix of columns.
            let cols = rhs_columns.max(1);
            let b: Vec<f64> = (0..n * cols).map(|e| f64::from(seed[e % seed.len()])).collect();
            let shape: Vec<i64> = if rhs_columns == 0 { vec![n as i64] } else { vec![n as i64, cols as i64] };
            let bb = ok(Array::from_vec(&cx, &shape, b.clone()), "from_vec")?;
            let (x, s) = ok(m.dense(Dense::Solve, Some(&bb)), "solve")?;
            prop_assert_eq!(status(&s)?, FACTORED);
            let got_shape = x.shape();
            prop_assert_eq!(got_shape.as_slice(), shape.as_slice());
            let x = ok(x.to_vec::<f64>(), "to_vec")?;
            for i in 0..n {
                for c in 0..cols {
                    let ax: f64 = (0..n).map(|k| a[i * n + k] * x[k * cols + c]).sum();
                    near(ax, b[i * cols + c], "A x")?;
                }
            }
            // Determinant of L (triangular): the product of its diagonal.
            let lm = ok(Array::from_vec(&cx, &[n as i64, n as i64], l.clone()), "from_vec")?;
            let (det, s) = ok(lm.dense(Dense::Determinant, None), "det")?;
            prop_assert_eq!(status(&s)?, FACTORED);
            let want: f64 = (0..n).map(|i| l[i * n + i]).product();
            near(ok(det.to_vec::<f64>(), "to_vec")?[0], want, "det")?;
        }
    }
}

#[test]
fn matrices_that_cannot_be_factored_say_so() -> Result<(), TestCaseError> {
    for procs in PROCS {
        let cx = cx(procs);
        // Symmetric, indefinite: no Cholesky factor.
        let indefinite = ok(
            Array::from_vec(&cx, &[2, 2], vec![1.0, 2.0, 2.0, 1.0]),
            "from_vec",
        )?;
        let (_, s) = ok(indefinite.dense(Dense::Cholesky, None), "cholesky")?;
        prop_assert_eq!(status(&s)?, NOT_FACTORED);
        // Singular: two equal rows.
        let singular = ok(
            Array::from_vec(
                &cx,
                &[3, 3],
                vec![1.0, 2.0, 3.0, 1.0, 2.0, 3.0, 0.0, 1.0, 4.0],
            ),
            "from_vec",
        )?;
        for op in [Dense::Inverse, Dense::Solve] {
            let b = ok(Array::from_vec(&cx, &[3], vec![1.0, 1.0, 1.0]), "from_vec")?;
            let rhs = (op == Dense::Solve).then_some(&b);
            let (_, s) = ok(singular.dense(op, rhs), "dense")?;
            prop_assert_eq!(status(&s)?, NOT_FACTORED);
        }
        let (det, _) = ok(singular.dense(Dense::Determinant, None), "det")?;
        prop_assert_eq!(ok(det.to_vec::<f64>(), "to_vec")?[0], 0.0);
        // Not square, integers, mismatched right-hand sides: errors naming the operation.
        let wide = ok(Array::from_vec(&cx, &[2, 3], vec![1.0; 6]), "from_vec")?;
        let e = wide
            .dense(Dense::Inverse, None)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        prop_assert!(e.starts_with("inv: ") && e.contains("square"), "{}", e);
        let ints = ok(
            Array::from_vec(&cx, &[2, 2], vec![1i64, 0, 0, 1]),
            "from_vec",
        )?;
        prop_assert!(ints.dense(Dense::Cholesky, None).is_err());
        let short = ok(Array::from_vec(&cx, &[2], vec![1.0, 1.0]), "from_vec")?;
        let e = singular
            .dense(Dense::Solve, Some(&short))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        prop_assert!(
            e.starts_with("solve: ") && e.contains("do not match"),
            "{}",
            e
        );
    }
    Ok(())
}
