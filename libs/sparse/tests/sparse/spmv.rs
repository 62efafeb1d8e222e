//! SpMV as an index task: equal, bit for bit, to the sequential CSR product on any processor
//! count and index width, composable with array operations, and strict about its inputs.

use diffuse_array::{Array, ArrayContext};
use diffuse_ir::DType;
use diffuse_sparse::{generators, CsrMatrix, HostCsr, IndexWidth, SparseError, Triplets};
use proptest::prelude::*;

/// A context over a fresh embedded backend with `procs` processors and fusion on.
pub(crate) fn cx(procs: usize) -> ArrayContext {
    ArrayContext::new(
        diffuse::embedded_with(
            diffuse::EmbeddedConfig {
                procs: Some(procs),
                ..Default::default()
            },
            diffuse::RuntimeConfig {
                jit: None,
                // Every processor gets a row tile: the tests check tiled SpMV on small
                // matrices.
                min_block: 1,
                ..Default::default()
            },
        )
        .expect("the embedded backend starts"),
    )
}

/// The matrix of `t` with `width` column indices on the host and in stores of `c`.
pub(crate) fn matrix(c: &ArrayContext, t: &Triplets, width: IndexWidth) -> (HostCsr, CsrMatrix) {
    let host = HostCsr::from_triplets(t, width).unwrap();
    let stored = CsrMatrix::from_host(c, &host).unwrap();
    (host, stored)
}

/// `values` as a 1-d `f64` array of `c`.
pub(crate) fn vector(c: &ArrayContext, values: &[f64]) -> Array {
    Array::from_vec(c, &[values.len() as i64], values.to_vec()).unwrap()
}

/// 64-bit column indices when `wide`, 32-bit ones otherwise.
pub(crate) fn width(wide: bool) -> IndexWidth {
    if wide {
        IndexWidth::I64
    } else {
        IndexWidth::I32
    }
}

/// The bits of every value, for bitwise comparison.
pub(crate) fn bits(v: &[f64]) -> Vec<u64> {
    v.iter().map(|f| f.to_bits()).collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Any matrix, any vector, 1 to 4 row tiles, either index width.
    #[test]
    fn spmv_equals_the_sequential_product(
        rows in 0i64..40,
        cols in 1i64..40,
        raw in prop::collection::vec((0i64..1000, 0i64..1000, -1e3f64..1e3), 0..200),
        x in prop::collection::vec(-1e3f64..1e3, 40),
        procs in 1usize..=4,
        wide in any::<bool>(),
    ) {
        let mut t = Triplets::new(rows, cols).unwrap();
        if rows > 0 {
            for (r, c, v) in raw {
                t.push(r % rows, c % cols, v).unwrap();
            }
        }
        let c = cx(procs);
        let (host, a) = matrix(&c, &t, width(wide));
        let x = x[..cols as usize].to_vec();
        let xa = vector(&c, &x);
        let got = a.spmv(&xa).unwrap().to_vec::<f64>().unwrap();
        let want = host.matvec(&x).unwrap();
        prop_assert_eq!(bits(&got), bits(&want));
    }
}

#[test]
fn spmv_results_compose_with_array_operations() {
    let c = cx(2);
    let (host, a) = matrix(&c, &generators::poisson_2d(6).unwrap(), IndexWidth::I32);
    let x: Vec<f64> = (0..36).map(|i| f64::from(i) * 0.5).collect();
    let xa = vector(&c, &x);
    // r = x - 0.25 * (A x): the SpMV's output feeds element-wise tasks of the array library.
    let r = (&xa - (&a.spmv(&xa).unwrap() * 0.25)).unwrap();
    let ax = host.matvec(&x).unwrap();
    let want: Vec<f64> = x.iter().zip(&ax).map(|(x, y)| x - y * 0.25).collect();
    assert_eq!(r.to_vec::<f64>().unwrap(), want);
    // And a reduction over it (summed in another order: compared to rounding).
    let dot = r.dot(&r).unwrap().item::<f64>().unwrap();
    let want_dot: f64 = want.iter().map(|v| v * v).sum();
    assert!(
        (dot - want_dot).abs() <= 1e-12 * want_dot,
        "{dot} vs {want_dot}"
    );
}

#[test]
fn bad_vectors_are_errors() {
    let c = cx(1);
    let (_, a) = matrix(
        &c,
        &generators::banded(5, &[(0, 2.0)]).unwrap(),
        IndexWidth::I64,
    );
    let short = vector(&c, &[1.0; 4]);
    assert!(matches!(a.spmv(&short), Err(SparseError::BadShape { .. })));
    let ints = diffuse_array::zeros(&c, &[5], DType::I64).unwrap();
    assert!(matches!(a.spmv(&ints), Err(SparseError::BadShape { .. })));
    let elsewhere = vector(&cx(1), &[1.0; 5]);
    let err = a.spmv(&elsewhere).unwrap_err();
    assert!(matches!(err, SparseError::Array(_)), "{err}");
    // An empty matrix gives an empty product.
    let (_, empty) = matrix(&c, &Triplets::new(0, 3).unwrap(), IndexWidth::I32);
    let x3 = vector(&c, &[1.0; 3]);
    assert_eq!(
        empty.spmv(&x3).unwrap().to_vec::<f64>().unwrap(),
        Vec::<f64>::new()
    );
}

/// `x` may be a view of part of a larger array (a slice, a strided one too): the product
/// reads the view's elements, not the start of its store.
#[test]
fn spmv_of_a_sliced_vector_reads_the_slice() {
    use diffuse_array::SliceArg;
    let c = cx(3);
    let (host, a) = matrix(&c, &generators::poisson_2d(3).unwrap(), IndexWidth::I32);
    let long: Vec<f64> = (0..20).map(|i| f64::from(i) * 1.5 - 4.0).collect();
    let base = vector(&c, &long);
    let shifted = base.slice(&[SliceArg::from(7i64..16)]).unwrap();
    let got = a.spmv(&shifted).unwrap().to_vec::<f64>().unwrap();
    assert_eq!(got, host.matvec(&long[7..16]).unwrap());
}
