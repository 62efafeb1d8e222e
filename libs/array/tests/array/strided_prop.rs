//! Strided selections (`gather_strided`, `scatter_strided`) against flat indexing of a host
//! copy: random stores of 1 to 3 dims, random selections of rank 0 to 3 with negative, zero
//! and large strides, taken from the whole store or through a window of it, on every
//! processor count (fused, unfused and JIT contexts); the gathered values also feed an
//! element-wise operation and a reduction in the same window, and a scatter is followed by
//! reads through a box view, so the dependences around the whole-store tasks are exercised.
//! The same selections read on the host without a task (`read_strided`) before, between
//! and after those tasks give the same values.

use diffuse_array::{s, Array, ArrayContext, StridedView};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

use crate::{cx, extents, ok, PROCS};

/// A store's shape and data, and a selection inside it.
#[derive(Clone, Debug)]
struct Case {
    store: Vec<usize>,
    data: Vec<i64>,
    view: StridedView,
    values: Vec<i64>,
}

/// A selection of rank 0 to 3 that stays inside a store of `volume` elements: extents 0 to
/// 4, strides in -volume..=volume, the offset chosen among those that keep every index in
/// range (extents are shrunk until one exists).
fn selection(volume: i64) -> impl Strategy<Value = StridedView> {
    (
        prop::collection::vec((0i64..=4, -volume..=volume), 0..=3),
        any::<prop::sample::Index>(),
    )
        .prop_map(move |(dims, pick)| {
            let mut shape: Vec<i64> = dims.iter().map(|&(n, _)| n).collect();
            let strides: Vec<i64> = dims.iter().map(|&(_, s)| s).collect();
            loop {
                let (mut lo, mut hi) = (0i64, 0i64);
                for (&n, &s) in shape.iter().zip(&strides) {
                    let reach = s * (n.max(1) - 1);
                    if reach < 0 {
                        lo += reach;
                    } else {
                        hi += reach;
                    }
                }
                // Offsets `o` with `o + lo >= 0` and `o + hi < volume`.
                let (first, last) = (-lo, volume - 1 - hi);
                if first <= last {
                    let offset = first + pick.index((last - first + 1) as usize) as i64;
                    return StridedView {
                        shape,
                        offset,
                        strides,
                    };
                }
                let widest = (0..shape.len())
                    .max_by_key(|&d| strides[d].abs() * shape[d])
                    .expect("a selection that does not fit has a dimension");
                shape[widest] -= 1;
            }
        })
}

fn case() -> impl Strategy<Value = Case> {
    prop::collection::vec(1usize..=5, 1..=3).prop_flat_map(|store| {
        let volume = store.iter().product::<usize>();
        (
            Just(store),
            prop::collection::vec(-50i64..50, volume),
            selection(volume as i64),
        )
            .prop_flat_map(|(store, data, view)| {
                let n = view.volume() as usize;
                (
                    Just(store),
                    Just(data),
                    Just(view),
                    prop::collection::vec(-50i64..50, n),
                )
            })
            .prop_map(|(store, data, view, values)| Case {
                store,
                data,
                view,
                values,
            })
    })
}

/// The store positions of the selection's elements, in row-major order of the selection.
fn positions(view: &StridedView) -> Vec<usize> {
    let mut out = vec![view.offset];
    for (&n, &s) in view.shape.iter().zip(&view.strides) {
        out = out
            .iter()
            .flat_map(|&o| (0..n).map(move |i| o + i * s))
            .collect();
    }
    out.into_iter().map(|p| p as usize).collect()
}

