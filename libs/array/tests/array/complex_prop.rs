//! Complex arrays: random chains of element-wise operations (complex with complex, with
//! complex and real scalars, and the real-valued `abs`, `real`, `imag`, `angle` mixed back
//! in), over views, followed by a sum, a product, a lexicographic maximum, a cumulative sum
//! and a matrix product. Every processor count, fused or not, compiled (the real-valued
//! steps) or native, must give the same bits as one processor (sums and products: within
//! rounding, their order depending on the blocks); and every value must equal a
//! plain sequential evaluation with `num_complex` (whose division and functions round
//! differently) to 1e-9 relative.

use diffuse_array::{binary, unary, Array, ArrayContext, BinaryOp, Orientation, UnaryOp};
use diffuse_ir::{Complex64, DType, ReductionOp};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

use crate::{cx, ok, PROCS};

/// One step of a chain, applied to the running value `z` (and the second operand `w`).
#[derive(Clone, Copy, Debug)]
enum Step {
    /// `z op w`.
    WithArray(BinaryOp),
    /// `z op s` for a complex scalar `s`.
    WithScalar(BinaryOp, (i8, i8)),
    /// `z op r` for a real scalar `r`.
    WithReal(BinaryOp, i8),
    /// `f(z)` for a complex-valued function.
    Unary(UnaryOp),
    /// `f(z) + 0j`: a real-valued function, cast back to complex.
    Part(UnaryOp),
}

fn step() -> impl Strategy<Value = Step> {
    let op = prop::sample::select(vec![
        BinaryOp::Add,
        BinaryOp::Sub,
        BinaryOp::Mul,
        BinaryOp::Div,
    ]);
    prop_oneof![
        op.clone().prop_map(Step::WithArray),
        (op.clone(), (1i8..=9, -9i8..=9)).prop_map(|(o, s)| Step::WithScalar(o, s)),
        (op, 1i8..=9).prop_map(|(o, r)| Step::WithReal(o, r)),
        prop::sample::select(vec![
            UnaryOp::Neg,
            UnaryOp::Conj,
            UnaryOp::Sqrt,
            UnaryOp::Sign
        ])
        .prop_map(Step::Unary),
        prop::sample::select(vec![
            UnaryOp::Abs,
            UnaryOp::Real,
            UnaryOp::Imag,
            UnaryOp::Angle
        ])
        .prop_map(Step::Part),
    ]
}

fn complex(parts: (i8, i8)) -> Complex64 {
    Complex64::new(f64::from(parts.0) / 4.0, f64::from(parts.1) / 4.0)
}

/// The sequential reference of one step.
fn reference(step: Step, z: Complex64, w: Complex64) -> Complex64 {
    let apply = |op: BinaryOp, a: Complex64, b: Complex64| match op {
        BinaryOp::Add => a + b,
        BinaryOp::Sub => a - b,
        BinaryOp::Mul => a * b,
        _ => a / b,
    };
    match step {
        Step::WithArray(op) => apply(op, z, w),
        Step::WithScalar(op, s) => apply(op, z, complex(s)),
        Step::WithReal(op, r) => apply(op, z, Complex64::new(f64::from(r), 0.0)),
        Step::Unary(UnaryOp::Neg) => -z,
        Step::Unary(UnaryOp::Conj) => z.conj(),
        Step::Unary(UnaryOp::Sqrt) => z.sqrt(),
        Step::Unary(_) if z.norm() == 0.0 => Complex64::new(0.0, 0.0),
        Step::Unary(_) => z / z.norm(),
        Step::Part(UnaryOp::Abs) => Complex64::new(z.norm(), 0.0),
        Step::Part(UnaryOp::Real) => Complex64::new(z.re, 0.0),
        Step::Part(UnaryOp::Imag) => Complex64::new(z.im, 0.0),
        Step::Part(_) => Complex64::new(z.arg(), 0.0),
    }
}

/// The step on arrays.
fn run(step: Step, z: &Array, w: &Array) -> Result<Array, diffuse_array::ArrayError> {
    match step {
        Step::WithArray(op) => binary(op, z, w),
        Step::WithScalar(op, s) => binary(op, z, complex(s)),
        Step::WithReal(op, r) => binary(op, z, f64::from(r)),
        Step::Unary(op) => unary(op, z),
        Step::Part(op) => unary(op, z)?.astype(DType::C128),
    }
}

/// The results of a case on one context: the chain's value, its sum, product of the first
/// few elements, maximum, cumulative sum along the last axis, and `z @ wᵀ`.
struct Results {
    chain: Vec<Complex64>,
    sum: Complex64,
    max: Complex64,
    cumsum: Vec<Complex64>,
    product: Vec<Complex64>,
}

