//! `y = op(A) x`: the matrix in 2-D blocks over a grid chosen from its shape, the vector
//! and the output tiled like the matrix's dimension each meets.

use diffuse_ir::{IndexTask, Privilege, Projection, ReductionOp, Tuple};

use crate::array::Array;
use crate::broadcast::block;
use crate::error::{ArrayError, ArrayResult};
use crate::mlir::Product;

use super::{check_operands, oriented_dims, product_kind, Orientation};

impl Array {
    /// The matrix-vector product `self @ x` of an `m x k` matrix and a length-`k` vector.
    pub fn matvec(&self, x: &Array) -> ArrayResult {
        self.product_with_vector("matvec", Orientation::AsStored, x)
    }

    /// The matrix-vector product `op(self) @ x`, with `op(self)` the matrix read with
    /// `orientation` (`Transposed`: `self.T @ x` of a `k x m` matrix, without copying the
    /// transpose).
    pub fn matvec_with(&self, orientation: Orientation, x: &Array) -> ArrayResult {
        self.product_with_vector("matvec", orientation, x)
    }

    /// `matvec_with`, reporting errors as operation `op`.
    pub(super) fn product_with_vector(
        &self,
        op: &'static str,
        orientation: Orientation,
        x: &Array,
    ) -> ArrayResult {
        check_operands(op, (self, orientation), (x, Orientation::AsStored), 1)?;
        let [m, k] = oriented_dims(self, orientation);
        let dtype = self.dtype();
        let cx = self.context();
        let y = Array::fresh(cx, Tuple::shape(&[m])?, dtype)?;
        if m == 0 || k == 0 {
            return Ok(y);
        }
        // The grid over the stored matrix: the one a copy of the transpose would get,
        // transposed back, so both run the same blocks.
        let grid = self.shape();
        let oriented = cx.launch_for(Tuple::shape(&[m, k])?);
        let launch = Tuple::shape(&orientation.apply([oriented[0], oriented[1]]))?;
        // The grid dimension along the output and the one summed over.
        let [out_dim, sum_dim] = orientation.apply([0, 1]);
        let accumulate = launch[sum_dim] > 1;
        let y_privilege = if accumulate {
            Privilege::Reduce(ReductionOp::Sum)
        } else {
            Privilege::Write
        };
        let name = format!(
            "array.matvec{}.{dtype}{}",
            if accumulate { "_partial" } else { "" },
            match orientation {
                Orientation::AsStored => "",
                Orientation::Transposed => ".t",
            }
        );
        let kind = product_kind(name, Product::Matvec(orientation), dtype, y_privilege)?;
        // The vector tiled like the grid dimension it meets.
        let along = |v: &Array, dim: usize| -> Result<_, ArrayError> {
            Ok(v.view().tiling_with(
                Tuple::shape(&[block(grid[dim], launch[dim])])?,
                Projection::select_dims(2, &[dim])?,
            )?)
        };
        let task = IndexTask::new(&kind, launch)
            .arg(
                self.store(),
                self.partition_for(grid, launch)?,
                Privilege::Read,
            )
            .arg(x.store(), along(x, sum_dim)?, Privilege::Read)
            .arg(y.store(), along(&y, out_dim)?, y_privilege);
        cx.submit(task)?;
        Ok(y)
    }
}
