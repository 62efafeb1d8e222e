//! Small fixed-capacity integer tuples (points and shapes) and rectangles.
//!
//! Every coordinate in the IR is one of these: store shapes, launch domains, tile shapes,
//! offsets and colors. They hold up to [`MAX_DIMS`] entries inline (Legion's limit in the
//! shipped build), so building and comparing them never allocates.

use std::fmt;

use crate::error::IrError;

/// The largest number of dimensions a store, domain or tile may have.
pub const MAX_DIMS: usize = 6;

/// A point or extent of 0 to [`MAX_DIMS`] integer coordinates, stored inline.
///
/// The same type serves as a point (a position) and as a shape (an extent per dimension);
/// the aliases [`Point`] and [`Shape`] say which is meant.
#[derive(Clone, Copy, Eq)]
pub struct Tuple {
    len: u8,
    coords: [i64; MAX_DIMS],
}

/// A position: one coordinate per dimension.
pub type Point = Tuple;
/// An extent: one non-negative size per dimension.
pub type Shape = Tuple;

impl Tuple {
    /// Builds a tuple from a slice, failing if it has more than [`MAX_DIMS`] entries.
    pub fn new(coords: &[i64]) -> Result<Self, IrError> {
        if coords.len() > MAX_DIMS {
            return Err(IrError::TooManyDims {
                dims: coords.len(),
                max: MAX_DIMS,
            });
        }
        let mut out = Tuple {
            len: coords.len() as u8,
            coords: [0; MAX_DIMS],
        };
        out.coords[..coords.len()].copy_from_slice(coords);
        Ok(out)
    }

    /// Builds a shape, failing on a negative extent or too many dimensions.
    pub fn shape(extents: &[i64]) -> Result<Self, IrError> {
        let t = Self::new(extents)?;
        if let Some(&bad) = extents.iter().find(|&&e| e < 0) {
            return Err(IrError::NegativeExtent {
                shape: t,
                extent: bad,
            });
        }
        Ok(t)
    }

    /// The 0-dimensional tuple (the shape of a scalar store, the only point of a 0-d domain).
    pub const fn scalar() -> Self {
        Tuple {
            len: 0,
            coords: [0; MAX_DIMS],
        }
    }

    /// A tuple of `dims` copies of `value` (`dims` is clamped to [`MAX_DIMS`]).
    pub fn splat(dims: usize, value: i64) -> Self {
        let dims = dims.min(MAX_DIMS);
        let mut out = Self::scalar();
        out.len = dims as u8;
        out.coords[..dims].fill(value);
        out
    }

    /// Number of dimensions.
    #[inline]
    pub fn dims(&self) -> usize {
        self.len as usize
    }

    /// The coordinates as a slice.
    #[inline]
    pub fn as_slice(&self) -> &[i64] {
        &self.coords[..self.len as usize]
    }

    /// Mutable access to the coordinates.
    #[inline]
    pub fn as_mut_slice(&mut self) -> &mut [i64] {
        &mut self.coords[..self.len as usize]
    }

    /// Product of the entries: the number of elements of a shape (1 for a 0-d shape),
    /// saturating at `i64::MAX`.
    pub fn volume(&self) -> i64 {
        self.checked_volume().unwrap_or(i64::MAX)
    }

    /// Product of the entries, or `None` if it overflows `i64`.
    pub fn checked_volume(&self) -> Option<i64> {
        self.as_slice()
            .iter()
            .try_fold(1i64, |acc, &e| acc.checked_mul(e))
    }

    /// The first `n` entries (all of them if `n >= dims`).
    pub fn truncated(&self, n: usize) -> Tuple {
        let mut out = *self;
        out.len = n.min(self.dims()) as u8;
        out.coords[out.len as usize..].fill(0);
        out
    }

    /// Row-major element strides of a shape (innermost stride 1).
    #[inline]
    pub fn row_major_strides(&self) -> Tuple {
        let mut strides = Tuple::splat(self.dims(), 1);
        for d in (0..self.dims().saturating_sub(1)).rev() {
            strides.coords[d] = strides.coords[d + 1] * self.coords[d + 1].max(0);
        }
        strides
    }

    /// Entry-wise sum, or `None` if some entry overflows.
    pub fn checked_add(&self, other: &Tuple) -> Option<Tuple> {
        if self.len != other.len {
            return None;
        }
        let mut out = *self;
        for d in 0..self.dims() {
            out.coords[d] = self.coords[d].checked_add(other.coords[d])?;
        }
        Some(out)
    }

    /// Applies `f` entry-wise to two tuples of equal dimension.
    pub fn zip_with(&self, other: &Tuple, f: impl Fn(i64, i64) -> i64) -> Tuple {
        debug_assert_eq!(self.len, other.len);
        let mut out = *self;
        for d in 0..self.dims() {
            out.coords[d] = f(self.coords[d], other.coords[d]);
        }
        out
    }
}

/// Entries past `len` are always zero, so comparing all of them compares the tuples; done
/// word by word without branches (tuples are compared on every task and launch, and a
/// `memcmp` call costs more than the comparison).
impl PartialEq for Tuple {
    #[inline]
    fn eq(&self, other: &Self) -> bool {
        self.len == other.len
            && self
                .coords
                .iter()
                .zip(&other.coords)
                .fold(true, |same, (a, b)| same & (a == b))
    }
}