fn evaluate(
    cx: &ArrayContext,
    shape: &[i64],
    z0: &[Complex64],
    w0: &[Complex64],
    steps: &[Step],
    window: (i64, i64),
) -> Result<Results, TestCaseError> {
    // The operands are views: rows `window` of arrays one row larger.
    let (rows, cols) = (shape[0], shape[1]);
    let padded = |data: &[Complex64]| {
        let mut v = vec![Complex64::new(7.0, -7.0); (cols * (rows + 1)) as usize];
        v[cols as usize..].copy_from_slice(data);
        v
    };
    let big_z = ok(
        Array::from_vec(cx, &[rows + 1, cols], padded(z0)),
        "from_vec",
    )?;
    let big_w = ok(
        Array::from_vec(cx, &[rows + 1, cols], padded(w0)),
        "from_vec",
    )?;
    let spec = crate::slice_spec(
        &[(window.0 as usize, window.1 as usize), (0, cols as usize)],
        &[rows as usize + 1, cols as usize],
        &[false, false],
    );
    let mut z = ok(big_z.slice(&spec), "slice z")?;
    let w = ok(big_w.slice(&spec), "slice w")?;
    for &s in steps {
        z = ok(run(s, &z, &w), "step")?;
    }
    let scalar = |a: Array, what: &str| -> Result<Complex64, TestCaseError> {
        Ok(ok(a.to_vec::<Complex64>(), what)?[0])
    };
    Ok(Results {
        chain: ok(z.to_vec(), "chain")?,
        sum: scalar(ok(z.sum(), "sum")?, "sum")?,
        max: scalar(ok(z.max(), "max")?, "max")?,
        cumsum: ok(
            ok(z.cumulate(ReductionOp::Sum, 1), "cumsum")?.to_vec(),
            "cumsum",
        )?,
        product: ok(
            ok(
                z.matmul_with(Orientation::AsStored, &w, Orientation::Transposed),
                "matmul",
            )?
            .to_vec(),
            "matmul",
        )?,
    })
}

fn near(got: Complex64, want: Complex64, scale: f64, what: &str) -> Result<(), TestCaseError> {
    let tolerance = 1e-9 * (scale + want.norm());
    prop_assert!(
        (got - want).norm() <= tolerance || got.is_nan() && want.is_nan(),
        "{}: {} vs {}",
        what,
        got,
        want
    );
    Ok(())
}

fn same(a: &[Complex64], b: &[Complex64]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| crate::same_f64(x.re, y.re) && crate::same_f64(x.im, y.im))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn complex_chains_agree_everywhere_and_with_a_sequential_evaluation(
        rows in 1i64..5,
        cols in 1i64..6,
        seed in prop::collection::vec((-9i8..=9, -9i8..=9), 60),
        steps in prop::collection::vec(step(), 1..6),
    ) {
        let n = (rows * cols) as usize;
        let z0: Vec<Complex64> = (0..n).map(|i| complex(seed[i % seed.len()])).collect();
        let w0: Vec<Complex64> = (0..n)
            .map(|i| complex(seed[(i * 7 + 3) % seed.len()]) + Complex64::new(3.0, 0.0))
            .collect();
        let shape = [rows, cols];
        let first = evaluate(&cx(1), &shape, &z0, &w0, &steps, (1, rows + 1))?;
        for procs in PROCS.skip(1) {
            let other = evaluate(&cx(procs), &shape, &z0, &w0, &steps, (1, rows + 1))?;
            prop_assert!(same(&other.chain, &first.chain), "chain on {} procs", procs);
            prop_assert!(same(&other.cumsum, &first.cumsum), "cumsum on {} procs", procs);
            // A product's sums go in the BLAS-like kernel's order, which depends on the
            // blocks' shapes: within rounding.
            for (o, f) in other.product.iter().zip(&first.product) {
                near(*o, *f, 1e3, "matmul across processors")?;
            }
            prop_assert!(same(&[other.max], &[first.max]), "max on {} procs", procs);
            near(other.sum, first.sum, 1e3, "sum across processors")?;
        }
        let mut want = z0.clone();
        for &s in &steps {
            for (z, &w) in want.iter_mut().zip(&w0) {
                *z = reference(s, *z, w);
            }
        }
        let scale: f64 = want.iter().map(|z| z.norm()).sum();
        for (g, w) in first.chain.iter().zip(&want) {
            near(*g, *w, 0.0, "chain")?;
        }
        near(first.sum, want.iter().sum(), scale, "sum")?;
        // The maximum is the computed chain's lexicographic maximum (the first NaN if any).
        let lexicographic_max = first.chain.iter().copied().reduce(|a, b| {
            if a.is_nan() || !b.is_nan() && (b.re, b.im) <= (a.re, a.im) { a } else { b }
        });
        if let Some(m) = lexicographic_max {
            prop_assert!(same(&[first.max], &[m]), "max {} vs {}", first.max, m);
        }
        let (c, r_count) = (cols as usize, rows as usize);
        for r in 0..r_count {
            let mut running = Complex64::new(0.0, 0.0);
            for j in 0..c {
                running += want[r * c + j];
                near(first.cumsum[r * c + j], running, scale, "cumsum")?;
            }
            for j in 0..r_count {
                let dot: Complex64 = (0..c).map(|k| want[r * c + k] * w0[j * c + k]).sum();
                near(first.product[r * r_count + j], dot, scale * 10.0, "matmul")?;
            }
        }
    }
}
