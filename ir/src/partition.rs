//! Partitions: scale-free maps from launch points to the sub-stores they access.
//!
//! `Replicate` (the paper's `None`) gives every point the whole store. `Tiling` gives point
//! `p` the box `[c * tile, (c + 1) * tile) + offset` with color `c = projection(p)` (the
//! paper's Figure 4(e)), clipped to the store and, for a tiling of a view, to the view's
//! extent. `Image` lists one box per launch point, computed once from data a library owns
//! (the entries and the columns of `x` an SpMV row tile touches: the halo distributed solvers
//! exchange). Partitions are hash-consed, so two partitions are equal exactly when their
//! handles are identical: the O(1) alias check the fusion constraints rely on, for images too
//! (hashed once, when built). Tiling sub-store bounds are computed from the description on
//! demand and never stored per point.

use std::fmt;
use std::hash::Hash;
use std::sync::Arc;

use crate::error::IrError;
use crate::projection::{ProjComponent, Projection};
use crate::store::View;
use crate::tuple::{Point, Rect, Shape, Tuple};

/// An affine tiling of a store (or of a view of it).
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Tiling {
    /// Extent of one tile.
    pub tile: Shape,
    /// Origin of the tiled region within the store.
    pub offset: Point,
    /// Maps launch points to tile colors.
    pub projection: Projection,
    /// For a tiling of a view: the view's extent, measured from `offset`. Tiles are clipped
    /// to it as well as to the store, so an uneven last tile never spills past the view.
    pub clip: Option<Shape>,
}

impl Tiling {
    /// The unclipped tile of color `color`: `[color * tile, (color + 1) * tile) + offset`.
    pub fn tile_rect(&self, color: &Point) -> Rect {
        // Saturating: a color far outside any store yields a far-away (and then clipped-away)
        // tile instead of wrapping around into the store.
        let lo = color
            .zip_with(&self.tile, i64::saturating_mul)
            .zip_with(&self.offset, i64::saturating_add);
        let hi = lo.zip_with(&self.tile, i64::saturating_add);
        Rect { lo, hi }
    }
}

/// Explicit sub-stores, one per point of a launch domain: the image of each launch point
/// through data (which entries and which elements of `x` a row tile of a sparse matrix
/// reads, where each block of a compaction writes). Boxes may overlap (halos); a point
/// outside `launch` accesses nothing.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Image {
    /// The launch domain the boxes are listed for.
    pub launch: Shape,
    /// The sub-store of each launch point, points in row-major order.
    pub boxes: Vec<Rect>,
    /// No two boxes share an element (found when the image is built), so points may write
    /// through it.
    pub disjoint: bool,
}

/// True when no two of `boxes` share an element: a sweep over the boxes ordered by their
/// lower corner in the first dimension, comparing each only with those that start before
/// it ends there.
fn pairwise_disjoint(boxes: &[Rect]) -> bool {
    let mut order: Vec<&Rect> = boxes.iter().filter(|b| !b.is_empty()).collect();
    if order.first().is_none_or(|b| b.dims() == 0) {
        // No element at all, or 0-d boxes (one element each): disjoint when at most one.
        return order.len() <= 1;
    }
    order.sort_by_key(|b| b.lo[0]);
    order.iter().enumerate().all(|(i, a)| {
        order[i + 1..]
            .iter()
            .take_while(|b| b.lo[0] < a.hi[0])
            .all(|b| a.intersect(b).is_empty())
    })
}

impl Image {
    /// The box of launch point `p` (empty outside the launch domain).
    pub fn box_of(&self, p: &Point) -> Rect {
        let dims = self.boxes.first().map_or(0, |b| b.dims());
        let empty = Rect {
            lo: Tuple::splat(dims, 0),
            hi: Tuple::splat(dims, 0),
        };
        if p.dims() != self.launch.dims()
            || (0..p.dims()).any(|d| p[d] < 0 || p[d] >= self.launch[d])
        {
            return empty;
        }
        let linear = (0..p.dims()).fold(0i64, |acc, d| acc * self.launch[d] + p[d]);
        self.boxes.get(linear as usize).copied().unwrap_or(empty)
    }

    /// The smallest box holding every point's box.
    pub fn bounds(&self) -> Rect {
        let mut boxes = self.boxes.iter().filter(|b| !b.is_empty());
        let Some(first) = boxes.next() else {
            let dims = self.boxes.first().map_or(0, |b| b.dims());
            return Rect {
                lo: Tuple::splat(dims, 0),
                hi: Tuple::splat(dims, 0),
            };
        };
        boxes.fold(*first, |acc, b| Rect {
            lo: acc.lo.zip_with(&b.lo, i64::min),
            hi: acc.hi.zip_with(&b.hi, i64::max),
        })
    }
}

