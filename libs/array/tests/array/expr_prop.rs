//! The core property: random array expressions over random views equal a sequential
//! evaluation.
//!
//! A case is a pool of base arrays (1-d to 3-d and 0-d, small extents, `f64` or `i64`), a few
//! assignments `view.assign(src)` into views of them (`src` an expression, a scalar, or a
//! shifted, possibly broadcast, view of the destination's own store: a source that overlaps
//! the destination), then one final expression. Expressions are trees (depth up to 4) of
//! unary and binary operations, scalars on either side, comparisons combined with `& | !`
//! feeding `where_`, and 0-d reductions (`sum`, `max`, `min`) of views; their leaves are
//! views with NumPy slices (negative and omitted bounds, omitted trailing dimensions) whose
//! shapes broadcast NumPy-style (extent-1 dimensions, fewer dimensions, 0-d). The case runs on 1 to 4 processors and on the model of
//! `model.rs`; every base array and the expression's value must match, bitwise for floats
//! (element-wise operations are the same computation; NaN payloads aside), except on the
//! context that runs fused tasks through the JIT, whose `exp`, `log` and `erf` are
//! polynomials within about 1 ulp of libm: there values must agree to 1e-12 relative.
//!
//! Reductions inside expressions read only the pool's "read-only" arrays, which are never
//! assigned to and hold small multiples of 1/4 (and infinities, and only +0.0): their sums
//! are exact in any order, so exact comparison stays meaningful (for `i64` they hold small
//! values, so that sums do not overflow; wrapping sums are checked in `edge_cases.rs`).
//! Reductions of arbitrary values are checked with a tolerance in `reduce_prop.rs`.

use std::fmt::Debug;

use diffuse_array::BinaryOp::{
    Add, Div, Equal, Greater, GreaterEqual, Less, LessEqual, Maximum, Minimum, Mul, NotEqual, Pow,
    Sub,
};
use diffuse_array::{
    binary, unary, where_, Array, ArrayContext, ArrayResult, BinaryOp, Operand, SliceArg, UnaryOp,
};
use diffuse_ir::Element;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

use crate::model::{self, Dense};
use crate::{cx, extents, same_f64, shape_of, JIT_PROCS, PROCS};

#[derive(Clone, Copy, Debug, PartialEq)]
enum Un {
    Neg,
    Abs,
    Exp,
    /// `sqrt(|x|)`.
    SqrtAbs,
    /// `ln(|x|)`.
    LogAbs,
    Sin,
    Cos,
    Tanh,
    Erf,
}

/// The comparison `op` (one of the six) of `a` and `b`, as the reference computes it.
fn compare<T: PartialOrd>(op: BinaryOp, a: T, b: T) -> bool {
    match op {
        BinaryOp::Less => a < b,
        BinaryOp::LessEqual => a <= b,
        BinaryOp::Greater => a > b,
        BinaryOp::GreaterEqual => a >= b,
        BinaryOp::Equal => a == b,
        BinaryOp::NotEqual => a != b,
        other => unreachable!("{other:?} is not a comparison"),
    }
}

/// A whole-array reduction to a 0-d array. `Max` and `Min` of an empty view (no identity)
/// are evaluated as `Sum` by both evaluators.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Red {
    Sum,
    Max,
    Min,
}

/// A view of pool array `base`: `ranges` are the absolute bounds per dimension, `spec` the
/// NumPy slice that selects them (possibly with negative or omitted bounds).
#[derive(Clone, Debug)]
struct Leaf {
    base: usize,
    ranges: Vec<(usize, usize)>,
    spec: Vec<SliceArg>,
}

impl Leaf {
    fn shape(&self) -> Vec<usize> {
        self.ranges.iter().map(|&(a, b)| b - a).collect()
    }
}

#[derive(Clone, Debug)]
enum Expr<T> {
    View(Leaf),
    Reduced(Red, Leaf),
    Unary(Un, Box<Expr<T>>),
    Binary(BinaryOp, Box<Expr<T>>, Box<Expr<T>>),
    ScalarLeft(BinaryOp, T, Box<Expr<T>>),
    ScalarRight(BinaryOp, Box<Expr<T>>, T),
    /// `where_(cond, a, b)`; at most one of `a`, `b` is a scalar.
    Where(Box<Cond<T>>, Val<T>, Val<T>),
}

#[derive(Clone, Debug)]
enum Val<T> {
    Expr(Box<Expr<T>>),
    Scalar(T),
}

#[derive(Clone, Debug)]
enum Cond<T> {
    Cmp(BinaryOp, Box<Expr<T>>, Val<T>),
    CmpScalarLeft(BinaryOp, T, Box<Expr<T>>),
    Not(Box<Cond<T>>),
    And(Box<Cond<T>>, Box<Cond<T>>),
    Or(Box<Cond<T>>, Box<Cond<T>>),
}

