//! Edge cases, each on 1 to 4 processors: arrays with a zero extent through element-wise
//! operations, assignment, reductions (`sum` is 0) and products; 0-d arrays (reduction
//! results) in arithmetic, comparisons, `where_` and assignment; 6-d arrays against the
//! sequential model; integer arithmetic that wraps (element-wise and in reductions); NaN
//! propagation in `maximum`/`minimum` and in `max`/`min`; `where_` with two scalar values;
//! views outliving their base array's handle.

use diffuse_array::{ones, s, where_, zeros, Array, ArrayError, DType};

use crate::model::{self, Dense};
use crate::{cx, fresh_cx, iota, shape_of, PROCS, R};

#[test]
fn empty_arrays_through_elementwise_operations() -> R {
    for procs in PROCS {
        let c = cx(procs);
        let e = zeros(&c, &[0, 3], DType::F64)?;
        assert!(e.is_empty() && e.size() == 0);
        let row = Array::from_vec(&c, &[3], vec![1.0, 2.0, 3.0])?;
        for (what, r) in [
            ("e + 1", &e + 1.0),
            ("e + row", &e + &row),
            ("row * e", &row * &e),
            (
                "e * (1, 3)",
                &e * &Array::from_vec(&c, &[1, 3], vec![1.0, 2.0, 3.0])?,
            ),
            ("exp", e.exp()),
            ("where", where_(&e.greater(0.0)?, &e, 1.0)),
            ("maximum", e.maximum(&row)),
            ("-e", -&e),
        ] {
            let r = r?;
            assert_eq!(shape_of(&r), vec![0, 3], "procs {procs}: {what}");
            assert_eq!(r.to_vec::<f64>()?, Vec::<f64>::new());
        }
        let col = Array::from_vec(&c, &[2, 0, 1], Vec::<f64>::new())?;
        assert_eq!(shape_of(&(&col + &row)?), vec![2, 0, 3]);
        assert_eq!(e.greater(&row)?.dtype(), DType::Bool);
        assert_eq!(e.astype(DType::I64)?.to_vec::<i64>()?, Vec::<i64>::new());
        // Empty views of non-empty arrays, and assignments into them, change nothing.
        let a = iota(&cx(procs), &[3, 4])?;
        let none = a.slice(&s![2..2, ..])?;
        assert_eq!(shape_of(&none), vec![0, 4]);
        none.assign(-1.0)?;
        none.assign(&a.slice(&s![..1])?)?;
        a.slice(&s![.., 3..1])?.assign(7.0)?;
        assert_eq!(
            a.to_vec::<f64>()?,
            (0..12).map(f64::from).collect::<Vec<_>>()
        );
        assert_eq!((&none * 2.0)?.size(), 0);
        e.assign(&row)?;
        e.assign(5.0)?;
    }
    Ok(())
}

#[test]
fn reductions_and_products_of_empty_arrays() -> R {
    for procs in PROCS {
        let c = cx(procs);
        let e = zeros(&c, &[0, 3], DType::F64)?;
        assert_eq!(e.sum()?.item::<f64>()?, 0.0);
        assert_eq!(e.dot(&e)?.item::<f64>()?, 0.0);
        assert_eq!(e.norm()?.item::<f64>()?, 0.0);
        let v = iota(&cx(procs), &[4])?.slice(&s![3..3])?;
        assert_eq!(v.sum()?.ndim(), 0);
        assert_eq!(v.sum()?.item::<f64>()?, 0.0);
        let i = zeros(&c, &[2, 0, 2], DType::I64)?;
        assert_eq!(i.sum()?.item::<i64>()?, 0);
        // (2, 0) @ (0, 3) is a (2, 3) matrix of zeros; (0, 2) @ (2, 3) is empty.
        let a = zeros(&c, &[2, 0], DType::F64)?;
        let b = zeros(&c, &[0, 3], DType::F64)?;
        let p = a.matmul(&b)?;
        assert_eq!(shape_of(&p), vec![2, 3]);
        assert_eq!(p.to_vec::<f64>()?, vec![0.0; 6]);
        let full = iota(&cx(procs), &[2, 3])?;
        let q = zeros(&c, &[0, 2], DType::F64)?.matmul(&full)?;
        assert_eq!(shape_of(&q), vec![0, 3]);
        let m = zeros(&c, &[3, 0], DType::F64)?;
        assert_eq!(
            m.matvec(&zeros(&c, &[0], DType::F64)?)?.to_vec::<f64>()?,
            vec![0.0; 3]
        );
        // Products written into a reused (recycled) buffer must still be zero.
        drop(p);
        let again = a.matmul(&b)?;
        assert_eq!(again.to_vec::<f64>()?, vec![0.0; 6], "procs {procs}");
    }
    Ok(())
}

