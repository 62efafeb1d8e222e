//! Bad inputs: each must be the specific `ArrayError` variant, with a message naming the
//! operation and the shapes or dtypes involved, never a panic, and must leave the arrays and
//! the context as they were (every test goes on to use them).
//!
//! Covered: shape mismatches in binary operations, `where_`, `dot` and `assign` (including
//! a larger source than the destination view), out-of-range and over-long slices, dtype
//! mismatches between arrays, float-only and numeric-only operations on the wrong dtype,
//! scalars that do not convert to the array's dtype, matrix products with mismatched inner
//! dimensions or wrong ranks, reductions without identity of empty arrays, host data of the
//! wrong type or length, bad constructor arguments, operands from two different contexts.

use diffuse_array::{
    arange, binary, linspace, random, s, where_, zeros, Array, ArrayContext, ArrayError, BinaryOp,
    DType, Distribution, SliceArg,
};

use crate::{cx, fresh_cx, iota, PROCS, R};

/// Asserts that `$r` is `Err` matching `$pat` (guard allowed) whose message contains every
/// one of `$needle`; evaluates to the message.
macro_rules! assert_err {
    ($r:expr, $pat:pat $(if $guard:expr)?, [$($needle:expr),* $(,)?]) => {{
        match $r {
            Err(e) => {
                let msg = e.to_string();
                assert!(
                    matches!(&e, $pat $(if $guard)?),
                    "expected {}, got {e:?}: {msg}",
                    stringify!($pat)
                );
                for needle in [$($needle),*] {
                    assert!(
                        msg.contains(needle),
                        "the message {msg:?} does not name {needle:?}"
                    );
                }
                msg
            }
            Ok(v) => panic!("expected {}, got Ok({v:?})", stringify!($pat)),
        }
    }};
}

/// `i64` zeros of `shape`.
fn ints(c: &ArrayContext, shape: &[i64]) -> Result<Array, ArrayError> {
    zeros(c, shape, DType::I64)
}

/// The extents of a shape carried by an error (boxed or not).
fn dims<S: std::borrow::Borrow<diffuse_ir::Shape>>(s: &S) -> Vec<i64> {
    s.borrow().as_slice().to_vec()
}

#[test]
fn shape_mismatch_in_binary_operations() -> R {
    for procs in PROCS {
        let c = cx(procs);
        let (a, b) = (iota(&c, &[3, 4])?, iota(&c, &[4, 3])?);
        assert_err!(
            &a + &b,
            ArrayError::ShapeMismatch { op: "add", lhs, rhs }
                if dims(lhs) == [3, 4] && dims(rhs) == [4, 3],
            ["add", "(3, 4)", "(4, 3)"]
        );
        let v = iota(&c, &[3])?;
        assert_err!(
            &a - &v,
            ArrayError::ShapeMismatch { op: "subtract", .. },
            ["subtract", "(3, 4)", "(3,)"]
        );
        assert_err!(
            v.maximum(&b.slice(&s![.., ..2])?),
            ArrayError::ShapeMismatch { op: "maximum", .. },
            ["maximum", "(3,)", "(4, 2)"]
        );
        assert_err!(
            a.less(&b),
            ArrayError::ShapeMismatch { op: "less", .. },
            ["less", "(3, 4)", "(4, 3)"]
        );
        // Extent 0 does not broadcast against 3 (only 1 does).
        let empty = iota(&c, &[0])?;
        assert_err!(
            &empty * &v,
            ArrayError::ShapeMismatch { op: "multiply", .. },
            ["multiply", "(0,)", "(3,)"]
        );
        let cond = a.greater(1.0)?;
        assert_err!(
            where_(&cond, &b, 0.0),
            ArrayError::ShapeMismatch { op: "where", .. },
            ["where", "(3, 4)", "(4, 3)"]
        );
        assert_err!(
            where_(&cond, &v, &iota(&c, &[4, 1])?),
            ArrayError::ShapeMismatch { op: "where", .. },
            ["where", "(3, 4)", "(4, 3)"]
        );
        assert_err!(
            a.dot(&b),
            ArrayError::ShapeMismatch { op: "dot", .. },
            ["dot", "(3, 4)", "(4, 3)"]
        );
        // The context still works.
        assert_eq!((&a + &a)?.sum()?.item::<f64>()?, 132.0);
    }
    Ok(())
}

