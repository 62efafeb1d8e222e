//! Reductions along an axis (`reduce_along`, `mean_along`, `arg_along`) and the whole-array
//! `argmax`/`argmin`/`prod` against naive loops: random shapes of 1 to 4 dims (extents 0 to
//! 5) taken as windows of larger arrays, every axis, with and without `keepdims`, `f64`
//! (with NaNs) and `i64`, on every processor count. The fold order along the axis is the
//! loop's, so even float results are compared bitwise (NaN equal to NaN).

use diffuse_array::{s, ArgOp, Array, ArrayError, SliceArg};
use diffuse_ir::{DType, ReductionOp};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

use crate::model::{indices, Dense};
use crate::{cx, extents, ok, same_f64, PROCS};

/// A base array, the window of it the reductions see, and an axis.
#[derive(Clone, Debug)]
struct Case {
    base: Vec<usize>,
    window: Vec<(usize, usize)>,
    data: Vec<f64>,
    axis: usize,
    keepdims: bool,
}

fn case() -> impl Strategy<Value = Case> {
    prop::collection::vec((0usize..=5, 0usize..=2, 0usize..=2), 1..=4).prop_flat_map(|dims| {
        let base: Vec<usize> = dims.iter().map(|&(n, lo, hi)| n + lo + hi).collect();
        let window: Vec<(usize, usize)> = dims.iter().map(|&(n, lo, _)| (lo, lo + n)).collect();
        let volume = base.iter().product::<usize>();
        let values = prop_oneof![8 => (-20i32..20).prop_map(f64::from), 1 => Just(f64::NAN)];
        (
            Just(base),
            Just(window),
            prop::collection::vec(values, volume),
            0..dims.len(),
            any::<bool>(),
        )
            .prop_map(|(base, window, data, axis, keepdims)| Case {
                base,
                window,
                data,
                axis,
                keepdims,
            })
    })
}

/// The model's reduction of `x` along `axis`: `(result shape, values)`, folding with `f`
/// from `init` in axis order.
fn model_along<T: Copy, U: Copy>(
    x: &Dense<T>,
    axis: usize,
    keepdims: bool,
    init: U,
    f: impl Fn(U, usize, T) -> U,
) -> (Vec<usize>, Vec<U>) {
    let mut shape = x.shape.clone();
    shape[axis] = 1;
    let out: Vec<U> = indices(&shape)
        .iter()
        .map(|at| {
            let mut idx = at.clone();
            (0..x.shape[axis]).fold(init, |acc, i| {
                idx[axis] = i;
                f(acc, i, x.at_broadcast(&idx))
            })
        })
        .collect();
    if !keepdims {
        shape.remove(axis);
    }
    (shape, out)
}

/// How the model folds one value into a float reduction.
type Fold = fn(f64, f64) -> f64;

fn arg_fold(op: ArgOp) -> impl Fn((Option<f64>, i64), usize, f64) -> (Option<f64>, i64) {
    move |(best, at), i, v| match best {
        Some(b) if b.is_nan() => (best, at),
        Some(b) if !(v.is_nan() || if op == ArgOp::Max { v > b } else { v < b }) => (best, at),
        _ => (Some(v), i as i64),
    }
}

