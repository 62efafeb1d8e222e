//! Properties of conversions and constructors, on 1 to 4 processors.
//!
//! - `astype` over views: lossless round trips (integral `f64` through `i64`, `i64` below
//!   2^53 through `f64`, `f32`-representable values through `f32`, `bool` through `f64` and
//!   `i64`) give back the input; lossy conversions equal Rust's `as` (floats to integers
//!   truncate toward zero and saturate, NaN gives 0; `i64` to `i32` wraps; anything to `bool`
//!   is `!= 0`).
//! - `random`: the same seed gives bitwise the same array on 1 to 4 processors, element `i`
//!   depends only on the seed and `i` (reshaping or extending keeps the values), different
//!   seeds give different arrays, uniform values lie in `[low, high)`.
//! - `arange` and `linspace` equal NumPy's definitions: `arange` has `ceil((stop - start) /
//!   step)` elements `start + i * step` (exactly, for integral arguments); `linspace` has
//!   `num` elements `start + i * (stop - start) / (num - 1)` with the last exactly `stop`.
//! - `zeros`, `ones`, `full`: dtype, shape and value.

use diffuse_array::{arange, full, linspace, ones, random, zeros, Array, DType, Distribution};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

use crate::model::{volume, Dense};
use crate::{cx, extents, ok, same_f64, shape_of, slice_spec, PROCS};

/// A 1-d to 3-d base shape, a window of it, and which window bounds are written negative.
fn window() -> impl Strategy<Value = (Vec<usize>, Vec<(usize, usize)>, Vec<bool>)> {
    prop::collection::vec(1usize..=7, 1..=3).prop_flat_map(|shape| {
        let dims: Vec<_> = shape
            .iter()
            .map(|&e| (0..=e).prop_flat_map(move |a| (Just(a), a..=e)))
            .collect();
        let negative = prop::collection::vec(any::<bool>(), shape.len());
        (Just(shape), dims, negative)
    })
}

/// A base shape, a window of it (absolute ranges), which window bounds are written
/// negative, and the base's values.
type Windowed<T> = (Vec<usize>, Vec<(usize, usize)>, Vec<bool>, Vec<T>);

/// `window` plus `volume(shape)` values from `values`.
fn windowed<T: std::fmt::Debug + Clone + 'static>(
    values: impl Strategy<Value = T> + Clone + 'static,
) -> impl Strategy<Value = Windowed<T>> {
    window().prop_flat_map(move |(shape, ranges, negative)| {
        let n = volume(&shape);
        (
            Just(shape),
            Just(ranges),
            Just(negative),
            prop::collection::vec(values.clone(), n),
        )
    })
}

/// The window's expected contents, its values converted, and those converted again.
type Casts<T, U, V> = (Vec<T>, Vec<U>, Vec<V>);

/// Casts a window of `data` (of `shape`) to `U` on `procs` processors, then to `V`;
/// returns both results with the window's expected contents.
fn cast_window<T: diffuse_ir::Element, U: diffuse_ir::Element, V: diffuse_ir::Element>(
    procs: usize,
    (shape, ranges, negative, data): &Windowed<T>,
) -> Result<Casts<T, U, V>, TestCaseError> {
    let base = ok(
        Array::from_vec(&cx(procs), &extents(shape), data.clone()),
        "from_vec",
    )?;
    let view = ok(base.slice(&slice_spec(ranges, shape, negative)), "slice")?;
    let there = ok(view.astype(U::DTYPE), "astype")?;
    prop_assert_eq!(there.dtype(), U::DTYPE);
    prop_assert_eq!(shape_of(&there), shape_of(&view));
    let back = ok(there.astype(V::DTYPE), "astype back")?;
    let want = Dense::new(shape.clone(), data.clone()).slice(ranges).data;
    Ok((
        want,
        ok(there.to_vec::<U>(), "to_vec")?,
        ok(back.to_vec::<V>(), "to_vec")?,
    ))
}