#[test]
fn shape_mismatch_in_assign() -> R {
    for procs in PROCS {
        let c = cx(procs);
        let grid = iota(&c, &[4, 4])?;
        let before = grid.to_vec::<f64>()?;
        let window = grid.slice(&s![1..3, 1..3])?;
        assert_err!(
            window.assign(&iota(&c, &[3, 3])?),
            ArrayError::ShapeMismatch { op: "assign", lhs, rhs }
                if dims(lhs) == [2, 2] && dims(rhs) == [3, 3],
            ["assign", "(2, 2)", "(3, 3)"]
        );
        let short = grid.slice(&s![0..2, 0..1])?;
        assert_err!(
            short.assign(&iota(&c, &[3, 1])?),
            ArrayError::ShapeMismatch { op: "assign", .. },
            ["assign", "(2, 1)", "(3, 1)"]
        );
        let line = iota(&c, &[2])?;
        assert_err!(
            line.assign(&iota(&c, &[3])?),
            ArrayError::ShapeMismatch { op: "assign", .. },
            ["assign", "(2,)", "(3,)"]
        );
        // A source that broadcasts with the destination only by growing it.
        let column = grid.slice(&s![.., ..1])?;
        assert_err!(
            column.assign(&iota(&c, &[4, 4])?),
            ArrayError::ShapeMismatch { op: "assign", .. },
            ["assign", "(4, 1)", "(4, 4)"]
        );
        assert_err!(
            grid.slice(&s![0..1])?.assign(&iota(&c, &[2, 4])?),
            ArrayError::ShapeMismatch { op: "assign", .. },
            ["assign", "(1, 4)", "(2, 4)"]
        );
        assert_err!(
            line.assign(&iota(&c, &[2, 2])?),
            ArrayError::ShapeMismatch { op: "assign", .. },
            ["assign", "(2,)", "(2, 2)"]
        );
        // Overlapping source of the wrong shape in the same store.
        assert_err!(
            window.assign(&grid.slice(&s![..3, ..3])?),
            ArrayError::ShapeMismatch { op: "assign", .. },
            ["assign", "(2, 2)", "(3, 3)"]
        );
        assert_eq!(
            grid.to_vec::<f64>()?,
            before,
            "a failed assign wrote nothing"
        );
        window.assign(&iota(&c, &[2])?)?;
        assert_eq!(
            grid.sum()?.item::<f64>()?,
            120.0 - (5. + 6. + 9. + 10.) + 2.0
        );
    }
    Ok(())
}

#[test]
fn out_of_range_slices() -> R {
    for procs in PROCS {
        let c = cx(procs);
        let a = iota(&c, &[3, 4])?;
        let msg = assert_err!(
            a.slice(&s![5.., ..]),
            ArrayError::BadSlice { shape, .. } if dims(shape) == [3, 4],
            ["slice", "5", "(3, 4)"]
        );
        assert!(msg.contains("dimension 0"), "{msg}");
        let msg = assert_err!(
            a.slice(&s![.., ..7]),
            ArrayError::BadSlice { .. },
            ["slice", "7", "(3, 4)"]
        );
        assert!(msg.contains("dimension 1"), "{msg}");
        assert_err!(
            a.slice(&s![1..3, 4..5]),
            ArrayError::BadSlice { .. },
            ["slice", "5", "(3, 4)"]
        );
        assert_err!(
            a.slice(&s![.., .., ..]),
            ArrayError::BadSlice { .. },
            ["slice", "3 indices", "(3, 4)"]
        );
        assert_err!(
            a.slice(&s![-4..]),
            ArrayError::BadSlice { .. },
            ["slice", "-4", "(3, 4)"]
        );
        assert_err!(
            a.slice(&s![.., ..-5]),
            ArrayError::BadSlice { .. },
            ["slice", "-5", "(3, 4)"]
        );
        let z = a.sum()?;
        assert_err!(
            z.slice(&s![..]),
            ArrayError::BadSlice { .. },
            ["slice", "1 indices", "()"]
        );
        let extreme = [SliceArg {
            start: Some(i64::MIN),
            stop: Some(i64::MAX),
        }];
        assert_err!(
            a.slice(&extreme),
            ArrayError::BadSlice { .. },
            ["slice", &i64::MIN.to_string(), "(3, 4)"]
        );
        // A slice of a view is checked against the view's shape, not the store's.
        let v = a.slice(&s![1.., 1..])?;
        assert_err!(
            v.slice(&s![..3]),
            ArrayError::BadSlice { .. },
            ["slice", "3", "(2, 3)"]
        );
        assert_eq!(
            v.slice(&s![..2, -3..])?.sum()?.item::<f64>()?,
            5. + 6. + 7. + 9. + 10. + 11.
        );
    }
    Ok(())
}