/// What an assignment writes into its destination view.
#[derive(Clone, Debug)]
enum Src<T> {
    Expr(Expr<T>),
    Scalar(T),
    /// A view of the destination's own store, of the destination's shape or broadcasting
    /// to it (overlapping the destination or not).
    Shifted(Leaf),
}

#[derive(Clone)]
struct Case<T> {
    /// Pool array shapes: for each rank `r`, array `2r` (assignable) and `2r + 1` (read-only).
    pool: Vec<Vec<usize>>,
    data: Vec<Vec<T>>,
    stmts: Vec<(Leaf, Src<T>)>,
    expr: Expr<T>,
}

/// Compact, one line per part, so that a failing case can be read (and replayed by hand).
impl<T: Debug> Debug for Case<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "Case {{")?;
        for (i, (shape, data)) in self.pool.iter().zip(&self.data).enumerate() {
            writeln!(f, "  pool[{i}] shape {shape:?}: {data:?}")?;
        }
        for (dest, src) in &self.stmts {
            let src = match src {
                Src::Expr(e) => fmt_expr(e),
                Src::Scalar(v) => format!("{v:?}"),
                Src::Shifted(l) => fmt_leaf(l),
            };
            writeln!(f, "  {}.assign({src})", fmt_leaf(dest))?;
        }
        writeln!(f, "  result = {}", fmt_expr(&self.expr))?;
        write!(f, "}}")
    }
}

/// `p3[1:-2, :]` for a view of pool array 3.
fn fmt_leaf(l: &Leaf) -> String {
    let bound = |b: Option<i64>| b.map_or(String::new(), |v| v.to_string());
    let dims: Vec<String> = l
        .spec
        .iter()
        .map(|a| format!("{}:{}", bound(a.start), bound(a.stop)))
        .collect();
    format!("p{}[{}]", l.base, dims.join(", "))
}

fn fmt_val<T: Debug>(v: &Val<T>) -> String {
    match v {
        Val::Expr(e) => fmt_expr(e),
        Val::Scalar(s) => format!("{s:?}"),
    }
}

fn fmt_cond<T: Debug>(c: &Cond<T>) -> String {
    match c {
        Cond::Cmp(op, a, b) => format!("{op:?}({}, {})", fmt_expr(a), fmt_val(b)),
        Cond::CmpScalarLeft(op, s, b) => format!("{op:?}({s:?}, {})", fmt_expr(b)),
        Cond::Not(c) => format!("Not({})", fmt_cond(c)),
        Cond::And(a, b) => format!("And({}, {})", fmt_cond(a), fmt_cond(b)),
        Cond::Or(a, b) => format!("Or({}, {})", fmt_cond(a), fmt_cond(b)),
    }
}

fn fmt_expr<T: Debug>(e: &Expr<T>) -> String {
    match e {
        Expr::View(l) => fmt_leaf(l),
        Expr::Reduced(op, l) => format!("{op:?}({})", fmt_leaf(l)),
        Expr::Unary(op, x) => format!("{op:?}({})", fmt_expr(x)),
        Expr::Binary(op, a, b) => format!("{op:?}({}, {})", fmt_expr(a), fmt_expr(b)),
        Expr::ScalarLeft(op, s, b) => format!("{op:?}({s:?}, {})", fmt_expr(b)),
        Expr::ScalarRight(op, a, s) => format!("{op:?}({}, {s:?})", fmt_expr(a)),
        Expr::Where(c, a, b) => format!("Where({}, {}, {})", fmt_cond(c), fmt_val(a), fmt_val(b)),
    }
}

thread_local! {
    /// The relative error the model gives transcendental results (none: exact libm). The
    /// JIT's polynomials are within about 16 ulp (`erf`, worst case), below 4e-15.
    static MATH_SKEW: std::cell::Cell<Skew> = const { std::cell::Cell::new(Skew::NONE) };
}

/// The JIT's math error the tolerance allows for, relative (about 18 ulp).
const MAX_MATH_ERROR: f64 = 4e-15;

/// How the model moves transcendental results: by `size` (relative), up for every function
/// (`by_op: None`) or, per function, up or down by bit `b` of its [`Un`] index
/// (`by_op: Some(b)`). Errors of different functions are independent, and one direction
/// for all of them hides a cancellation between two of them (`erf(x) - tanh(y)`, both near
/// -1: the moved terms cancel as the exact ones do); over bits 0..3, every two functions
/// move apart in some skew.
#[derive(Clone, Copy)]
struct Skew {
    size: f64,
    by_op: Option<u32>,
}

impl Skew {
    const NONE: Skew = Skew {
        size: 0.0,
        by_op: None,
    };

    /// The skews the tolerance is taken over: every function up, every function down, and
    /// the functions moved apart by each bit of their index.
    fn all() -> [Skew; 5] {
        let up = |by_op| Skew {
            size: MAX_MATH_ERROR,
            by_op,
        };
        [
            up(None),
            Skew {
                size: -MAX_MATH_ERROR,
                by_op: None,
            },
            up(Some(0)),
            up(Some(1)),
            up(Some(2)),
        ]
    }

