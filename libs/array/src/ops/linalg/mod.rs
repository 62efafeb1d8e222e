//! Dense matrix-vector and matrix-matrix products.
//!
//! `matvec` walks the matrix over a 2-D processor grid chosen from its shape: each point
//! multiplies its block by the matching slice of the vector. When the points of one output
//! block lie along the summed dimension, the sums are partial and go through a
//! `Reduce(Sum)` tiling of the output that ignores that coordinate; otherwise every output
//! block has one writer (`Write`). `matmul` launches over the output's grid; each point reads
//! a band of rows of the left matrix and a band of columns of the right one.
//!
//! Either matrix may be read transposed ([`Orientation::Transposed`]): its tiles are the
//! transposed bands, and the kernel swaps the strides, so `A.T @ y` or `A @ B.T` never copies
//! the transpose. Each point runs one strided product (`gemm.rs`: the host's BLAS,
//! `blas.rs`, or `faer`'s tuned kernels for floats, a blocked loop for integers), except a
//! matrix read as stored times a vector, which streams several rows at once against the
//! vector ([`matvec_by_rows`]). A large float `matmul` launches one point per host
//! (per group of as many processors as the host has cores), and that point's product uses
//! the host's cores. Both products carry an MLIR body (for
//! fusion on GPUs) but prefer their native kernel on CPUs (`TaskKindBuilder::native_on_cpu`),
//! where a tuned GEMM is far faster than the JIT's loop nest.

mod blas;
mod dense;
mod gemm;
mod matmul;
mod matvec;

use std::sync::Arc;

use diffuse_ir::{
    DType, IrError, KernelError, PointTask, Privilege, ReadView, ReductionOp, Shape, TaskKind,
    TaskKindBuilder, Tuple, WriteView,
};

use crate::array::Array;
use crate::element::{with_arith, Arith};
use crate::error::ArrayError;
use crate::kinds::{kind, undefined, Kernel};
use crate::mlir::{Product, ProductGenerator};
use crate::ops::reduce::{fold_products, fold_products_of_rows};

pub use dense::{Dense, FACTORED, NOT_FACTORED};
use gemm::{Gemm, MatMut, MatRef};

/// How a matrix product reads a matrix operand.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub enum Orientation {
    /// As stored: element `(i, j)` of the operand is element `(i, j)` of the array.
    #[default]
    AsStored,
    /// Transposed in place: element `(i, j)` of the operand is element `(j, i)` of the
    /// array, read where it lies (no copy is made).
    Transposed,
}

impl Orientation {
    /// `dims` (a matrix's stored extents, or a launch grid over them) as the product sees
    /// them.
    fn apply<T>(self, [rows, cols]: [T; 2]) -> [T; 2] {
        match self {
            Orientation::AsStored => [rows, cols],
            Orientation::Transposed => [cols, rows],
        }
    }

    /// The letter naming it in kind names: `n` as stored, `t` transposed (BLAS's).
    fn letter(self) -> char {
        match self {
            Orientation::AsStored => 'n',
            Orientation::Transposed => 't',
        }
    }
}

/// The extents of the 2-d `a` as the product reads it with `orientation`.
fn oriented_dims(a: &Array, orientation: Orientation) -> [i64; 2] {
    let shape = a.shape();
    orientation.apply([shape[0], shape[1]])
}

/// Operand checks shared by both products: `a` (read with `a_orientation`) 2-d, `b` of rank
/// `b_rank` (read with `b_orientation` when 2-d), inner extents equal, one numeric dtype.
/// Shapes in errors are the operands as the product reads them.
fn check_operands(
    op: &'static str,
    (a, a_orientation): (&Array, Orientation),
    (b, b_orientation): (&Array, Orientation),
    b_rank: usize,
) -> Result<(), ArrayError> {
    a.context().check_same(b.context(), op)?;
    let read_as = |x: &Array, orientation: Orientation| -> Result<Shape, ArrayError> {
        Ok(if x.ndim() == 2 {
            Tuple::shape(&oriented_dims(x, orientation))?
        } else {
            x.shape()
        })
    };
    let (lhs, rhs) = (read_as(a, a_orientation)?, read_as(b, b_orientation)?);
    let shape_err = |reason: String| ArrayError::MatmulShape {
        op,
        lhs: Box::new(lhs),
        rhs: Box::new(rhs),
        reason,
    };
    if a.ndim() != 2 || b.ndim() != b_rank {
        return Err(shape_err(format!(
            "{op} takes a 2-d matrix and a {b_rank}-d operand, got {}-d and {}-d",
            a.ndim(),
            b.ndim()
        )));
    }
    if lhs[1] != rhs[0] {
        return Err(shape_err(format!(
            "inner dimensions differ ({} vs {})",
            lhs[1], rhs[0]
        )));
    }
    if a.dtype() != b.dtype() {
        return Err(ArrayError::DTypeMismatch {
            op,
            lhs: a.dtype(),
            rhs: b.dtype(),
        });
    }
    if !crate::element::is_numeric(a.dtype()) {
        return Err(ArrayError::UnsupportedDType {
            op,
            dtype: a.dtype(),
            expected: "a numeric dtype",
        });
    }
    Ok(())
}