#[test]
fn dtype_mismatch_between_arrays() -> R {
    for procs in PROCS {
        let c = cx(procs);
        let (f, i) = (iota(&c, &[3])?, ints(&c, &[3])?);
        assert_err!(
            &f + &i,
            ArrayError::DTypeMismatch {
                op: "add",
                lhs: DType::F64,
                rhs: DType::I64
            },
            ["add", "f64", "i64"]
        );
        assert_err!(
            i.minimum(&f),
            ArrayError::DTypeMismatch {
                op: "minimum",
                lhs: DType::I64,
                rhs: DType::F64
            },
            ["minimum", "i64", "f64"]
        );
        assert_err!(
            f.assign(&i),
            ArrayError::DTypeMismatch { op: "assign", .. },
            ["assign", "f64", "i64"]
        );
        let cond = f.greater(0.0)?;
        assert_err!(
            where_(&cond, &f, &i),
            ArrayError::DTypeMismatch { op: "where", .. },
            ["where", "f64", "i64"]
        );
        assert_err!(
            f.dot(&i),
            ArrayError::DTypeMismatch { op: "dot", .. },
            ["dot", "f64", "i64"]
        );
        let m = iota(&c, &[3, 3])?;
        assert_err!(
            m.matmul(&ints(&c, &[3, 2])?.astype(DType::I32)?),
            ArrayError::DTypeMismatch { op: "matmul", .. },
            ["matmul", "f64", "i32"]
        );
        assert_err!(
            m.matvec(&i),
            ArrayError::DTypeMismatch { op: "matvec", .. },
            ["matvec", "f64", "i64"]
        );
        // A non-bool condition, and logical operations on numbers.
        assert_err!(
            where_(&f, &f, 0.0),
            ArrayError::UnsupportedDType {
                op: "where",
                dtype: DType::F64,
                ..
            },
            ["where", "f64"]
        );
        assert_err!(
            f.logical_and(&f),
            ArrayError::UnsupportedDType {
                op: "logical_and",
                dtype: DType::F64,
                ..
            },
            ["logical_and", "f64"]
        );
        assert_err!(
            &i | &i,
            ArrayError::UnsupportedDType {
                op: "logical_or",
                dtype: DType::I64,
                ..
            },
            ["logical_or", "i64"]
        );
        assert_err!(
            f.logical_not(),
            ArrayError::UnsupportedDType {
                op: "logical_not",
                ..
            },
            ["logical_not", "f64"]
        );
        assert_eq!((&f + &f)?.to_vec::<f64>()?, vec![0.0, 2.0, 4.0]);
    }
    Ok(())
}

