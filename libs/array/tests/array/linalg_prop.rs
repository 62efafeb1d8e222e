//! Matrix products in every orientation, against a plain loop and against the product of
//! copied transposes:
//!
//! - `oriented_products_equal_the_loop`: `matmul_with` (both operands as stored or
//!   transposed in place) and `matvec_with` of random shapes from 0 to 9 (empty, 1xN, Nx1
//!   included), each matrix the whole store or a window inside a larger one, in `f64`,
//!   `f32`, `i64` and `i32`, on every processor count (fused with small windows, unfused,
//!   and compiled: see `fresh_cx`). The values are small integers, so every summation order
//!   gives the exact result and the comparison is exact for floats too.
//! - the same products followed by element-wise work that fuses with them (`2 c * c`).
//! - `transposes_read_in_place_equal_copied_transposes`: random `f64` values, larger shapes
//!   (past the GEMM's register tiles), within rounding of the same product of copies.

use diffuse_array::{Array, ArrayContext, Convert, Orientation};
use diffuse_ir::Element;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

use crate::{close, cx, ok, shape_of, PROCS};

/// One product: `op(A) (m x k)`, `op(B) (k x n)`, a vector of `k`, their orientations, and
/// whether the matrices are windows of larger arrays.
#[derive(Clone, Debug)]
struct Case {
    m: usize,
    k: usize,
    n: usize,
    a: Vec<i8>,
    b: Vec<i8>,
    x: Vec<i8>,
    orientations: [Orientation; 2],
    windowed: bool,
}

fn orientation() -> impl Strategy<Value = Orientation> {
    prop_oneof![Just(Orientation::AsStored), Just(Orientation::Transposed)]
}

fn case() -> impl Strategy<Value = Case> {
    (0usize..=9, 0usize..=9, 0usize..=9).prop_flat_map(|(m, k, n)| {
        let values = |len: usize| prop::collection::vec(-8i8..=8, len);
        (
            values(m * k),
            values(k * n),
            values(k),
            [orientation(), orientation()],
            any::<bool>(),
        )
            .prop_map(move |(a, b, x, orientations, windowed)| Case {
                m,
                k,
                n,
                a,
                b,
                x,
                orientations,
                windowed,
            })
    })
}

/// The stored extents of a matrix read as `rows x cols` with `orientation`.
fn stored(rows: usize, cols: usize, orientation: Orientation) -> [usize; 2] {
    match orientation {
        Orientation::AsStored => [rows, cols],
        Orientation::Transposed => [cols, rows],
    }
}

/// Element `(i, j)` of the matrix read with `orientation` from row-major `data` of `dims`.
fn read(data: &[i8], dims: [usize; 2], orientation: Orientation, i: usize, j: usize) -> i64 {
    let (r, c) = match orientation {
        Orientation::AsStored => (i, j),
        Orientation::Transposed => (j, i),
    };
    i64::from(data[r * dims[1] + c])
}

/// `op(A) op(B)` (row-major `m x n`) and `op(A) x` by the plain loops.
fn model(p: &Case) -> (Vec<i64>, Vec<i64>) {
    let [oa, ob] = p.orientations;
    let (da, db) = (stored(p.m, p.k, oa), stored(p.k, p.n, ob));
    let c = (0..p.m * p.n)
        .map(|ij| {
            let (i, j) = (ij / p.n.max(1), ij % p.n.max(1));
            (0..p.k)
                .map(|q| read(&p.a, da, oa, i, q) * read(&p.b, db, ob, q, j))
                .sum()
        })
        .collect();
    let y = (0..p.m)
        .map(|i| {
            (0..p.k)
                .map(|q| read(&p.a, da, oa, i, q) * i64::from(p.x[q]))
                .sum()
        })
        .collect();
    (c, y)
}

/// `data` (row-major, `dims`) as an array of `T`: the whole store, or the window of it
/// inside a larger array with a border of one element (two on the right) when `windowed`.
fn matrix<T: Element + From<i8>>(
    cx: &ArrayContext,
    data: &[i8],
    dims: [usize; 2],
    windowed: bool,
) -> Result<Array, TestCaseError> {
    let values = |v: &[i8]| v.iter().map(|&e| T::from(e)).collect::<Vec<T>>();
    let [r, c] = dims;
    if !windowed {
        return ok(
            Array::from_vec(cx, &[r as i64, c as i64], values(data)),
            "from_vec",
        );
    }
    let (br, bc) = (r + 2, c + 3);
    let mut base = vec![T::from(7); br * bc];
    for i in 0..r {
        for j in 0..c {
            base[(i + 1) * bc + j + 1] = T::from(data[i * c + j]);
        }
    }
    let base = ok(
        Array::from_vec(cx, &[br as i64, bc as i64], base),
        "from_vec",
    )?;
    ok(
        base.slice(&crate::slice_spec(
            &[(1, r + 1), (1, c + 1)],
            &[br, bc],
            &[false, true],
        )),
        "slice",
    )
}