#[test]
fn zero_dimensional_arithmetic() -> R {
    for procs in PROCS {
        let c = cx(procs);
        let a = iota(&cx(procs), &[2, 3])?; // sum 15
        let b = Array::from_vec(&c, &[4], vec![1.0, 1.0, 2.0, 2.0])?; // sum 6
        let ratio = (a.sum()? / b.sum()?)?;
        assert_eq!((ratio.ndim(), ratio.size()), (0, 1));
        assert_eq!(ratio.item::<f64>()?, 2.5, "procs {procs}");
        let x = (((&ratio * 2.0)? - 1.0)? + &ratio)?;
        assert_eq!(x.item::<f64>()?, 6.5);
        // The JIT's exp is a polynomial within 1 ulp of libm's.
        let e = (-&x)?.exp()?.item::<f64>()?;
        assert!(
            (e - (-6.5f64).exp()).abs() <= f64::EPSILON * e,
            "procs {procs}: {e}"
        );
        assert!(x.greater(6.0)?.item::<bool>()?);
        assert_eq!(x.max()?.item::<f64>()?, 6.5);
        assert_eq!(x.sum()?.item::<f64>()?, 6.5);
        assert_eq!(x.astype(DType::I64)?.item::<i64>()?, 6);
        // 0-d operands broadcast against n-d ones, as values and as conditions.
        let scaled = (&a / &ratio)?;
        assert_eq!(scaled.to_vec::<f64>()?, vec![0.0, 0.4, 0.8, 1.2, 1.6, 2.0]);
        let pick = where_(&ratio.greater(2.0)?, &a, 0.0)?;
        assert_eq!(shape_of(&pick), vec![2, 3]);
        assert_eq!(pick.sum()?.item::<f64>()?, 15.0);
        let none = where_(&ratio.less(0.0)?, &a, &ratio)?;
        assert_eq!(none.to_vec::<f64>()?, vec![2.5; 6]);
        // Assignments to and from 0-d arrays.
        let z = Array::from_vec(&c, &[], vec![0.0])?;
        z.assign(&ratio)?;
        assert_eq!(z.item::<f64>()?, 2.5);
        z.assign(-1.0)?;
        a.slice(&s![1..])?.assign(&z)?;
        assert_eq!(a.to_vec::<f64>()?, vec![0.0, 1.0, 2.0, -1.0, -1.0, -1.0]);
        // A conjugate-gradient-style update: scalars stay on the device.
        let r = Array::from_vec(&c, &[3], vec![1.0, 2.0, 2.0])?;
        let rho = r.dot(&r)?;
        let alpha = (&rho / &r.sum()?)?; // 9 / 5
        let y = (&r - &(&alpha * &r)?)?;
        assert_eq!(y.to_vec::<f64>()?, vec![1.0 - 1.8, 2.0 - 3.6, 2.0 - 3.6]);
        let i = Array::from_vec(&c, &[], vec![7i64])?;
        assert_eq!(((&i * &i)? - 1)?.item::<i64>()?, 48);
    }
    Ok(())
}