    /// The factor that moves a result of `op`.
    fn factor(self, op: Un) -> f64 {
        let up = self.by_op.is_none_or(|bit| (op as u32 >> bit) & 1 == 1);
        1.0 + if up { self.size } else { -self.size }
    }
}

/// `run_model` with transcendental results moved by `skew`.
fn run_model_skewed<T: Elem>(case: &Case<T>, skew: Skew) -> Outcome<T> {
    MATH_SKEW.with(|s| s.set(skew));
    let outcome = run_model(case);
    MATH_SKEW.with(|s| s.set(Skew::NONE));
    outcome
}

/// The element types the property runs on: their operations, values and model semantics.
trait Elem: Element + PartialOrd {
    const UNARY: &'static [Un];
    const BINARY: &'static [BinaryOp];
    /// Values of assignable arrays.
    fn value() -> BoxedStrategy<Self>;
    /// Values of read-only arrays (exactly summable).
    fn exact_value() -> BoxedStrategy<Self>;
    fn scalar() -> BoxedStrategy<Self>;
    fn un(op: Un, x: Self) -> Self;
    fn bin(op: BinaryOp, x: Self, y: Self) -> Self;
    /// `x op s` for a scalar `s` on the right: `bin`, but for NumPy's power shortcuts.
    fn bin_by_scalar(op: BinaryOp, x: Self, s: Self) -> Self {
        Self::bin(op, x, s)
    }
    fn same(a: Self, b: Self) -> bool;
    /// Equality up to the JIT's documented math error: its `exp`, `log` and `erf` are
    /// polynomials within a few ulp of libm, not bitwise libm. `skewed` are the model's values
    /// with transcendental results moved as each of [`Skew::all`] says: how far the
    /// expression carries such errors (e.g. `cos(exp(9.5))` turns one ulp of `exp` into
    /// 1e-11 of `cos`), so ill-conditioned expressions get a proportionate tolerance.
    fn close_to(got: Self, want: Self, skewed: &[Self]) -> bool;
    fn reduce_all(op: Red, xs: &[Self]) -> Self;
}

impl Elem for f64 {
    const UNARY: &'static [Un] = &[
        Un::Neg,
        Un::Abs,
        Un::Exp,
        Un::SqrtAbs,
        Un::LogAbs,
        Un::Sin,
        Un::Cos,
        Un::Tanh,
        Un::Erf,
    ];
    const BINARY: &'static [BinaryOp] = &[Add, Sub, Mul, Div, Pow, Maximum, Minimum];

    fn value() -> BoxedStrategy<f64> {
        prop_oneof![
            24 => (-40i32..=40).prop_map(|k| f64::from(k) / 4.0),
            2 => -1e3f64..1e3,
            1 => Just(f64::NAN),
            1 => Just(f64::INFINITY),
            1 => Just(f64::NEG_INFINITY),
            1 => Just(-0.0),
        ]
        .boxed()
    }

    fn exact_value() -> BoxedStrategy<f64> {
        prop_oneof![
            30 => (-40i32..=40).prop_map(|k| f64::from(k) / 4.0),
            1 => Just(f64::INFINITY),
            1 => Just(f64::NEG_INFINITY),
        ]
        .boxed()
    }

    fn scalar() -> BoxedStrategy<f64> {
        prop_oneof![
            3 => (-12i32..=12).prop_map(|k| f64::from(k) / 4.0),
            1 => -10.0f64..10.0,
        ]
        .boxed()
    }

    fn un(op: Un, x: f64) -> f64 {
        let skew = MATH_SKEW.with(|s| s.get()).factor(op);
        match op {
            Un::Neg => -x,
            Un::Abs => x.abs(),
            Un::Exp => x.exp() * skew,
            Un::SqrtAbs => x.abs().sqrt(),
            Un::LogAbs => x.abs().ln() * skew,
            Un::Sin => x.sin() * skew,
            Un::Cos => x.cos() * skew,
            Un::Tanh => x.tanh() * skew,
            Un::Erf => libm::erf(x) * skew,
        }
    }

    fn bin(op: BinaryOp, x: f64, y: f64) -> f64 {
        match op {
            BinaryOp::Add => x + y,
            BinaryOp::Sub => x - y,
            BinaryOp::Mul => x * y,
            BinaryOp::Div => x / y,
            BinaryOp::Pow => x.powf(y),
            BinaryOp::Maximum => model::fmaximum(x, y),
            BinaryOp::Minimum => model::fminimum(x, y),
            other => unreachable!("{other:?} is not generated for f64"),
        }
    }

    /// A float to the scalar power 2, 0.5 or -1 is `x * x`, `sqrt(x)`, `1 / x`, as in NumPy
    /// and the library (they differ from `pow` at `-inf ** 0.5`, `-0.0 ** 0.5` and in the
    /// last bit).
    fn bin_by_scalar(op: BinaryOp, x: f64, s: f64) -> f64 {
        match op {
            BinaryOp::Pow if s == 2.0 => x * x,
            BinaryOp::Pow if s == 0.5 => x.sqrt(),
            BinaryOp::Pow if s == -1.0 => 1.0 / x,
            _ => Self::bin(op, x, s),
        }
    }

    fn same(a: f64, b: f64) -> bool {
        same_f64(a, b)
    }

    fn close_to(got: f64, want: f64, skewed: &[f64]) -> bool {
        let spread = skewed
            .iter()
            .map(|&s| {
                if same_f64(s, want) {
                    0.0
                } else {
                    (s - want).abs()
                }
            })
            .fold(
                0.0,
                |a: f64, b| if b.is_nan() { f64::INFINITY } else { a.max(b) },
            );
        same_f64(got, want)
            || skewed.iter().any(|&s| same_f64(got, s))
            || (got - want).abs() <= (1e-12 * got.abs().max(want.abs())).max(4.0 * spread)
    }

    fn reduce_all(op: Red, xs: &[f64]) -> f64 {
        match op {
            Red::Sum => xs.iter().fold(0.0, |a, b| a + b),
            Red::Max => xs.iter().copied().fold(f64::NEG_INFINITY, model::fmaximum),
            Red::Min => xs.iter().copied().fold(f64::INFINITY, model::fminimum),
        }
    }
}

