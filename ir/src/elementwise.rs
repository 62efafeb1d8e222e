//! A row-wise driver for element-wise native kernels.

use crate::dtype::Element;
use crate::error::KernelError;
use crate::kernel::PointTask;

/// Calls `f(out_row, input_rows)` for every row of argument `out` (taken for writing) and the
/// matching rows of arguments `inputs` (taken for reading), which must all have the same
/// sub-store shape. This is how element-wise kernels touch memory at slice speed.
pub fn for_each_row<T: Element>(
    task: &PointTask<'_>,
    out: usize,
    inputs: &[usize],
    mut f: impl FnMut(&mut [T], &[&[T]]),
) -> Result<(), KernelError> {
    let views = inputs
        .iter()
        .map(|&i| task.read::<T>(i))
        .collect::<Result<Vec<_>, _>>()?;
    let mut dst = task.write::<T>(out)?;
    if let Some((i, v)) = inputs
        .iter()
        .zip(&views)
        .find(|(_, v)| v.shape() != dst.shape())
    {
        return Err(task.error(format!(
            "argument {i} has sub-store shape {} but output {out} has {}",
            v.shape(),
            dst.shape()
        )));
    }
    let mut rows: Vec<&[T]> = Vec::with_capacity(views.len());
    for r in 0..dst.rows() {
        rows.clear();
        rows.extend(views.iter().map(|v| v.row(r)));
        f(dst.row_mut(r), &rows);
    }
    Ok(())
}