/// The values of `a` (small integers, exact in every dtype) as `i64`.
fn values<T: Convert>(a: &Array) -> Result<Vec<i64>, TestCaseError> {
    Ok(ok(a.to_vec::<T>(), "to_vec")?
        .into_iter()
        .map(Convert::as_i64)
        .collect())
}

/// Checks every product of `p` in dtype `T` on every processor count.
fn check<T: Convert + From<i8>>(p: &Case) -> Result<(), TestCaseError> {
    let (c, y) = model(p);
    let twice_squared: Vec<i64> = c.iter().map(|&e| 2 * e * e).collect();
    let [oa, ob] = p.orientations;
    for procs in PROCS {
        let cx = cx(procs);
        let a = matrix::<T>(&cx, &p.a, stored(p.m, p.k, oa), p.windowed)?;
        let b = matrix::<T>(&cx, &p.b, stored(p.k, p.n, ob), p.windowed)?;
        let x = ok(
            Array::from_vec(
                &cx,
                &[p.k as i64],
                p.x.iter().map(|&e| T::from(e)).collect(),
            ),
            "from_vec",
        )?;
        let product = ok(a.matmul_with(oa, &b, ob), "matmul_with")?;
        prop_assert_eq!(shape_of(&product), vec![p.m, p.n]);
        // Element-wise work on the product, which fuses with it.
        let doubled = ok(&product + &product, "add")?;
        let chained = ok(&doubled * &product, "mul")?;
        prop_assert_eq!(
            values::<T>(&product)?,
            c.clone(),
            "procs {}: {:?}",
            procs,
            p.orientations
        );
        prop_assert_eq!(
            values::<T>(&chained)?,
            twice_squared.clone(),
            "procs {}: chained",
            procs
        );
        for (what, got) in [
            ("matvec_with", ok(a.matvec_with(oa, &x), "matvec_with")?),
            (
                "matmul_with",
                ok(a.matmul_with(oa, &x, ob), "matmul_with a vector")?,
            ),
        ] {
            prop_assert_eq!(shape_of(&got), vec![p.m]);
            prop_assert_eq!(
                values::<T>(&got)?,
                y.clone(),
                "procs {}: {} {:?}",
                procs,
                what,
                oa
            );
        }
    }
    Ok(())
}

/// Row-major `rows x cols` values in [-1, 1) from `seed` (a xorshift), mixed in magnitude so
/// that summation order changes the rounding.
fn mixed(rows: usize, cols: usize, seed: u64) -> Vec<f64> {
    let mut s = seed | 1;
    (0..rows * cols)
        .map(|i| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let unit = (s >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0;
            unit * if i % 5 == 0 { 1e3 } else { 1.0 }
        })
        .collect()
}

/// `a bᵀ` for row-major `m x k` `a` and `n x k` `b` by the plain loop, with the sums of the
/// products' magnitudes (the rounding scale of each element).
fn product_loop(a: &[f64], b: &[f64], m: usize, k: usize, n: usize) -> (Vec<f64>, Vec<f64>) {
    let (mut want, mut scale) = (vec![0.0; m * n], vec![0.0; m * n]);
    for i in 0..m {
        for j in 0..n {
            for q in 0..k {
                let t = a[i * k + q] * b[j * k + q];
                want[i * n + j] += t;
                scale[i * n + j] += t.abs();
            }
        }
    }
    (want, scale)
}

/// The transpose of row-major `rows x cols` data.
fn transpose(data: &[f64], rows: usize, cols: usize) -> Vec<f64> {
    (0..rows * cols)
        .map(|ij| data[(ij % rows) * cols + ij / rows])
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// Every orientation, dtype and small shape gives the loop's exact values.
    #[test]
    fn oriented_products_equal_the_loop(p in case()) {
        check::<f64>(&p)?;
        check::<f32>(&p)?;
        check::<i64>(&p)?;
        check::<i32>(&p)?;
    }
}