impl Elem for i64 {
    const UNARY: &'static [Un] = &[Un::Neg, Un::Abs];
    const BINARY: &'static [BinaryOp] = &[Add, Sub, Mul, Maximum, Minimum];

    fn value() -> BoxedStrategy<i64> {
        prop_oneof![
            6 => -20i64..=20,
            2 => any::<i64>(),
            1 => Just(i64::MIN),
            1 => Just(i64::MAX),
        ]
        .boxed()
    }

    /// Small: a sum that overflows is checked on its own (`edge_cases.rs`).
    fn exact_value() -> BoxedStrategy<i64> {
        (-20i64..=20).boxed()
    }

    fn scalar() -> BoxedStrategy<i64> {
        prop_oneof![3 => -6i64..=6, 1 => any::<i64>()].boxed()
    }

    fn un(op: Un, x: i64) -> i64 {
        match op {
            Un::Neg => x.wrapping_neg(),
            Un::Abs => x.wrapping_abs(),
            _ => unreachable!("{op:?} is not generated for i64"),
        }
    }

    fn bin(op: BinaryOp, x: i64, y: i64) -> i64 {
        match op {
            BinaryOp::Add => x.wrapping_add(y),
            BinaryOp::Sub => x.wrapping_sub(y),
            BinaryOp::Mul => x.wrapping_mul(y),
            BinaryOp::Maximum => x.max(y),
            BinaryOp::Minimum => x.min(y),
            _ => unreachable!("{op:?} is not generated for i64"),
        }
    }

    fn same(a: i64, b: i64) -> bool {
        a == b
    }

    fn close_to(got: i64, want: i64, _skewed: &[i64]) -> bool {
        got == want
    }

    fn reduce_all(op: Red, xs: &[i64]) -> i64 {
        match op {
            Red::Sum => xs.iter().fold(0i64, |a, &b| a.wrapping_add(b)),
            Red::Max => xs.iter().copied().fold(i64::MIN, i64::max),
            Red::Min => xs.iter().copied().fold(i64::MAX, i64::min),
        }
    }
}

// ---------------------------------------------------------------------------------------
// Generation.

/// Which pool arrays a leaf may view.
#[derive(Clone, Copy, Debug)]
enum Which {
    /// Any array of a fitting rank.
    Any,
    /// Only read-only arrays (leaves of reductions).
    ReadOnly,
    /// Only assignable arrays (assignment destinations).
    Assignable,
    /// Exactly this array, with the target's rank (a shifted, possibly broadcast, copy of
    /// a destination: the source overlaps the destination in the same store).
    Same(usize),
}

/// The pool shapes for target shape `s`: per rank `r <= s.len()`, two arrays whose extents
/// are `s`'s trailing `r` extents (at least 1) plus a padding of 0 to 2.
fn pool_shapes(s: &[usize], pads: &[[usize; 3]; 8]) -> Vec<Vec<usize>> {
    let n = s.len();
    (0..=n)
        .flat_map(|r| {
            (0..2).map(move |k| {
                (0..r)
                    .map(|j| s[n - r + j].max(1) + pads[2 * r + k][j])
                    .collect()
            })
        })
        .collect()
}