#[test]
fn float_only_operations_on_integers() -> R {
    for procs in PROCS {
        let c = cx(procs);
        let i = ints(&c, &[2, 3])?;
        assert_err!(
            i.exp(),
            ArrayError::UnsupportedDType {
                op: "exp",
                dtype: DType::I64,
                ..
            },
            ["exp", "i64"]
        );
        let i32s = i.astype(DType::I32)?;
        for (op, dtype, r) in [
            ("sqrt", "i64", i.sqrt()),
            ("log", "i64", i.log()),
            ("sin", "i32", i32s.sin()),
            ("cos", "i64", i.cos()),
            ("tanh", "i32", i32s.tanh()),
            ("erf", "i64", i.erf()),
        ] {
            assert_err!(r, ArrayError::UnsupportedDType { op: o, .. } if *o == op, [op, dtype]);
        }
        assert_err!(
            &i / &i,
            ArrayError::UnsupportedDType {
                op: "divide",
                dtype: DType::I64,
                ..
            },
            ["divide", "i64"]
        );
        assert_err!(
            &i / 2,
            ArrayError::UnsupportedDType {
                op: "divide",
                dtype: DType::I64,
                ..
            },
            ["divide", "i64"]
        );
        assert_err!(
            2 / &i32s,
            ArrayError::UnsupportedDType {
                op: "divide",
                dtype: DType::I32,
                ..
            },
            ["divide", "i32"]
        );
        assert_err!(
            i.pow(2),
            ArrayError::UnsupportedDType {
                op: "power",
                dtype: DType::I64,
                ..
            },
            ["power", "i64"]
        );
        assert_err!(
            i.mean(),
            ArrayError::UnsupportedDType { op: "mean", .. },
            ["mean", "i64"]
        );
        assert_err!(
            i.norm(),
            ArrayError::UnsupportedDType { op: "norm", .. },
            ["norm", "i64"]
        );
        // Numeric-only operations on bool.
        let b = i.equal(0)?;
        assert_err!(
            -&b,
            ArrayError::UnsupportedDType { op: "neg", .. },
            ["neg", "bool"]
        );
        assert_err!(
            &b + &b,
            ArrayError::UnsupportedDType { op: "add", .. },
            ["add", "bool"]
        );
        assert_err!(
            b.sum(),
            ArrayError::UnsupportedDType { op: "sum", .. },
            ["sum", "bool"]
        );
        assert_err!(
            b.max(),
            ArrayError::UnsupportedDType { op: "max", .. },
            ["max", "bool"]
        );
        let square = b.slice(&s![.., ..2])?;
        assert_err!(
            square.matmul(&square),
            ArrayError::UnsupportedDType { op: "matmul", .. },
            ["matmul", "bool"]
        );
        // Constructors that need a float (or numeric) dtype.
        let uniform = Distribution::Uniform {
            low: 0.0,
            high: 1.0,
        };
        assert_err!(
            random(&c, &[3], uniform, 1, DType::I64),
            ArrayError::UnsupportedDType { op: "random", .. },
            ["random", "i64"]
        );
        assert_err!(
            linspace(&c, 0.0, 1.0, 3, DType::I32),
            ArrayError::UnsupportedDType { op: "linspace", .. },
            ["linspace", "i32"]
        );
        assert_err!(
            arange(&c, 0.0, 3.0, 1.0, DType::Bool),
            ArrayError::UnsupportedDType { op: "arange", .. },
            ["arange", "bool"]
        );
        assert_eq!(i.astype(DType::F64)?.exp()?.to_vec::<f64>()?, vec![1.0; 6]);
    }
    Ok(())
}

#[test]
fn scalars_that_do_not_convert() -> R {
    for procs in PROCS {
        let c = cx(procs);
        let i = ints(&c, &[2, 2])?;
        assert_err!(
            &i + 0.5,
            ArrayError::ScalarDType {
                op: "add",
                dtype: DType::I64,
                ..
            },
            ["add", "0.5", "i64"]
        );
        assert_err!(
            0.5 * &i,
            ArrayError::ScalarDType { op: "multiply", .. },
            ["multiply", "0.5", "i64"]
        );
        assert_err!(
            i.assign(0.5),
            ArrayError::ScalarDType {
                op: "assign",
                dtype: DType::I64,
                ..
            },
            ["assign", "0.5", "i64"]
        );
        assert_err!(
            i.slice(&s![..1])?.assign(f64::NAN),
            ArrayError::ScalarDType { op: "assign", .. },
            ["assign", "NaN", "i64"]
        );
        assert_err!(
            &i - 1e300,
            ArrayError::ScalarDType { op: "subtract", .. },
            ["subtract", "i64"]
        );
        let narrow = i.astype(DType::I32)?;
        assert_err!(
            &narrow * (1i64 << 40),
            ArrayError::ScalarDType {
                op: "multiply",
                dtype: DType::I32,
                ..
            },
            ["multiply", "1099511627776", "i32"]
        );
        let f = iota(&c, &[2])?;
        assert_err!(
            binary(BinaryOp::Add, &f, true),
            ArrayError::ScalarDType {
                op: "add",
                dtype: DType::F64,
                ..
            },
            ["add", "true", "f64"]
        );
        let cond = f.greater(0.0)?;
        assert_err!(
            where_(&cond, &i.slice(&s![0..1])?, 2.5),
            ArrayError::ScalarDType { op: "where", .. },
            ["where", "2.5", "i64"]
        );
        assert_err!(
            cond.assign(1.0),
            ArrayError::ScalarDType {
                op: "assign",
                dtype: DType::Bool,
                ..
            },
            ["assign", "bool"]
        );
        assert_eq!(
            i.to_vec::<i64>()?,
            vec![0; 4],
            "a failed assign wrote nothing"
        );
        assert_eq!(
            (&i + 2.0)?.to_vec::<i64>()?,
            vec![2; 4],
            "an integral float converts"
        );
    }
    Ok(())
}

