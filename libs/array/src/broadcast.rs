//! NumPy broadcasting, expressed as partitions.
//!
//! The output of an element-wise operation is blocked over the launch domain. An operand
//! with the output's extent in a dimension is tiled like the output there; an operand with
//! extent 1 (or without the dimension) gets a tile of 1 whose color ignores that launch
//! dimension, so every point sees the one slice it repeats. All of it is a projection and a
//! tile: the description stays scale-free and identical operands get identical (interned)
//! partitions, which is what the fusion constraints compare.

use diffuse_ir::{Memo, Partition, ProjComponent, Projection, Shape, Tuple, View, MAX_DIMS};

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
    let key = OperandKey {
        offset: view.offset(),
        shape: view.shape(),
        whole: view.is_whole_store(),
        out,
        launch,
    };
    MEMO.with(|memo| memo.get_or_try(key, || build_operand_partition(view, out, launch)))
}

/// Everything an operand's partition depends on: the view's box, whether it is its whole
/// store (a whole store's tiles need no clip), the output's shape and the launch's.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct OperandKey {
    offset: Tuple,
    shape: Shape,
    whole: bool,
    out: Shape,
    launch: Shape,
}

thread_local! {
    /// Operand partitions built on this thread: every element-wise operation looks its
    /// operands up here instead of rebuilding and re-interning them.
    static MEMO: Memo<OperandKey, Partition> = Memo::new(4096);
}

/// [`operand_partition`], built.
fn build_operand_partition(
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
    let mut tile = [0i64; MAX_DIMS];
    let mut comps = [ProjComponent::Const(0); MAX_DIMS];
    for j in 0..k {
        let od = j + shift;
        if shape[j] == out[od] {
            tile[j] = block(out[od], launch[od]);
            comps[j] = ProjComponent::Dim(od);
        } else if shape[j] == 1 {
            tile[j] = 1;
        } else {
            return Err(ArrayError::ShapeMismatch {
                op: "broadcast",
                lhs: Box::new(shape),
                rhs: Box::new(out),
            });
        }
    }
    let projection = Projection::new(d, &comps[..k])?;
    Ok(view.tiling_with(Tuple::shape(&tile[..k])?, projection)?)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use diffuse_ir::{Context, DType, Detached};

    use super::*;

    fn shape(extents: &[i64]) -> Shape {
        Tuple::shape(extents).expect("a small shape")
    }

    #[test]
    fn remembered_partitions_are_the_ones_built_and_tell_a_whole_store_from_a_view() {
        let cx = Context::new(Arc::new(Detached));
        let small = cx.create_store(&[4, 6], DType::F64).expect("a store");
        let large = cx.create_store(&[5, 6], DType::F64).expect("a store");
        let whole = small.view();
        // The same box as `whole`, in a larger store: its tiles must be clipped to the view.
        let part = View::new(&large, shape(&[0, 0]), shape(&[4, 6])).expect("a view");
        let (out, launch) = (shape(&[4, 6]), shape(&[2, 1]));
        for view in [&whole, &part, &whole, &part] {
            let remembered = operand_partition(view, out, launch).expect("broadcasts");
            let built = build_operand_partition(view, out, launch).expect("broadcasts");
            assert_eq!(remembered, built);
        }
        let of_whole = operand_partition(&whole, out, launch).expect("broadcasts");
        let of_part = operand_partition(&part, out, launch).expect("broadcasts");
        assert_ne!(of_whole, of_part);
        assert!(of_part.as_tiling().is_some_and(|t| t.clip.is_some()));
        // A row broadcast down the columns of `out`.
        let row = View::new(&large, shape(&[4, 0]), shape(&[1, 6])).expect("a view");
        let broadcast = operand_partition(&row, out, launch).expect("broadcasts");
        assert_eq!(
            broadcast,
            build_operand_partition(&row, out, launch).expect("broadcasts")
        );
        assert!(operand_partition(&row, shape(&[4, 5]), launch).is_err());
    }
}
