//! `select` (NumPy's `a[mask]`) and `nonzero` over random shapes, masks and views, on 1 to 4
//! processors, against a sequential filter in row-major order; and their errors.

use diffuse_array::{binary, s, Array, ArrayError, BinaryOp, DType};
use proptest::prelude::*;

use crate::{cx, iota, PROCS};

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    #[test]
    fn select_keeps_the_masked_elements_in_order(
        shape in prop::collection::vec(1i64..5, 1..4), pattern in any::<u64>(),
        view in any::<bool>(), procs in PROCS,
    ) {
        let c = cx(procs);
        let fail = |e: ArrayError| TestCaseError::fail(e.to_string());
        let base = iota(&c, &shape).map_err(fail)?;
        let a = if view && shape[0] > 1 { base.slice(&s![1..]).map_err(fail)? } else { base };
        let n = a.size();
        let keep: Vec<bool> = (0..n).map(|i| (pattern >> (i % 64)) & 1 == 1).collect();
        let mask = Array::from_vec(&c, a.shape().as_slice(), keep.clone()).map_err(fail)?;
        // The mask computed lazily, as programs make it: (mask as f64) > 0.5.
        let lazy = binary(BinaryOp::Greater, &mask.astype(DType::F64).map_err(fail)?, 0.5)
            .map_err(fail)?;
        let values = a.to_vec::<f64>().map_err(fail)?;
        let want: Vec<f64> = values.iter().zip(&keep).filter(|(_, &k)| k).map(|(&v, _)| v)
            .collect();
        // nonzero: the row-major multi-indices of the elements that hold.
        let dims = a.shape().as_slice().to_vec();
        let mut want_indices: Vec<Vec<i64>> = vec![Vec::new(); dims.len()];
        for (flat, _) in keep.iter().enumerate().filter(|(_, &k)| k) {
            let mut rest = flat as i64;
            for d in (0..dims.len()).rev() {
                want_indices[d].push(rest % dims[d]);
                rest /= dims[d];
            }
        }
        for m in [&mask, &lazy] {
            let got = a.select(m).map_err(fail)?;
            prop_assert_eq!(got.shape().as_slice().to_vec(), vec![want.len() as i64]);
            prop_assert_eq!(got.to_vec::<f64>().map_err(fail)?, want.clone());
            let indices = m.nonzero().map_err(fail)?;
            prop_assert_eq!(indices.len(), dims.len());
            for (got, want) in indices.iter().zip(&want_indices) {
                prop_assert_eq!(got.to_vec::<i64>().map_err(fail)?, want.clone());
            }
        }
    }
}

#[test]
fn select_and_nonzero_check_the_mask() {
    let c = cx(1);
    let a = diffuse_array::zeros(&c, &[2, 3], DType::F64).expect("zeros");
    let wrong_shape = diffuse_array::zeros(&c, &[3, 2], DType::Bool).expect("zeros");
    let not_bool = diffuse_array::zeros(&c, &[2, 3], DType::I64).expect("zeros");
    assert!(matches!(
        a.select(&wrong_shape),
        Err(ArrayError::ShapeMismatch { .. })
    ));
    assert!(matches!(
        a.select(&not_bool),
        Err(ArrayError::UnsupportedDType { .. })
    ));
    let none = a.select(&diffuse_array::zeros(&c, &[2, 3], DType::Bool).expect("zeros"));
    assert_eq!(none.expect("selects nothing").shape().as_slice(), &[0]);
    assert!(matches!(
        not_bool.nonzero(),
        Err(ArrayError::UnsupportedDType { .. })
    ));
    let scalar = diffuse_array::zeros(&c, &[], DType::Bool).expect("zeros");
    assert!(matches!(
        scalar.nonzero(),
        Err(ArrayError::BadArgument { .. })
    ));
}
