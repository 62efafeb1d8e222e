//! Dense matrix-vector and matrix-matrix products.
//!
//! `matvec` walks the matrix over a 2-D processor grid chosen from its shape: each point
//! multiplies its block by the matching slice of the vector. With one column of blocks every
//! output block has one writer (`Write`); with several, the row sums are partial and go
//! through a `Reduce(Sum)` tiling of the output that ignores the column coordinate.
//! `matmul` launches over the output's grid; each point reads a band of rows of the left
//! matrix and a band of columns of the right one.

use std::sync::Arc;

use diffuse_ir::{
    DType, IndexTask, IrError, Privilege, ProjComponent, Projection, ReductionOp, Shape, TaskKind,
    TaskKindBuilder, Tuple,
};

use crate::array::Array;
use crate::broadcast::block;
use crate::element::{with_numeric, Num};
use crate::error::{ArrayError, ArrayResult};
use crate::kinds::{kind, undefined, Kernel};
use crate::mlir::{Product, ProductGenerator};
use crate::ops::reduce::{fold_products, fold_products_of_rows};

/// Rows of the matrix one matvec point multiplies at once (see [`fold_products_of_rows`]).
const ROWS_AT_ONCE: usize = 4;

/// Operand checks shared by both products.
fn check_operands(op: &'static str, a: &Array, b: &Array, b_rank: usize) -> Result<(), ArrayError> {
    a.context().check_same(b.context(), op)?;
    let shape_err = |reason: String| ArrayError::MatmulShape {
        op,
        lhs: Box::new(a.shape()),
        rhs: Box::new(b.shape()),
        reason,
    };
    if a.ndim() != 2 || b.ndim() != b_rank {
        return Err(shape_err(format!(
            "{op} takes a 2-d matrix and a {b_rank}-d operand, got {}-d and {}-d",
            a.ndim(),
            b.ndim()
        )));
    }
    if a.shape()[1] != b.shape()[0] {
        return Err(shape_err(format!(
            "inner dimensions differ ({} vs {})",
            a.shape()[1],
            b.shape()[0]
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

/// `y (+)= A x` for one block: `A` is argument 0, `x` argument 1, `y` argument 2.
fn matvec_kernel<T: Num>(accumulate: bool) -> impl Kernel {
    move |task| {
        let a = task.read::<T>(0)?;
        let x = task.read::<T>(1)?;
        let mut y = task.write::<T>(2)?;
        let x = x.row(0);
        let zero = T::reduction_identity(ReductionOp::Sum);
        let y = y.row_mut(0);
        if a.rows() != y.len() || a.shape()[1] as usize != x.len() {
            return Err(task.error(format!(
                "matrix block {} does not match vector blocks of {} and {}",
                a.shape(),
                x.len(),
                y.len()
            )));
        }
        let store = |yi: &mut T, s: T| *yi = if accumulate { yi.add(s) } else { s };
        let done = y.len() / ROWS_AT_ONCE * ROWS_AT_ONCE;
        for (band, ys) in y[..done].chunks_exact_mut(ROWS_AT_ONCE).enumerate() {
            let first = band * ROWS_AT_ONCE;
            let rows = std::array::from_fn(|r| a.row(first + r));
            let sums = fold_products_of_rows([zero; ROWS_AT_ONCE], zero, rows, x, Num::add);
            for (yi, s) in ys.iter_mut().zip(sums) {
                store(yi, s);
            }
        }
        for (i, yi) in y.iter_mut().enumerate().skip(done) {
            store(yi, fold_products(zero, zero, a.row(i), x, Num::add));
        }
        Ok(())
    }
}

/// `C = A B` for one block: `A` (a band of rows) is argument 0, `B` (a band of columns)
/// argument 1, `C` argument 2.
fn matmul_kernel<T: Num>() -> impl Kernel {
    move |task| {
        let a = task.read::<T>(0)?;
        let b = task.read::<T>(1)?;
        let mut c = task.write::<T>(2)?;
        let (rows, inner) = (a.rows(), a.shape()[1] as usize);
        if b.rows() != inner || c.rows() != rows || c.shape()[1] != b.shape()[1] {
            return Err(task.error(format!(
                "blocks {} x {} do not multiply into {}",
                a.shape(),
                b.shape(),
                c.shape()
            )));
        }
        let zero = T::reduction_identity(ReductionOp::Sum);
        for i in 0..rows {
            let a_row = a.row(i);
            let c_row = c.row_mut(i);
            c_row.fill(zero);
            for (k, &aik) in a_row.iter().enumerate() {
                for (cij, &bkj) in c_row.iter_mut().zip(b.row(k)) {
                    *cij = cij.add(aik.mul(bkj));
                }
            }
        }
        Ok(())
    }
}

impl Array {
    /// The matrix-vector product `self @ x` of an `m x k` matrix and a length-`k` vector.
    pub fn matvec(&self, x: &Array) -> ArrayResult {
        self.product_with_vector("matvec", x)
    }

    /// `matvec`, reporting errors as operation `op`.
    fn product_with_vector(&self, op: &'static str, x: &Array) -> ArrayResult {
        check_operands(op, self, x, 1)?;
        let (m, k) = (self.shape()[0], self.shape()[1]);
        let dtype = self.dtype();
        let cx = self.context();
        let y = Array::fresh(cx, Tuple::shape(&[m])?, dtype)?;
        if m == 0 || k == 0 {
            return Ok(y);
        }
        let grid = self.shape();
        let launch = cx.launch_for(grid);
        let accumulate = launch[1] > 1;
        let y_privilege = if accumulate {
            Privilege::Reduce(ReductionOp::Sum)
        } else {
            Privilege::Write
        };
        let name = format!(
            "array.matvec{}.{dtype}",
            if accumulate { "_partial" } else { "" }
        );
        let native = move |b: TaskKindBuilder| with_numeric!(dtype, T => b.register(matvec_kernel::<T>(accumulate)), else undefined("matvec", dtype));
        let kind = product_kind(name, Product::Matvec, dtype, y_privilege, native)?;
        // x is tiled like the matrix's columns, y like its rows.
        let y_part = y.view().tiling_with(
            Tuple::shape(&[block(m, launch[0])])?,
            Projection::select_dims(2, &[0])?,
        )?;
        let task = IndexTask::new(&kind, launch)
            .arg(
                self.store(),
                self.partition_for(grid, launch)?,
                Privilege::Read,
            )
            .arg(x.store(), x.partition_for(grid, launch)?, Privilege::Read)
            .arg(y.store(), y_part, y_privilege);
        cx.submit(task)?;
        Ok(y)
    }

    /// The matrix product `self @ b` of an `m x k` and a `k x n` matrix; a 1-d `b` gives
    /// [`Array::matvec`].
    pub fn matmul(&self, b: &Array) -> ArrayResult {
        if b.ndim() == 1 {
            return self.product_with_vector("matmul", b);
        }
        check_operands("matmul", self, b, 2)?;
        let (m, k, n) = (self.shape()[0], self.shape()[1], b.shape()[1]);
        let dtype = self.dtype();
        let cx = self.context();
        let out_shape: Shape = Tuple::shape(&[m, n])?;
        let c = Array::fresh(cx, out_shape, dtype)?;
        if c.is_empty() || k == 0 {
            return Ok(c);
        }
        let launch = cx.launch_for(out_shape);
        let name = format!("array.matmul.{dtype}");
        let native = move |b: TaskKindBuilder| with_numeric!(dtype, T => b.register(matmul_kernel::<T>()), else undefined("matmul", dtype));
        let kind = product_kind(name, Product::Matmul, dtype, Privilege::Write, native)?;
        let band = |rows: i64, cols: i64, comps: [ProjComponent; 2]| -> Result<_, ArrayError> {
            Ok((Tuple::shape(&[rows, cols])?, Projection::new(2, &comps)?))
        };
        let (a_tile, a_proj) = band(
            block(m, launch[0]),
            k,
            [ProjComponent::Dim(0), ProjComponent::Const(0)],
        )?;
        let (b_tile, b_proj) = band(
            k,
            block(n, launch[1]),
            [ProjComponent::Const(0), ProjComponent::Dim(1)],
        )?;
        let task = IndexTask::new(&kind, launch)
            .arg(
                self.store(),
                self.view().tiling_with(a_tile, a_proj)?,
                Privilege::Read,
            )
            .arg(
                b.store(),
                b.view().tiling_with(b_tile, b_proj)?,
                Privilege::Read,
            )
            .arg(
                c.store(),
                c.partition_for(out_shape, launch)?,
                Privilege::Write,
            );
        cx.submit(task)?;
        Ok(c)
    }
}

/// Registers (once) the kind `name` of a matrix `product` on `dtype`: two inputs read and the
/// output with `out_privilege` (`a`, `x`, `y` for `y = A x`; `a`, `b`, `c` for `c = a b`),
/// the MLIR body from [`ProductGenerator`] and the native kernel from `native`.
fn product_kind(
    name: String,
    product: Product,
    dtype: DType,
    out_privilege: Privilege,
    native: impl FnOnce(TaskKindBuilder) -> Result<Arc<TaskKind>, IrError>,
) -> Result<Arc<TaskKind>, ArrayError> {
    let operands = match product {
        Product::Matvec => ["a", "x", "y"],
        Product::Matmul => ["a", "b", "c"],
    };
    let generator = Arc::new(ProductGenerator {
        name: name.clone(),
        product,
    });
    kind(name, move |b| {
        native(
            b.arg(operands[0], dtype, Privilege::Read)
                .arg(operands[1], dtype, Privilege::Read)
                .arg(operands[2], dtype, out_privilege)
                .mlir(generator),
        )
    })
}