#[test]
fn six_dimensional_arrays_match_the_model() -> R {
    let shape = [2usize, 1, 3, 2, 2, 3];
    let dims: Vec<i64> = shape.iter().map(|&e| e as i64).collect();
    let n = model::volume(&shape);
    let data: Vec<f64> = (0..n).map(|i| (i as f64 - 30.0) / 4.0).collect();
    let base = Dense::new(shape.to_vec(), data.clone());
    let row = Dense::new(vec![3], vec![0.5, -1.0, 2.0]);
    let col = Dense::new(vec![3, 1, 1, 1], vec![10.0, 20.0, 30.0]);
    let ranges = [(0, 2), (0, 1), (1, 3), (0, 2), (1, 2), (0, 3)];
    for procs in PROCS {
        let c = cx(procs);
        let a = Array::from_vec(&c, &dims, data.clone())?;
        assert_eq!(a.ndim(), 6);
        let r = Array::from_vec(&c, &[3], row.data.clone())?;
        let k = Array::from_vec(&c, &[3, 1, 1, 1], col.data.clone())?;
        let got = ((&a * &r)? + &k)?.sin()?;
        let want =
            model::zip(&model::zip(&base, &row, |x, y| x * y), &col, |x, y| x + y).map(f64::sin);
        assert_eq!(shape_of(&got), want.shape, "procs {procs}");
        assert_eq!(got.to_vec::<f64>()?, want.data, "procs {procs}");
        let v = a.slice(&s![.., .., 1.., .., 1..2, ..])?;
        let vm = base.slice(&ranges);
        assert_eq!(shape_of(&v), vm.shape);
        assert_eq!(v.to_vec::<f64>()?, vm.data);
        assert_eq!(
            v.sum()?.item::<f64>()?,
            vm.data.iter().sum::<f64>(),
            "exact quarters"
        );
        assert_eq!(
            v.max()?.item::<f64>()?,
            vm.data.iter().copied().fold(f64::MIN, f64::max)
        );
        // Assign a broadcast expression into the 6-d view; the rest of the array stays.
        let src = (&v.slice(&s![..1])? - 100.0)?;
        v.assign(&src)?;
        let mut after = base.clone();
        let first = vm.slice(&[(0, 1), (0, 1), (0, 2), (0, 2), (0, 1), (0, 3)]);
        after.assign_region(&ranges, &first.map(|x| x - 100.0));
        assert_eq!(a.to_vec::<f64>()?, after.data, "procs {procs}");
        let mask = a.less(-50.0)?;
        let w = where_(&mask, &a, &r)?;
        let wm = model::select(&after.map(|x| x < -50.0), &after, &row);
        assert_eq!(w.to_vec::<f64>()?, wm.data);
    }
    Ok(())
}

#[test]
fn integer_arithmetic_wraps() -> R {
    for procs in PROCS {
        let c = cx(procs);
        let (max, min) = (i64::MAX, i64::MIN);
        let a = Array::from_vec(&c, &[4], vec![max, min, -1, 3])?;
        let b = Array::from_vec(&c, &[4], vec![1, -1, min, max])?;
        let check = |r: Result<Array, ArrayError>, want: [i64; 4], what: &str| -> R {
            assert_eq!(r?.to_vec::<i64>()?, want, "procs {procs}: {what}");
            Ok(())
        };
        check(&a + &b, [min, max, max, min + 2], "add")?;
        check(
            &a - &b,
            [max - 1, min + 1, max, 3i64.wrapping_sub(max)],
            "subtract",
        )?;
        check(&a * &b, [max, min, min, 3i64.wrapping_mul(max)], "multiply")?;
        check(&a + 1, [min, min + 1, 0, 4], "add scalar")?;
        check(2 * &a, [-2, 0, -2, 6], "scalar multiply")?;
        check(-&a, [min + 1, min, 1, -3], "neg")?;
        check(a.abs(), [max, min, 1, 3], "abs")?;
        check(a.maximum(&b), [max, -1, -1, max], "maximum")?;
        check(a.minimum(&b), [1, min, min, 3], "minimum")?;
        let n = Array::from_vec(&c, &[3], vec![i32::MAX, i32::MIN, 5])?;
        assert_eq!(
            ((&n + 1)? * 2)?.to_vec::<i32>()?,
            vec![i32::MIN.wrapping_mul(2), (i32::MIN + 1).wrapping_mul(2), 12]
        );
        assert_eq!((-&n)?.to_vec::<i32>()?, vec![-i32::MAX, i32::MIN, -5]);
        assert_eq!(a.max()?.item::<i64>()?, max);
        assert_eq!(a.min()?.item::<i64>()?, min);
    }
    Ok(())
}