/// A view whose shape broadcasts to `target` (each dimension `target`'s extent or 1, aligned
/// from the right, possibly fewer dimensions), of a pool array chosen by `which`.
fn leaf(target: Vec<usize>, pool: Vec<Vec<usize>>, which: Which) -> BoxedStrategy<Leaf> {
    let m = target.len();
    let rank = match which {
        Which::Same(_) => Just(m).boxed(),
        _ => prop_oneof![3 => Just(m), 1 => 0..=m].boxed(),
    };
    (
        rank,
        prop::collection::vec(prop::bool::weighted(0.2), m),
        0..2usize,
        prop::collection::vec(0..=100usize, m),
        prop::collection::vec((0..3u8, 0..3u8), m),
        any::<bool>(),
    )
        .prop_map(move |(r, ones, k, fracs, reprs, truncate)| {
            let base = match which {
                Which::Any => 2 * r + k,
                Which::ReadOnly => 2 * r + 1,
                Which::Assignable => 2 * r,
                Which::Same(b) => b,
            };
            let ext = &pool[base];
            assert_eq!(ext.len(), r, "pool array {base} has rank {r}");
            let mut ranges = Vec::with_capacity(r);
            let mut spec = Vec::with_capacity(r);
            for j in 0..r {
                let want = target[m - r + j];
                let need = if ones[j] { 1 } else { want };
                let n = ext[j];
                let off = fracs[j] * (n - need) / 100;
                let stop = off + need;
                ranges.push((off, stop));
                let (ni, oi, si) = (n as i64, off as i64, stop as i64);
                let start_arg = match reprs[j].0 {
                    0 if off == 0 => None,
                    1 if off < n => Some(oi - ni),
                    _ => Some(oi),
                };
                let stop_arg = match reprs[j].1 {
                    0 if stop == n => None,
                    1 if stop < n => Some(si - ni),
                    _ => Some(si),
                };
                spec.push(SliceArg {
                    start: start_arg,
                    stop: stop_arg,
                });
            }
            let whole = SliceArg {
                start: None,
                stop: None,
            };
            while truncate && spec.last() == Some(&whole) {
                spec.pop();
            }
            Leaf { base, ranges, spec }
        })
        .boxed()
}

fn val<T: Elem>(inner: BoxedStrategy<Expr<T>>) -> BoxedStrategy<Val<T>> {
    prop_oneof![
        2 => inner.prop_map(|e| Val::Expr(Box::new(e))),
        1 => T::scalar().prop_map(Val::Scalar),
    ]
    .boxed()
}

/// The comparisons conditions use.
const COMPARISONS: [BinaryOp; 6] = [Less, LessEqual, Greater, GreaterEqual, Equal, NotEqual];

fn cond<T: Elem>(inner: BoxedStrategy<Expr<T>>) -> BoxedStrategy<Cond<T>> {
    let cmp = || prop::sample::select(COMPARISONS.to_vec());
    let simple = prop_oneof![
        3 => (cmp(), inner.clone(), val(inner.clone()))
            .prop_map(|(c, a, b)| Cond::Cmp(c, Box::new(a), b)),
        1 => (cmp(), T::scalar(), inner)
            .prop_map(|(c, s, b)| Cond::CmpScalarLeft(c, s, Box::new(b))),
    ]
    .boxed();
    prop_oneof![
        4 => simple.clone(),
        1 => simple.clone().prop_map(|c| Cond::Not(Box::new(c))),
        1 => (simple.clone(), simple.clone())
            .prop_map(|(a, b)| Cond::And(Box::new(a), Box::new(b))),
        1 => (simple.clone(), simple).prop_map(|(a, b)| Cond::Or(Box::new(a), Box::new(b))),
    ]
    .boxed()
}

/// An expression whose shape broadcasts to `target`.
fn expr<T: Elem>(target: Vec<usize>, pool: Vec<Vec<usize>>) -> BoxedStrategy<Expr<T>> {
    let reds = prop::sample::select(vec![Red::Sum, Red::Max, Red::Min]);
    let leaves = prop_oneof![
        4 => leaf(target.clone(), pool.clone(), Which::Any).prop_map(Expr::View),
        1 => (reds, leaf(target, pool, Which::ReadOnly))
            .prop_map(|(r, l)| Expr::Reduced(r, l)),
    ];
    leaves
        .prop_recursive(4, 32, 3, |inner| {
            let un = prop::sample::select(T::UNARY.to_vec());
            let bin = || prop::sample::select(T::BINARY.to_vec());
            prop_oneof![
                2 => (un, inner.clone()).prop_map(|(op, x)| Expr::Unary(op, Box::new(x))),
                4 => (bin(), inner.clone(), inner.clone())
                    .prop_map(|(op, a, b)| Expr::Binary(op, Box::new(a), Box::new(b))),
                1 => (bin(), T::scalar(), inner.clone())
                    .prop_map(|(op, s, b)| Expr::ScalarLeft(op, s, Box::new(b))),
                1 => (bin(), inner.clone(), T::scalar())
                    .prop_map(|(op, a, s)| Expr::ScalarRight(op, Box::new(a), s)),
                1 => (cond(inner.clone()), inner.clone(), val(inner.clone()), any::<bool>())
                    .prop_map(|(c, a, b, swap)| {
                        let a = Val::Expr(Box::new(a));
                        let (x, y) = if swap { (b, a) } else { (a, b) };
                        Expr::Where(Box::new(c), x, y)
                    }),
            ]
        })
        .boxed()
}

