//! Hand-written cases with known values, each on 1 to 4 processors: the crate example,
//! NumPy slicing (negative, omitted and inclusive bounds, views of views, aliasing),
//! operators with arrays, results and scalars on either side for every dtype, comparisons,
//! logical operations and `where_`, broadcasting, assignment, host I/O, metadata, and the
//! products and reductions of a small matrix.

use diffuse_array::{
    arange, binary, s, unary, where_, Array, ArrayError, BinaryOp, DType, UnaryOp,
};

use crate::{cx, iota, shape_of, PROCS, R};

#[test]
fn crate_example_stencil_step() -> R {
    for procs in PROCS {
        let grid = iota(&cx(procs), &[4, 4])?;
        let center = grid.slice(&s![1..-1, 1..-1])?;
        let north = grid.slice(&s![..-2, 1..-1])?;
        let avg = ((&center + &north)? * 0.5)?;
        center.assign(&avg)?;
        let old: Vec<f64> = (0..16).map(f64::from).collect();
        let mut want = old.clone();
        for (i, j) in [(1, 1), (1, 2), (2, 1), (2, 2)] {
            want[i * 4 + j] = (old[i * 4 + j] + old[(i - 1) * 4 + j]) * 0.5;
        }
        assert_eq!(grid.to_vec::<f64>()?, want, "procs {procs}");
        assert_eq!(grid.sum()?.item::<f64>()?, 120.0 - 4.0 * 2.0);
    }
    Ok(())
}

#[test]
fn slices_follow_numpy() -> R {
    for procs in PROCS {
        let a = iota(&cx(procs), &[3, 5])?;
        let cases: Vec<(Vec<diffuse_array::SliceArg>, Vec<usize>, Vec<f64>)> = vec![
            (
                s![1.., ..-1].to_vec(),
                vec![2, 4],
                vec![5., 6., 7., 8., 10., 11., 12., 13.],
            ),
            (s![-1..].to_vec(), vec![1, 5], vec![10., 11., 12., 13., 14.]),
            (s![.., 2..3].to_vec(), vec![3, 1], vec![2., 7., 12.]),
            (s![..-2, -2..].to_vec(), vec![1, 2], vec![3., 4.]),
            (s![0..=1, 3..=-1].to_vec(), vec![2, 2], vec![3., 4., 8., 9.]),
            (s![..=-1, ..=0].to_vec(), vec![3, 1], vec![0., 5., 10.]),
            (s![1..1].to_vec(), vec![0, 5], vec![]),
            (s![2..1, ..].to_vec(), vec![0, 5], vec![]),
            (s![-3..-2, -5..-4].to_vec(), vec![1, 1], vec![0.]),
            (
                s![..].to_vec(),
                vec![3, 5],
                (0..15).map(f64::from).collect(),
            ),
            (Vec::new(), vec![3, 5], (0..15).map(f64::from).collect()),
        ];
        for (spec, shape, values) in cases {
            let v = a.slice(&spec)?;
            assert_eq!(shape_of(&v), shape, "procs {procs}: {spec:?}");
            assert_eq!(v.to_vec::<f64>()?, values, "procs {procs}: {spec:?}");
            assert!(v.shares_store(&a), "a slice is a view");
        }
        // A view of a view: offsets add up.
        let inner = a.slice(&s![1.., 1..])?.slice(&s![1.., 1..3])?;
        assert_eq!(inner.to_vec::<f64>()?, vec![12., 13.]);
        // A 0-d array sliced with no indices is itself.
        let z = a.sum()?.slice(&[])?;
        assert_eq!(z.item::<f64>()?, 105.0);
    }
    Ok(())
}

