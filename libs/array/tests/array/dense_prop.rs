//! Dense factorizations, decompositions and solves (`Array::dense`) of random matrices, on
//! every processor count, against their defining equations computed by plain loops: `Q R =
//! A` with orthonormal `Q` and triangular `R`, `U diag(s) Vᵀ = A`, `A v = w v` for a
//! symmetric `A`, `L Lᵀ = A` with `L` lower-triangular, `A A⁻¹ = I`, `A x = b` (vector and
//! matrix right-hand sides), and the
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

/// The one result of an operation with one, and its status.
fn single((mut results, status): (Vec<Array>, Array)) -> (Array, Array) {
    (results.remove(0), status)
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
            let (l, s) = single(ok(m.dense(Dense::Cholesky, None), "cholesky")?);
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
            let (inv, s) = single(ok(m.dense(Dense::Inverse, None), "inverse")?);
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
            let (x, s) = single(ok(m.dense(Dense::Solve, Some(&bb)), "solve")?);
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
            let (det, s) = single(ok(lm.dense(Dense::Determinant, None), "det")?);
            prop_assert_eq!(status(&s)?, FACTORED);
            let want: f64 = (0..n).map(|i| l[i * n + i]).product();
            near(ok(det.to_vec::<f64>(), "to_vec")?[0], want, "det")?;
        }
    }
}

/// `a` (`rows x cols`, row-major) times `b` (`cols x width`).
fn product(a: &[f64], b: &[f64], rows: usize, cols: usize, width: usize) -> Vec<f64> {
    (0..rows * width)
        .map(|e| {
            (0..cols)
                .map(|k| a[(e / width) * cols + k] * b[k * width + e % width])
                .sum()
        })
        .collect()
}

/// `a` (`rows x cols`) transposed.
fn transposed(a: &[f64], rows: usize, cols: usize) -> Vec<f64> {
    (0..rows * cols)
        .map(|e| a[(e % rows) * cols + e / rows])
        .collect()
}

/// Checks that the `cols` columns of `q` (`rows x cols`) are orthonormal.
fn orthonormal_columns(
    q: &[f64],
    rows: usize,
    cols: usize,
    what: &str,
) -> Result<(), TestCaseError> {
    let gram = product(&transposed(q, rows, cols), q, cols, rows, cols);
    for (e, g) in gram.iter().enumerate() {
        near(*g, if e / cols == e % cols { 1.0 } else { 0.0 }, what)?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn decompositions_satisfy_their_equations(
        m in 1usize..7,
        n in 1usize..7,
        seed in prop::collection::vec(-8i8..=8, 1..40),
        complete in any::<bool>(),
        windowed in any::<bool>(),
    ) {
        let a: Vec<f64> = (0..m * n).map(|e| f64::from(seed[e % seed.len()]) / 4.0 + if e % (n + 1) == 0 { 3.0 } else { 0.0 }).collect();
        let k = m.min(n);
        for procs in PROCS {
            let cx = cx(procs);
            let stored = if windowed {
                let mut big = vec![99.0; (m + 1) * n];
                big[n..].copy_from_slice(&a);
                let whole = ok(Array::from_vec(&cx, &[m as i64 + 1, n as i64], big), "from_vec")?;
                ok(whole.slice(&crate::slice_spec(&[(1, m + 1), (0, n)], &[m + 1, n], &[false, false])), "slice")?
            } else {
                ok(Array::from_vec(&cx, &[m as i64, n as i64], a.clone()), "from_vec")?
            };
            // QR: Q R = A, Q's columns orthonormal, R upper-triangular.
            let (qr, s) = ok(stored.dense(Dense::Qr { complete }, None), "qr")?;
            prop_assert_eq!(status(&s)?, FACTORED);
            let q_cols = if complete { m } else { k };
            let q = ok(qr[0].to_vec::<f64>(), "q")?;
            let r = ok(qr[1].to_vec::<f64>(), "r")?;
            prop_assert_eq!((q.len(), r.len()), (m * q_cols, q_cols * n));
            orthonormal_columns(&q, m, q_cols, "QᵀQ")?;
            for (e, v) in product(&q, &r, m, q_cols, n).iter().enumerate() {
                near(*v, a[e], "Q R")?;
            }
            for i in 0..q_cols {
                for j in 0..i.min(n) {
                    prop_assert_eq!(r[i * n + j], 0.0, "R below its diagonal");
                }
            }
            // SVD: U diag(s) Vᵀ = A, singular values descending and non-negative.
            let (svd, s) = ok(stored.dense(Dense::Svd { full: complete }, None), "svd")?;
            prop_assert_eq!(status(&s)?, FACTORED);
            let (u_cols, v_rows) = if complete { (m, n) } else { (k, k) };
            let u = ok(svd[0].to_vec::<f64>(), "u")?;
            let sv = ok(svd[1].to_vec::<f64>(), "s")?;
            let vt = ok(svd[2].to_vec::<f64>(), "vt")?;
            prop_assert_eq!((u.len(), sv.len(), vt.len()), (m * u_cols, k, v_rows * n));
            prop_assert!(sv.windows(2).all(|w| w[0] >= w[1]) && sv.iter().all(|&x| x >= 0.0), "{:?}", sv);
            orthonormal_columns(&u, m, u_cols, "UᵀU")?;
            orthonormal_columns(&transposed(&vt, v_rows, n), n, v_rows, "V Vᵀ")?;
            let scaled: Vec<f64> = (0..m * k).map(|e| u[(e / k) * u_cols + e % k] * sv[e % k]).collect();
            for (e, v) in product(&scaled, &vt[..k * n], m, k, n).iter().enumerate() {
                near(*v, a[e], "U S Vᵀ")?;
            }
            // Eigen-decomposition of the symmetric AᵀA: (AᵀA) v = w v, w ascending.
            let ata = product(&transposed(&a, m, n), &a, n, m, n);
            let sym = ok(Array::from_vec(&cx, &[n as i64, n as i64], ata.clone()), "from_vec")?;
            let (eigh, s) = ok(sym.dense(Dense::Eigh, None), "eigh")?;
            prop_assert_eq!(status(&s)?, FACTORED);
            let w = ok(eigh[0].to_vec::<f64>(), "w")?;
            let v = ok(eigh[1].to_vec::<f64>(), "v")?;
            prop_assert!(w.windows(2).all(|p| p[0] <= p[1]), "{:?}", w);
            orthonormal_columns(&v, n, n, "VᵀV")?;
            let av = product(&ata, &v, n, n, n);
            for (e, x) in av.iter().enumerate() {
                near(*x, v[e] * w[e % n], "A v = w v")?;
            }
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
        let (_, s) = single(ok(indefinite.dense(Dense::Cholesky, None), "cholesky")?);
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
            let (_, s) = single(ok(singular.dense(op, rhs), "dense")?);
            prop_assert_eq!(status(&s)?, NOT_FACTORED);
        }
        let (det, _) = single(ok(singular.dense(Dense::Determinant, None), "det")?);
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
