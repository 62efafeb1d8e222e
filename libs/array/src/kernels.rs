//! The row driver behind every element-wise native kernel: operands broadcast against the
//! output, walked a contiguous row at a time so the inner loops run at slice speed.
//!
//! An operand is a store argument or a task scalar. A store operand's sub-store has its own
//! shape, aligned with the output's from the right (NumPy broadcasting): in each dimension it
//! either matches the output or has extent 1 and is repeated. Each output row then sees each
//! operand as a [`Row::Slice`] of the same length or a [`Row::Splat`] of one value.

use diffuse_ir::{Element, KernelError, PointTask, ReadView, Shape, WriteView, MAX_DIMS};

/// One operand's values along one output row.
#[derive(Clone, Copy)]
pub(crate) enum Row<'a, T> {
    /// One value per output element.
    Slice(&'a [T]),
    /// The same value for the whole row.
    Splat(T),
}

/// Where an element-wise kernel finds one operand.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Slot {
    /// The next store argument.
    Array,
    /// The next scalar argument.
    Scalar,
}

/// An operand resolved for one point task.
pub(crate) enum Source<'a, T> {
    /// A store argument broadcast against the output.
    Store(Broadcast<'a, T>),
    /// A scalar argument.
    Value(T),
}

impl<T: Element> Source<'_, T> {
    /// The operand along the output row whose leading index is `lead`.
    #[inline]
    pub(crate) fn row(&self, lead: &[i64]) -> Row<'_, T> {
        match self {
            Source::Store(b) => b.row(lead),
            Source::Value(v) => Row::Splat(*v),
        }
    }
}

/// Resolves operands described by `slots` for `task`: store operands are arguments
/// `first_arg..`, in order, and scalar operands scalars `0..`, in order.
pub(crate) fn sources<'t, T: Element>(
    task: &'t PointTask<'_>,
    slots: &[Slot],
    first_arg: usize,
    out_shape: Shape,
) -> Result<Vec<Source<'t, T>>, KernelError> {
    let (mut arg, mut scalar) = (first_arg, 0);
    slots
        .iter()
        .map(|slot| match slot {
            Slot::Array => {
                arg += 1;
                Ok(Source::Store(Broadcast::new(task, arg - 1, out_shape)?))
            }
            Slot::Scalar => {
                scalar += 1;
                Ok(Source::Value(task.scalar::<T>(scalar - 1)?))
            }
        })
        .collect()
}

/// The argument index of the output of an element-wise kernel with these operand slots.
pub(crate) fn output_arg(slots: &[Slot]) -> usize {
    slots.iter().filter(|&&s| s == Slot::Array).count()
}

/// A store operand read through its sub-store, broadcast to an output sub-store shape.
pub(crate) struct Broadcast<'a, T> {
    view: ReadView<'a, T>,
    /// For each output leading dimension: the operand's row stride along it (0 where the
    /// operand is broadcast or does not have the dimension).
    row_strides: [usize; MAX_DIMS],
    lead_dims: usize,
    /// How the operand's innermost dimension meets the output's.
    inner: Inner,
}

#[derive(Clone, Copy)]
enum Inner {
    /// Same extent: a slice per row.
    Matches,
    /// Extent 1 (or a 0-d operand): one value per row.
    Repeats,
}

impl<'a, T: Element> Broadcast<'a, T> {
    /// Argument `arg` of `task`, to be broadcast against an output sub-store of `out`.
    pub(crate) fn new(
        task: &'a PointTask<'_>,
        arg: usize,
        out: Shape,
    ) -> Result<Self, KernelError> {
        let view = task.read::<T>(arg)?;
        let shape = view.shape();
        let (k, d) = (shape.dims(), out.dims());
        let incompatible = || {
            task.error(format!(
                "argument {arg}'s sub-store {shape} does not broadcast to the output's {out}"
            ))
        };
        if k > d {
            return Err(incompatible());
        }
        let shift = d - k;
        let mut row_strides = [0usize; MAX_DIMS];
        let mut stride = 1usize;
        // Operand dims 0..k-1 are its row dims; walk them innermost first.
        for j in (0..k.saturating_sub(1)).rev() {
            let (extent, wanted) = (shape[j], out[j + shift]);
            if extent == wanted {
                row_strides[j + shift] = stride;
            } else if extent != 1 {
                return Err(incompatible());
            }
            stride *= extent.max(0) as usize;
        }
        let inner = match k {
            0 => Inner::Repeats,
            _ if shape[k - 1] == out[d - 1] => Inner::Matches,
            _ if shape[k - 1] == 1 => Inner::Repeats,
            _ => return Err(incompatible()),
        };
        Ok(Broadcast {
            view,
            row_strides,
            lead_dims: d.saturating_sub(1),
            inner,
        })
    }

    /// The operand along the output row with leading index `lead`.
    #[inline]
    pub(crate) fn row(&self, lead: &[i64]) -> Row<'_, T> {
        let r: usize = lead
            .iter()
            .zip(&self.row_strides[..self.lead_dims])
            .map(|(&i, &s)| i as usize * s)
            .sum();
        let row = self.view.row(r);
        match self.inner {
            Inner::Matches => Row::Slice(row),
            Inner::Repeats => Row::Splat(row[0]),
        }
    }
}

/// Calls `f(row, lead)` for every row of `out`, with `lead` the row's index in all but the
/// innermost dimension (empty for 0-d and 1-d outputs).
pub(crate) fn for_each_out_row<U: Element>(
    out: &mut WriteView<'_, U>,
    mut f: impl FnMut(&mut [U], &[i64]),
) {
    let shape = out.shape();
    let lead_dims = shape.dims().saturating_sub(1);
    let mut lead = [0i64; MAX_DIMS];
    for r in 0..out.rows() {
        f(out.row_mut(r), &lead[..lead_dims]);
        for d in (0..lead_dims).rev() {
            lead[d] += 1;
            if lead[d] < shape[d] {
                break;
            }
            lead[d] = 0;
        }
    }
}