#[test]
fn views_alias_their_store() -> R {
    for procs in PROCS {
        let a = iota(&cx(procs), &[2, 3])?;
        let col = a.slice(&s![.., 1..2])?;
        col.assign(-1.0)?;
        assert_eq!(a.to_vec::<f64>()?, vec![0., -1., 2., 3., -1., 5.]);
        let row = a.slice(&s![1..])?;
        row.assign(&Array::from_vec(&cx(procs), &[3], vec![7.0, 8.0, 9.0])?)?;
        assert_eq!(a.to_vec::<f64>()?, vec![0., -1., 2., 7., 8., 9.]);
        // A clone is another handle on the same elements; `copy` is not.
        let (alias, copy) = (a.clone(), a.copy()?);
        alias.slice(&s![0..1, 0..1])?.assign(42.0)?;
        assert_eq!(a.to_vec::<f64>()?[0], 42.0);
        assert_eq!(copy.to_vec::<f64>()?[0], 0.0);
        assert!(alias.shares_store(&a) && !copy.shares_store(&a));
        // Overlapping shifted copy within one row reads the old values (NumPy semantics).
        let v = iota(&cx(procs), &[6])?;
        v.slice(&s![1..])?.assign(&v.slice(&s![..-1])?)?;
        assert_eq!(v.to_vec::<f64>()?, vec![0., 0., 1., 2., 3., 4.]);
        v.slice(&s![..-2])?.assign(&v.slice(&s![2..])?)?;
        assert_eq!(v.to_vec::<f64>()?, vec![1., 2., 3., 4., 3., 4.]);
    }
    Ok(())
}

#[test]
fn float_operators_with_arrays_results_and_scalars() -> R {
    for procs in PROCS {
        let c = cx(procs);
        let a = Array::from_vec(&c, &[4], vec![1.0, 2.0, 4.0, 8.0])?;
        let b = Array::from_vec(&c, &[4], vec![0.5, -1.0, 2.0, 3.0])?;
        let check = |r: Result<Array, ArrayError>, want: Vec<f64>, what: &str| -> R {
            assert_eq!(r?.to_vec::<f64>()?, want, "procs {procs}: {what}");
            Ok(())
        };
        check(&a + &b, vec![1.5, 1.0, 6.0, 11.0], "a + b")?;
        check(&a - &b, vec![0.5, 3.0, 2.0, 5.0], "a - b")?;
        check(&a * &b, vec![0.5, -2.0, 8.0, 24.0], "a * b")?;
        check(&a / &b, vec![2.0, -2.0, 2.0, 8.0 / 3.0], "a / b")?;
        check(a.clone() + b.clone(), vec![1.5, 1.0, 6.0, 11.0], "owned")?;
        check(&a + b.clone(), vec![1.5, 1.0, 6.0, 11.0], "ref + owned")?;
        check(a.clone() - &b, vec![0.5, 3.0, 2.0, 5.0], "owned - ref")?;
        check((&a + &b) * &a, vec![1.5, 2.0, 24.0, 88.0], "result * a")?;
        check(&a * (&a - &b), vec![0.5, 6.0, 8.0, 40.0], "a * result")?;
        check(a.clone() / (&a + 0.0), vec![1.0; 4], "owned / result")?;
        check(&a + 1.0, vec![2.0, 3.0, 5.0, 9.0], "a + 1")?;
        check(2.0 - &a, vec![1.0, 0.0, -2.0, -6.0], "2 - a")?;
        check(&a - 2.0, vec![-1.0, 0.0, 2.0, 6.0], "a - 2")?;
        check(8.0 / &a, vec![8.0, 4.0, 2.0, 1.0], "8 / a")?;
        check(&a / 4.0, vec![0.25, 0.5, 1.0, 2.0], "a / 4")?;
        check(3.0 * a.clone(), vec![3.0, 6.0, 12.0, 24.0], "3 * owned")?;
        check(
            a.clone() * 3,
            vec![3.0, 6.0, 12.0, 24.0],
            "integer scalar on a float array",
        )?;
        check(-&a, vec![-1.0, -2.0, -4.0, -8.0], "-a")?;
        check(-(a.clone()), vec![-1.0, -2.0, -4.0, -8.0], "-owned")?;
        check(a.pow(2.0), vec![1.0, 4.0, 16.0, 64.0], "a ** 2")?;
        check(a.pow(&b), vec![1.0, 0.5, 16.0, 512.0], "a ** b")?;
        check(a.log(), vec![0.0, 2f64.ln(), 4f64.ln(), 8f64.ln()], "log")?;
        check(a.sqrt(), vec![1.0, 2f64.sqrt(), 2.0, 8f64.sqrt()], "sqrt")?;
        check(b.abs(), vec![0.5, 1.0, 2.0, 3.0], "abs")?;
        check(
            b.cos(),
            [0.5f64, -1.0, 2.0, 3.0].map(f64::cos).to_vec(),
            "cos",
        )?;
        check(a.maximum(&b), vec![1.0, 2.0, 4.0, 8.0], "maximum")?;
        check(a.minimum(3.0), vec![1.0, 2.0, 3.0, 3.0], "minimum")?;
        check(unary(UnaryOp::Copy, &a), vec![1.0, 2.0, 4.0, 8.0], "copy")?;
        check(
            binary(BinaryOp::Sub, 1.0, &a),
            vec![0.0, -1.0, -3.0, -7.0],
            "1 - a",
        )?;
        // An f32 array takes f64 and i64 scalars in its own dtype.
        let f = Array::from_vec(&c, &[3], vec![1.5f32, -2.0, 0.25])?;
        let g = ((&f * 2.0)? + 1)?;
        assert_eq!(g.dtype(), DType::F32);
        assert_eq!(g.to_vec::<f32>()?, vec![4.0, -3.0, 1.5]);
        assert_eq!(
            f.exp()?.to_vec::<f32>()?,
            vec![1.5f32.exp(), (-2f32).exp(), 0.25f32.exp()]
        );
    }
    Ok(())
}