/// Integer sums and dot products wrap like element-wise integer arithmetic (NumPy's), on any
/// number of processors. Fresh contexts: a failure here must not disturb the shared ones.
#[test]
fn integer_reductions_wrap() -> R {
    for procs in PROCS {
        let c = fresh_cx(procs);
        // Every block of every processor grid holds a 2^62, so partial sums must wrap when
        // they are combined: the total is 2^63, which wraps to i64::MIN.
        let big = 1i64 << 62;
        let values = vec![big, 1, 2, 3, big, -1, -2, -3];
        let want = values.iter().fold(0i64, |s, &x| s.wrapping_add(x));
        assert_eq!(want, i64::MIN);
        let a = Array::from_vec(&c, &[8], values.clone())?;
        assert_eq!(a.sum()?.item::<i64>()?, want, "procs {procs}: sum");
        let m = Array::from_vec(&c, &[2, 4], values.clone())?;
        assert_eq!(m.sum()?.item::<i64>()?, want, "procs {procs}: 2-d sum");
        let all_ones = ones(&c, &[8], DType::I64)?;
        assert_eq!(a.dot(&all_ones)?.item::<i64>()?, want, "procs {procs}: dot");
        let sq = Array::from_vec(&c, &[4, 4], vec![big; 16])?;
        let x = ones(&c, &[4], DType::I64)?;
        assert_eq!(
            sq.matvec(&x)?.to_vec::<i64>()?,
            vec![0; 4],
            "procs {procs}: matvec"
        );
        let sq = Array::from_vec(&c, &[4, 4], vec![i64::MAX; 16])?;
        let want = i64::MAX.wrapping_mul(i64::MAX).wrapping_mul(4);
        assert_eq!(
            sq.matmul(&sq)?.to_vec::<i64>()?,
            vec![want; 16],
            "procs {procs}: matmul"
        );
    }
    Ok(())
}

#[test]
fn elementwise_maximum_and_minimum_propagate_nan() -> R {
    let nan = f64::NAN;
    for procs in PROCS {
        let c = cx(procs);
        let a = Array::from_vec(&c, &[5], vec![nan, 1.0, nan, f64::NEG_INFINITY, 0.0])?;
        let b = Array::from_vec(&c, &[5], vec![0.0, nan, nan, 2.0, -1.0])?;
        let bits = |r: Result<Array, ArrayError>| -> Result<Vec<String>, ArrayError> {
            Ok(r?.to_vec::<f64>()?.iter().map(|x| format!("{x}")).collect())
        };
        assert_eq!(bits(a.maximum(&b))?, ["NaN", "NaN", "NaN", "2", "0"]);
        assert_eq!(bits(a.minimum(&b))?, ["NaN", "NaN", "NaN", "-inf", "-1"]);
        assert_eq!(bits(b.maximum(&a))?, ["NaN", "NaN", "NaN", "2", "0"]);
        assert_eq!(bits(a.maximum(nan))?, ["NaN"; 5]);
        assert_eq!(bits(a.minimum(5.0))?, ["NaN", "1", "NaN", "-inf", "0"]);
        let f = Array::from_vec(&c, &[2], vec![f32::NAN, 1.0])?;
        let m = f.maximum(0.5)?.to_vec::<f32>()?;
        assert!(m[0].is_nan() && m[1] == 1.0, "{m:?}");
    }
    Ok(())
}

/// `max` and `min` of an array holding a NaN are NaN (NumPy's semantics, as the library
/// documents), wherever the NaN is and however many processors reduce.
#[test]
fn max_and_min_reductions_propagate_nan() -> R {
    for procs in PROCS {
        let c = cx(procs);
        for at in 0..6 {
            let mut v = vec![3.0, -1.0, 7.0, 0.5, 2.0, -4.0];
            v[at] = f64::NAN;
            let a = Array::from_vec(&c, &[6], v)?;
            let (max, min) = (a.max()?.item::<f64>()?, a.min()?.item::<f64>()?);
            assert!(
                max.is_nan() && min.is_nan(),
                "procs {procs}: NaN at {at}: max {max}, min {min}"
            );
        }
    }
    Ok(())
}

/// NumPy's `where(cond, 1.0, 0.0)`: both values scalars (the result takes the scalars'
/// dtype and the condition's shape).
#[test]
fn where_with_two_scalar_values() -> R {
    for procs in PROCS {
        let a = iota(&cx(procs), &[2, 2])?;
        let w = where_(&a.greater(1.0)?, 1.0, 0.0)?;
        assert_eq!(w.dtype(), DType::F64);
        assert_eq!(
            w.to_vec::<f64>()?,
            vec![0.0, 0.0, 1.0, 1.0],
            "procs {procs}"
        );
    }
    Ok(())
}

