//! The test suite of `diffuse-array`, one test binary: every array operation, run on the
//! embedded backend with 1 to 4 processors, must give what a plain sequential evaluation of
//! the same NumPy expression gives, and every bad input must be a typed error naming the
//! operation and the shapes or dtypes involved.
//!
//! - `model`: the sequential reference, a dense row-major array with NumPy broadcasting.
//! - `expr_prop`: random expression trees and assignments over random views (the core
//!   property).
//! - `reduce_prop`: reductions and matrix products over random views and shapes.
//! - `linalg_prop`: matrix products with operands transposed in place, every numeric dtype,
//!   empty and one-wide shapes, fused with element-wise work.
//! - `along_prop`: reductions and arg reductions along an axis.
//! - `strided_prop`: strided selections (steps, transposes) gathered and scattered.
//! - `host_copies_prop`: host reads and writes of elements and boxes interleaved with tasks,
//!   and that they wait only for work on their own store.
//! - `creation_prop`: `astype`, `random`, `arange`, `linspace`, `zeros`/`ones`/`full`.
//! - `select_prop`: `a[mask]` over random masks and views.
//! - `scan_prop`: cumulative sums and products along an axis.
//! - `join_prop`: `concatenate`, `roll` and `tile` of random shapes.
//! - `dense_prop`: factorizations and solves of random matrices against their equations.
//! - `basics`: hand-written cases with known values (slicing, operators, the crate example).
//! - `errors`: bad inputs and their errors.
//! - `edge_cases`: empty, 0-d and 6-d arrays, integer wrapping, NaN.
//! - `mlir_kernels`: every kind's MLIR kernel, compiled and run with the MLIR tools, gives
//!   the native kernel's results.

#[path = "array/along_prop.rs"]
mod along_prop;
#[path = "array/basics.rs"]
mod basics;
#[path = "array/complex_prop.rs"]
mod complex_prop;
#[path = "array/creation_prop.rs"]
mod creation_prop;
#[path = "array/dense_prop.rs"]
mod dense_prop;
#[path = "array/edge_cases.rs"]
mod edge_cases;
#[path = "array/errors.rs"]
mod errors;
#[path = "array/expr_prop.rs"]
mod expr_prop;
#[path = "array/float_errors.rs"]
mod float_errors;
#[path = "array/host_copies_prop.rs"]
mod host_copies_prop;
#[path = "array/indexed_prop.rs"]
mod indexed_prop;
#[path = "array/join_prop.rs"]
mod join_prop;
#[path = "array/linalg_prop.rs"]
mod linalg_prop;
#[path = "array/mlir_kernels.rs"]
mod mlir_kernels;
#[path = "array/model.rs"]
mod model;
#[path = "array/reduce_prop.rs"]
mod reduce_prop;
#[path = "array/scalar_work.rs"]
mod scalar_work;
#[path = "array/scan_prop.rs"]
mod scan_prop;
#[path = "array/select_prop.rs"]
mod select_prop;
#[path = "array/sort_prop.rs"]
mod sort_prop;
#[path = "array/strided_prop.rs"]
mod strided_prop;

use std::sync::OnceLock;

use diffuse_array::{Array, ArrayContext, ArrayError, SliceArg};

/// The processor counts every property runs with.
pub const PROCS: std::ops::RangeInclusive<usize> = 1..=4;

/// The processor count whose contexts run fused tasks through the JIT.
pub const JIT_PROCS: usize = 4;

