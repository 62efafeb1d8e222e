//! Properties of reductions and matrix products against naive sequential loops, on 1 to 4
//! processors.
//!
//! - `sum`, `max`, `min`, `mean`, `dot`, `norm` over random views (1-d to 3-d, possibly
//!   empty for `sum` and `dot`) of random `f64` arrays; `sum`, `max`, `min`, `dot` of `i64`
//!   views. The summation order of the library differs from the loop's, so float sums are
//!   compared within `1e-12` of the sum of the terms' magnitudes; `max`, `min` and integer
//!   results exactly.
//! - `matvec` and `matmul` (and `matmul` with a 1-d right operand) of random shapes from
//!   1x1 to 9x9, including 1xk and kx1 and extents not divisible by the processor count, on
//!   views (non-contiguous windows) of larger arrays, against the triple loop.

use diffuse_array::{Array, ArrayContext};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

use crate::model::Dense;
use crate::{close, cx, extents, ok, shape_of, slice_spec, PROCS};

/// A base array and two same-shaped windows of it (they may overlap).
#[derive(Clone, Debug)]
struct Views<T> {
    shape: Vec<usize>,
    data: Vec<T>,
    a: Vec<(usize, usize)>,
    b: Vec<(usize, usize)>,
    negative: Vec<bool>,
}

fn views<T: std::fmt::Debug + Clone + 'static>(
    values: impl Strategy<Value = T> + Clone + 'static,
    allow_empty: bool,
) -> impl Strategy<Value = Views<T>> {
    prop::collection::vec(1usize..=9, 1..=3).prop_flat_map(move |shape| {
        let n = crate::model::volume(&shape);
        let lo = usize::from(!allow_empty);
        let dims: Vec<_> = shape
            .iter()
            .map(|&e| (lo..=e).prop_flat_map(move |len| (0..=e - len, 0..=e - len, Just(len))))
            .collect();
        (
            Just(shape.clone()),
            prop::collection::vec(values.clone(), n),
            dims,
            prop::collection::vec(any::<bool>(), shape.len()),
        )
            .prop_map(|(shape, data, dims, negative)| Views {
                shape,
                data,
                a: dims.iter().map(|&(a, _, len)| (a, a + len)).collect(),
                b: dims.iter().map(|&(_, b, len)| (b, b + len)).collect(),
                negative,
            })
    })
}

impl<T: Copy + diffuse_ir::Element> Views<T> {
    fn model(&self) -> (Dense<T>, Dense<T>) {
        let base = Dense::new(self.shape.clone(), self.data.clone());
        (base.slice(&self.a), base.slice(&self.b))
    }

    fn arrays(&self, cx: &ArrayContext) -> Result<(Array, Array), TestCaseError> {
        let base = ok(
            Array::from_vec(cx, &extents(&self.shape), self.data.clone()),
            "from_vec",
        )?;
        let a = ok(
            base.slice(&slice_spec(&self.a, &self.shape, &self.negative)),
            "slice",
        )?;
        let plain = vec![false; self.shape.len()];
        let b = ok(
            base.slice(&slice_spec(&self.b, &self.shape, &plain)),
            "slice",
        )?;
        Ok((a, b))
    }
}

/// Reads a 0-d result.
fn item<T: diffuse_ir::Element>(
    r: Result<Array, diffuse_array::ArrayError>,
    what: &str,
) -> Result<T, TestCaseError> {
    let a = ok(r, what)?;
    prop_assert_eq!(a.ndim(), 0, "{} is 0-d", what);
    ok(a.item::<T>(), what)
}

