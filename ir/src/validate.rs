//! Submission-time checks of an index task against its kind's contract and the IR's rules.
//!
//! Every check is scale-free: it looks at the launch domain's extents and the partitions'
//! descriptions, never at individual points (except for single-point launches, where that is
//! one point).

use crate::error::IrError;
use crate::memo::Memo;
use crate::partition::{Partition, PartitionKind, Tiling};
use crate::privilege::Privilege;
use crate::projection::ProjComponent;
use crate::task::{IndexTask, TaskArg};
use crate::tuple::{Shape, Tuple};

/// Checks `task`; the first violation found is returned as a typed error.
pub fn validate(task: &IndexTask) -> Result<(), IrError> {
    let kind = task.kind();
    let name = kind.name();
    let launch = task.launch_domain();

    if launch.as_slice().iter().any(|&e| e < 1) {
        return Err(IrError::EmptyLaunch {
            kind: name.to_string(),
            domain: launch,
        });
    }
    if launch.checked_volume().is_none() {
        return Err(IrError::TooLarge {
            what: format!("task `{name}`: launch domain {launch} has more than i64::MAX points"),
        });
    }
    if task.args().len() != kind.args().len() {
        return Err(IrError::ArgCount {
            kind: name.to_string(),
            expected: kind.args().len(),
            found: task.args().len(),
        });
    }
    if !task
        .scalars()
        .iter()
        .map(|s| s.dtype())
        .eq(kind.scalars().iter().copied())
    {
        return Err(IrError::ScalarMismatch {
            kind: name.to_string(),
            expected: kind.scalars().to_vec(),
            found: task.scalars().iter().map(|s| s.dtype()).collect(),
        });
    }
    for (i, (arg, decl)) in task.args().iter().zip(kind.args()).enumerate() {
        if !arg.store.is_live() {
            return Err(IrError::DeadStore {
                kind: name.to_string(),
                arg: i,
                store: arg.store.id(),
            });
        }
        if arg.store.dtype() != decl.dtype {
            return Err(IrError::DTypeMismatch {
                kind: name.to_string(),
                arg: i,
                expected: decl.dtype,
                found: arg.store.dtype(),
                store: arg.store.id(),
            });
        }
        if arg.privilege != decl.privilege {
            return Err(IrError::PrivilegeNotDeclared {
                kind: name.to_string(),
                arg: i,
                declared: decl.privilege,
                requested: arg.privilege,
            });
        }
        check_partition(name, i, arg, launch)?;
    }
    check_interference(task)?;
    for group in kind.aligned_groups() {
        for pair in group.windows(2) {
            check_aligned(task, pair[0], pair[1])?;
        }
    }
    Ok(())
}

/// Dimensions, bounds and write-safety of one argument's partition.
fn check_partition(kind: &str, i: usize, arg: &TaskArg, launch: Shape) -> Result<(), IrError> {
    let store_shape = arg.store.shape();
    let dim_err = |what: String| IrError::DimMismatch {
        kind: kind.to_string(),
        arg: i,
        store: arg.store.id(),
        store_shape,
        launch,
        what,
    };
    match arg.partition.kind() {
        PartitionKind::Replicate => {
            if arg.privilege.writes() && launch.volume() > 1 {
                return Err(IrError::ReplicatedWrite {
                    kind: kind.to_string(),
                    arg: i,
                    store: arg.store.id(),
                    store_shape,
                    privilege: arg.privilege,
                    points: launch.volume(),
                });
            }
        }
        PartitionKind::Image(image) => {
            let dims = image.boxes.first().map_or(store_shape.dims(), |b| b.dims());
            if dims != store_shape.dims() {
                return Err(dim_err(format!(
                    "image boxes have {dims} dims but the store has {}",
                    store_shape.dims()
                )));
            }
            if image.launch != launch {
                return Err(dim_err(format!(
                    "the image lists boxes for the launch domain {} instead",
                    image.launch
                )));
            }
            if let Some(b) = image
                .boxes
                .iter()
                .find(|b| !b.is_empty() && (0..dims).any(|d| b.hi[d] > store_shape[d]))
            {
                return Err(dim_err(format!(
                    "image box [{}, {}) reaches past the store",
                    b.lo, b.hi
                )));
            }
            // Boxes may overlap (halos): only reads and reductions go through an image,
            // unless its boxes are disjoint.
            if arg.privilege.writes() && !image.disjoint {
                return Err(IrError::WriteThroughImage {
                    kind: kind.to_string(),
                    arg: i,
                    store: arg.store.id(),
                    privilege: arg.privilege,
                });
            }
        }
        PartitionKind::Tiling(t) => {
            let key = (
                arg.partition.clone(),
                store_shape,
                launch,
                arg.privilege.writes(),
            );
            TILINGS_CHECKED.with(|checked| {
                checked.get_or_try(key, || check_tiling(t, kind, i, arg, launch, dim_err))
            })?;
        }
    }
    Ok(())
}