/// The partition kinds.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum PartitionKind {
    /// Every launch point accesses the whole store.
    Replicate,
    /// Every launch point accesses one tile.
    Tiling(Tiling),
    /// Every launch point accesses its own listed box.
    Image(Image),
}

/// An interned partition; `Clone` is cheap and `==` is an identity compare.
#[derive(Clone)]
pub struct Partition(Arc<PartitionKind>);

impl Partition {
    /// The replicating partition (the paper's `None`).
    pub fn replicate() -> Self {
        Partition(interner().intern(PartitionKind::Replicate))
    }

    /// A tiling of the whole store: tile `c` is `[c * tile, (c + 1) * tile) + offset`.
    pub fn tiling(tile: Shape, offset: Point, projection: Projection) -> Result<Self, IrError> {
        Self::build(Tiling {
            tile,
            offset,
            projection,
            clip: None,
        })
    }

    /// A tiling of the view `[offset, offset + clip)`: like [`Self::tiling`], with tiles also
    /// clipped to the view.
    pub fn tiling_of_view(
        tile: Shape,
        offset: Point,
        projection: Projection,
        clip: Shape,
    ) -> Result<Self, IrError> {
        Self::build(Tiling {
            tile,
            offset,
            projection,
            clip: Some(clip),
        })
    }

    /// The image partition giving point `i` (row-major in `launch`) the box `boxes[i]`. The
    /// boxes must have one dimension count, non-negative corners and one per launch point;
    /// building hashes them once, after which the partition compares in O(1).
    pub fn image(launch: Shape, boxes: Vec<Rect>) -> Result<Self, IrError> {
        let bad = |reason: String| Err(IrError::BadTiling { reason });
        if boxes.len() as i64 != launch.volume() {
            return bad(format!(
                "an image over the launch domain {launch} needs {} boxes, not {}",
                launch.volume(),
                boxes.len()
            ));
        }
        let dims = boxes.first().map_or(0, |b| b.dims());
        if let Some((i, b)) = boxes
            .iter()
            .enumerate()
            .find(|(_, b)| b.dims() != dims || (0..dims).any(|d| b.lo[d] < 0))
        {
            return bad(format!(
                "image box {i} ({b:?}) is not a {dims}-d box at non-negative coordinates"
            ));
        }
        Ok(Partition(interner().intern(PartitionKind::Image(Image {
            launch,
            disjoint: pairwise_disjoint(&boxes),
            boxes,
        }))))
    }

    fn build(t: Tiling) -> Result<Self, IrError> {
        let dims = t.tile.dims();
        let clip_dims = t.clip.map_or(dims, |c| c.dims());
        if t.offset.dims() != dims || t.projection.out_dims() != dims || clip_dims != dims {
            return Err(IrError::BadTiling {
                reason: format!(
                    "tile {} offset {} projection {:?} clip {:?} disagree on the number of dims",
                    t.tile, t.offset, t.projection, t.clip
                ),
            });
        }
        if let Some(d) = (0..dims).find(|&d| t.tile[d] < 1) {
            return Err(IrError::BadTiling {
                reason: format!("tile {} has a non-positive extent in dim {d}", t.tile),
            });
        }
        if let Some(d) = (0..dims).find(|&d| t.offset[d] < 0) {
            return Err(IrError::BadTiling {
                reason: format!("offset {} is negative in dim {d}", t.offset),
            });
        }
        if let Some(c) = t.clip {
            if let Some(d) = (0..dims).find(|&d| c[d] < 0) {
                return Err(IrError::BadTiling {
                    reason: format!("clip {c} is negative in dim {d}"),
                });
            }
        }
        Ok(Partition(interner().intern(PartitionKind::Tiling(t))))
    }

    /// The partition's description.
    pub fn kind(&self) -> &PartitionKind {
        &self.0
    }

    /// The tiling, or `None` for the other kinds.
    pub fn as_tiling(&self) -> Option<&Tiling> {
        match &*self.0 {
            PartitionKind::Tiling(t) => Some(t),
            PartitionKind::Replicate | PartitionKind::Image(_) => None,
        }
    }

    /// The image, or `None` for the other kinds.
    pub fn as_image(&self) -> Option<&Image> {
        match &*self.0 {
            PartitionKind::Image(i) => Some(i),
            PartitionKind::Replicate | PartitionKind::Tiling(_) => None,
        }
    }

    /// The region of a store of shape `store` this partition can reach: the whole store for
    /// `Replicate`; for a tiling, the store intersected with `[offset, offset + clip)`; for an
    /// image, the store intersected with the bounds of its boxes.
    pub fn reachable_bounds(&self, store: Shape) -> Rect {
        let whole = Rect::from_shape(store);
        match &*self.0 {
            PartitionKind::Replicate => whole,
            PartitionKind::Image(i) => whole.intersect(&i.bounds()),
            PartitionKind::Tiling(t) => match t.clip {
                None => whole.intersect(&Rect {
                    lo: t.offset,
                    hi: store,
                }),
                Some(clip) => whole.intersect(&Rect {
                    lo: t.offset,
                    hi: t.offset.zip_with(&clip, |o, c| o + c),
                }),
            },
        }
    }

