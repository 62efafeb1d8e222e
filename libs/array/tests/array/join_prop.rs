//! `concatenate`, `roll` and `tile` over random shapes, axes, shifts and repetitions, on 1 to
//! 4 processors, against the same index arithmetic done sequentially; and their errors.

use diffuse_array::{concatenate, roll, tile, ArrayError, DType};
use proptest::prelude::*;

use crate::{cx, iota, PROCS, R};

/// The row-major index of `index` in `shape`.
fn flat(index: &[i64], shape: &[i64]) -> usize {
    index
        .iter()
        .zip(shape)
        .fold(0i64, |acc, (&i, &n)| acc * n + i) as usize
}

/// Every index of `shape` in row-major order.
fn indices(shape: &[i64]) -> Vec<Vec<i64>> {
    let shape = diffuse_ir::Tuple::shape(shape).expect("a valid shape");
    diffuse_ir::Rect::from_shape(shape)
        .points()
        .map(|p| p.as_slice().to_vec())
        .collect()
}

fn shapes() -> impl Strategy<Value = Vec<i64>> {
    prop::collection::vec(0i64..4, 1..4)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn concatenate_places_each_array_after_the_last(
        shape in shapes(), axis_pick in 0usize..3, extra in prop::collection::vec(0i64..4, 1..4),
        procs in PROCS,
    ) {
        let c = cx(procs);
        let axis = axis_pick % shape.len();
        let parts: Vec<Vec<i64>> = extra.iter().map(|&n| {
            let mut s = shape.clone();
            s[axis] = n;
            s
        }).collect();
        let arrays: Vec<_> = parts.iter().map(|s| iota(&c, s)).collect::<Result<_, _>>()
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let refs: Vec<_> = arrays.iter().collect();
        let got = concatenate(&refs, axis).map_err(|e| TestCaseError::fail(e.to_string()))?
            .to_vec::<f64>().map_err(|e| TestCaseError::fail(e.to_string()))?;
        let mut total = shape.clone();
        total[axis] = extra.iter().sum();
        let mut want = Vec::new();
        for index in indices(&total) {
            let (mut part, mut at) = (0, index[axis]);
            while at >= parts[part][axis] {
                at -= parts[part][axis];
                part += 1;
            }
            let mut local = index.clone();
            local[axis] = at;
            want.push(flat(&local, &parts[part]) as f64);
        }
        prop_assert_eq!(got, want);
    }

    #[test]
    fn roll_shifts_cyclically(shape in shapes(), axis_pick in 0usize..3, shift in -9i64..9,
                              procs in PROCS) {
        let c = cx(procs);
        let axis = axis_pick % shape.len();
        let a = iota(&c, &shape).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let got = roll(&a, shift, axis).map_err(|e| TestCaseError::fail(e.to_string()))?
            .to_vec::<f64>().map_err(|e| TestCaseError::fail(e.to_string()))?;
        let n = shape[axis];
        let want: Vec<f64> = indices(&shape).into_iter().map(|mut index| {
            index[axis] = (index[axis] - shift).rem_euclid(n.max(1));
            flat(&index, &shape) as f64
        }).collect();
        prop_assert_eq!(got, want);
    }

    #[test]
    fn tile_repeats_blocks(shape in shapes(), reps in prop::collection::vec(0i64..3, 1..4),
                           procs in PROCS) {
        let c = cx(procs);
        let a = iota(&c, &shape).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let got = tile(&a, &reps).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let dims = shape.len().max(reps.len());
        let pad = |v: &[i64]| -> Vec<i64> {
            std::iter::repeat_n(1, dims - v.len()).chain(v.iter().copied()).collect()
        };
        let (extent, reps) = (pad(&shape), pad(&reps));
        let total: Vec<i64> = extent.iter().zip(&reps).map(|(n, r)| n * r).collect();
        prop_assert_eq!(got.shape().as_slice().to_vec(), total.clone());
        let got = got.to_vec::<f64>().map_err(|e| TestCaseError::fail(e.to_string()))?;
        let want: Vec<f64> = indices(&total).into_iter().map(|index| {
            let local: Vec<i64> = index.iter().zip(&extent).map(|(i, n)| i % n).collect();
            flat(&local, &extent) as f64
        }).collect();
        prop_assert_eq!(got, want);
    }
}

#[test]
fn bad_joins_are_errors_in_numpys_words() -> R {
    let c = cx(1);
    let a = diffuse_array::zeros(&c, &[2, 3], DType::F64)?;
    let b = diffuse_array::zeros(&c, &[2, 4], DType::F64)?;
    let i = diffuse_array::zeros(&c, &[2, 3], DType::I64)?;
    let err = concatenate(&[&a, &b], 0).expect_err("extents differ");
    assert!(err.to_string().contains("along dimension 1"), "{err}");
    assert_eq!(concatenate(&[&a, &b], 1)?.shape().as_slice(), &[2, 7]);
    assert!(matches!(
        concatenate(&[&a, &i], 0),
        Err(ArrayError::DTypeMismatch { .. })
    ));
    assert!(concatenate(&[], 0).is_err());
    assert!(concatenate(&[&a], 2).is_err());
    assert!(roll(&a, 1, 2).is_err());
    assert!(tile(&a, &[-1]).is_err());
    assert!(tile(&a, &[100, 100]).is_err());
    Ok(())
}