/// The bounds and write-safety of tiling `t`, one argument's partition (see
/// [`check_partition`]); `dim_err` names a dimension mismatch.
fn check_tiling(
    t: &Tiling,
    kind: &str,
    i: usize,
    arg: &TaskArg,
    launch: Shape,
    dim_err: impl Fn(String) -> IrError,
) -> Result<(), IrError> {
    let store_shape = arg.store.shape();
    // Tiles as many-dimensional as the store, from points of the launch domain.
    if t.tile.dims() != store_shape.dims() || t.projection.in_dims() != launch.dims() {
        return Err(dim_err(format!(
            "tile {} ({}-d, the store {}-d), projection {:?} from {}-d points (the launch \
             domain {}-d)",
            t.tile,
            t.tile.dims(),
            store_shape.dims(),
            t.projection,
            t.projection.in_dims(),
            launch.dims()
        )));
    }
    // The last color the launch reaches must still start inside the tiled region.
    let mut color = Tuple::splat(store_shape.dims(), 0);
    for (c, comp) in color
        .as_mut_slice()
        .iter_mut()
        .zip(t.projection.components())
    {
        *c = match *comp {
            ProjComponent::Dim(d) => launch[d] - 1,
            ProjComponent::Const(v) => v,
        };
    }
    let region = arg.partition.reachable_bounds(store_shape);
    let tile = t.tile_rect(&color);
    let outside = region.is_empty() || (0..store_shape.dims()).any(|d| tile.lo[d] >= region.hi[d]);
    if outside {
        return Err(IrError::TilingOutOfBounds {
            kind: kind.to_string(),
            arg: i,
            store: arg.store.id(),
            store_shape,
            launch,
            color,
            tile_origin: tile.lo,
            region_lo: region.lo,
            region_hi: region.hi,
        });
    }
    if arg.privilege.writes() && !t.projection.is_injective_on(&launch) {
        return Err(IrError::AliasedWrite {
            kind: kind.to_string(),
            arg: i,
            store: arg.store.id(),
            launch,
            privilege: arg.privilege,
            projection: format!("{:?}", t.projection),
        });
    }
    Ok(())
}

/// A tiling that passed [`check_tiling`]: the partition, the store's shape, the launch
/// domain and whether the argument writes, which is all the check reads.
type CheckedTiling = (Partition, Shape, Shape, bool);

thread_local! {
    /// Tilings that passed on this thread, by everything [`check_tiling`] reads: a task
    /// stream repeats a few of them.
    static TILINGS_CHECKED: Memo<CheckedTiling, ()> = Memo::new(4096);
}

/// A store that one argument changes may not be named by any other argument, except by
/// further reductions with the same operator (their contributions commute).
fn check_interference(task: &IndexTask) -> Result<(), IrError> {
    let args = task.args();
    for (i, a) in args.iter().enumerate() {
        for (j, b) in args.iter().enumerate().skip(i + 1) {
            if !a.store.same_store(&b.store) {
                continue;
            }
            let both_same_reduction = matches!(
                (a.privilege, b.privilege),
                (Privilege::Reduce(x), Privilege::Reduce(y)) if x == y
            );
            if (a.privilege.mutates() || b.privilege.mutates()) && !both_same_reduction {
                return Err(IrError::InterferingArgs {
                    kind: task.kind().name().to_string(),
                    first: i,
                    second: j,
                    store: a.store.id(),
                    first_privilege: a.privilege,
                    second_privilege: b.privilege,
                });
            }
        }
    }
    Ok(())
}

/// The extent of the region an argument's partition reaches and its tile (the store's shape
/// for `Replicate`).
fn footprint(arg: &TaskArg) -> (Shape, Shape) {
    let region = arg.partition.reachable_bounds(arg.store.shape()).extent();
    let tile = arg
        .partition
        .as_tiling()
        .map_or(arg.store.shape(), |t| t.tile);
    (region, tile)
}

/// Arguments `a` and `b` must see equally shaped sub-stores at every launch point.
fn check_aligned(task: &IndexTask, a: usize, b: usize) -> Result<(), IrError> {
    let (x, y) = (&task.args()[a], &task.args()[b]);
    let ((rx, tx), (ry, ty)) = (footprint(x), footprint(y));
    let launch = task.launch_domain();
    let equal = if launch.volume() == 1 {
        // One point: compare its two sub-stores directly.
        let p = Tuple::splat(launch.dims(), 0);
        x.partition.sub_store(x.store.shape(), &p).extent()
            == y.partition.sub_store(y.store.shape(), &p).extent()
    } else {
        same_tiling_structure(&x.partition, &y.partition) && rx == ry && tx == ty
    };
    if equal {
        return Ok(());
    }
    Err(IrError::ShapeMismatch {
        kind: task.kind().name().to_string(),
        first: a,
        second: b,
        first_shape: rx,
        second_shape: ry,
        first_tile: tx,
        second_tile: ty,
    })
}

/// Two partitions cut their reachable regions the same way: both replicate, both tile with
/// the same projection (tile and region extents are compared by the caller), or both are the
/// same image.
fn same_tiling_structure(p: &Partition, q: &Partition) -> bool {
    match (p.kind(), q.kind()) {
        (PartitionKind::Replicate, PartitionKind::Replicate) => true,
        (PartitionKind::Tiling(a), PartitionKind::Tiling(b)) => a.projection == b.projection,
        (PartitionKind::Image(_), PartitionKind::Image(_)) => p == q,
        _ => false,
    }
}
