//! One strided matrix product per element type, `C = A B` or `C += A B`: floats through
//! `faer`'s tuned kernels, integers through a cache-blocked loop (wrapping, so exact in any
//! order).
//!
//! Operands are described by [`MatRef`]/[`MatMut`]: a first element and a stride per
//! dimension, so a transposed operand is the same memory with its strides swapped and is
//! never copied. A float product of at least [`THREADED_WORK`] multiply-adds uses
//! [`threads`] threads of the process's pool: the host's cores shared among the launch's
//! points (a launch of one point, as a large `matmul` is, uses them all; measured on two
//! cores, one call on both is 1.4x faster than two single-threaded calls on halves, which
//! each pack their own copy of the right operand into the shared cache).

use std::marker::PhantomData;
use std::sync::OnceLock;

use faer::linalg::matmul::triangular::BlockStructure;
use faer::{Accum, Par};

use diffuse_ir::{Element, ReadView, ReductionOp, WriteView};

use crate::element::Num;

use super::Orientation;

/// Rows and columns, and the distance in elements between neighbours along each.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Layout {
    rows: usize,
    cols: usize,
    row_stride: isize,
    col_stride: isize,
}

impl Layout {
    /// The layout of a 2-d view as a matrix, of a 1-d view as a column; `None` otherwise.
    fn of<T: Element>(view: &ReadView<'_, T>) -> Option<Layout> {
        let (shape, strides) = (view.shape(), view.strides());
        let extent = |d: usize| usize::try_from(shape[d]).unwrap_or(0);
        match shape.dims() {
            1 => Some(Layout {
                rows: extent(0),
                cols: 1,
                row_stride: strides[0] as isize,
                col_stride: extent(0).max(1) as isize,
            }),
            2 => Some(Layout {
                rows: extent(0),
                cols: extent(1),
                row_stride: strides[0] as isize,
                col_stride: strides[1] as isize,
            }),
            _ => None,
        }
    }

    /// The element offset of `(i, j)`.
    #[inline]
    fn offset(&self, i: usize, j: usize) -> isize {
        i as isize * self.row_stride + j as isize * self.col_stride
    }
}

/// A matrix read in place: `rows x cols` elements of a point task's sub-store.
#[derive(Clone, Copy)]
pub(super) struct MatRef<'a, T> {
    ptr: *const T,
    layout: Layout,
    _borrow: PhantomData<&'a T>,
}

impl<'a, T: Num> MatRef<'a, T> {
    /// A 2-d view as a matrix, a 1-d view as a column; `None` for other ranks.
    pub(super) fn of(view: &'a ReadView<'_, T>) -> Option<Self> {
        Some(MatRef {
            ptr: view.as_ptr(),
            layout: Layout::of(view)?,
            _borrow: PhantomData,
        })
    }

    /// The matrix as the product reads it: transposed (its strides swapped) or as stored.
    pub(super) fn oriented(self, orientation: Orientation) -> Self {
        match orientation {
            Orientation::AsStored => self,
            Orientation::Transposed => {
                let l = self.layout;
                MatRef {
                    layout: Layout {
                        rows: l.cols,
                        cols: l.rows,
                        row_stride: l.col_stride,
                        col_stride: l.row_stride,
                    },
                    ..self
                }
            }
        }
    }

    /// `(rows, columns)`.
    pub(super) fn dims(&self) -> (usize, usize) {
        (self.layout.rows, self.layout.cols)
    }

    /// True when `other` is this matrix's transpose, the same elements (`a @ a.T`,
    /// `z.T @ z`): their product is symmetric.
    fn is_transpose_of(&self, other: &MatRef<'_, T>) -> bool {
        let (l, o) = (self.layout, other.layout);
        std::ptr::eq(self.ptr, other.ptr)
            && (l.rows, l.cols, l.row_stride, l.col_stride)
                == (o.cols, o.rows, o.col_stride, o.row_stride)
    }