    /// The sub-store `S[P, p]` of a store of shape `store` at launch point `p`.
    pub fn sub_store(&self, store: Shape, p: &Point) -> Rect {
        match &*self.0 {
            PartitionKind::Replicate => Rect::from_shape(store),
            PartitionKind::Tiling(t) => {
                let color = t.projection.apply(p);
                t.tile_rect(&color).intersect(&self.reachable_bounds(store))
            }
            PartitionKind::Image(i) => i.box_of(p).intersect(&Rect::from_shape(store)),
        }
    }

    /// True when the sub-stores of the points of `launch` together cover the whole store of
    /// shape `store`, decided exactly from the description alone in O(dims^2) (an image is
    /// never taken to cover: deciding it would enumerate its boxes). A `Write` through a
    /// covering partition defines every element of the store.
    pub fn covers(&self, store: Shape, launch: Shape) -> bool {
        let t = match &*self.0 {
            PartitionKind::Replicate => return true,
            PartitionKind::Image(_) => return store.volume() == 0,
            PartitionKind::Tiling(t) => t,
        };
        if store.volume() == 0 {
            return true;
        }
        if t.projection.in_dims() != launch.dims() || t.tile.dims() != store.dims() {
            return false;
        }
        let comps = t.projection.components();
        (0..store.dims()).all(|d| {
            // Tiles needed along `d`, starting at color 0 from the store's origin.
            let needed = store[d] / t.tile[d] + i64::from(store[d] % t.tile[d] != 0);
            let unclipped = t.offset[d] == 0 && t.clip.is_none_or(|c| c[d] >= store[d]);
            unclipped
                && match comps[d] {
                    ProjComponent::Const(c) => c == 0 && needed == 1,
                    // A launch dim feeding several store dims only reaches their diagonal
                    // colors, which cover the store only if each needs a single tile.
                    ProjComponent::Dim(_)
                        if comps.iter().filter(|&&x| x == comps[d]).count() > 1 =>
                    {
                        needed == 1
                    }
                    ProjComponent::Dim(k) => launch[k] >= needed,
                }
        })
    }
}

crate::intern::interned!(Partition, PartitionKind);

impl fmt::Debug for Partition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &*self.0 {
            PartitionKind::Replicate => write!(f, "Replicate"),
            PartitionKind::Tiling(t) => {
                write!(
                    f,
                    "Tiling(tile {}, offset {}, {:?}",
                    t.tile, t.offset, t.projection
                )?;
                if let Some(c) = t.clip {
                    write!(f, ", clip {c}")?;
                }
                write!(f, ")")
            }
            PartitionKind::Image(i) => {
                write!(f, "Image({} boxes over {})", i.boxes.len(), i.launch)
            }
        }
    }
}

impl View {
    /// The blocked tiling of this view over `launch`: tile extents `ceil(view / launch)`,
    /// identity projection, clipped to the view. `launch` must have the view's dimensions.
    /// When `ceil(n / l) * (l - 1) >= n` in some dimension the last tiles would be empty, and
    /// submitting a task with it fails with `TilingOutOfBounds`: pick launch extents that fit.
    pub fn blocked(&self, launch: Shape) -> Result<Partition, IrError> {
        let dims = self.shape().dims();
        if launch.dims() != dims {
            return Err(IrError::BadTiling {
                reason: format!(
                    "a {dims}-d view of store {} cannot be blocked over the {}-d launch domain {launch}",
                    self.store().id(),
                    launch.dims()
                ),
            });
        }
        let tile = self.shape().zip_with(&launch, |n, l| {
            if l > 0 {
                (n / l + i64::from(n % l != 0)).max(1)
            } else {
                1
            }
        });
        self.tiling_with(tile, Projection::identity(dims)?)
    }

    /// The view tiled with `tile`, colors chosen by `projection`, clipped to the view.
    pub fn tiling_with(&self, tile: Shape, projection: Projection) -> Result<Partition, IrError> {
        if self.is_whole_store() {
            Partition::tiling(tile, self.offset(), projection)
        } else {
            Partition::tiling_of_view(tile, self.offset(), projection, self.shape())
        }
    }

    /// Every point of a `launch_dims`-dimensional launch sees the whole view: `Replicate` for
    /// a whole store, otherwise one view-sized tile broadcast to every point.
    pub fn whole(&self, launch_dims: usize) -> Result<Partition, IrError> {
        if self.is_whole_store() {
            return Ok(Partition::replicate());
        }
        let dims = self.shape().dims();
        let tile = self.shape().zip_with(&self.shape(), |s, _| s.max(1));
        self.tiling_with(tile, Projection::constant(launch_dims, &vec![0; dims])?)
    }
}