#[test]
fn matrix_product_shapes() -> R {
    for procs in PROCS {
        let c = cx(procs);
        let a = iota(&c, &[3, 4])?;
        assert_err!(
            a.matmul(&a),
            ArrayError::MatmulShape { op: "matmul", lhs, rhs, .. }
                if dims(lhs) == [3, 4] && dims(rhs) == [3, 4],
            ["matmul", "(3, 4)", "inner", "4", "3"]
        );
        assert_err!(
            a.matvec(&iota(&c, &[3])?),
            ArrayError::MatmulShape { op: "matvec", .. },
            ["matvec", "(3, 4)", "(3,)"]
        );
        assert_err!(
            a.matmul(&iota(&c, &[5])?),
            ArrayError::MatmulShape { .. },
            ["(3, 4)", "(5,)"]
        );
        let v = iota(&c, &[4])?;
        assert_err!(
            v.matmul(&a.slice(&s![..3])?.slice(&s![.., ..3])?),
            ArrayError::MatmulShape { op: "matmul", .. },
            ["matmul", "(4,)", "(3, 3)", "1-d"]
        );
        assert_err!(
            v.matvec(&v),
            ArrayError::MatmulShape { op: "matvec", .. },
            ["matvec", "(4,)", "1-d"]
        );
        assert_err!(
            a.matvec(&iota(&c, &[4, 1])?),
            ArrayError::MatmulShape { op: "matvec", .. },
            ["matvec", "(3, 4)", "(4, 1)", "2-d"]
        );
        let cube = iota(&c, &[2, 3, 4])?;
        assert_err!(
            cube.matmul(&iota(&c, &[4, 2])?),
            ArrayError::MatmulShape { op: "matmul", .. },
            ["matmul", "(2, 3, 4)", "3-d"]
        );
        assert_err!(
            a.sum()?.matmul(&a),
            ArrayError::MatmulShape { op: "matmul", .. },
            ["matmul", "()", "(3, 4)"]
        );
        assert_eq!(a.matvec(&v)?.to_vec::<f64>()?, vec![14.0, 38.0, 62.0]);
    }
    Ok(())
}

#[test]
fn reductions_of_empty_arrays_without_identity() -> R {
    for procs in PROCS {
        let c = cx(procs);
        let a = iota(&c, &[0, 3])?;
        for (op, r) in [("max", a.max()), ("min", a.min()), ("mean", a.mean())] {
            assert_err!(r, ArrayError::EmptyReduction { .. }, [op, "(0, 3)"]);
        }
        let v = iota(&c, &[5])?.slice(&s![2..2])?;
        assert_err!(
            v.max(),
            ArrayError::EmptyReduction { op: "max", .. },
            ["max", "(0,)"]
        );
        assert_eq!(v.sum()?.item::<f64>()?, 0.0);
    }
    Ok(())
}

#[test]
fn host_data_of_the_wrong_type_or_length() -> R {
    for procs in PROCS {
        let c = cx(procs);
        let a = iota(&c, &[2, 3])?;
        assert_err!(
            a.to_vec::<i64>(),
            ArrayError::HostData { op: "to_vec", .. },
            ["to_vec", "f64", "i64"]
        );
        assert_err!(
            a.sum()?.item::<f32>(),
            ArrayError::HostData { op: "item", .. },
            ["item", "f64", "f32"]
        );
        assert_err!(
            a.greater(1.0)?.to_vec::<f64>(),
            ArrayError::HostData { op: "to_vec", .. },
            ["to_vec", "bool", "f64"]
        );
        assert_err!(
            a.item::<f64>(),
            ArrayError::HostData { op: "item", .. },
            ["item", "(2, 3)", "6"]
        );
        assert_err!(
            a.slice(&s![..0])?.item::<f64>(),
            ArrayError::HostData { op: "item", .. },
            ["item", "(0, 3)"]
        );
        assert_err!(
            Array::from_vec(&c, &[2, 3], vec![0.0f64; 5]),
            ArrayError::HostData { op: "from_vec", .. },
            ["from_vec", "(2, 3)", "5"]
        );
        assert_err!(
            Array::from_vec(&c, &[], Vec::<i64>::new()),
            ArrayError::HostData { op: "from_vec", .. },
            ["from_vec", "()", "0"]
        );
        assert_err!(
            a.write_from(vec![1.0f64; 7]),
            ArrayError::HostData {
                op: "write_from",
                ..
            },
            ["write_from", "(2, 3)", "7"]
        );
        assert_err!(
            a.write_from(vec![1i64; 6]),
            ArrayError::HostData {
                op: "write_from",
                ..
            },
            ["write_from", "f64", "i64"]
        );
        // Shapes the IR rejects: a negative extent, more than 6 dimensions.
        assert_err!(
            Array::from_vec(&c, &[2, -1], Vec::<f64>::new()),
            ArrayError::Ir(_),
            ["-1"]
        );
        assert_err!(zeros(&c, &[1; 7], DType::F64), ArrayError::Ir(_), ["7"]);
        assert_eq!(
            a.to_vec::<f64>()?,
            vec![0., 1., 2., 3., 4., 5.],
            "nothing was written"
        );
    }
    Ok(())
}