fn float_values() -> impl Strategy<Value = f64> + Clone {
    prop_oneof![8 => -100.0f64..100.0, 1 => (-8i32..=8).prop_map(f64::from)]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 192, ..ProptestConfig::default() })]

    /// `sum`, `max`, `min`, `mean`, `dot` and `norm` of `f64` views match sequential loops.
    #[test]
    fn float_reductions_of_views(v in views(float_values(), true)) {
        let (a, b) = v.model();
        let abs_sum: f64 = a.data.iter().map(|x| x.abs()).sum();
        let sum: f64 = a.data.iter().sum();
        let dot: f64 = a.data.iter().zip(&b.data).map(|(x, y)| x * y).sum();
        let dot_scale: f64 = a.data.iter().zip(&b.data).map(|(x, y)| (x * y).abs()).sum();
        let sq: f64 = a.data.iter().map(|x| x * x).sum();
        for procs in PROCS {
            let (x, y) = v.arrays(&cx(procs))?;
            prop_assert_eq!(shape_of(&x), a.shape.clone());
            let got: f64 = item(x.sum(), "sum")?;
            prop_assert!(close(got, sum, abs_sum), "procs {}: sum {} vs {}", procs, got, sum);
            let got: f64 = item(x.dot(&y), "dot")?;
            prop_assert!(close(got, dot, dot_scale), "procs {}: dot {} vs {}", procs, got, dot);
            let got: f64 = item(x.norm(), "norm")?;
            prop_assert!(close(got, sq.sqrt(), sq.sqrt()), "procs {}: norm {} vs {}", procs, got, sq.sqrt());
            if a.data.is_empty() {
                continue;
            }
            let max = a.data.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let min = a.data.iter().copied().fold(f64::INFINITY, f64::min);
            prop_assert_eq!(item::<f64>(x.max(), "max")?, max, "procs {}: max", procs);
            prop_assert_eq!(item::<f64>(x.min(), "min")?, min, "procs {}: min", procs);
            let n = a.data.len() as f64;
            let got: f64 = item(x.mean(), "mean")?;
            prop_assert!(close(got, sum / n, abs_sum / n), "procs {}: mean {} vs {}", procs, got, sum / n);
        }
    }

    /// `sum`, `max`, `min` and `dot` of `i64` views equal sequential loops exactly.
    #[test]
    fn integer_reductions_of_views(v in views(-1_000_000i64..=1_000_000, true)) {
        let (a, b) = v.model();
        let sum: i64 = a.data.iter().sum();
        let dot: i64 = a.data.iter().zip(&b.data).map(|(x, y)| x * y).sum();
        for procs in PROCS {
            let (x, y) = v.arrays(&cx(procs))?;
            prop_assert_eq!(item::<i64>(x.sum(), "sum")?, sum, "procs {}: sum", procs);
            prop_assert_eq!(item::<i64>(x.dot(&y), "dot")?, dot, "procs {}: dot", procs);
            if let (Some(&max), Some(&min)) = (a.data.iter().max(), a.data.iter().min()) {
                prop_assert_eq!(item::<i64>(x.max(), "max")?, max, "procs {}: max", procs);
                prop_assert_eq!(item::<i64>(x.min(), "min")?, min, "procs {}: min", procs);
            }
        }
    }

    /// A NaN anywhere in a float view makes its `max` and `min` NaN (NumPy's semantics, as
    /// the library documents), whichever processor's block holds it.
    #[test]
    fn max_and_min_propagate_nan(
        v in views(float_values(), false),
        at in any::<prop::sample::Index>(),
    ) {
        let (a, _) = v.model();
        for procs in PROCS {
            let (x, _) = v.arrays(&cx(procs))?;
            let mut values = a.data.clone();
            let i = at.index(values.len());
            values[i] = f64::NAN;
            ok(x.write_from(values), "write_from")?;
            let max: f64 = item(x.max(), "max")?;
            let min: f64 = item(x.min(), "min")?;
            prop_assert!(max.is_nan() && min.is_nan(),
                "procs {}: NaN at {} of a view of shape {:?}: max {}, min {}",
                procs, at.index(a.data.len()), a.shape, max, min);
        }
    }
}

/// A matrix (and a vector) given as windows of larger arrays.
#[derive(Clone, Debug)]
struct Product<T> {
    m: usize,
    k: usize,
    n: usize,
    /// Base shape and data of the left matrix, and the window's offset in it.
    a_base: (Vec<usize>, Vec<T>, [usize; 2]),
    /// Same for the right matrix (`k x n`).
    b_base: (Vec<usize>, Vec<T>, [usize; 2]),
    /// Base data and offset of the vector (length `k`) inside a 1-d array.
    x_base: (Vec<T>, usize),
}

fn extent() -> impl Strategy<Value = usize> {
    prop_oneof![1 => Just(1usize), 3 => 1usize..=9]
}

fn product<T: std::fmt::Debug + Clone + 'static>(
    values: impl Strategy<Value = T> + Clone + 'static,
) -> impl Strategy<Value = Product<T>> {
    (
        extent(),
        extent(),
        extent(),
        prop::array::uniform6(0usize..=2),
    )
        .prop_flat_map(move |(m, k, n, pad)| {
            let window = |rows: usize, cols: usize, pr: usize, pc: usize| {
                let shape = vec![rows + pr, cols + pc];
                (
                    Just(shape.clone()),
                    prop::collection::vec(values.clone(), (rows + pr) * (cols + pc)),
                    (0..=pr, 0..=pc).prop_map(|(r, c)| [r, c]),
                )
            };
            (
                Just((m, k, n)),
                window(m, k, pad[0], pad[1]),
                window(k, n, pad[2], pad[3]),
                (
                    prop::collection::vec(values.clone(), k + pad[4]),
                    0..=pad[4],
                ),
            )
                .prop_map(|((m, k, n), a_base, b_base, x_base)| Product {
                    m,
                    k,
                    n,
                    a_base,
                    b_base,
                    x_base,
                })
        })
}

impl<T: Copy + diffuse_ir::Element> Product<T> {
    fn model(&self) -> (Dense<T>, Dense<T>, Dense<T>) {
        let win = |(shape, data, off): &(Vec<usize>, Vec<T>, [usize; 2]), r: usize, c: usize| {
            Dense::new(shape.clone(), data.clone())
                .slice(&[(off[0], off[0] + r), (off[1], off[1] + c)])
        };
        let (xd, xo) = &self.x_base;
        let x = Dense::new(vec![xd.len()], xd.clone()).slice(&[(*xo, xo + self.k)]);
        (
            win(&self.a_base, self.m, self.k),
            win(&self.b_base, self.k, self.n),
            x,
        )
    }