/// `A.T @ B`, `A @ B.T`, `A.T @ B.T` and `A.T @ x` read in place equal the same products of
/// copied transposes within rounding, on shapes past the GEMM's register and cache tiles and
/// not divisible by the processor counts.
#[test]
fn transposes_read_in_place_equal_copied_transposes() -> Result<(), TestCaseError> {
    let (m, k, n) = (67, 45, 131);
    for procs in PROCS {
        let cx = cx(procs);
        let array = |data: &[f64], r: usize, c: usize| {
            ok(
                Array::from_vec(&cx, &[r as i64, c as i64], data.to_vec()),
                "from_vec",
            )
        };
        // `at` is `A` (m x k) stored transposed, `bt` is `B` (k x n) stored transposed.
        let (a, b) = (mixed(m, k, 1), mixed(k, n, 2));
        let (at, bt) = (transpose(&a, m, k), transpose(&b, k, n));
        let (aa, ba, ata, bta) = (
            array(&a, m, k)?,
            array(&b, k, n)?,
            array(&at, k, m)?,
            array(&bt, n, k)?,
        );
        let want = ok(ok(aa.matmul(&ba), "matmul")?.to_vec::<f64>(), "to_vec")?;
        let scale: Vec<f64> = (0..m * n)
            .map(|ij| {
                (0..k)
                    .map(|q| (a[ij / n * k + q] * b[q * n + ij % n]).abs())
                    .sum()
            })
            .collect();
        use Orientation::{AsStored, Transposed};
        for (what, lhs, lo, rhs, ro) in [
            ("A.T @ B", &ata, Transposed, &ba, AsStored),
            ("A @ B.T", &aa, AsStored, &bta, Transposed),
            ("A.T @ B.T", &ata, Transposed, &bta, Transposed),
        ] {
            let got = ok(
                ok(lhs.matmul_with(lo, rhs, ro), what)?.to_vec::<f64>(),
                "to_vec",
            )?;
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                prop_assert!(
                    close(*g, *w, scale[i]),
                    "procs {}: {}[{}] = {}, copied {}",
                    procs,
                    what,
                    i,
                    g,
                    w
                );
            }
        }
        let x = mixed(1, m, 3);
        let xa = ok(Array::from_vec(&cx, &[m as i64], x.clone()), "from_vec")?;
        // `A.T @ x` of the stored `A` against `at @ x`.
        let want = ok(ok(ata.matvec(&xa), "matvec")?.to_vec::<f64>(), "to_vec")?;
        let got = ok(
            ok(aa.matvec_with(Transposed, &xa), "matvec_with")?.to_vec::<f64>(),
            "to_vec",
        )?;
        for (q, (g, w)) in got.iter().zip(&want).enumerate() {
            let scale: f64 = (0..m).map(|i| (a[i * k + q] * x[i]).abs()).sum();
            prop_assert!(
                close(*g, *w, scale),
                "procs {}: A.T @ x [{}] = {}, copied {}",
                procs,
                q,
                g,
                w
            );
        }
    }
    Ok(())
}

/// On the simulated GPU, with a placement that prefers GPUs, the products (transposed
/// operands included, and fused with element-wise work) run their compiled MLIR bodies, not
/// the native kernels preferred on CPUs, and give the loop's exact values.
#[test]
fn products_placed_on_the_simulated_gpu_run_compiled() -> Result<(), TestCaseError> {
    use diffuse::{BackendConfig, EmbeddedConfig, MapplePlacement, Placement, RuntimeConfig};
    let backend = diffuse::start_backend(&BackendConfig::Embedded(EmbeddedConfig {
        procs: Some(2),
        device: Some(diffuse::device::DeviceChoice::Simulated),
        ..Default::default()
    }))
    .map_err(|e| TestCaseError::fail(e.to_string()))?;
    let gpus = MapplePlacement::prefer_gpus(backend.machine())
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    let runtime = diffuse::start_runtime(
        backend,
        RuntimeConfig {
            jit: Some(std::sync::Arc::new(diffuse_jit::Jit::new())),
            placement: Some(std::sync::Arc::new(gpus) as std::sync::Arc<dyn Placement>),
            ..Default::default()
        },
    );
    let cx = ArrayContext::new(diffuse_ir::Context::new(runtime.clone()));
    let (m, k, n) = (5, 7, 3);
    use Orientation::Transposed;
    let p = Case {
        m,
        k,
        n,
        a: (0..m * k).map(|i| (i * 5 % 17) as i8 - 8).collect(),
        b: (0..k * n).map(|i| (i * 3 % 13) as i8 - 6).collect(),
        x: (0..k).map(|i| i as i8 - 3).collect(),
        orientations: [Transposed, Transposed],
        windowed: false,
    };
    let (c, y) = model(&p);
    let a = matrix::<f64>(&cx, &p.a, stored(m, k, Transposed), false)?;
    let b = matrix::<f64>(&cx, &p.b, stored(k, n, Transposed), false)?;
    let x = ok(
        Array::from_vec(
            &cx,
            &[k as i64],
            p.x.iter().map(|&e| f64::from(e)).collect(),
        ),
        "from_vec",
    )?;
    let product = ok(a.matmul_with(Transposed, &b, Transposed), "matmul_with")?;
    let doubled = ok(&product + &product, "add")?;
    prop_assert_eq!(values::<f64>(&product)?, c.clone());
    let want: Vec<i64> = c.iter().map(|&e| 2 * e).collect();
    prop_assert_eq!(values::<f64>(&doubled)?, want);
    let matvec = ok(a.matvec_with(Transposed, &x), "matvec_with")?;
    prop_assert_eq!(values::<f64>(&matvec)?, y);
    let built = runtime.gpu_kernels().built;
    for kind in ["array.matmul.f64.tt", "array.matvec.f64.t"] {
        prop_assert!(
            built.iter().any(|name| name.contains(kind)),
            "{} was not built for the GPU: {:?} (declined: {:?})",
            kind,
            built,
            runtime.gpu_kernels().declined
        );
    }
    prop_assert!(runtime.stats().gpu_points > 0, "{:?}", runtime.stats());
    Ok(())
}

