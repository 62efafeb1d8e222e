//! Projection functions: scale-free maps from launch-domain points to partition colors.
//!
//! Each output coordinate is either one input coordinate or a constant. That one form covers
//! the identity, permutations, dropping dimensions (a vector tiled over a 2-D domain) and
//! inserting constants (broadcasting a tile to every point). Projections are interned, so
//! equality is an id compare.

use std::fmt;
use std::hash::Hash;
use std::sync::Arc;

use crate::error::IrError;
use crate::tuple::{Point, Tuple, MAX_DIMS};

/// One output coordinate of a projection.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum ProjComponent {
    /// The input point's coordinate in this dimension.
    Dim(usize),
    /// A fixed, non-negative color coordinate.
    Const(i64),
}

/// The description a projection is interned from.
#[derive(PartialEq, Eq, Hash, Debug)]
struct ProjectionDesc {
    in_dims: usize,
    components: Vec<ProjComponent>,
}

/// An interned projection from `in_dims`-dimensional points to colors; `Clone` is cheap and
/// `==` compares identities.
#[derive(Clone)]
pub struct Projection(Arc<ProjectionDesc>);

impl Projection {
    /// Builds (or finds) the projection whose output coordinate `j` is `components[j]`.
    pub fn new(in_dims: usize, components: &[ProjComponent]) -> Result<Self, IrError> {
        if in_dims > MAX_DIMS || components.len() > MAX_DIMS {
            return Err(IrError::TooManyDims {
                dims: in_dims.max(components.len()),
                max: MAX_DIMS,
            });
        }
        for c in components {
            match *c {
                ProjComponent::Dim(d) if d >= in_dims => {
                    return Err(IrError::BadProjection {
                        reason: format!(
                            "component reads input dim {d} of a {in_dims}-d launch point"
                        ),
                    })
                }
                ProjComponent::Const(v) if v < 0 => {
                    return Err(IrError::BadProjection {
                        reason: format!("negative constant color {v}"),
                    })
                }
                _ => {}
            }
        }
        Ok(Projection(interner().intern(ProjectionDesc {
            in_dims,
            components: components.to_vec(),
        })))
    }

    /// The identity on `dims`-dimensional points.
    pub fn identity(dims: usize) -> Result<Self, IrError> {
        let comps: Vec<ProjComponent> = (0..dims).map(ProjComponent::Dim).collect();
        Self::new(dims, &comps)
    }

    /// Output coordinate `j` is input coordinate `order[j]`.
    pub fn permutation(order: &[usize]) -> Result<Self, IrError> {
        let mut seen = [false; MAX_DIMS];
        for &d in order {
            if d >= order.len() || d >= MAX_DIMS || std::mem::replace(&mut seen[d], true) {
                return Err(IrError::BadProjection {
                    reason: format!("{order:?} is not a permutation"),
                });
            }
        }
        let comps: Vec<ProjComponent> = order.iter().map(|&d| ProjComponent::Dim(d)).collect();
        Self::new(order.len(), &comps)
    }

    /// Keeps only the input dimensions listed in `keep`, in that order (e.g. a vector tiled
    /// over the rows of a 2-D launch domain keeps `[0]`).
    pub fn select_dims(in_dims: usize, keep: &[usize]) -> Result<Self, IrError> {
        let comps: Vec<ProjComponent> = keep.iter().map(|&d| ProjComponent::Dim(d)).collect();
        Self::new(in_dims, &comps)
    }

    /// Maps every point to the fixed color `color` (broadcast).
    pub fn constant(in_dims: usize, color: &[i64]) -> Result<Self, IrError> {
        let comps: Vec<ProjComponent> = color.iter().map(|&c| ProjComponent::Const(c)).collect();
        Self::new(in_dims, &comps)
    }

    /// Dimension of the launch points this projection accepts.
    pub fn in_dims(&self) -> usize {
        self.0.in_dims
    }

    /// Dimension of the colors it produces.
    pub fn out_dims(&self) -> usize {
        self.0.components.len()
    }

    /// The output components.
    pub fn components(&self) -> &[ProjComponent] {
        &self.0.components
    }

    /// Applies the projection to a launch point of dimension [`Self::in_dims`].
    pub fn apply(&self, p: &Point) -> Point {
        debug_assert_eq!(p.dims(), self.in_dims());
        let mut out = Tuple::splat(self.out_dims(), 0);
        for (slot, c) in out.as_mut_slice().iter_mut().zip(self.components()) {
            *slot = match *c {
                ProjComponent::Dim(d) => p[d],
                ProjComponent::Const(v) => v,
            };
        }
        out
    }

    /// True when distinct points of `domain` always get distinct colors, i.e. every launch
    /// dimension with more than one point is read by some component. Writes are only safe
    /// through injective projections.
    pub fn is_injective_on(&self, domain: &Tuple) -> bool {
        (0..domain.dims())
            .all(|d| domain[d] <= 1 || self.components().contains(&ProjComponent::Dim(d)))
    }
}

crate::intern::interned!(Projection, ProjectionDesc);

impl fmt::Debug for Projection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "proj[{}d -> (", self.in_dims())?;
        for (i, c) in self.components().iter().enumerate() {
            if i > 0 {
                write!(f, ", ")?;
            }
            match c {
                ProjComponent::Dim(d) => write!(f, "p{d}")?,
                ProjComponent::Const(v) => write!(f, "{v}")?,
            }
        }
        write!(f, ")]")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interning_makes_equal_descriptions_identical() {
        let a = Projection::identity(2).unwrap();
        let b = Projection::permutation(&[0, 1]).unwrap();
        let c = Projection::permutation(&[1, 0]).unwrap();
        assert_eq!(a, b);
        assert_ne!(a, c);
        let p = Tuple::new(&[3, 7]).unwrap();
        assert_eq!(c.apply(&p).as_slice(), &[7, 3]);
    }

    #[test]
    fn injectivity_follows_dropped_dims() {
        let drop_col = Projection::select_dims(2, &[0]).unwrap();
        assert!(!drop_col.is_injective_on(&Tuple::new(&[2, 2]).unwrap()));
        assert!(drop_col.is_injective_on(&Tuple::new(&[4, 1]).unwrap()));
    }

    #[test]
    fn malformed_projections_are_errors() {
        assert!(Projection::permutation(&[0, 0]).is_err());
        assert!(Projection::select_dims(1, &[1]).is_err());
        assert!(Projection::constant(1, &[-1]).is_err());
    }
}
