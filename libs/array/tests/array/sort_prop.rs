//! Sorting along an axis, `argsort` and `searchsorted` of random matrices (repeated values
//! and NaNs) and windows of larger ones, on every processor count, against a plain sort of each lane:
//! values in NumPy's order (NaN last), stable positions, and insertion points on both
//! sides.

use std::cmp::Ordering;

use diffuse_array::Array;
use proptest::prelude::*;

use crate::{cx, ok, PROCS};

/// NumPy's order: numbers ascending, NaN after them.
fn numpy_order(a: &f64, b: &f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (false, false) => a.partial_cmp(b).unwrap_or(Ordering::Equal),
        (x, y) => x.cmp(&y),
    }
}

fn value(v: i8) -> f64 {
    if v == 9 {
        f64::NAN
    } else {
        f64::from(v) / 2.0
    }
}

/// The lanes of a `rows x cols` row-major matrix along `axis`, as vectors of (position in
/// the matrix) in axis order.
fn lanes(rows: usize, cols: usize, axis: usize) -> Vec<Vec<usize>> {
    if axis == 1 {
        (0..rows)
            .map(|r| (0..cols).map(|c| r * cols + c).collect())
            .collect()
    } else {
        (0..cols)
            .map(|c| (0..rows).map(|r| r * cols + c).collect())
            .collect()
    }
}

fn same(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| crate::same_f64(*x, *y))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn sorts_and_searches_equal_a_plain_sort_of_each_lane(
        rows in 1usize..7,
        cols in 1usize..7,
        seed in prop::collection::vec(-4i8..=9, 49),
        needles in prop::collection::vec(-5i8..=9, 0..9),
        axis in 0usize..2,
        windowed in any::<bool>(),
    ) {
        let seen: Vec<f64> = (0..rows * cols).map(|i| value(seed[i % seed.len()])).collect();
        let (r, c) = (rows, cols);
        let mut want_sorted = seen.clone();
        let mut want_order = vec![0i64; seen.len()];
        for lane in lanes(r, c, axis) {
            let mut order: Vec<usize> = (0..lane.len()).collect();
            order.sort_by(|&x, &y| numpy_order(&seen[lane[x]], &seen[lane[y]]));
            for (k, &at) in lane.iter().enumerate() {
                want_sorted[at] = seen[lane[order[k]]];
                want_order[at] = order[k] as i64;
            }
        }
        let mut line = seen[..c].to_vec();
        line.sort_by(numpy_order);
        let needles: Vec<f64> = needles.into_iter().map(value).collect();
        let left: Vec<i64> = needles
            .iter()
            .map(|v| line.partition_point(|s| numpy_order(s, v) == Ordering::Less) as i64)
            .collect();
        let right: Vec<i64> = needles
            .iter()
            .map(|v| line.partition_point(|s| numpy_order(s, v) != Ordering::Greater) as i64)
            .collect();
        for procs in PROCS {
            let cx = cx(procs);
            // The matrix itself, or a window of rows 1.. of a larger one.
            let a = if windowed {
                let mut padded = vec![-7.0; cols];
                padded.extend_from_slice(&seen);
                let big = ok(Array::from_vec(&cx, &[rows as i64 + 1, cols as i64], padded), "from_vec")?;
                ok(big.slice(&crate::slice_spec(&[(1, rows + 1), (0, cols)], &[rows + 1, cols], &[false, false])), "slice")?
            } else {
                ok(Array::from_vec(&cx, &[rows as i64, cols as i64], seen.clone()), "from_vec")?
            };
            let sorted: Vec<f64> = ok(ok(a.sort_along(axis), "sort")?.to_vec(), "sorted")?;
            prop_assert!(same(&sorted, &want_sorted), "sort on {} procs: {:?} vs {:?}", procs, sorted, want_sorted);
            let order: Vec<i64> = ok(ok(a.argsort_along(axis), "argsort")?.to_vec(), "order")?;
            prop_assert_eq!(&order, &want_order, "argsort on {} procs", procs);
            let sorted_line = ok(Array::from_vec(&cx, &[c as i64], line.clone()), "line")?;
            let values = ok(Array::from_vec(&cx, &[needles.len() as i64], needles.clone()), "needles")?;
            let found: Vec<i64> = ok(ok(sorted_line.searchsorted(&values, false), "left")?.to_vec(), "left")?;
            prop_assert_eq!(&found, &left, "searchsorted left on {} procs", procs);
            let found: Vec<i64> = ok(ok(sorted_line.searchsorted(&values, true), "right")?.to_vec(), "right")?;
            prop_assert_eq!(&found, &right, "searchsorted right on {} procs", procs);
        }
    }
}

#[test]
fn a_bad_axis_or_a_matrix_to_search_is_refused() {
    let cx = cx(2);
    let a = Array::from_vec(&cx, &[2, 3], vec![3.0, 1.0, 2.0, 0.0, 5.0, 4.0]).expect("array");
    assert!(a.sort_along(2).is_err());
    assert!(a.argsort_along(5).is_err());
    let v = Array::from_vec(&cx, &[1], vec![1.0]).expect("array");
    assert!(a.searchsorted(&v, false).is_err());
    let ints = Array::from_vec(&cx, &[1], vec![1i64]).expect("array");
    let line = Array::from_vec(&cx, &[2], vec![1.0, 2.0]).expect("array");
    assert!(line.searchsorted(&ints, false).is_err());
}