fn src<T: Elem>(dest: &Leaf, pool: Vec<Vec<usize>>) -> BoxedStrategy<Src<T>> {
    let d = dest.shape();
    prop_oneof![
        3 => expr::<T>(d.clone(), pool.clone()).prop_map(Src::Expr),
        1 => T::scalar().prop_map(Src::Scalar),
        2 => leaf(d, pool, Which::Same(dest.base)).prop_map(Src::Shifted),
    ]
    .boxed()
}

fn case<T: Elem>() -> impl Strategy<Value = Case<T>> {
    let extent = prop_oneof![12 => 1usize..=6, 1 => Just(0usize)];
    (
        prop::collection::vec(extent, 1..=3),
        prop::array::uniform8(prop::array::uniform3(0usize..=2)),
    )
        .prop_flat_map(|(s, pads)| {
            let pool = pool_shapes(&s, &pads);
            let data: Vec<BoxedStrategy<Vec<T>>> = pool
                .iter()
                .enumerate()
                .map(|(i, shape)| {
                    let values = if i % 2 == 1 {
                        T::exact_value()
                    } else {
                        T::value()
                    };
                    prop::collection::vec(values, model::volume(shape)).boxed()
                })
                .collect();
            let p = pool.clone();
            let stmt = leaf(s.clone(), pool.clone(), Which::Assignable)
                .prop_flat_map(move |dest| (Just(dest.clone()), src::<T>(&dest, p.clone())));
            let stmts = prop::collection::vec(stmt, 0..=2);
            let e = expr::<T>(s, pool.clone());
            (Just(pool), data, stmts, e)
        })
        .prop_map(|(pool, data, stmts, expr)| Case {
            pool,
            data,
            stmts,
            expr,
        })
}

// ---------------------------------------------------------------------------------------
// Evaluation by the library.

fn lib_view(bases: &[Array], l: &Leaf) -> Result<Array, String> {
    let v = bases[l.base]
        .slice(&l.spec)
        .map_err(|e| format!("slice {:?}: {e}", l.spec))?;
    if shape_of(&v) != l.shape() {
        return Err(format!(
            "slice {:?} of {:?} has shape {:?}, expected {:?}",
            l.spec,
            shape_of(&bases[l.base]),
            shape_of(&v),
            l.shape()
        ));
    }
    Ok(v)
}

fn lib_un(op: Un, x: &Array) -> ArrayResult {
    match op {
        Un::Neg => -x,
        Un::Abs => x.abs(),
        Un::Exp => x.exp(),
        Un::SqrtAbs => x.abs()?.sqrt(),
        Un::LogAbs => unary(UnaryOp::Log, &x.abs()?),
        Un::Sin => x.sin(),
        Un::Cos => unary(UnaryOp::Cos, x),
        Un::Tanh => x.tanh(),
        Un::Erf => x.erf(),
    }
}

/// `op` of two arrays through the method or operator the library has for it, through
/// [`binary`] otherwise.
fn lib_bin(op: BinaryOp, a: &Array, b: &Array) -> ArrayResult {
    match op {
        BinaryOp::Pow => a.pow(b),
        BinaryOp::Maximum => a.maximum(b),
        BinaryOp::Add => a + b,
        BinaryOp::Sub => a - b,
        BinaryOp::Mul => a * b,
        BinaryOp::Div => a / b,
        _ => binary(op, a, b),
    }
}

fn lib_cmp(op: BinaryOp, a: &Array, b: Operand<'_>) -> ArrayResult {
    match op {
        BinaryOp::Less => a.less(b),
        BinaryOp::LessEqual => a.less_equal(b),
        BinaryOp::Greater => a.greater(b),
        BinaryOp::GreaterEqual => a.greater_equal(b),
        BinaryOp::Equal => a.equal(b),
        BinaryOp::NotEqual => a.not_equal(b),
        other => unreachable!("{other:?} is not a comparison"),
    }
}

fn scalar<'a, T: Element>(v: T) -> Operand<'a> {
    Operand::Scalar(v.into_scalar())
}

fn lib_val<T: Elem>(bases: &[Array], v: &Val<T>) -> Result<Option<Array>, String> {
    match v {
        Val::Expr(e) => lib_eval(bases, e).map(Some),
        Val::Scalar(_) => Ok(None),
    }
}

