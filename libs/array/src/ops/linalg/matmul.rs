//! `C = op(A) op(B)`: launched over the output's grid, each point reading the band of rows
//! of `op(A)` and the band of columns of `op(B)` its block of `C` needs.

use diffuse_ir::{DType, IndexTask, Partition, Privilege, ProjComponent, Projection, Shape, Tuple};

use crate::array::Array;
use crate::broadcast::block;
use crate::context::ArrayContext;
use crate::element::is_float;
use crate::error::{ArrayError, ArrayResult};
use crate::mlir::Product;
use crate::partitioner::Partitioner;

use super::gemm::{points_per_host, THREADED_WORK};
use super::{check_operands, oriented_dims, product_kind, Orientation};

impl Array {
    /// The matrix product `self @ b` of an `m x k` and a `k x n` matrix; a 1-d `b` gives
    /// [`Array::matvec`].
    pub fn matmul(&self, b: &Array) -> ArrayResult {
        self.matmul_with(Orientation::AsStored, b, Orientation::AsStored)
    }

    /// The matrix product `op(self) @ op(b)`, each matrix read with its orientation
    /// (`Transposed` reads the array's transpose in place: `A.T @ B`, `A @ B.T`); a 1-d `b`
    /// gives [`Array::matvec_with`] (`b_orientation` is then ignored: a vector has no
    /// transpose).
    pub fn matmul_with(
        &self,
        a_orientation: Orientation,
        b: &Array,
        b_orientation: Orientation,
    ) -> ArrayResult {
        if b.ndim() == 1 {
            return self.product_with_vector("matmul", a_orientation, b);
        }
        check_operands("matmul", (self, a_orientation), (b, b_orientation), 2)?;
        let [m, k] = oriented_dims(self, a_orientation);
        let n = oriented_dims(b, b_orientation)[1];
        let dtype = self.dtype();
        let cx = self.context();
        let out_shape: Shape = Tuple::shape(&[m, n])?;
        let c = Array::fresh(cx, out_shape, dtype)?;
        if c.is_empty() || k == 0 {
            return Ok(c);
        }
        let launch = product_launch(cx, out_shape, dtype, [m, k, n]);
        let name = match (a_orientation, b_orientation) {
            (Orientation::AsStored, Orientation::AsStored) => format!("array.matmul.{dtype}"),
            (a, b) => format!("array.matmul.{dtype}.{}{}", a.letter(), b.letter()),
        };
        let kind = product_kind(
            name,
            Product::Matmul(a_orientation, b_orientation),
            dtype,
            Privilege::Write,
        )?;
        let task = IndexTask::new(&kind, launch)
            .arg(
                self.store(),
                band(self, a_orientation, 0, launch)?,
                Privilege::Read,
            )
            .arg(
                b.store(),
                band(b, b_orientation, 1, launch)?,
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

/// The launch of a product of `m x k` and `k x n` matrices of `dtype` into `out`: a float
/// product large enough to run on several threads gets one point per host, whose product
/// then uses the host's cores (one multi-threaded GEMM beats a GEMM per core on blocks);
/// others get the output's blocks over every processor.
fn product_launch(cx: &ArrayContext, out: Shape, dtype: DType, [m, k, n]: [i64; 3]) -> Shape {
    let work = [m, k, n]
        .iter()
        .map(|&e| usize::try_from(e).unwrap_or(0))
        .fold(1usize, usize::saturating_mul);
    if !is_float(dtype) || work < THREADED_WORK {
        return cx.launch_for(out);
    }
    let all = cx.partitioner();
    Partitioner::new(points_per_host(all.procs()))
        .with_min_block(all.min_block())
        .launch_for(out)
}

/// The tiling that gives each point of `launch` its band of `op(matrix)` (the matrix read
/// with `orientation`): blocked like launch dimension `kept` along `op`'s dimension `kept`
/// (rows of the left operand, columns of the right one), whole along the other, the summed
/// one.
fn band(
    matrix: &Array,
    orientation: Orientation,
    kept: usize,
    launch: Shape,
) -> Result<Partition, ArrayError> {
    let shape = matrix.shape();
    // The stored dimension that `op`'s dimension `kept` is.
    let stored = orientation.apply([0, 1])[kept];
    let mut tile = [shape[0], shape[1]];
    let mut colors = [ProjComponent::Const(0); 2];
    tile[stored] = block(shape[stored], launch[kept]);
    colors[stored] = ProjComponent::Dim(kept);
    Ok(matrix
        .view()
        .tiling_with(Tuple::shape(&tile)?, Projection::new(2, &colors)?)?)
}
