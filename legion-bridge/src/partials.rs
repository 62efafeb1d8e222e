//! Reductions over several points that diffuse folds itself instead of Legion.
//!
//! Legion folds a launch's reductions through reduction instances: it fills the store's
//! region, folds the points' instances in an order of its own, and keeps the launch, and
//! every later launch that touches the region before something maps all of it, out of
//! traces (their contents are lazy). A small store reduced by a launch of several points
//! goes another way: every point writes its contribution to its own row of a *partials*
//! region (one row per launch point, write-discard), and a launch of one point on a CPU then
//! folds the rows into the store, points in row-major order. That is the embedded backend's
//! order, so the result is bitwise the embedded backend's, and both launches can be traced.
//! The driver keeps partials regions per (store region, shape, dtype, the argument's place
//! among the launch's reductions into the store), so a repeated window's launches meet the
//! same regions again.

use diffuse_backend::point::{self, Contribution};
use diffuse_backend::LaunchPlan;
use diffuse_ir::{
    IrError, KernelError, Partition, Point, Privilege, ProjComponent, Projection, Rect,
    ReductionOp, Shape,
};
use diffuse_ir::{Tuple, MAX_DIMS};

use crate::launch::{LaunchEntry, Requirement, Role};
use crate::mapped_point::{Held, Located, MappedPoint};

/// A reduction that diffuse folds itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Folded {
    /// The reducing template argument.
    pub(crate) arg: usize,
    /// Its requirement (from `driver::lowering`).
    pub(crate) requirement: usize,
    /// The reduction.
    pub(crate) op: ReductionOp,
    /// The shape of its partials ([`partials_shape`]).
    pub(crate) shape: Shape,
}

/// The reductions of `plan` that diffuse folds itself, in argument order: in a launch of several
/// points, every argument reducing into a store that the launch reaches through
/// reductions only, when each argument's partials have at most `max_elements` elements
/// (larger ones, such as a store reduced tile by tile, stay with Legion's reduction
/// instances, and so do the other reductions into their store); reductions of complex
/// values, which Legion has no operators for, at any size and number of points. Each argument gets partials
/// of its own, so the fold replays the embedded backend's order exactly: arguments in order,
/// each over the points in order.
pub(crate) fn folded_by_diffuse(
    plan: &LaunchPlan,
    requirements: &[Requirement],
    arg_requirement: &[Option<usize>],
    max_elements: usize,
) -> Vec<Folded> {
    let launch = plan.template().launch_domain();
    let several_points = launch.volume() > 1;
    // The partials of a store the launch reaches through reductions only, if small enough;
    // a reduction Legion has no operator for is folded here whatever its size and for one
    // point too (a store the same launch also reads or writes is refused by the driver: the
    // fold would overwrite what the launch wrote).
    let partials = |slot: usize, op: ReductionOp, dtype| {
        let legion_folds = crate::redops::redop(op, dtype).is_some();
        requirements
            .iter()
            .filter(|req| req.slot == slot)
            .all(|req| matches!(req.privilege, Privilege::Reduce(_)))
            .then(|| partials_shape(launch, plan.store(slot).shape()))
            .flatten()
            .filter(|p| !legion_folds || several_points && p.volume() as u64 <= max_elements as u64)
    };
    arg_requirement
        .iter()
        .enumerate()
        .filter_map(|(arg, r)| {
            let requirement = (*r)?;
            let Privilege::Reduce(op) = requirements[requirement].privilege else {
                return None;
            };
            let req = &requirements[requirement];
            let shape = partials(req.slot, op, req.dtype)?;
            Some(Folded {
                arg,
                requirement,
                op,
                shape,
            })
        })
        .collect()
}

/// The shape of the partials of a reduction into a store of shape `store` by a launch over
/// `launch`: the launch's shape, then one row of the store's elements (a point's
/// contribution, row-major, from the row's start). `None` for an empty store, or when that
/// has too many dimensions or elements to count.
pub(crate) fn partials_shape(launch: Shape, store: Shape) -> Option<Shape> {
    let row = store.checked_volume().filter(|&v| v > 0)?;
    launch.checked_volume()?.checked_mul(row)?;
    if launch.dims() + 1 > MAX_DIMS {
        return None;
    }
    let mut extents = launch.as_slice().to_vec();
    extents.push(row);
    Tuple::new(&extents).ok()
}

/// The partition of partials of shape `partials` (from [`partials_shape`]) giving each
/// launch point its row.
pub(crate) fn rows(partials: Shape) -> Result<Partition, IrError> {
    let dims = partials.dims();
    let mut tile = vec![1; dims];
    tile[dims - 1] = partials[dims - 1];
    let mut components: Vec<ProjComponent> = (0..dims - 1).map(ProjComponent::Dim).collect();
    components.push(ProjComponent::Const(0));
    let projection = Projection::new(dims - 1, &components)?;
    Partition::tiling(Tuple::new(&tile)?, Tuple::splat(dims, 0), projection)
}

/// Point `p`'s row of partials, over its first `len` elements.
fn row_rect(p: &Point, len: i64) -> Result<Rect, String> {
    let mut lo = p.as_slice().to_vec();
    lo.push(0);
    let mut hi: Vec<i64> = p.as_slice().iter().map(|c| c + 1).collect();
    hi.push(len);
    let row = |coords: &[i64]| Tuple::new(coords).map_err(|e| format!("a row of partials: {e}"));
    Ok(Rect {
        lo: row(&lo)?,
        hi: row(&hi)?,
    })
}