fn operand<'a, T: Elem>(v: &Val<T>, arr: &'a Option<Array>) -> Operand<'a> {
    match (v, arr) {
        (_, Some(a)) => Operand::Array(a),
        (Val::Scalar(s), None) => scalar(*s),
        (Val::Expr(_), None) => unreachable!("an expression operand was evaluated"),
    }
}

fn lib_cond<T: Elem>(bases: &[Array], c: &Cond<T>) -> Result<Array, String> {
    let r = match c {
        Cond::Cmp(op, a, b) => {
            let a = lib_eval(bases, a)?;
            let barr = lib_val(bases, b)?;
            lib_cmp(*op, &a, operand(b, &barr))
        }
        Cond::CmpScalarLeft(op, s, b) => binary(*op, scalar(*s), &lib_eval(bases, b)?),
        Cond::Not(c) => lib_cond(bases, c)?.logical_not(),
        Cond::And(a, b) => &lib_cond(bases, a)? & &lib_cond(bases, b)?,
        Cond::Or(a, b) => lib_cond(bases, a)?.logical_or(&lib_cond(bases, b)?),
    };
    r.map_err(|e| format!("{}: {e}", fmt_cond(c)))
}

fn lib_eval<T: Elem>(bases: &[Array], e: &Expr<T>) -> Result<Array, String> {
    let r = match e {
        Expr::View(l) => return lib_view(bases, l),
        Expr::Reduced(op, l) => {
            let v = lib_view(bases, l)?;
            match op {
                _ if v.is_empty() => v.sum(),
                Red::Sum => v.sum(),
                Red::Max => v.max(),
                Red::Min => v.min(),
            }
        }
        Expr::Unary(op, x) => lib_un(*op, &lib_eval(bases, x)?),
        Expr::Binary(op, a, b) => lib_bin(*op, &lib_eval(bases, a)?, &lib_eval(bases, b)?),
        Expr::ScalarLeft(op, s, b) => binary(*op, scalar(*s), &lib_eval(bases, b)?),
        Expr::ScalarRight(op, a, s) => binary(*op, &lib_eval(bases, a)?, scalar(*s)),
        Expr::Where(c, a, b) => {
            let c = lib_cond(bases, c)?;
            let (aa, ba) = (lib_val(bases, a)?, lib_val(bases, b)?);
            where_(&c, operand(a, &aa), operand(b, &ba))
        }
    };
    r.map_err(|err| format!("{}: {err}", short(e)))
}

/// The node kind of an expression, for error messages.
fn short<T: Debug>(e: &Expr<T>) -> String {
    match e {
        Expr::View(l) => format!("view {:?}", l.spec),
        Expr::Reduced(op, l) => format!("{op:?} of view {:?}", l.spec),
        Expr::Unary(op, _) => format!("{op:?}"),
        Expr::Binary(op, _, _) => format!("{op:?}"),
        Expr::ScalarLeft(op, s, _) => format!("{s:?} {op:?} _"),
        Expr::ScalarRight(op, _, s) => format!("_ {op:?} {s:?}"),
        Expr::Where(..) => "where".into(),
    }
}

/// The pool arrays after the assignments, and the expression's shape and values.
type Outcome<T> = (Vec<Vec<T>>, Vec<usize>, Vec<T>);

fn run_lib<T: Elem>(cx: &ArrayContext, case: &Case<T>) -> Result<Outcome<T>, String> {
    let bases = case
        .pool
        .iter()
        .zip(&case.data)
        .map(|(shape, data)| Array::from_vec(cx, &extents(shape), data.clone()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("from_vec: {e}"))?;
    for (dest, src) in &case.stmts {
        let dst = lib_view(&bases, dest)?;
        let done = match src {
            Src::Expr(e) => dst.assign(&lib_eval(&bases, e)?),
            Src::Scalar(v) => dst.assign(scalar(*v)),
            Src::Shifted(l) => dst.assign(&lib_view(&bases, l)?),
        };
        done.map_err(|e| format!("assign into {:?}: {e}", dest.spec))?;
    }
    let out = lib_eval(&bases, &case.expr)?;
    let stores = bases
        .iter()
        .map(|b| b.to_vec::<T>())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("to_vec: {e}"))?;
    let values = out.to_vec::<T>().map_err(|e| format!("to_vec: {e}"))?;
    Ok((stores, shape_of(&out), values))
}

// ---------------------------------------------------------------------------------------
// Evaluation by the model.

fn model_cond<T: Elem>(bases: &[Dense<T>], c: &Cond<T>) -> Dense<bool> {
    match c {
        Cond::Cmp(op, a, b) => {
            let a = model_eval(bases, a);
            let b = model_val(bases, b);
            model::zip(&a, &b, |x, y| compare(*op, x, y))
        }
        Cond::CmpScalarLeft(op, s, b) => model_eval(bases, b).map(|y| compare(*op, *s, y)),
        Cond::Not(c) => model_cond(bases, c).map(|x| !x),
        Cond::And(a, b) => model::zip(&model_cond(bases, a), &model_cond(bases, b), |x, y| x && y),
        Cond::Or(a, b) => model::zip(&model_cond(bases, a), &model_cond(bases, b), |x, y| x || y),
    }
}

