//! `cumulate` (cumulative sums and products) along random axes of random shapes, on 1 to 4
//! processors, against the sequential fold along the axis: bitwise equal (the same order).

use diffuse_array::{Array, DType};
use diffuse_ir::ReductionOp;
use proptest::prelude::*;

use crate::{cx, PROCS};

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    #[test]
    fn cumulative_folds_match_the_sequential_fold(
        shape in prop::collection::vec(0i64..5, 1..4), axis_pick in 0usize..3,
        product in any::<bool>(), seed in 0u64..1000, procs in PROCS,
    ) {
        let c = cx(procs);
        let axis = axis_pick % shape.len();
        let n: i64 = shape.iter().product();
        // Values with fractions, so that the order of the additions shows in the bits.
        let values: Vec<f64> = (0..n)
            .map(|i| (((i as u64 * 2654435761 + seed) % 1000) as f64) / 7.0 - 60.0)
            .collect();
        let op = if product { ReductionOp::Prod } else { ReductionOp::Sum };
        let a = Array::from_vec(&c, &shape, values.clone())
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let got = a.cumulate(op, axis).map_err(|e| TestCaseError::fail(e.to_string()))?
            .to_vec::<f64>().map_err(|e| TestCaseError::fail(e.to_string()))?;
        let stride: i64 = shape[axis + 1..].iter().product();
        let mut want = values.clone();
        for i in 0..want.len() {
            if (i as i64 / stride.max(1)) % shape[axis].max(1) != 0 {
                let prev = want[i - stride as usize];
                want[i] = if product { prev * want[i] } else { prev + want[i] };
            }
        }
        prop_assert_eq!(
            got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            want.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
        );
        // Integers wrap, as NumPy's do.
        let ints = a.astype(DType::I64).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let got = ints.cumulate(op, axis).map_err(|e| TestCaseError::fail(e.to_string()))?
            .to_vec::<i64>().map_err(|e| TestCaseError::fail(e.to_string()))?;
        let mut want: Vec<i64> = values.iter().map(|&v| v as i64).collect();
        for i in 0..want.len() {
            if (i as i64 / stride.max(1)) % shape[axis].max(1) != 0 {
                let prev = want[i - stride as usize];
                want[i] = if product { prev.wrapping_mul(want[i]) } else { prev.wrapping_add(want[i]) };
            }
        }
        prop_assert_eq!(got, want);
    }
}

#[test]
fn bad_axes_and_dtypes_are_errors() {
    let c = cx(1);
    let a = diffuse_array::zeros(&c, &[2, 3], DType::F64).expect("zeros");
    let err = a.cumulate(ReductionOp::Sum, 2).expect_err("no axis 2");
    assert!(err.to_string().contains("cumsum"), "{err}");
    let b = diffuse_array::zeros(&c, &[2], DType::Bool).expect("zeros");
    assert!(b.cumulate(ReductionOp::Prod, 0).is_err());
}