fn any_float() -> impl Strategy<Value = f64> + Clone {
    prop_oneof![
        6 => -1e6f64..1e6,
        2 => any::<f64>(),
        1 => prop::sample::select(vec![f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -0.0, 0.5, -0.5, 2.5e18, -2.5e19]),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// Integral `f64` survives `f64 -> i64 -> f64`; the `i64` values are the integers.
    #[test]
    fn integral_floats_round_trip_through_i64(
        case in windowed((-(1i64 << 52)..(1i64 << 52)).prop_map(|i| i as f64))
    ) {
        for procs in PROCS {
            let (want, ints, back) = cast_window::<f64, i64, f64>(procs, &case)?;
            prop_assert_eq!(&ints, &want.iter().map(|&x| x as i64).collect::<Vec<_>>());
            prop_assert_eq!(&back, &want, "procs {}", procs);
        }
    }

    /// `i64` below 2^53 in magnitude survives `i64 -> f64 -> i64`.
    #[test]
    fn integers_round_trip_through_f64(case in windowed(-(1i64 << 53)..=(1i64 << 53))) {
        for procs in PROCS {
            let (want, floats, back) = cast_window::<i64, f64, i64>(procs, &case)?;
            prop_assert_eq!(&floats, &want.iter().map(|&x| x as f64).collect::<Vec<_>>());
            prop_assert_eq!(&back, &want, "procs {}", procs);
        }
    }

    /// Any `f64` to `i64` truncates toward zero and saturates (NaN to 0), like Rust's `as`;
    /// `f64 -> f32 -> f64` equals `x as f32 as f64`.
    #[test]
    fn lossy_float_conversions_match_as(case in windowed(any_float())) {
        for procs in PROCS {
            let (want, ints, floats) = cast_window::<f64, i64, f64>(procs, &case)?;
            let expected: Vec<i64> = want.iter().map(|&x| x as i64).collect();
            prop_assert_eq!(&ints, &expected, "procs {}: f64 -> i64", procs);
            let expected: Vec<f64> = expected.iter().map(|&x| x as f64).collect();
            prop_assert_eq!(&floats, &expected, "procs {}: i64 -> f64", procs);
            let (want, singles, back) = cast_window::<f64, f32, f64>(procs, &case)?;
            for i in 0..want.len() {
                let single = want[i] as f32;
                prop_assert!(
                    same_f64(f64::from(singles[i]), f64::from(single))
                        && same_f64(back[i], f64::from(single)),
                    "procs {}: {} as f32 gave {} and back {}", procs, want[i], singles[i], back[i]
                );
            }
        }
    }

    /// `i64 -> i32` wraps like `as`, and `i32 -> i64` is exact; anything `-> bool` is `!= 0`,
    /// and `bool -> i64 -> bool` and `bool -> f64 -> bool` round trip.
    #[test]
    fn integer_and_bool_conversions(
        ints in windowed(prop_oneof![any::<i64>(), -3i64..=3]),
        bools in windowed(any::<bool>()),
    ) {
        for procs in PROCS {
            let (want, narrow, wide) = cast_window::<i64, i32, i64>(procs, &ints)?;
            let expected: Vec<i32> = want.iter().map(|&x| x as i32).collect();
            prop_assert_eq!(&narrow, &expected, "procs {}: i64 -> i32", procs);
            let expected: Vec<i64> = expected.iter().map(|&x| i64::from(x)).collect();
            prop_assert_eq!(&wide, &expected, "procs {}: i32 -> i64", procs);
            let (want, truth, _) = cast_window::<i64, bool, i64>(procs, &ints)?;
            prop_assert_eq!(&truth, &want.iter().map(|&x| x != 0).collect::<Vec<_>>());
            let (want, as_int, back) = cast_window::<bool, i64, bool>(procs, &bools)?;
            prop_assert_eq!(&as_int, &want.iter().map(|&b| i64::from(b)).collect::<Vec<_>>());
            prop_assert_eq!(&back, &want, "procs {}: bool -> i64 -> bool", procs);
            let (want, as_float, back) = cast_window::<bool, f64, bool>(procs, &bools)?;
            prop_assert_eq!(&as_float, &want.iter().map(|&b| f64::from(u8::from(b))).collect::<Vec<_>>());
            prop_assert_eq!(&back, &want, "procs {}: bool -> f64 -> bool", procs);
        }
    }

    /// Seeded `random` is independent of the processor count and of the shape (element `i`
    /// depends on the seed and `i` only), differs between seeds, and stays in range.
    #[test]
    fn random_is_reproducible_and_seeded(
        shape in prop::collection::vec(1i64..=9, 1..=3),
        seed in any::<u64>(),
        other in any::<u64>(),
        low in -5.0f64..5.0,
        width in 0.5f64..10.0,
        normal in any::<bool>(),
    ) {
        prop_assume!(seed != other);
        let dist = if normal {
            Distribution::Normal { mean: low, std: width }
        } else {
            Distribution::Uniform { low, high: low + width }
        };
        let n: i64 = shape.iter().product();
        let draw = |procs: usize, shape: &[i64], seed: u64, dtype: DType| {
            ok(random(&cx(procs), shape, dist, seed, dtype), "random")
        };
        let first = ok(draw(1, &shape, seed, DType::F64)?.to_vec::<f64>(), "to_vec")?;
        prop_assert_eq!(first.len() as i64, n);
        for (i, &v) in first.iter().enumerate() {
            if normal {
                prop_assert!(v.is_finite(), "element {} is {}", i, v);
            } else {
                // `high` itself may come out through rounding, as NumPy documents.
                prop_assert!(low <= v && v <= low + width, "element {} = {} outside [{}, {})", i, v, low, low + width);
            }
        }
        let singles = ok(draw(1, &shape, seed, DType::F32)?.to_vec::<f32>(), "to_vec")?;
        for procs in PROCS {
            let again = draw(procs, &shape, seed, DType::F64)?;
            prop_assert_eq!(shape_of(&again), shape.iter().map(|&e| e as usize).collect::<Vec<_>>());
            let again = ok(again.to_vec::<f64>(), "to_vec")?;
            prop_assert!(
                again.iter().zip(&first).all(|(a, b)| a.to_bits() == b.to_bits()),
                "procs {} gives other values than 1 processor", procs
            );
            let flat = ok(draw(procs, &[n + 3], seed, DType::F64)?.to_vec::<f64>(), "to_vec")?;
            prop_assert!(
                flat[..n as usize].iter().zip(&first).all(|(a, b)| a.to_bits() == b.to_bits()),
                "procs {}: a longer 1-d draw does not start with the same values", procs
            );
            let s = ok(draw(procs, &shape, seed, DType::F32)?.to_vec::<f32>(), "to_vec")?;
            prop_assert!(
                s.iter().zip(&singles).all(|(a, b)| a.to_bits() == b.to_bits()),
                "procs {}: f32 draw differs", procs
            );
            let different = ok(draw(procs, &shape, other, DType::F64)?.to_vec::<f64>(), "to_vec")?;
            prop_assert_ne!(&different, &first, "procs {}: seeds {} and {} agree", procs, seed, other);
        }
    }

    /// `arange` with integral arguments, as `f64` and as `i64`, is exactly NumPy's
    /// `[start + i * step for i in range(ceil((stop - start) / step))]`.
    #[test]
    fn arange_with_integral_arguments(
        start in -50i64..50,
        stop in -50i64..50,
        step in prop_oneof![1i64..=7, -7i64..=-1],
    ) {
        let (a, b, s) = (start as f64, stop as f64, step as f64);
        let len = ((b - a) / s).ceil().max(0.0) as usize;
        let want: Vec<i64> = (0..len as i64).map(|i| start + i * step).collect();
        for procs in PROCS {
            let f = ok(arange(&cx(procs), a, b, s, DType::F64), "arange")?;
            prop_assert_eq!(f.dtype(), DType::F64);
            prop_assert_eq!(shape_of(&f), vec![len]);
            let f = ok(f.to_vec::<f64>(), "to_vec")?;
            prop_assert_eq!(f, want.iter().map(|&x| x as f64).collect::<Vec<_>>(), "procs {}", procs);
            let i = ok(arange(&cx(procs), a, b, s, DType::I64), "arange")?;
            prop_assert_eq!(ok(i.to_vec::<i64>(), "to_vec")?, want.clone(), "procs {}", procs);
        }
    }

    /// `arange` with float arguments has NumPy's length exactly and NumPy's values up to
    /// rounding (`start + i * step`; NumPy itself steps by `(start + step) - start`).
    #[test]
    fn arange_with_float_arguments(
        start in -100.0f64..100.0,
        span in -100.0f64..100.0,
        step in prop_oneof![0.01f64..5.0, -5.0f64..-0.01],
    ) {
        let stop = start + span;
        let len = ((stop - start) / step).ceil().max(0.0) as usize;
        for procs in PROCS {
            let got = ok(ok(arange(&cx(procs), start, stop, step, DType::F64), "arange")?.to_vec::<f64>(), "to_vec")?;
            prop_assert_eq!(got.len(), len, "procs {}: length", procs);
            for (i, &v) in got.iter().enumerate() {
                let delta = (start + step) - start;
                let numpy = if i == 0 { start } else if i == 1 { start + step } else { start + i as f64 * delta };
                let scale = start.abs() + i as f64 * step.abs();
                prop_assert!((v - numpy).abs() <= 1e-12 * scale, "procs {}: element {} = {}, NumPy {}", procs, i, v, numpy);
            }
        }
    }

    /// `linspace` is bitwise NumPy's `arange(num) * step + start` with `step = (stop - start)
    /// / (num - 1)` and the last element exactly `stop` (one element: `start`), in `f64`
    /// and, rounded, in `f32`.
    #[test]
    fn linspace_matches_numpy(
        start in prop_oneof![-100.0f64..100.0, (-8i32..8).prop_map(f64::from)],
        stop in prop_oneof![-100.0f64..100.0, (-8i32..8).prop_map(f64::from)],
        num in 0i64..=40,
    ) {
        let want: Vec<f64> = (0..num)
            .map(|i| {
                if num > 1 && i == num - 1 {
                    stop
                } else if num > 1 {
                    i as f64 * ((stop - start) / (num - 1) as f64) + start
                } else {
                    start
                }
            })
            .collect();
        for procs in PROCS {
            let got = ok(linspace(&cx(procs), start, stop, num, DType::F64), "linspace")?;
            prop_assert_eq!(shape_of(&got), vec![num as usize]);
            let got = ok(got.to_vec::<f64>(), "to_vec")?;
            prop_assert!(
                got.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits()),
                "procs {}: {:?} vs NumPy {:?}", procs, got, want
            );
            let single = ok(ok(linspace(&cx(procs), start, stop, num, DType::F32), "linspace")?.to_vec::<f32>(), "to_vec")?;
            prop_assert_eq!(single, want.iter().map(|&x| x as f32).collect::<Vec<_>>(), "procs {}: f32", procs);
        }
    }

    /// `zeros`, `ones` and `full` have the requested shape, dtype and value everywhere.
    #[test]
    fn constant_constructors(
        shape in prop::collection::vec(0i64..=5, 0..=4),
        value in -1e9f64..1e9,
        int in any::<i64>(),
    ) {
        let n: i64 = shape.iter().product();
        for procs in PROCS {
            let c = cx(procs);
            let z = ok(zeros(&c, &shape, DType::I64), "zeros")?;
            prop_assert_eq!((z.dtype(), z.size() as i64, z.ndim()), (DType::I64, n, shape.len()));
            prop_assert_eq!(ok(z.to_vec::<i64>(), "to_vec")?, vec![0; n as usize]);
            let o = ok(ones(&c, &shape, DType::F32), "ones")?;
            prop_assert_eq!(ok(o.to_vec::<f32>(), "to_vec")?, vec![1.0f32; n as usize]);
            let t = ok(ones(&c, &shape, DType::Bool), "ones")?;
            prop_assert_eq!(ok(t.to_vec::<bool>(), "to_vec")?, vec![true; n as usize]);
            let f = ok(full(&c, &shape, value), "full")?;
            prop_assert_eq!(f.dtype(), DType::F64);
            prop_assert_eq!(ok(f.to_vec::<f64>(), "to_vec")?, vec![value; n as usize]);
            let i = ok(full(&c, &shape, int), "full")?;
            prop_assert_eq!(i.dtype(), DType::I64);
            prop_assert_eq!(ok(i.to_vec::<i64>(), "to_vec")?, vec![int; n as usize]);
        }
    }
}