#[test]
fn views_and_results_outlive_their_handles() -> R {
    for procs in PROCS {
        let a = iota(&cx(procs), &[4, 4])?;
        let inner = a.slice(&s![1..3, 1..3])?;
        let sum = (&inner + 1.0)?;
        drop(a);
        assert_eq!(inner.to_vec::<f64>()?, vec![5.0, 6.0, 9.0, 10.0]);
        inner.assign(0.0)?;
        assert_eq!(sum.to_vec::<f64>()?, vec![6.0, 7.0, 10.0, 11.0]);
        assert_eq!(inner.sum()?.item::<f64>()?, 0.0);
        // Many short-lived temporaries in a chain (their stores are recycled).
        let mut x = iota(&cx(procs), &[8])?;
        for _ in 0..50 {
            x = ((&x * 0.5)? + 1.0)?;
        }
        let got = x.to_vec::<f64>()?;
        let mut want: Vec<f64> = (0..8).map(f64::from).collect();
        for _ in 0..50 {
            want.iter_mut().for_each(|v| *v = *v * 0.5 + 1.0);
        }
        assert_eq!(got, want, "procs {procs}");
        // Self-assignment leaves the values.
        x.assign(&x)?;
        assert_eq!(x.to_vec::<f64>()?, want);
    }
    Ok(())
}

#[test]
fn integer_and_float_division_follow_numpy() -> R {
    use diffuse_array::{binary, unary, BinaryOp, UnaryOp};
    for procs in PROCS {
        let cx = cx(procs);
        let ints = |v: Vec<i64>| Array::from_vec(&cx, &[v.len() as i64], v);
        let (a, b) = (
            ints(vec![i64::MIN, 5, -7, 7, 0, -7])?,
            ints(vec![-1, 0, 2, -2, 3, -2])?,
        );
        let q = binary(BinaryOp::FloorDivide, &a, &b)?.to_vec::<i64>()?;
        let r = binary(BinaryOp::Remainder, &a, &b)?.to_vec::<i64>()?;
        assert_eq!(q, vec![i64::MIN, 0, -4, -4, 0, 3], "procs {procs}");
        assert_eq!(r, vec![0, 0, 1, -1, 0, -1], "procs {procs}");
        let (x, n) = (
            ints(vec![1, 1, -1, -8, 8, -8])?,
            ints(vec![63, 64, -1, 70, 64, -1])?,
        );
        let left = binary(BinaryOp::LeftShift, &x, &n)?.to_vec::<i64>()?;
        let right = binary(BinaryOp::RightShift, &x, &n)?.to_vec::<i64>()?;
        assert_eq!(left, vec![i64::MIN, 0, 0, 0, 0, 0]);
        assert_eq!(right, vec![0, 0, -1, -1, 0, -1]);
        let inverted = unary(UnaryOp::Invert, &ints(vec![0, -1, 5])?)?.to_vec::<i64>()?;
        assert_eq!(inverted, vec![-1, 0, -6]);
        // Values NumPy 2 gives for np.floor_divide / np.remainder on these pairs.
        let inf = f64::INFINITY;
        let floats = |v: Vec<f64>| Array::from_vec(&cx, &[v.len() as i64], v);
        let a = floats(vec![inf, 5.0, -5.0, 0.0, -0.0, 7.5, 1e308, -7.0, 3.0])?;
        let b = floats(vec![2.0, inf, inf, -2.0, 2.0, -2.0, 1e-308, 2.0, 0.0])?;
        let q = binary(BinaryOp::FloorDivide, &a, &b)?.to_vec::<f64>()?;
        let r = binary(BinaryOp::Remainder, &a, &b)?.to_vec::<f64>()?;
        let want_q = [f64::NAN, 0.0, -1.0, -0.0, -0.0, -4.0, inf, -4.0, inf];
        let want_r = [
            f64::NAN,
            5.0,
            inf,
            -0.0,
            0.0,
            -0.5,
            3.49844555e-309,
            1.0,
            f64::NAN,
        ];
        for (i, (&g, &w)) in q.iter().zip(&want_q).enumerate() {
            assert!(crate::same_f64(g, w), "floor_divide #{i}: {g} vs {w}");
        }
        for (i, (&g, &w)) in r.iter().zip(&want_r).enumerate() {
            let same_sign = g.is_sign_negative() == w.is_sign_negative();
            let close = (g == w || (g - w).abs() <= 1e-317) && same_sign;
            assert!(
                close || (g.is_nan() && w.is_nan()),
                "remainder #{i}: {g} vs {w}"
            );
        }
        let rint = unary(UnaryOp::Rint, &floats(vec![2.5, 3.5, -2.5, -0.4])?)?.to_vec::<f64>()?;
        assert_eq!(rint, vec![2.0, 4.0, -2.0, -0.0]);
        let sign = unary(UnaryOp::Sign, &floats(vec![-0.0, 0.0, -3.0, 2.0])?)?.to_vec::<f64>()?;
        assert!(sign == [0.0, 0.0, -1.0, 1.0] && sign[0].is_sign_positive());
    }
    Ok(())
}