    fn arrays(&self, cx: &ArrayContext) -> Result<(Array, Array, Array), TestCaseError> {
        let win = |(shape, data, off): &(Vec<usize>, Vec<T>, [usize; 2]), r: usize, c: usize| {
            let base = ok(
                Array::from_vec(cx, &extents(shape), data.clone()),
                "from_vec",
            )?;
            ok(
                base.slice(&slice_spec(
                    &[(off[0], off[0] + r), (off[1], off[1] + c)],
                    shape,
                    &[true, false],
                )),
                "slice",
            )
        };
        let (xd, xo) = &self.x_base;
        let xb = ok(
            Array::from_vec(cx, &[xd.len() as i64], xd.clone()),
            "from_vec",
        )?;
        let x = ok(
            xb.slice(&slice_spec(&[(*xo, xo + self.k)], &[xd.len()], &[false])),
            "slice",
        )?;
        Ok((
            win(&self.a_base, self.m, self.k)?,
            win(&self.b_base, self.k, self.n)?,
            x,
        ))
    }
}

/// `A @ B` by the triple loop, with each element's sum of term magnitudes.
fn naive_matmul(a: &Dense<f64>, b: &Dense<f64>) -> (Vec<f64>, Vec<f64>) {
    let (m, k, n) = (a.shape[0], a.shape[1], b.shape[1]);
    let mut c = vec![0.0; m * n];
    let mut scale = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            for p in 0..k {
                let t = a.data[i * k + p] * b.data[p * n + j];
                c[i * n + j] += t;
                scale[i * n + j] += t.abs();
            }
        }
    }
    (c, scale)
}

fn check_close(
    what: &str,
    procs: usize,
    got: &[f64],
    want: &[f64],
    scale: &[f64],
) -> Result<(), TestCaseError> {
    prop_assert_eq!(got.len(), want.len(), "procs {}: {} length", procs, what);
    for i in 0..got.len() {
        prop_assert!(
            close(got[i], want[i], scale[i]),
            "procs {}: {}[{}] = {}, expected {}",
            procs,
            what,
            i,
            got[i],
            want[i]
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 192, ..ProptestConfig::default() })]

    /// `matmul`, `matvec` and `matmul` with a vector of `f64` windows match the triple loop.
    #[test]
    fn float_matrix_products(p in product(-10.0f64..10.0)) {
        let (a, b, x) = p.model();
        let (c, c_scale) = naive_matmul(&a, &b);
        let xm = Dense::new(vec![p.k, 1], x.data.clone());
        let (y, y_scale) = naive_matmul(&a, &xm);
        for procs in PROCS {
            let (aa, ba, xa) = p.arrays(&cx(procs))?;
            let got = ok(aa.matmul(&ba), "matmul")?;
            prop_assert_eq!(shape_of(&got), vec![p.m, p.n]);
            check_close("matmul", procs, &ok(got.to_vec::<f64>(), "to_vec")?, &c, &c_scale)?;
            let got = ok(aa.matvec(&xa), "matvec")?;
            prop_assert_eq!(shape_of(&got), vec![p.m]);
            check_close("matvec", procs, &ok(got.to_vec::<f64>(), "to_vec")?, &y, &y_scale)?;
            let got = ok(aa.matmul(&xa), "matmul with a vector")?;
            prop_assert_eq!(shape_of(&got), vec![p.m]);
            check_close("matmul(vector)", procs, &ok(got.to_vec::<f64>(), "to_vec")?, &y, &y_scale)?;
        }
    }

    /// `matmul` and `matvec` of `i64` windows equal the triple loop exactly.
    #[test]
    fn integer_matrix_products(p in product(-1000i64..=1000)) {
        let (a, b, x) = p.model();
        let (m, k, n) = (p.m, p.k, p.n);
        let c: Vec<i64> = (0..m * n)
            .map(|ij| (0..k).map(|q| a.data[ij / n * k + q] * b.data[q * n + ij % n]).sum())
            .collect();
        let y: Vec<i64> = (0..m)
            .map(|i| (0..k).map(|q| a.data[i * k + q] * x.data[q]).sum())
            .collect();
        for procs in PROCS {
            let (aa, ba, xa) = p.arrays(&cx(procs))?;
            let got = ok(ok(aa.matmul(&ba), "matmul")?.to_vec::<i64>(), "to_vec")?;
            prop_assert_eq!(&got, &c, "procs {}: matmul", procs);
            let got = ok(ok(aa.matvec(&xa), "matvec")?.to_vec::<i64>(), "to_vec")?;
            prop_assert_eq!(&got, &y, "procs {}: matvec", procs);
        }
    }
}