/// A float product large enough to run on several threads (one launch point per host, its
/// GEMM on the host's cores), with a transposed operand, equals the plain loop within
/// rounding on every processor count.
#[test]
fn a_threaded_product_equals_the_loop() -> Result<(), TestCaseError> {
    let (m, k, n) = (257, 263, 255);
    let (a, bt) = (mixed(m, k, 4), mixed(n, k, 5));
    let (want, scale) = product_loop(&a, &bt, m, k, n);
    for procs in PROCS {
        let cx = cx(procs);
        let aa = ok(
            Array::from_vec(&cx, &[m as i64, k as i64], a.clone()),
            "from_vec",
        )?;
        let ba = ok(
            Array::from_vec(&cx, &[n as i64, k as i64], bt.clone()),
            "from_vec",
        )?;
        let got = ok(
            aa.matmul_with(Orientation::AsStored, &ba, Orientation::Transposed),
            "matmul_with",
        )?;
        let got = ok(got.to_vec::<f64>(), "to_vec")?;
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            prop_assert!(
                close(*g, *w, scale[i]),
                "procs {}: [{}] = {}, loop {}",
                procs,
                i,
                g,
                w
            );
        }
    }
    Ok(())
}

/// A matrix times its own transpose (`a @ a.T`, `a.T @ a`: the symmetric product, computed as
/// one triangle and mirrored) equals the plain loop within rounding, is exactly symmetric,
/// and so is the same product through a copy, on every processor count; a product
/// accumulated into its output (`c += a aᵀ` of a fused update) is not mirrored.
#[test]
fn a_matrix_times_its_own_transpose_equals_the_loop() -> Result<(), TestCaseError> {
    let (m, k) = (261, 300);
    let a = mixed(m, k, 6);
    for (orientation, n) in [
        (Orientation::AsStored, m),   // a aᵀ: m x m
        (Orientation::Transposed, k), // aᵀ a: k x k
    ] {
        let rows = match orientation {
            Orientation::AsStored => a.clone(),
            Orientation::Transposed => transpose(&a, m, k),
        };
        let inner = m * k / n;
        let (want, scale) = product_loop(&rows, &rows, n, inner, n);
        let other = match orientation {
            Orientation::AsStored => Orientation::Transposed,
            Orientation::Transposed => Orientation::AsStored,
        };
        for procs in PROCS {
            let cx = cx(procs);
            let aa = ok(
                Array::from_vec(&cx, &[m as i64, k as i64], a.clone()),
                "from_vec",
            )?;
            let got = ok(aa.matmul_with(orientation, &aa, other), "matmul_with")?;
            let got = ok(got.to_vec::<f64>(), "to_vec")?;
            for i in 0..n {
                for j in 0..n {
                    let g = got[i * n + j];
                    prop_assert!(
                        close(g, want[i * n + j], scale[i * n + j]),
                        "procs {}: [{}, {}] = {}, loop {}",
                        procs,
                        i,
                        j,
                        g,
                        want[i * n + j]
                    );
                    prop_assert_eq!(g.to_bits(), got[j * n + i].to_bits());
                }
            }
        }
    }
    Ok(())
}