#[test]
fn integer_operators() -> R {
    for procs in PROCS {
        let c = cx(procs);
        let a = Array::from_vec(&c, &[5], vec![-2i64, -1, 0, 3, 10])?;
        assert_eq!((&a * 3)?.to_vec::<i64>()?, vec![-6, -3, 0, 9, 30]);
        assert_eq!((10 - &a)?.to_vec::<i64>()?, vec![12, 11, 10, 7, 0]);
        assert_eq!((&a + &a)?.to_vec::<i64>()?, vec![-4, -2, 0, 6, 20]);
        assert_eq!((-&a)?.to_vec::<i64>()?, vec![2, 1, 0, -3, -10]);
        assert_eq!(a.abs()?.to_vec::<i64>()?, vec![2, 1, 0, 3, 10]);
        assert_eq!(a.maximum(0)?.to_vec::<i64>()?, vec![0, 0, 0, 3, 10]);
        assert_eq!(
            (&a * 2.0)?.to_vec::<i64>()?,
            vec![-4, -2, 0, 6, 20],
            "integral f64 scalar"
        );
        let i = Array::from_vec(&c, &[3], vec![1i32, -7, 100])?;
        let j = ((&i * 2)? - 1)?;
        assert_eq!(j.dtype(), DType::I32);
        assert_eq!(j.to_vec::<i32>()?, vec![1, -15, 199]);
        assert_eq!(i.sum()?.item::<i32>()?, 94);
        assert_eq!(
            i.astype(DType::F64)?.to_vec::<f64>()?,
            vec![1.0, -7.0, 100.0]
        );
    }
    Ok(())
}