/// Consistent with `eq` (entries past `len` are zero): the length and the entries in use,
/// each as one word (the memos hash several tuples per task; hashing six words as bytes
/// costs more).
impl std::hash::Hash for Tuple {
    #[inline]
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write_usize(self.dims());
        for &c in self.as_slice() {
            state.write_i64(c);
        }
    }
}

impl std::ops::Index<usize> for Tuple {
    type Output = i64;
    #[inline]
    fn index(&self, d: usize) -> &i64 {
        &self.as_slice()[d]
    }
}

impl fmt::Debug for Tuple {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for Tuple {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "(")?;
        for (i, c) in self.as_slice().iter().enumerate() {
            if i > 0 {
                write!(f, ", ")?;
            }
            write!(f, "{c}")?;
        }
        if self.len == 1 {
            write!(f, ",")?;
        }
        write!(f, ")")
    }
}

/// A half-open box `[lo, hi)` of points; empty when `hi <= lo` in some dimension.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Rect {
    /// Inclusive lower corner.
    pub lo: Point,
    /// Exclusive upper corner.
    pub hi: Point,
}

impl Rect {
    /// The box `[0, shape)`.
    pub fn from_shape(shape: Shape) -> Self {
        Rect {
            lo: Tuple::splat(shape.dims(), 0),
            hi: shape,
        }
    }

    /// Number of dimensions.
    pub fn dims(&self) -> usize {
        self.lo.dims()
    }

    /// Extent per dimension (0 where the box is empty in that dimension).
    pub fn extent(&self) -> Shape {
        self.hi.zip_with(&self.lo, |h, l| (h - l).max(0))
    }

    /// Number of points in the box.
    pub fn volume(&self) -> i64 {
        self.extent().volume()
    }

    /// True when the box holds no point. A 0-d box holds exactly one point.
    pub fn is_empty(&self) -> bool {
        self.volume() == 0
    }

    /// The intersection of two boxes of equal dimension (possibly empty).
    pub fn intersect(&self, other: &Rect) -> Rect {
        let lo = self.lo.zip_with(&other.lo, i64::max);
        let hi = self.hi.zip_with(&other.hi, i64::min);
        Rect { lo, hi }.normalized()
    }

    /// True when `p` lies inside the box.
    pub fn contains(&self, p: &Point) -> bool {
        (0..self.dims()).all(|d| self.lo[d] <= p[d] && p[d] < self.hi[d])
    }

    /// The same box with every empty dimension collapsed to `hi == lo`.
    fn normalized(mut self) -> Rect {
        for d in 0..self.dims() {
            if self.hi.coords[d] < self.lo.coords[d] {
                self.hi.coords[d] = self.lo.coords[d];
            }
        }
        self
    }

    /// Iterates the points of the box in row-major order (the last dimension fastest).
    pub fn points(&self) -> RectPoints {
        RectPoints {
            rect: *self,
            next: if self.is_empty() { None } else { Some(self.lo) },
        }
    }
}

impl fmt::Display for Rect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}, {})", self.lo, self.hi)
    }
}

/// Row-major iterator over the points of a [`Rect`].
pub struct RectPoints {
    rect: Rect,
    next: Option<Point>,
}

impl Iterator for RectPoints {
    type Item = Point;
    fn next(&mut self) -> Option<Point> {
        let current = self.next?;
        let mut succ = current;
        let mut advanced = false;
        for d in (0..succ.dims()).rev() {
            succ.coords[d] += 1;
            if succ.coords[d] < self.rect.hi.coords[d] {
                advanced = true;
                break;
            }
            succ.coords[d] = self.rect.lo.coords[d];
        }
        self.next = advanced.then_some(succ);
        Some(current)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strides_are_row_major() {
        let s = Tuple::shape(&[3, 4, 5]).unwrap();
        assert_eq!(s.row_major_strides().as_slice(), &[20, 5, 1]);
        assert_eq!(Tuple::scalar().row_major_strides().dims(), 0);
    }

    #[test]
    fn points_iterate_row_major_and_zero_d_has_one_point() {
        let r = Rect::from_shape(Tuple::shape(&[2, 2]).unwrap());
        let pts: Vec<Vec<i64>> = r.points().map(|p| p.as_slice().to_vec()).collect();
        assert_eq!(pts, vec![vec![0, 0], vec![0, 1], vec![1, 0], vec![1, 1]]);
        assert_eq!(Rect::from_shape(Tuple::scalar()).points().count(), 1);
        let empty = Rect::from_shape(Tuple::shape(&[0, 3]).unwrap());
        assert_eq!(empty.points().count(), 0);
    }

    #[test]
    fn bad_tuples_are_errors() {
        assert!(matches!(
            Tuple::new(&[1; 7]),
            Err(IrError::TooManyDims { dims: 7, .. })
        ));
        assert!(matches!(
            Tuple::shape(&[2, -1]),
            Err(IrError::NegativeExtent { extent: -1, .. })
        ));
    }
}
