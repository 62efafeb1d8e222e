//! Integer-array indexing (`gather_indexed`, `scatter_indexed`: NumPy's `a[i, j]` and
//! `a[i, j] = v`) over random shapes, views, indices (negative ones included, repeated
//! positions, broadcast index arrays) on 1 to 4 processors, against sequential index
//! arithmetic; and its errors.

use diffuse_array::{s, Array, ArrayError, DType};
use proptest::prelude::*;

use crate::{cx, iota, PROCS};

/// Row-major position, in an array of `shape`, of the element at `index` (negative
/// indices counted from the end).
fn flat(shape: &[i64], index: &[i64]) -> usize {
    shape.iter().zip(index).fold(0i64, |acc, (&n, &i)| {
        acc * n + if i < 0 { i + n } else { i }
    }) as usize
}

/// Random in-range indices (one array of `count` per dimension of `shape`, from `seed`);
/// the last dimension's index array (of two or more) has extent 1 when `broadcast`.
fn indices(shape: &[i64], count: usize, seed: u64, broadcast: bool) -> Vec<Vec<i64>> {
    let mut state = seed | 1;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    shape
        .iter()
        .enumerate()
        .map(|(d, &n)| {
            let len = if broadcast && d > 0 && d + 1 == shape.len() {
                1
            } else {
                count
            };
            (0..len)
                .map(|_| (next() % (2 * n as u64)) as i64 - n)
                .collect()
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    #[test]
    fn gather_and_scatter_follow_the_indices(
        shape in prop::collection::vec(1i64..5, 1..4), count in 1usize..9, seed in any::<u64>(),
        view in any::<bool>(), broadcast in any::<bool>(), procs in PROCS,
    ) {
        let c = cx(procs);
        let fail = |e: ArrayError| TestCaseError::fail(e.to_string());
        let base = iota(&c, &shape).map_err(fail)?;
        let a = if view && shape[0] > 1 { base.slice(&s![1..]).map_err(fail)? } else { base };
        let ashape = a.shape().as_slice().to_vec();
        let idx = indices(&ashape, count, seed, broadcast);
        let arrays: Vec<Array> = idx
            .iter()
            .map(|i| Array::from_vec(&c, &[i.len() as i64], i.clone()))
            .collect::<Result<_, _>>()
            .map_err(fail)?;
        let refs: Vec<&Array> = arrays.iter().collect();
        let at = |k: usize| -> Vec<i64> {
            idx.iter().map(|i| if i.len() == 1 { i[0] } else { i[k] }).collect()
        };

        let mut model = a.to_vec::<f64>().map_err(fail)?;
        let got = a.gather_indexed(&refs).map_err(fail)?;
        let want: Vec<f64> = (0..count).map(|k| model[flat(&ashape, &at(k))]).collect();
        prop_assert_eq!(got.shape().as_slice().to_vec(), vec![count as i64]);
        prop_assert_eq!(got.to_vec::<f64>().map_err(fail)?, want);

        // Values 1000 + k in index order: where positions repeat, the last one stays.
        let values: Vec<f64> = (0..count).map(|k| 1000.0 + k as f64).collect();
        for (k, &v) in values.iter().enumerate() {
            model[flat(&ashape, &at(k))] = v;
        }
        let v = Array::from_vec(&c, &[count as i64], values).map_err(fail)?;
        a.scatter_indexed(&refs, &v).map_err(fail)?;
        prop_assert_eq!(a.to_vec::<f64>().map_err(fail)?, model);
    }
}

#[test]
fn indexed_access_checks_its_arguments() {
    let c = cx(2);
    let a = diffuse_array::zeros(&c, &[2, 3], DType::F64).expect("zeros");
    let i = Array::from_vec(&c, &[2], vec![0i64, 1]).expect("index");
    let three = Array::from_vec(&c, &[3], vec![0i64, 1, 2]).expect("index");
    let not_int = diffuse_array::zeros(&c, &[2], DType::F64).expect("zeros");
    assert!(matches!(
        a.gather_indexed(&[&i]),
        Err(ArrayError::BadArgument { .. })
    ));
    assert!(matches!(
        a.gather_indexed(&[&i, &not_int]),
        Err(ArrayError::UnsupportedDType { .. })
    ));
    assert!(matches!(
        a.gather_indexed(&[&i, &three]),
        Err(ArrayError::ShapeMismatch { .. })
    ));
    let wrong_values = diffuse_array::zeros(&c, &[3], DType::F64).expect("zeros");
    assert!(matches!(
        a.scatter_indexed(&[&i, &i], &wrong_values),
        Err(ArrayError::ShapeMismatch { .. })
    ));
    // An index out of range fails when the work runs, with NumPy's message.
    let far = Array::from_vec(&c, &[1], vec![3i64]).expect("index");
    let err = a
        .gather_indexed(&[&i.slice(&s![..1]).expect("slice"), &far])
        .and_then(|g| g.to_vec::<f64>().map(|_| ()))
        .expect_err("index 3 is outside axis 1");
    assert!(
        err.to_string()
            .contains("index 3 is out of bounds for axis 1 with size 3"),
        "{err}"
    );
}