    /// Element `(i, j)`.
    ///
    /// # Safety
    /// `i < rows` and `j < cols`.
    #[inline]
    unsafe fn at(&self, i: usize, j: usize) -> T {
        // SAFETY: in bounds by the caller's promise; the view this came from keeps the
        // elements valid and unwritten while `'a` lasts.
        unsafe { *self.ptr.offset(self.layout.offset(i, j)) }
    }
}

/// A matrix written in place: `rows x cols` elements of a point task's sub-store.
pub(super) struct MatMut<'a, T> {
    ptr: *mut T,
    layout: Layout,
    _borrow: PhantomData<&'a mut T>,
}

impl<'a, T: Num> MatMut<'a, T> {
    /// A 2-d view as a matrix, a 1-d view as a column; `None` for other ranks.
    pub(super) fn of(view: &'a mut WriteView<'_, T>) -> Option<Self> {
        let layout = Layout::of(view)?;
        Some(MatMut {
            ptr: view.as_mut_ptr(),
            layout,
            _borrow: PhantomData,
        })
    }

    /// `(rows, columns)`.
    pub(super) fn dims(&self) -> (usize, usize) {
        (self.layout.rows, self.layout.cols)
    }

    /// The address of element `(i, j)`.
    ///
    /// # Safety
    /// `i < rows` and `j < cols`.
    #[inline]
    unsafe fn at(&mut self, i: usize, j: usize) -> &mut T {
        // SAFETY: in bounds by the caller's promise; the view this came from gives this
        // matrix the elements to itself while `'a` lasts.
        unsafe { &mut *self.ptr.offset(self.layout.offset(i, j)) }
    }

    /// Copies the lower triangle onto the upper one (a square matrix made symmetric).
    fn mirror_lower(&mut self) {
        let n = self.layout.rows.min(self.layout.cols);
        for i in 0..n {
            for j in i + 1..n {
                // SAFETY: `i < j < n`, within both dimensions.
                unsafe { *self.at(i, j) = *self.at(j, i) };
            }
        }
    }

    /// Sets every element to zero.
    fn zero(&mut self) {
        let zero = T::reduction_identity(ReductionOp::Sum);
        for i in 0..self.layout.rows {
            for j in 0..self.layout.cols {
                // SAFETY: within the loop bounds.
                unsafe { *self.at(i, j) = zero };
            }
        }
    }
}

/// Element types with a matrix product.
pub(super) trait Gemm: Num {
    /// `c = a b`, or `c += a b` when `accumulate`, on at most `threads` threads; the caller
    /// checked that `a` has `c`'s rows, `b` its columns, and `a`'s columns are `b`'s rows.
    fn gemm(
        c: MatMut<'_, Self>,
        a: MatRef<'_, Self>,
        b: MatRef<'_, Self>,
        accumulate: bool,
        threads: usize,
    );
}

/// The fewest multiply-adds of a float product that runs on several threads (below, the
/// threads cost more than they save).
pub(super) const THREADED_WORK: usize = 1 << 24;

/// The cores of this host, as the process's thread pool has them.
fn host_cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// How many points of a product's launch share the host's cores (at least 1): one per core
/// group, so that each point's product may use the cores its share has.
pub(super) fn points_per_host(processors: usize) -> usize {
    processors.div_ceil(host_cores()).max(1)
}

/// The threads one point of a launch of `points` points uses for a float product of `work`
/// multiply-adds: its share of the host's cores, or 1 for small products.
pub(super) fn threads(work: usize, points: usize) -> usize {
    if work < THREADED_WORK {
        1
    } else {
        (host_cores() / points.max(1)).max(1)
    }
}