/// Where `mapped`'s row of the partials of its launch's requirement `r` lies, over its
/// first `len` elements (contiguous).
pub(crate) fn locate_row(mapped: &MappedPoint, r: usize, len: i64) -> Result<Located, KernelError> {
    let row = row_rect(&mapped.p, len).map_err(|m| mapped.fail(m))?;
    mapped.locate(r, &partials_of(mapped.entry, r), row)
}

/// What a partials region of `entry`'s requirement `r` holds, for messages and its dtype.
fn partials_of(entry: &LaunchEntry, r: usize) -> Held {
    let req = &entry.requirements[r];
    Held {
        name: format!("the partials of store {}", entry.plan.store(req.slot).id()),
        dtype: req.dtype,
    }
}

/// Writes `mapped`'s contributions to the reductions diffuse folds into the point's rows of
/// their partials; an error if one has none (its row would hold garbage).
pub(crate) fn write_rows(
    mapped: &MappedPoint,
    contributions: &[Contribution],
) -> Result<(), KernelError> {
    let (entry, plan) = (mapped.entry, mapped.plan());
    for (a, r) in entry.arg_requirement.iter().enumerate() {
        let Some(r) = r.filter(|&r| entry.requirements[r].partials) else {
            continue;
        };
        let arg = plan.arg(a);
        let rect = arg.partition.sub_store(arg.store.shape(), &mapped.p);
        if rect.is_empty() {
            continue;
        }
        let Some(acc) = contributions
            .iter()
            .find(|(c, _)| *c == a)
            .and_then(|(_, place)| place.accumulator.as_ref())
        else {
            return Err(mapped.fail(format!(
                "no contribution to the reduction into store {}",
                arg.store.id()
            )));
        };
        let row = locate_row(mapped, r, rect.volume())?;
        // SAFETY: the point's row holds at least `rect.volume()` contiguous elements (C
        // order, checked by `locate`), mapped write-discard for this point alone; the
        // accumulator holds exactly that many of the same dtype.
        unsafe {
            std::ptr::copy_nonoverlapping(acc.as_ptr(), row.ptr, acc.len() * row.size);
        }
    }
    Ok(())
}

/// The fold launch's point: zeroes the new stores it folds into, then folds every
/// reduction's rows into its store, reductions in argument order, points in row-major
/// order (as the embedded backend folds them). `mapped`'s point is the plan's first, which
/// names the fold in errors.
pub(crate) fn fold(mapped: &MappedPoint) -> Result<(), KernelError> {
    let (entry, plan) = (mapped.entry, mapped.plan());
    let t = plan.template();
    let fail = |m: &str| mapped.fail(m.to_string());
    let Role::Fold(folds) = &entry.role else {
        return Err(fail("a fold ran for a launch that folds nothing"));
    };
    mapped.zero_on_host()?;
    let launch = t.launch_domain();
    for f in folds {
        let arg = plan.arg(f.arg);
        let shape = arg.store.shape();
        let partials = partials_shape(launch, shape)
            .ok_or_else(|| fail("a reduction's partials do not fit"))?;
        let store = mapped.locate(f.store, &Held::whole(&arg.store), Rect::from_shape(shape))?;
        let held = partials_of(entry, f.partials);
        let rows = mapped.locate(f.partials, &held, Rect::from_shape(partials))?;
        let kind = plan.tasks()[t.args()[f.arg].constituent].kind().name();
        for q in Rect::from_shape(launch).points() {
            let rect = arg.partition.sub_store(shape, &q);
            if rect.is_empty() {
                continue;
            }
            let row = row_rect(&q, rect.volume()).map_err(|m| mapped.fail(m))?;
            // SAFETY: `rect` lies inside the store, whose whole region this point holds
            // read-write at `store`; row `q` of the partials lies inside them and holds
            // `rect.volume()` elements of the store's dtype from its start (written by point
            // `q`), readable here.
            entry.shared.fp.watch(kind, || unsafe {
                point::fold_row_major(
                    store.address(&rect.lo),
                    &store.strides,
                    &rect,
                    rows.address(&row.lo),
                    held.dtype,
                    f.op,
                )
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_point_of_a_launch_gets_its_own_row_of_partials() {
        let launch = Tuple::shape(&[2, 3]).unwrap();
        let store = Tuple::shape(&[4]).unwrap();
        let shape = partials_shape(launch, store).unwrap();
        assert_eq!(shape, Tuple::shape(&[2, 3, 4]).unwrap());
        let rows = rows(shape).unwrap();
        assert!(rows.covers(shape, launch));
        let p = Tuple::new(&[1, 2]).unwrap();
        assert_eq!(
            rows.sub_store(shape, &p),
            Rect {
                lo: Tuple::new(&[1, 2, 0]).unwrap(),
                hi: Tuple::new(&[2, 3, 4]).unwrap(),
            }
        );
        // No partials for an empty store, or past the dimensions a region may have.
        assert_eq!(partials_shape(launch, Tuple::shape(&[0]).unwrap()), None);
        let widest = Tuple::splat(diffuse_ir::MAX_DIMS, 1);
        assert_eq!(partials_shape(widest, store), None);
    }
}