fn check(cx: &ArrayContext, c: &Case) -> Result<(), TestCaseError> {
    let base = ok(
        Array::from_vec(cx, &extents(&c.store), c.data.clone()),
        "from_vec",
    )?;
    let at = positions(&c.view);

    // Read on the host (no task), then gather and compute with the result in the same
    // window; the host read of the selection, between them, sees the same values.
    let want: Vec<i64> = at.iter().map(|&p| c.data[p]).collect();
    prop_assert_eq!(
        ok(base.read_strided::<i64>(&c.view), "read_strided")?,
        want.clone()
    );
    let got = ok(base.gather_strided(&c.view), "gather_strided")?;
    prop_assert_eq!(
        ok(base.read_strided::<i64>(&c.view), "read_strided")?,
        want.clone()
    );
    prop_assert_eq!(got.shape().as_slice().to_vec(), c.view.shape.clone());
    let twice = ok(&got * 2i64, "multiply")?;
    let total = ok(got.sum(), "sum")?;
    prop_assert_eq!(ok(got.to_vec::<i64>(), "to_vec")?, want.clone());
    prop_assert_eq!(
        ok(twice.to_vec::<i64>(), "to_vec")?,
        want.iter().map(|v| v * 2).collect::<Vec<_>>()
    );
    prop_assert_eq!(ok(total.item::<i64>(), "item")?, want.iter().sum::<i64>());

    // Scatter values computed in the same window, then read through a box view.
    let values = ok(
        Array::from_vec(cx, &c.view.shape, c.values.clone()),
        "from_vec",
    )?;
    let shifted = ok(&values + 1i64, "add")?;
    ok(base.scatter_strided(&c.view, &shifted), "scatter_strided")?;
    let mut model = c.data.clone();
    for (&p, &v) in at.iter().zip(&c.values) {
        model[p] = v + 1;
    }
    // The host read waits for the scatter still buffered.
    let scattered: Vec<i64> = at.iter().map(|&p| model[p]).collect();
    prop_assert_eq!(
        ok(base.read_strided::<i64>(&c.view), "read_strided")?,
        scattered
    );
    let whole = ok(base.slice(&s![..]), "slice")?;
    prop_assert_eq!(ok(whole.to_vec::<i64>(), "to_vec")?, model);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn strided_selections_match_flat_indexing(c in case()) {
        for procs in PROCS {
            check(&cx(procs), &c)?;
        }
    }
}

#[test]
fn selections_through_windows_and_overlapping_values() {
    let cx = cx(3);
    let base = Array::from_vec(&cx, &[4, 5], (0..20i64).collect()).unwrap();
    // The transpose of the window [1:3, 1:4]: offset 6, strides (1, 5).
    let window = base.slice(&s![1..3, 1..4]).unwrap();
    let t = StridedView {
        shape: vec![3, 2],
        offset: 6,
        strides: vec![1, 5],
    };
    let got = window.gather_strided(&t).unwrap();
    assert_eq!(got.to_vec::<i64>().unwrap(), vec![6, 11, 7, 12, 8, 13]);
    // Reversing row 0 in place with values read from the same store (a[0, ::-1] = a[0]).
    let reversed = StridedView {
        shape: vec![5],
        offset: 4,
        strides: vec![-1],
    };
    let row = base.slice(&s![0..1, ..]).unwrap();
    let row = row
        .gather_strided(&StridedView {
            shape: vec![5],
            offset: 0,
            strides: vec![1],
        })
        .unwrap();
    base.scatter_strided(&reversed, &row).unwrap();
    let first = base.slice(&s![0..1, ..]).unwrap();
    assert_eq!(first.to_vec::<i64>().unwrap(), vec![4, 3, 2, 1, 0]);
    let in_place = base.slice(&s![1..2, ..]).unwrap();
    let flat_row = StridedView {
        shape: vec![1, 5],
        offset: 9,
        strides: vec![0, -1],
    };
    base.scatter_strided(&flat_row, &in_place).unwrap();
    assert_eq!(
        base.slice(&s![1..2, ..]).unwrap().to_vec::<i64>().unwrap(),
        vec![9, 8, 7, 6, 5]
    );
}

#[test]
fn selections_outside_the_store_are_errors() {
    let cx = cx(1);
    let base = Array::from_vec(&cx, &[2, 3], (0..6i64).collect()).unwrap();
    let outside = StridedView {
        shape: vec![4],
        offset: 0,
        strides: vec![2],
    };
    let e = base.gather_strided(&outside).unwrap_err().to_string();
    assert!(
        e.contains("gather_strided") && e.contains("reaches elements 0..=6"),
        "{e}"
    );
    let values = Array::from_vec(&cx, &[3], vec![1i64, 2, 3]).unwrap();
    let e = base
        .scatter_strided(
            &StridedView {
                shape: vec![2],
                offset: 0,
                strides: vec![1],
            },
            &values,
        )
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("scatter_strided") && e.contains("(2,)") && e.contains("(3,)"),
        "{e}"
    );
}