/// A context over a fresh embedded backend with `procs` processors. The runtime set-up
/// varies with `procs` so that every property also holds across execution strategies:
/// 1 and 3 processors fuse with a small fixed window and strips of a row or two (every
/// fused element-wise point runs strip by strip), 2 runs every task unfused, 4
/// ([`JIT_PROCS`]) uses the default fusion (adaptive window) with a JIT that compiles
/// before first use, so every fused task with generators runs compiled code. The others run
/// native kernels only (`jit: None`), so their results stay bitwise those of the model.
pub fn fresh_cx(procs: usize) -> ArrayContext {
    let defaults = diffuse::EmbeddedConfig::default();
    let runtime = diffuse::RuntimeConfig::default();
    let (fusion, strip_bytes) = match procs % 4 {
        1 | 3 => (
            diffuse::FusionConfig {
                enabled: true,
                window: Some(5),
                ..Default::default()
            },
            64,
        ),
        2 => (diffuse::FusionConfig::off(), defaults.strip_bytes),
        _ => (runtime.fusion, defaults.strip_bytes),
    };
    ArrayContext::new(
        diffuse::embedded_with(
            diffuse::EmbeddedConfig {
                procs: Some(procs),
                strip_bytes,
                ..defaults
            },
            diffuse::RuntimeConfig {
                fusion,
                jit: (procs == JIT_PROCS).then(|| std::sync::Arc::new(diffuse_jit::Jit::new())),
                // Every processor gets a point: the tests check partitioned execution on
                // small arrays.
                min_block: 1,
                ..runtime
            },
        )
        .expect("the embedded backend starts"),
    )
}

/// A context with `procs` (1 to 4) processors shared by every test of the binary, so that
/// property cases do not start worker pools by the hundred (and tests running in parallel
/// submit to one runtime from several threads, as applications may).
pub fn cx(procs: usize) -> ArrayContext {
    static CONTEXTS: OnceLock<Vec<ArrayContext>> = OnceLock::new();
    CONTEXTS.get_or_init(|| PROCS.map(fresh_cx).collect())[procs - 1].clone()
}

/// What a hand-written test returns: the first array error fails it.
pub type R = Result<(), ArrayError>;

/// An `f64` array of `shape` in `c` holding `0, 1, 2, ...` in row-major order.
pub fn iota(c: &ArrayContext, shape: &[i64]) -> Result<Array, ArrayError> {
    let n: i64 = shape.iter().product();
    Array::from_vec(c, shape, (0..n).map(|i| i as f64).collect())
}

/// The shape of `a` as `usize` extents.
pub fn shape_of(a: &Array) -> Vec<usize> {
    a.shape().as_slice().iter().map(|&e| e as usize).collect()
}

/// The shape as `i64` extents, for constructors.
pub fn extents(shape: &[usize]) -> Vec<i64> {
    shape.iter().map(|&e| e as i64).collect()
}

/// Float equality for results of the same computation: bitwise, except that any NaN equals
/// any NaN (the payload of a NaN is not specified by IEEE arithmetic or by LLVM).
pub fn same_f64(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

/// Equality up to rounding for results whose summation order differs: `|got - want|` at most
/// `1e-12` times `scale` (the sum of the magnitudes of the summed terms), NaN and infinities
/// exactly.
pub fn close(got: f64, want: f64, scale: f64) -> bool {
    if !want.is_finite() || !got.is_finite() {
        return same_f64(got, want) || got == want;
    }
    (got - want).abs() <= 1e-12 * scale.max(f64::MIN_POSITIVE)
}

/// Unwraps an array result inside a proptest body, failing the case (not panicking) with
/// the error's message.
pub fn ok<T>(
    r: Result<T, ArrayError>,
    what: &str,
) -> Result<T, proptest::test_runner::TestCaseError> {
    r.map_err(|e| proptest::test_runner::TestCaseError::fail(format!("{what}: {e}")))
}

/// The NumPy slice selecting `ranges` (absolute `start..stop` per dimension) of an array of
/// `shape`, with bounds written from the end (negative) where `negative[d]` says so.
pub fn slice_spec(ranges: &[(usize, usize)], shape: &[usize], negative: &[bool]) -> Vec<SliceArg> {
    ranges
        .iter()
        .zip(shape)
        .zip(negative)
        .map(|((&(a, b), &n), &neg)| {
            let (a, b, n) = (a as i64, b as i64, n as i64);
            SliceArg {
                start: Some(if neg && a < n { a - n } else { a }),
                stop: Some(if neg && b < n { b - n } else { b }),
            }
        })
        .collect()
}