#[test]
fn comparisons_logic_and_where() -> R {
    for procs in PROCS {
        let c = cx(procs);
        let a = Array::from_vec(&c, &[5], vec![1.0, 5.0, 3.0, f64::NAN, -2.0])?;
        let b = Array::from_vec(&c, &[5], vec![2.0, 5.0, 1.0, 0.0, -3.0])?;
        let bools = |r: Result<Array, ArrayError>| -> Result<Vec<bool>, ArrayError> {
            let r = r?;
            assert_eq!(r.dtype(), DType::Bool);
            r.to_vec::<bool>()
        };
        assert_eq!(bools(a.less(&b))?, vec![true, false, false, false, false]);
        assert_eq!(
            bools(a.less_equal(&b))?,
            vec![true, true, false, false, false]
        );
        assert_eq!(bools(a.greater(&b))?, vec![false, false, true, false, true]);
        assert_eq!(
            bools(a.greater_equal(&b))?,
            vec![false, true, true, false, true]
        );
        assert_eq!(bools(a.equal(&b))?, vec![false, true, false, false, false]);
        assert_eq!(bools(a.not_equal(&b))?, vec![true, false, true, true, true]);
        assert_eq!(
            bools(a.greater(2.0))?,
            vec![false, true, true, false, false]
        );
        assert_eq!(
            bools(binary(BinaryOp::Less, 2.0, &a))?,
            vec![false, true, true, false, false]
        );
        let p = a.greater(0.0)?;
        let q = b.greater(0.0)?;
        assert_eq!(bools(&p & &q)?, vec![true, true, true, false, false]);
        assert_eq!(bools(&p | &q)?, vec![true, true, true, false, false]);
        assert_eq!(bools(p.logical_and(&q.logical_not()?))?, vec![false; 5]);
        assert_eq!(
            bools(p.logical_or(&a.less(-1.0)?))?,
            vec![true, true, true, false, true]
        );
        assert_eq!(bools(p.equal(true))?, vec![true, true, true, false, false]);
        let w = where_(&p, &a, &b)?.to_vec::<f64>()?;
        assert_eq!(w, vec![1.0, 5.0, 3.0, 0.0, -3.0]);
        let w = where_(&p, 1.0, &b)?.to_vec::<f64>()?;
        assert_eq!(w, vec![1.0, 1.0, 1.0, 0.0, -3.0]);
        let w = where_(&p, &a, -1.0)?.to_vec::<f64>()?;
        assert_eq!(w, vec![1.0, 5.0, 3.0, -1.0, -1.0]);
        // The condition broadcasts against the values: a column condition picks rows.
        let rows = Array::from_vec(&c, &[2, 1], vec![true, false])?;
        let m = Array::from_vec(&c, &[2, 3], vec![1i64, 2, 3, 4, 5, 6])?;
        let w = where_(&rows, &m, 0)?;
        assert_eq!(shape_of(&w), vec![2, 3]);
        assert_eq!(w.to_vec::<i64>()?, vec![1, 2, 3, 0, 0, 0]);
        let row = Array::from_vec(&c, &[3], vec![7i64, 8, 9])?;
        let w = where_(&rows, &row, &m.slice(&s![.., ..1])?)?;
        assert_eq!(w.to_vec::<i64>()?, vec![7, 8, 9, 4, 4, 4]);
    }
    Ok(())
}

#[test]
fn broadcasting_follows_numpy() -> R {
    for procs in PROCS {
        let c = cx(procs);
        let col = Array::from_vec(&c, &[3, 1], vec![0.0, 10.0, 20.0])?;
        let row = arange(&c, 0.0, 4.0, 1.0, DType::F64)?;
        let t = (&col + &row)?;
        assert_eq!(shape_of(&t), vec![3, 4]);
        assert_eq!(
            t.to_vec::<f64>()?,
            vec![0., 1., 2., 3., 10., 11., 12., 13., 20., 21., 22., 23.]
        );
        let cube = iota(&cx(procs), &[2, 1, 3])?;
        let k = Array::from_vec(&c, &[4, 1], vec![0.0, 100.0, 200.0, 300.0])?;
        let u = (&cube - &k)?;
        assert_eq!(shape_of(&u), vec![2, 4, 3]);
        let v = u.to_vec::<f64>()?;
        assert_eq!(v[0..3], [0., 1., 2.]);
        assert_eq!(v[3..6], [-100., -99., -98.]);
        assert_eq!(v[21..24], [-297., -296., -295.]);
        // A 0-d array broadcasts everywhere, on either side.
        let s = row.sum()?;
        assert_eq!((&s - &row)?.to_vec::<f64>()?, vec![6., 5., 4., 3.]);
        assert_eq!((&col * &s)?.to_vec::<f64>()?, vec![0., 60., 120.]);
        // Assignment broadcasts a row into every row of a view, and a scalar everywhere.
        let m = iota(&cx(procs), &[3, 4])?;
        m.slice(&s![1.., 1..])?.assign(&row.slice(&s![1..])?)?;
        m.slice(&s![..1])?.assign(-1.0)?;
        assert_eq!(
            m.to_vec::<f64>()?,
            vec![-1., -1., -1., -1., 4., 1., 2., 3., 8., 1., 2., 3.]
        );
    }
    Ok(())
}