/// `Gemm` through `faer`, for its float types.
macro_rules! tuned_gemm {
    ($($t:ty),*) => {$(
        impl Gemm for $t {
            fn gemm(
                mut c: MatMut<'_, $t>,
                a: MatRef<'_, $t>,
                b: MatRef<'_, $t>,
                accumulate: bool,
                threads: usize,
            ) {
                let ((m, n), k) = (c.dims(), a.layout.cols);
                if m == 0 || n == 0 {
                    return;
                }
                if k == 0 {
                    if !accumulate {
                        c.zero();
                    }
                    return;
                }
                let (cl, al, bl) = (c.layout, a.layout, b.layout);
                // SAFETY: the three layouts address `m x n`, `m x k` and `k x n` elements of
                // sub-stores this point task holds (read for `a` and `b`, exclusively for
                // `c`), as the caller checked, for as long as the borrows of the views last.
                let (dst, lhs, rhs) = unsafe {
                    (
                        faer::MatMut::from_raw_parts_mut(c.ptr, m, n, cl.row_stride, cl.col_stride),
                        faer::MatRef::from_raw_parts(a.ptr, m, k, al.row_stride, al.col_stride),
                        faer::MatRef::from_raw_parts(b.ptr, k, n, bl.row_stride, bl.col_stride),
                    )
                };
                let accum = if accumulate { Accum::Add } else { Accum::Replace };
                let par = if threads > 1 { Par::rayon(threads) } else { Par::Seq };
                if !accumulate && a.is_transpose_of(&b) {
                    // `a aᵀ` is symmetric: its lower triangle alone, with half the
                    // multiply-adds (BLAS's syrk, which NumPy calls for it), then mirrored.
                    faer::linalg::matmul::triangular::matmul(
                        dst,
                        BlockStructure::TriangularLower,
                        accum,
                        lhs,
                        BlockStructure::Rectangular,
                        rhs,
                        BlockStructure::Rectangular,
                        1.0,
                        par,
                    );
                    c.mirror_lower();
                    return;
                }
                faer::linalg::matmul::matmul(dst, accum, lhs, rhs, 1.0, par);
            }
        }
    )*};
}

tuned_gemm!(f64, f32);

/// Rows of `b` (the summed dimension) one block of the integer product walks.
const DEPTH_BLOCK: usize = 256;
/// Columns of `b` and `c` one block of the integer product walks.
const WIDTH_BLOCK: usize = 512;

/// `c (+)= a b` by blocks of `DEPTH_BLOCK x WIDTH_BLOCK` of `b`, so that a block stays in cache
/// while every row of `a` passes over it.
fn blocked<T: Num>(mut c: MatMut<'_, T>, a: MatRef<'_, T>, b: MatRef<'_, T>, accumulate: bool) {
    let ((m, n), k) = (c.dims(), a.layout.cols);
    if !accumulate {
        c.zero();
    }
    for p0 in (0..k).step_by(DEPTH_BLOCK) {
        let depth = p0..(p0 + DEPTH_BLOCK).min(k);
        for j0 in (0..n).step_by(WIDTH_BLOCK) {
            let width = j0..(j0 + WIDTH_BLOCK).min(n);
            for i in 0..m {
                for p in depth.clone() {
                    // SAFETY: i < m, p < k, j < n by the loop bounds, and the caller checked
                    // the shapes agree.
                    let aip = unsafe { a.at(i, p) };
                    for j in width.clone() {
                        unsafe {
                            let cij = c.at(i, j);
                            *cij = cij.add(aip.mul(b.at(p, j)));
                        }
                    }
                }
            }
        }
    }
}

/// `Gemm` through the blocked loop, for the integer types.
macro_rules! blocked_gemm {
    ($($t:ty),*) => {$(
        impl Gemm for $t {
            fn gemm(
                c: MatMut<'_, $t>,
                a: MatRef<'_, $t>,
                b: MatRef<'_, $t>,
                accumulate: bool,
                _threads: usize,
            ) {
                blocked(c, a, b, accumulate)
            }
        }
    )*};
}

blocked_gemm!(i64, i32);