#[test]
fn bad_constructor_arguments() -> R {
    let c = cx(2);
    assert_err!(
        arange(&c, 0.0, 5.0, 0.0, DType::F64),
        ArrayError::BadArgument { op: "arange", .. },
        ["arange", "step"]
    );
    assert_err!(
        arange(&c, 0.0, f64::INFINITY, 1.0, DType::F64),
        ArrayError::BadArgument { op: "arange", .. },
        ["arange", "inf"]
    );
    assert_err!(
        linspace(&c, 0.0, 1.0, -2, DType::F64),
        ArrayError::BadArgument { op: "linspace", .. },
        ["linspace", "-2"]
    );
    let bad = Distribution::Normal {
        mean: 0.0,
        std: f64::NAN,
    };
    assert_err!(
        random(&c, &[2], bad, 0, DType::F64),
        ArrayError::BadArgument { op: "random", .. },
        ["random", "NaN"]
    );
    assert_eq!(
        arange(&c, 5.0, 0.0, 1.0, DType::F64)?.size(),
        0,
        "an empty range is fine"
    );
    Ok(())
}

#[test]
fn operands_from_two_contexts() -> R {
    let (one, two) = (fresh_cx(2), fresh_cx(2));
    let a = iota(&one, &[3])?;
    let b = iota(&two, &[3])?;
    assert_err!(
        &a + &b,
        ArrayError::ContextMismatch { op: "add" },
        ["add", "context"]
    );
    assert_err!(
        b.maximum(&a),
        ArrayError::ContextMismatch { op: "maximum" },
        ["maximum", "context"]
    );
    assert_err!(
        a.assign(&b),
        ArrayError::ContextMismatch { op: "assign" },
        ["assign", "context"]
    );
    assert_err!(
        a.dot(&b),
        ArrayError::ContextMismatch { op: "dot" },
        ["dot", "context"]
    );
    let cond = a.greater(0.0)?;
    assert_err!(
        where_(&cond, &b, 0.0),
        ArrayError::ContextMismatch { op: "where" },
        ["where", "context"]
    );
    assert_err!(
        where_(&cond, &a, &b),
        ArrayError::ContextMismatch { op: "where" },
        ["where", "context"]
    );
    let m = iota(&two, &[3, 3])?;
    assert_err!(
        m.matvec(&a),
        ArrayError::ContextMismatch { op: "matvec" },
        ["matvec", "context"]
    );
    assert_err!(
        iota(&one, &[3, 3])?.matmul(&m),
        ArrayError::ContextMismatch { op: "matmul" },
        ["matmul", "context"]
    );
    // Even two array contexts over the same runtime are distinct.
    let ir = diffuse::embedded(diffuse::EmbeddedConfig {
        procs: Some(1),
        ..Default::default()
    })?;
    let (x, y) = (ArrayContext::new(ir.clone()), ArrayContext::new(ir));
    assert_err!(
        &iota(&x, &[2])? * &iota(&y, &[2])?,
        ArrayError::ContextMismatch { op: "multiply" },
        ["multiply", "context"]
    );
    assert_eq!((&a + &a)?.to_vec::<f64>()?, vec![0.0, 2.0, 4.0]);
    assert_eq!((&b + &b)?.to_vec::<f64>()?, vec![0.0, 2.0, 4.0]);
    Ok(())
}