/// The native kernel of both products: `out (+)= op(a) op(b)` for one block, `a` argument 0
/// (read with `a_orientation`), `b` argument 1 (a matrix read with `b_orientation`, or a
/// vector as a column), `out` argument 2 (added into when `accumulate`).
fn product_kernel<T: Gemm>(
    a_orientation: Orientation,
    b_orientation: Orientation,
    accumulate: bool,
) -> impl Kernel {
    move |task| {
        let (a, b) = (task.read::<T>(0)?, task.read::<T>(1)?);
        let mut out = task.write::<T>(2)?;
        if a_orientation == Orientation::AsStored && b.shape().dims() == 1 {
            return matvec_by_rows(task, &a, &b, &mut out, accumulate);
        }
        let shapes = format!("{} x {} into {}", a.shape(), b.shape(), out.shape());
        let mismatch = || task.error(format!("blocks {shapes} do not multiply"));
        let (Some(a), Some(b)) = (MatRef::of(&a), MatRef::of(&b)) else {
            return Err(mismatch());
        };
        let (a, b) = (a.oriented(a_orientation), b.oriented(b_orientation));
        let out = MatMut::of(&mut out).ok_or_else(mismatch)?;
        let ((m, k), (k_b, n)) = (a.dims(), b.dims());
        if out.dims() != (m, n) || k != k_b {
            return Err(mismatch());
        }
        let points = usize::try_from(task.launch_domain().volume()).unwrap_or(1);
        T::gemm(out, a, b, accumulate, gemm::threads(m * n * k, points));
        Ok(())
    }
}

/// Rows of the matrix [`matvec_by_rows`] streams side by side.
const ROWS_AT_ONCE: usize = 4;

/// `y (+)= A x` for a matrix block read as stored: each row's dot product with `x`,
/// [`ROWS_AT_ONCE`] rows streaming from memory side by side with prefetching
/// ([`fold_products_of_rows`]). A memory-bound product reads every element of `A` once
/// either way; measured on the jacobi app (8000^2 on two cores), this is ~10% faster than
/// the general GEMM with one column.
fn matvec_by_rows<T: Arith>(
    task: &PointTask<'_>,
    a: &ReadView<'_, T>,
    x: &ReadView<'_, T>,
    y: &mut WriteView<'_, T>,
    accumulate: bool,
) -> Result<(), KernelError> {
    let x = x.row(0);
    let y = y.row_mut(0);
    if a.rows() != y.len() || a.shape()[1] as usize != x.len() {
        return Err(task.error(format!(
            "matrix block {} does not match vector blocks of {} and {}",
            a.shape(),
            x.len(),
            y.len()
        )));
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked just above).
        unsafe { fold_rows_avx2(a, x, y, accumulate) };
        return Ok(());
    }
    fold_rows(a, x, y, accumulate);
    Ok(())
}

/// [`fold_rows`] compiled for AVX2: the same operations in the same order (so the same
/// results, bit for bit), four `f64` lanes to an instruction where the baseline has two, and
/// the accumulators of [`ROWS_AT_ONCE`] rows in registers: 1.5x the baseline build's speed
/// on a 2000^2 product whose matrix stays in cache (memory-bound products gain nothing).
///
/// # Safety
/// The CPU supports AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn fold_rows_avx2<T: Arith>(a: &ReadView<'_, T>, x: &[T], y: &mut [T], accumulate: bool) {
    fold_rows(a, x, y, accumulate)
}

/// `y (+)= A x` row by row for [`matvec_by_rows`], whose checks passed: bands of
/// [`ROWS_AT_ONCE`] rows folded side by side, then the rows left over one at a time.
#[inline(always)]
fn fold_rows<T: Arith>(a: &ReadView<'_, T>, x: &[T], y: &mut [T], accumulate: bool) {
    let zero = T::reduction_identity(ReductionOp::Sum);
    let store = |yi: &mut T, s: T| *yi = if accumulate { yi.add(s) } else { s };
    let banded = y.len() / ROWS_AT_ONCE * ROWS_AT_ONCE;
    for (band, ys) in y[..banded].chunks_exact_mut(ROWS_AT_ONCE).enumerate() {
        let first = band * ROWS_AT_ONCE;
        let rows = std::array::from_fn(|r| a.row(first + r));
        let sums = fold_products_of_rows([zero; ROWS_AT_ONCE], zero, rows, x, Arith::add);
        for (yi, s) in ys.iter_mut().zip(sums) {
            store(yi, s);
        }
    }
    for (i, yi) in y.iter_mut().enumerate().skip(banded) {
        store(yi, fold_products(zero, zero, a.row(i), x, Arith::add));
    }
}

/// Registers (once) the kind `name` of a matrix `product` on `dtype`: two inputs read and the
/// output with `out_privilege` (`a`, `x`, `y` for `y = A x`; `a`, `b`, `c` for `c = a b`),
/// the MLIR body from [`ProductGenerator`], and [`product_kernel`] with the product's
/// orientations as the native kernel, preferred on CPUs.
fn product_kind(
    name: String,
    product: Product,
    dtype: DType,
    out_privilege: Privilege,
) -> Result<Arc<TaskKind>, ArrayError> {
    let (op, operands, [a_orientation, b_orientation]) = match product {
        Product::Matvec(a) => ("matvec", ["a", "x", "y"], [a, Orientation::AsStored]),
        Product::Matmul(a, b) => ("matmul", ["a", "b", "c"], [a, b]),
    };
    let accumulate = out_privilege != Privilege::Write;
    let generator = Arc::new(ProductGenerator {
        name: name.clone(),
        product,
    });
    kind(
        name,
        move |builder: TaskKindBuilder| -> Result<Arc<TaskKind>, IrError> {
            let builder = builder
                .arg(operands[0], dtype, Privilege::Read)
                .arg(operands[1], dtype, Privilege::Read)
                .arg(operands[2], dtype, out_privilege)
                .mlir(generator)
                .native_on_cpu();
            with_arith!(
                dtype,
                T => builder.register(product_kernel::<T>(a_orientation, b_orientation, accumulate)),
                else undefined(op, dtype)
            )
        },
    )
}
