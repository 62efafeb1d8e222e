//! NumPy broadcasting, expressed as partitions.
//!
//! The output of an element-wise operation is blocked over the launch domain. An operand
//! with the output's extent in a dimension is tiled like the output there; an operand with
//! extent 1 (or without the dimension) gets a tile of 1 whose color ignores that launch
//! dimension, so every point sees the one slice it repeats. All of it is a projection and a
//! tile: the description stays scale-free and identical operands get identical (interned)
//! partitions, which is what the fusion constraints compare.

use diffuse_ir::{Partition, ProjComponent, Projection, Shape, Tuple, View};

use crate::error::ArrayError;

/// The shape two operands broadcast to, or `ShapeMismatch` naming `op`.
pub(crate) fn broadcast_shapes(op: &'static str, a: Shape, b: Shape) -> Result<Shape, ArrayError> {
    let dims = a.dims().max(b.dims());
    let mut out = vec![0i64; dims];
    for (k, slot) in out.iter_mut().enumerate() {
        // Dimension k of the output, counted from the right in each operand.
        let from_right = dims - k;
        let extent = |s: Shape| s.dims().checked_sub(from_right).map_or(1, |j| s[j]);
        let (x, y) = (extent(a), extent(b));
        *slot = match (x, y) {
            _ if x == y => x,
            (1, _) => y,
            (_, 1) => x,
            _ => {
                return Err(ArrayError::ShapeMismatch {
                    op,
                    lhs: Box::new(a),
                    rhs: Box::new(b),
                })
            }
        };
    }
    Ok(Tuple::shape(&out)?)
}

/// Fails with `ShapeMismatch` unless `operand` broadcasts to `target` itself (assignment:
/// the destination's shape cannot grow).
pub(crate) fn check_broadcasts_to(
    op: &'static str,
    operand: Shape,
    target: Shape,
) -> Result<(), ArrayError> {
    match broadcast_shapes(op, operand, target) {
        Ok(shape) if shape == target => Ok(()),
        _ => Err(ArrayError::ShapeMismatch {
            op,
            lhs: Box::new(target),
            rhs: Box::new(operand),
        }),
    }
}

/// The tile extent of an output of extent `n` blocked over `l` launch points.
pub(crate) fn block(n: i64, l: i64) -> i64 {
    if l > 0 {
        (n / l + i64::from(n % l != 0)).max(1)
    } else {
        1
    }
}

/// How a launch over `launch` that produces an array of shape `out` (blocked over the launch)
/// sees `view`, which must broadcast to `out`.
pub(crate) fn operand_partition(
    view: &View,
    out: Shape,
    launch: Shape,
) -> Result<Partition, ArrayError> {
    let shape = view.shape();
    let (k, d) = (shape.dims(), out.dims());
    if k == 0 {
        return Ok(view.whole(launch.dims())?);
    }
    let shift = d.checked_sub(k).ok_or(ArrayError::ShapeMismatch {
        op: "broadcast",
        lhs: Box::new(shape),
        rhs: Box::new(out),
    })?;
    let mut tile = vec![0i64; k];
    let mut comps = Vec::with_capacity(k);
    for j in 0..k {
        let od = j + shift;
        if shape[j] == out[od] {
            tile[j] = block(out[od], launch[od]);
            comps.push(ProjComponent::Dim(od));
        } else if shape[j] == 1 {
            tile[j] = 1;
            comps.push(ProjComponent::Const(0));
        } else {
            return Err(ArrayError::ShapeMismatch {
                op: "broadcast",
                lhs: Box::new(shape),
                rhs: Box::new(out),
            });
        }
    }
    let projection = Projection::new(d, &comps)?;
    Ok(view.tiling_with(Tuple::shape(&tile)?, projection)?)
}