fn check(c: &Case, procs: usize) -> Result<(), TestCaseError> {
    let cx = cx(procs);
    let base = ok(
        Array::from_vec(&cx, &extents(&c.base), c.data.clone()),
        "from_vec",
    )?;
    let spec: Vec<SliceArg> = c
        .window
        .iter()
        .map(|&(a, b)| SliceArg {
            start: Some(a as i64),
            stop: Some(b as i64),
        })
        .collect();
    let x = ok(base.slice(&spec), "slice")?;
    let model = Dense::new(c.base.clone(), c.data.clone()).slice(&c.window);
    let ints = ok(x.astype(DType::I64), "astype")?;
    let n = model.shape[c.axis];
    let folds: [(ReductionOp, f64, Fold); 4] = [
        (ReductionOp::Sum, 0.0, |a, b| a + b),
        (ReductionOp::Prod, 1.0, |a, b| a * b),
        (ReductionOp::Max, f64::NEG_INFINITY, crate::model::fmaximum),
        (ReductionOp::Min, f64::INFINITY, crate::model::fminimum),
    ];
    for (op, init, f) in folds {
        let got = x.reduce_along(op, c.axis, c.keepdims);
        let (shape, want) = model_along(&model, c.axis, c.keepdims, init, |a, _, v| f(a, v));
        if n == 0 && matches!(op, ReductionOp::Max | ReductionOp::Min) && !want.is_empty() {
            prop_assert!(
                matches!(got, Err(ArrayError::EmptyReduction { .. })),
                "{op:?}"
            );
            continue;
        }
        let got = ok(got, "reduce_along")?;
        prop_assert_eq!(got.shape().as_slice().to_vec(), extents(&shape));
        let values = ok(got.to_vec::<f64>(), "to_vec")?;
        prop_assert!(
            values.iter().zip(&want).all(|(&g, &w)| same_f64(g, w)),
            "{op:?} along {}: {values:?} != {want:?}",
            c.axis
        );
        // Integers, against the model of the converted data.
        let got = ok(
            ints.reduce_along(op, c.axis, c.keepdims),
            "reduce_along i64",
        )?;
        {
            let imodel = model.map(|v| v as i64);
            let (_, iwant) = model_along(&imodel, c.axis, c.keepdims, 0i64, |a, i, v| match op {
                ReductionOp::Sum => a.wrapping_add(v),
                ReductionOp::Prod => {
                    if i == 0 {
                        v
                    } else {
                        a.wrapping_mul(v)
                    }
                }
                ReductionOp::Max => {
                    if i == 0 {
                        v
                    } else {
                        a.max(v)
                    }
                }
                ReductionOp::Min => {
                    if i == 0 {
                        v
                    } else {
                        a.min(v)
                    }
                }
            });
            let iwant: Vec<i64> = if n == 0 && op == ReductionOp::Prod {
                vec![1; iwant.len()]
            } else {
                iwant
            };
            prop_assert_eq!(ok(got.to_vec::<i64>(), "to_vec")?, iwant, "{:?} i64", op);
        }
    }
    for op in [ArgOp::Max, ArgOp::Min] {
        let got = x.arg_along(op, c.axis, c.keepdims);
        let (shape, want) = model_along(&model, c.axis, c.keepdims, (None, 0), arg_fold(op));
        if n == 0 && !want.is_empty() {
            let empty = matches!(got, Err(ArrayError::EmptyReduction { .. }));
            prop_assert!(empty, "{:?} of an empty axis", op);
            continue;
        }
        let got = ok(got, "arg_along")?;
        prop_assert_eq!(got.shape().as_slice().to_vec(), extents(&shape));
        let want: Vec<i64> = want.iter().map(|&(_, at)| at).collect();
        prop_assert_eq!(ok(got.to_vec::<i64>(), "to_vec")?, want, "{:?}", op);
    }
    // The whole-array arg reductions and product, over the window in row-major order.
    if !model.data.is_empty() {
        for op in [ArgOp::Max, ArgOp::Min] {
            let got = ok(
                if op == ArgOp::Max {
                    x.argmax()
                } else {
                    x.argmin()
                },
                "arg",
            )?;
            let (_, want) = model
                .data
                .iter()
                .enumerate()
                .fold((None, 0), |acc, (i, &v)| arg_fold(op)(acc, i, v));
            prop_assert_eq!(ok(got.item::<i64>(), "item")?, want);
        }
    }
    let prod = ok(ok(x.prod(), "prod")?.item::<f64>(), "item")?;
    let want = model.data.iter().product::<f64>();
    prop_assert!(same_f64(prod, want) || (prod - want).abs() <= 1e-9 * want.abs());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn reductions_along_axes_match_loops(c in case()) {
        for procs in PROCS {
            check(&c, procs)?;
        }
    }
}

#[test]
fn reductions_along_axes_fuse_with_their_neighbours() {
    let cx = cx(4);
    let a = Array::from_vec(&cx, &[3, 4], (0..12).map(f64::from).collect()).unwrap();
    let doubled = (&a * 2.0).unwrap();
    let rows = doubled.reduce_along(ReductionOp::Sum, 1, false).unwrap();
    let shifted = (&rows + 1.0).unwrap();
    assert_eq!(shifted.to_vec::<f64>().unwrap(), vec![13.0, 45.0, 77.0]);
    let cols = a.slice(&s![1.., ..]).unwrap().mean_along(0, true).unwrap();
    assert_eq!(cols.shape().as_slice(), &[1, 4]);
    assert_eq!(cols.to_vec::<f64>().unwrap(), vec![6.0, 7.0, 8.0, 9.0]);
}

#[test]
fn bad_axes_and_dtypes_are_errors() {
    let cx = cx(1);
    let a = Array::from_vec(&cx, &[2, 3], vec![1i64; 6]).unwrap();
    let e = a
        .reduce_along(ReductionOp::Sum, 2, false)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("sum") && e.contains("axis 2") && e.contains("(2, 3)"),
        "{e}"
    );
    let flags = Array::from_vec(&cx, &[2], vec![true, false]).unwrap();
    let e = flags
        .arg_along(ArgOp::Max, 0, false)
        .unwrap_err()
        .to_string();
    assert!(e.contains("argmax") && e.contains("bool"), "{e}");
    let empty = Array::from_vec(&cx, &[0, 3], Vec::<f64>::new()).unwrap();
    let e = empty
        .reduce_along(ReductionOp::Max, 0, false)
        .unwrap_err()
        .to_string();
    assert!(e.contains("max") && e.contains("(0, 3)"), "{e}");
    assert!(empty.argmin().is_err());
}