fn model_val<T: Elem>(bases: &[Dense<T>], v: &Val<T>) -> Dense<T> {
    match v {
        Val::Expr(e) => model_eval(bases, e),
        Val::Scalar(s) => Dense::scalar(*s),
    }
}

fn model_eval<T: Elem>(bases: &[Dense<T>], e: &Expr<T>) -> Dense<T> {
    match e {
        Expr::View(l) => bases[l.base].slice(&l.ranges),
        Expr::Reduced(op, l) => {
            let v = bases[l.base].slice(&l.ranges);
            let op = if v.data.is_empty() { Red::Sum } else { *op };
            Dense::scalar(T::reduce_all(op, &v.data))
        }
        Expr::Unary(op, x) => model_eval(bases, x).map(|v| T::un(*op, v)),
        Expr::Binary(op, a, b) => {
            model::zip(&model_eval(bases, a), &model_eval(bases, b), |x, y| {
                T::bin(*op, x, y)
            })
        }
        Expr::ScalarLeft(op, s, b) => model_eval(bases, b).map(|y| T::bin(*op, *s, y)),
        Expr::ScalarRight(op, a, s) => model_eval(bases, a).map(|x| T::bin_by_scalar(*op, x, *s)),
        Expr::Where(c, a, b) => model::select(
            &model_cond(bases, c),
            &model_val(bases, a),
            &model_val(bases, b),
        ),
    }
}

fn run_model<T: Elem>(case: &Case<T>) -> Outcome<T> {
    let mut bases: Vec<Dense<T>> = case
        .pool
        .iter()
        .zip(&case.data)
        .map(|(shape, data)| Dense::new(shape.clone(), data.clone()))
        .collect();
    for (dest, src) in &case.stmts {
        let value = match src {
            Src::Expr(e) => model_eval(&bases, e),
            Src::Scalar(v) => Dense::scalar(*v),
            Src::Shifted(l) => bases[l.base].slice(&l.ranges),
        };
        bases[dest.base].assign_region(&dest.ranges, &value);
    }
    let out = model_eval(&bases, &case.expr);
    (
        bases.into_iter().map(|b| b.data).collect(),
        out.shape,
        out.data,
    )
}

/// The first position where `got` and `want` differ: bitwise, or (`skewed`, for the JIT's
/// context) within the JIT's math error as [`Elem::close_to`] judges it.
fn first_difference<T: Elem>(got: &[T], want: &[T], skewed: Option<Vec<&[T]>>) -> Option<String> {
    if got.len() != want.len() {
        return Some(format!("{} values, expected {}", got.len(), want.len()));
    }
    (0..got.len())
        .find(|&i| match &skewed {
            None => !T::same(got[i], want[i]),
            Some(variants) => {
                let at: Vec<T> = variants.iter().map(|v| v[i]).collect();
                !T::close_to(got[i], want[i], &at)
            }
        })
        .map(|i| format!("element {i}: got {:?}, expected {:?}", got[i], want[i]))
}

fn check<T: Elem>(case: &Case<T>) -> Result<(), TestCaseError> {
    let (want_stores, want_shape, want) = run_model(case);
    let skewed = Skew::all().map(|skew| run_model_skewed(case, skew));
    for procs in PROCS {
        let (stores, shape, got) = run_lib(&cx(procs), case)
            .map_err(|e| TestCaseError::fail(format!("procs {procs}: {e}")))?;
        let jit = procs == JIT_PROCS;
        for (i, (g, w)) in stores.iter().zip(&want_stores).enumerate() {
            let bounds = jit.then(|| skewed.iter().map(|s| &s.0[i][..]).collect());
            if let Some(d) = first_difference(g, w, bounds) {
                return Err(TestCaseError::fail(format!(
                    "procs {procs}: pool array {i} {:?} after the assignments: {d}",
                    case.pool[i]
                )));
            }
        }
        prop_assert_eq!(&shape, &want_shape, "procs {}: result shape", procs);
        let bounds = jit.then(|| skewed.iter().map(|s| &s.2[..]).collect());
        if let Some(d) = first_difference(&got, &want, bounds) {
            return Err(TestCaseError::fail(format!(
                "procs {procs}: expression value: {d}"
            )));
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 384, ..ProptestConfig::default() })]

    /// `f64` expressions and assignments over views equal the sequential model, bitwise.
    #[test]
    fn f64_expressions_over_views_match_the_model(case in case::<f64>()) {
        check(&case)?;
    }

    /// `i64` expressions (wrapping arithmetic) and assignments equal the sequential model.
    #[test]
    fn i64_expressions_over_views_match_the_model(case in case::<i64>()) {
        check(&case)?;
    }
}