#[test]
fn host_io_and_metadata() -> R {
    for procs in PROCS {
        let c = cx(procs);
        let a = Array::from_vec(&c, &[2, 3], vec![1i64, 2, 3, 4, 5, 6])?;
        assert_eq!(
            (a.ndim(), a.size(), a.dtype(), a.is_empty()),
            (2, 6, DType::I64, false)
        );
        assert_eq!(a.shape().as_slice(), &[2, 3]);
        let debug = format!("{a:?}");
        assert!(debug.contains("i64") && debug.contains("(2, 3)"), "{debug}");
        a.slice(&s![1..])?.write_from(vec![7i64, 8, 9])?;
        assert_eq!(a.to_vec::<i64>()?, vec![1, 2, 3, 7, 8, 9]);
        let v = a.slice(&s![.., 1..])?;
        v.write_from(vec![0i64, 0, 0, 0])?;
        assert_eq!(a.to_vec::<i64>()?, vec![1, 0, 0, 7, 0, 0]);
        let b = Array::from_vec(&c, &[2], vec![true, false])?;
        assert_eq!(b.to_vec::<bool>()?, vec![true, false]);
        let z = Array::from_vec(&c, &[], vec![2.5f64])?;
        assert_eq!((z.ndim(), z.size()), (0, 1));
        assert_eq!(z.item::<f64>()?, 2.5);
        assert_eq!(a.slice(&s![1..2, 2..3])?.item::<i64>()?, 0);
        c.flush()?;
        assert_eq!(a.context().partitioner().procs(), procs);
    }
    Ok(())
}

#[test]
fn small_matrix_products_and_reductions() -> R {
    for procs in PROCS {
        let c = cx(procs);
        let a = iota(&cx(procs), &[3, 5])?;
        let x = Array::from_vec(&c, &[5], vec![1.0, 2.0, 3.0, 4.0, 5.0])?;
        assert_eq!(a.matvec(&x)?.to_vec::<f64>()?, vec![40.0, 115.0, 190.0]);
        assert_eq!(a.matmul(&x)?.to_vec::<f64>()?, vec![40.0, 115.0, 190.0]);
        let sq = iota(&cx(procs), &[3, 3])?;
        assert_eq!(
            sq.matmul(&sq)?.to_vec::<f64>()?,
            vec![15.0, 18.0, 21.0, 42.0, 54.0, 66.0, 69.0, 90.0, 111.0]
        );
        let p = a.matmul(&a.slice(&s![.., ..2])?.slice(&s![..3])?.copy()?);
        assert!(p.is_err(), "(3, 5) @ (3, 2) does not multiply");
        let at = Array::from_vec(&c, &[5, 2], (0..10).map(f64::from).collect())?;
        assert_eq!(
            a.matmul(&at)?.to_vec::<f64>()?,
            vec![60., 70., 160., 195., 260., 320.]
        );
        assert_eq!(a.sum()?.item::<f64>()?, 105.0);
        assert_eq!(a.max()?.item::<f64>()?, 14.0);
        assert_eq!(a.min()?.item::<f64>()?, 0.0);
        let mean = a.mean()?.item::<f64>()?;
        assert!((mean - 7.0).abs() < 1e-14, "{mean}");
        assert_eq!(x.dot(&x)?.item::<f64>()?, 55.0);
        let n = a.norm()?.item::<f64>()?;
        assert!((n - 1015f64.sqrt()).abs() < 1e-12, "{n}");
        let w = where_(&a.greater(7.0)?, &a, 0.0)?;
        assert_eq!(w.sum()?.item::<f64>()?, f64::from((8..15).sum::<i32>()));
    }
    Ok(())
}
