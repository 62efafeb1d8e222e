//! One strided matrix product per element type, `C = A B` or `C += A B`: floats through the
//! host's BLAS ([`super::blas`]) where the blocks' layouts suit it and through `faer`'s tuned
//! kernels otherwise, integers through a cache-blocked loop (wrapping, so exact in any
//! order), complex numbers through `faer`'s general product.
//!
//! Operands are described by [`MatRef`]/[`MatMut`]: a first element and a stride per
//! dimension, so a transposed operand is the same memory with its strides swapped and is
//! never copied. A float product of at least [`THREADED_WORK`] multiply-adds uses
//! [`threads`] threads of the process's pool: the host's cores shared among the launch's
//! points (a large `matmul` launches one point per host, which uses them all). With BLAS,
//! the threads take bands of the output, each one BLAS call on its own thread.

use std::marker::PhantomData;
use std::ops::Range;
use std::sync::OnceLock;

use faer::linalg::matmul::triangular::BlockStructure;
use faer::{Accum, Par};

use diffuse_ir::{Element, ReadView, ReductionOp, WriteView};

use crate::element::{Arith, Num};

use super::blas::{self, BlasFloat, Extents, Operand, Routines};
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

    /// The transpose: the same elements, rows and columns swapped.
    fn transposed(self) -> Layout {
        Layout {
            rows: self.cols,
            cols: self.rows,
            row_stride: self.col_stride,
            col_stride: self.row_stride,
        }
    }

    /// How BLAS reads this matrix, if it can.
    fn blas_operand(&self) -> Option<Operand> {
        Operand::of(self.rows, self.cols, self.row_stride, self.col_stride)
    }
}

/// A matrix read in place: `rows x cols` elements of a point task's sub-store.
#[derive(Clone, Copy)]
pub(super) struct MatRef<'a, T> {
    ptr: *const T,
    layout: Layout,
    _borrow: PhantomData<&'a T>,
}

impl<'a, T: Arith> MatRef<'a, T> {
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
            Orientation::Transposed => MatRef {
                layout: self.layout.transposed(),
                ..self
            },
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

    /// True when this matrix is rows of some matrix `M` and `other` is rows of `M`
    /// transposed (`M[r] M[s]ᵀ`, of which [`MatRef::is_transpose_of`] is the whole): their
    /// product is a block of the symmetric `M Mᵀ`, whose mirror block another product
    /// computes with the operands' roles swapped.
    fn is_rows_of_transpose_of(&self, other: &MatRef<'_, T>) -> bool {
        let (l, o) = (self.layout, other.layout);
        let width = std::mem::size_of::<T>() as isize;
        let gap = (other.ptr as isize).wrapping_sub(self.ptr as isize);
        (l.cols, l.row_stride, l.col_stride) == (o.rows, o.col_stride, o.row_stride)
            && l.row_stride != 0
            && gap % width == 0
            && (gap / width) % l.row_stride == 0
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

impl<'a, T: Arith> MatMut<'a, T> {
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
pub(super) trait Gemm: Arith {
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

/// A product's operands as raw blocks, `c (+)= a b` with `a` of `m x k` and `b` of `k x n`,
/// so that bands of it can go to other threads of the pool.
#[derive(Clone, Copy)]
struct RawProduct<T> {
    c: (*mut T, Layout),
    a: (*const T, Layout),
    b: (*const T, Layout),
}

// SAFETY: a `RawProduct` only travels to the threads of one product's bands, each of which
// writes a band of `c` no other band touches and reads `a` and `b`, which nothing writes
// while the product lasts (the point task's views hold them).
unsafe impl<T: Send> Send for RawProduct<T> {}
// SAFETY: as for `Send`: the bands share it only to read its pointers.
unsafe impl<T: Sync> Sync for RawProduct<T> {}

impl<T> RawProduct<T> {
    fn extents(&self) -> Extents {
        Extents {
            m: self.c.1.rows,
            n: self.c.1.cols,
            k: self.a.1.cols,
        }
    }

    /// The product of rows `rows` of `c` (and of `a`).
    fn rows(self, rows: Range<usize>) -> Self {
        let band = |(ptr, layout): (*const T, Layout)| {
            (
                ptr.wrapping_offset(layout.offset(rows.start, 0)),
                Layout {
                    rows: rows.len(),
                    ..layout
                },
            )
        };
        let (c, c_layout) = band((self.c.0.cast_const(), self.c.1));
        RawProduct {
            c: (c.cast_mut(), c_layout),
            a: band(self.a),
            b: self.b,
        }
    }

    /// `cᵀ (+)= bᵀ aᵀ`: the same product over the transposed blocks.
    fn transposed(self) -> Self {
        RawProduct {
            c: (self.c.0, self.c.1.transposed()),
            a: (self.b.0, self.b.1.transposed()),
            b: (self.a.0, self.a.1.transposed()),
        }
    }

    /// The product of columns `cols` of `c` (and of `b`).
    fn cols(self, cols: Range<usize>) -> Self {
        self.transposed().rows(cols).transposed()
    }
}

/// `c (+)= a b` through BLAS on `threads` threads (bands of the output's longer side, one
/// call each); `false`, with nothing written, when a block's layout is not one BLAS reads.
fn blas_product<T: BlasFloat + Num>(
    routines: &Routines<T>,
    c: &mut MatMut<'_, T>,
    a: MatRef<'_, T>,
    b: MatRef<'_, T>,
    accumulate: bool,
    threads: usize,
) -> bool {
    let mut whole = RawProduct {
        c: (c.ptr, c.layout),
        a: (a.ptr, a.layout),
        b: (b.ptr, b.layout),
    };
    // BLAS writes row-major outputs; one whose columns are contiguous is a transpose that is.
    if !whole.c.1.blas_operand().is_some_and(Operand::is_row_major) {
        whole = whole.transposed();
    }
    let fits = |l: Layout| l.blas_operand().is_some();
    if !(whole.c.1.blas_operand().is_some_and(Operand::is_row_major)
        && fits(whole.a.1)
        && fits(whole.b.1))
    {
        return false;
    }
    let Extents { m, n, .. } = whole.extents();
    if !accumulate && a.is_transpose_of(&b) {
        symmetric_bands(routines, whole, threads);
        // SAFETY: `whole.c` is `c`'s elements, square, seen row-major.
        let mut square = MatMut {
            ptr: whole.c.0,
            layout: whole.c.1,
            _borrow: PhantomData,
        };
        square.mirror_lower();
        return true;
    }
    let along_rows = m >= n;
    let bands = even_bands(if along_rows { m } else { n }, threads);
    in_parallel(bands, |band| {
        let piece = if along_rows {
            whole.rows(band)
        } else {
            whole.cols(band)
        };
        // SAFETY: the piece is a band of the checked blocks; bands write disjoint outputs.
        unsafe { blas_once(routines, piece, accumulate) };
    });
    true
}

/// One BLAS call for `p`, whose layouts [`blas_product`] checked: GEMV when `c` is one
/// column or one row, GEMM otherwise.
///
/// # Safety
/// `p` addresses valid blocks, its output this call's alone.
unsafe fn blas_once<T: BlasFloat>(routines: &Routines<T>, p: RawProduct<T>, accumulate: bool) {
    let extents = p.extents();
    if extents.m == 0 || extents.n == 0 {
        return;
    }
    let operand = |l: Layout| l.blas_operand();
    let vector = |len: usize, stride: isize| blas::increment(len, stride);
    // SAFETY (all three calls): by the caller's promise, with the layouts described as BLAS
    // reads them.
    if extents.n == 1 {
        if let (Some(a), Some(x), Some(y)) = (
            operand(p.a.1),
            vector(extents.k, p.b.1.row_stride),
            vector(extents.m, p.c.1.row_stride),
        ) {
            unsafe { routines.gemv(extents, (a, p.a.0), (p.b.0, x), (p.c.0, y), accumulate) };
            return;
        }
    }
    if extents.m == 1 && extents.n > 1 {
        // `cᵀ = bᵀ aᵀ`: the transposed product has one column.
        let t = p.transposed();
        if let (Some(a), Some(x), Some(y)) = (
            operand(t.a.1),
            vector(extents.k, t.b.1.row_stride),
            vector(extents.n, t.c.1.row_stride),
        ) {
            unsafe { routines.gemv(t.extents(), (a, t.a.0), (t.b.0, x), (t.c.0, y), accumulate) };
            return;
        }
    }
    if let (Some(a), Some(b), Some(c)) = (operand(p.a.1), operand(p.b.1), operand(p.c.1)) {
        unsafe { routines.gemm(extents, (a, p.a.0), (b, p.b.0), (c, p.c.0), accumulate) };
    }
}

/// The lower triangle of the symmetric `c = a aᵀ` (`whole.b` is `aᵀ`) on `threads` threads:
/// bands of rows of equal triangle area, each the rectangle left of its diagonal block
/// (GEMM) and the diagonal block's lower triangle (SYRK).
fn symmetric_bands<T: BlasFloat + Sync>(
    routines: &Routines<T>,
    whole: RawProduct<T>,
    threads: usize,
) {
    let m = whole.extents().m;
    // Row `r` of the lower triangle holds `r + 1` elements: band `t` of `threads` ends where
    // the rows above it hold `t / threads` of the triangle.
    let ends: Vec<usize> = (1..=threads)
        .map(|t| ((m as f64) * (t as f64 / threads as f64).sqrt()).round() as usize)
        .collect();
    let bands = std::iter::once(0)
        .chain(ends.iter().copied())
        .zip(ends.iter().copied())
        .map(|(start, end)| start..end.min(m))
        .filter(|band| !band.is_empty())
        .collect();
    in_parallel(bands, |band| {
        let rows = whole.rows(band.clone());
        let left = rows.cols(0..band.start);
        let diagonal = rows.cols(band);
        let extents = diagonal.extents();
        // SAFETY: both pieces lie within the checked blocks; the bands' outputs are disjoint
        // (each its own rows of `c`).
        unsafe {
            blas_once(routines, left, false);
            if let (Some(a), Some(c)) = (diagonal.a.1.blas_operand(), diagonal.c.1.blas_operand()) {
                routines.syrk_lower(extents, (a, diagonal.a.0), (c, diagonal.c.0));
            }
        }
    });
}

/// `0..len` in `parts` bands of nearly equal length (fewer when `len` is short).
fn even_bands(len: usize, parts: usize) -> Vec<Range<usize>> {
    let parts = parts.clamp(1, len.max(1));
    (0..parts)
        .map(|p| len * p / parts..len * (p + 1) / parts)
        .collect()
}

/// Runs `work` on every band, on the pool's threads when there are several.
fn in_parallel(bands: Vec<Range<usize>>, work: impl Fn(Range<usize>) + Sync) {
    if bands.len() <= 1 {
        bands.into_iter().for_each(work);
        return;
    }
    rayon::scope(|scope| {
        for band in bands {
            let work = &work;
            scope.spawn(move |_| work(band));
        }
    });
}

/// Float types `faer` multiplies.
trait FaerProduct: Num + BlasFloat + Sync {
    /// `c (+)= a b` through `faer` on `threads` threads, all extents non-zero.
    fn faer_product(
        c: MatMut<'_, Self>,
        a: MatRef<'_, Self>,
        b: MatRef<'_, Self>,
        accumulate: bool,
        threads: usize,
    );
}

/// `faer`'s views of the blocks `c`, `a` and `b` (`m x n`, `m x k`, `k x n`).
fn faer_views<'c, T: Arith>(
    c: &'c mut MatMut<'_, T>,
    a: MatRef<'c, T>,
    b: MatRef<'c, T>,
) -> (
    faer::MatMut<'c, T>,
    faer::MatRef<'c, T>,
    faer::MatRef<'c, T>,
) {
    let ((m, n), k) = (c.dims(), a.layout.cols);
    let (cl, al, bl) = (c.layout, a.layout, b.layout);
    // SAFETY: the three layouts address `m x n`, `m x k` and `k x n` elements of sub-stores
    // the point task holds (read for `a` and `b`, exclusively for `c`), as the product's
    // caller checked, for as long as the borrows of the views last.
    unsafe {
        (
            faer::MatMut::from_raw_parts_mut(c.ptr, m, n, cl.row_stride, cl.col_stride),
            faer::MatRef::from_raw_parts(a.ptr, m, k, al.row_stride, al.col_stride),
            faer::MatRef::from_raw_parts(b.ptr, k, n, bl.row_stride, bl.col_stride),
        )
    }
}

/// `faer`'s parallelism for `threads` threads.
fn faer_par(threads: usize) -> Par {
    if threads > 1 {
        Par::rayon(threads)
    } else {
        Par::Seq
    }
}

/// `c (+)= a b` through `faer`'s general product, all extents non-zero; `one` is the
/// element type's 1.
fn faer_matmul<T: Arith + faer::traits::ComplexField>(
    mut c: MatMut<'_, T>,
    a: MatRef<'_, T>,
    b: MatRef<'_, T>,
    accumulate: bool,
    threads: usize,
    one: T,
) {
    let accum = if accumulate {
        Accum::Add
    } else {
        Accum::Replace
    };
    let (dst, lhs, rhs) = faer_views(&mut c, a, b);
    faer::linalg::matmul::matmul(dst, accum, lhs, rhs, one, faer_par(threads));
}

/// Settles a product with an empty extent (nothing to compute, or zeros to write); false
/// when every extent is non-empty.
fn settled_when_empty<T: Arith>(c: &mut MatMut<'_, T>, k: usize, accumulate: bool) -> bool {
    let (m, n) = c.dims();
    if m == 0 || n == 0 {
        return true;
    }
    if k == 0 {
        if !accumulate {
            c.zero();
        }
        return true;
    }
    false
}

/// A float product ([`Gemm::gemm`]): empty extents settled here, then BLAS where it reads the
/// blocks and the product is not a block of a symmetric one, else `faer`.
fn float_product<T: FaerProduct>(
    mut c: MatMut<'_, T>,
    a: MatRef<'_, T>,
    b: MatRef<'_, T>,
    accumulate: bool,
    threads: usize,
) {
    if settled_when_empty(&mut c, a.layout.cols, accumulate) {
        return;
    }
    // A block of a symmetric product stays with `faer`, whose sums do not depend on which
    // operand is which, so that mirror blocks agree bit for bit (BLAS's edge tiles sum in
    // another order); the whole product, made symmetric by mirroring, goes to BLAS.
    let mirror_block = a.is_rows_of_transpose_of(&b) && (accumulate || !a.is_transpose_of(&b));
    if let Some(blas) = blas::blas().filter(|_| !mirror_block) {
        if blas_product(T::routines(blas), &mut c, a, b, accumulate, threads) {
            return;
        }
    }
    T::faer_product(c, a, b, accumulate, threads)
}

/// `FaerProduct` for the float types.
macro_rules! tuned_gemm {
    ($($t:ty),*) => {$(
        impl FaerProduct for $t {
            fn faer_product(
                mut c: MatMut<'_, $t>,
                a: MatRef<'_, $t>,
                b: MatRef<'_, $t>,
                accumulate: bool,
                threads: usize,
            ) {
                if !accumulate && a.is_transpose_of(&b) {
                    // `a aᵀ` is symmetric: its lower triangle alone, with half the
                    // multiply-adds (BLAS's syrk), then mirrored.
                    let (dst, lhs, rhs) = faer_views(&mut c, a, b);
                    faer::linalg::matmul::triangular::matmul(
                        dst,
                        BlockStructure::TriangularLower,
                        Accum::Replace,
                        lhs,
                        BlockStructure::Rectangular,
                        rhs,
                        BlockStructure::Rectangular,
                        1.0,
                        faer_par(threads),
                    );
                    c.mirror_lower();
                    return;
                }
                faer_matmul(c, a, b, accumulate, threads, 1.0);
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
/// while every row of `a` passes over it (on the calling thread: integer products are
/// exact in any order, and rarely large).
fn blocked<T: Arith>(
    mut c: MatMut<'_, T>,
    a: MatRef<'_, T>,
    b: MatRef<'_, T>,
    accumulate: bool,
    _threads: usize,
) {
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

/// `c (+)= a b` through `faer`'s general product (complex types), empty extents settled
/// first.
fn complex_product<T: Arith + faer::traits::ComplexField>(
    mut c: MatMut<'_, T>,
    a: MatRef<'_, T>,
    b: MatRef<'_, T>,
    accumulate: bool,
    threads: usize,
) {
    if !settled_when_empty(&mut c, a.layout.cols, accumulate) {
        faer_matmul(c, a, b, accumulate, threads, T::from_f64(1.0));
    }
}

/// `Gemm` for the types listed, through `$product`.
macro_rules! gemm_by {
    ($product:ident: $($t:ty),*) => {$(
        impl Gemm for $t {
            fn gemm(
                c: MatMut<'_, $t>,
                a: MatRef<'_, $t>,
                b: MatRef<'_, $t>,
                accumulate: bool,
                threads: usize,
            ) {
                $product(c, a, b, accumulate, threads)
            }
        }
    )*};
}

gemm_by!(float_product: f64, f32);
gemm_by!(blocked: i64, i32);
gemm_by!(complex_product: diffuse_ir::Complex32, diffuse_ir::Complex64);

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// A `rows x cols` block inside a buffer: row- or column-major, its leading stride
    /// padded by `pad` elements, after `offset` elements.
    #[derive(Clone, Copy, Debug)]
    struct Placement {
        column_major: bool,
        pad: usize,
        offset: usize,
    }

    impl Placement {
        fn layout(self, rows: usize, cols: usize) -> Layout {
            let (rows_i, cols_i, pad) = (rows as isize, cols as isize, self.pad as isize);
            if self.column_major {
                Layout {
                    rows,
                    cols,
                    row_stride: 1,
                    col_stride: rows_i.max(1) + pad,
                }
            } else {
                Layout {
                    rows,
                    cols,
                    row_stride: cols_i.max(1) + pad,
                    col_stride: 1,
                }
            }
        }

        /// A buffer holding the block, every element `value(i, j)`, the rest `filler`.
        fn buffer(
            self,
            layout: Layout,
            value: impl Fn(usize, usize) -> f64,
            filler: f64,
        ) -> Vec<f64> {
            let span = (layout.rows.max(1) - 1) as isize * layout.row_stride
                + (layout.cols.max(1) - 1) as isize * layout.col_stride
                + 1;
            let mut buffer = vec![filler; self.offset + span as usize];
            for i in 0..layout.rows {
                for j in 0..layout.cols {
                    buffer[self.offset + layout.offset(i, j) as usize] = value(i, j);
                }
            }
            buffer
        }
    }

    fn placement() -> impl Strategy<Value = Placement> {
        (any::<bool>(), 0usize..3, 0usize..3).prop_map(|(column_major, pad, offset)| Placement {
            column_major,
            pad,
            offset,
        })
    }

    /// Small integers, so every summation order gives the exact sum.
    fn entry(seed: usize, i: usize, j: usize) -> f64 {
        ((seed * 31 + i * 7 + j * 13) % 17) as f64 - 8.0
    }

    #[derive(Clone, Copy, Debug)]
    struct Case {
        m: usize,
        k: usize,
        n: usize,
        places: [Placement; 3],
        symmetric: bool,
        accumulate: bool,
        threads: usize,
    }

    fn case() -> impl Strategy<Value = Case> {
        (
            (0usize..=11, 1usize..=11, 0usize..=11),
            [placement(), placement(), placement()],
            any::<bool>(),
            any::<bool>(),
            1usize..=3,
        )
            .prop_map(|((m, k, n), places, symmetric, accumulate, threads)| Case {
                m,
                k,
                n: if symmetric { m } else { n },
                places,
                symmetric,
                accumulate,
                threads,
            })
    }

    /// Runs `product` on the case's blocks and checks the output block against the loop,
    /// and that nothing outside it changed.
    fn check(
        p: Case,
        product: impl Fn(MatMut<'_, f64>, MatRef<'_, f64>, MatRef<'_, f64>),
    ) -> Result<(), TestCaseError> {
        let [pa, pb, pc] = p.places;
        let (al, cl) = (pa.layout(p.m, p.k), pc.layout(p.m, p.n));
        let a = pa.buffer(al, |i, j| entry(1, i, j), 99.0);
        // The symmetric case reads `a`'s own elements transposed.
        let (b, bl, b_offset) = if p.symmetric {
            (a.clone(), al.transposed(), pa.offset)
        } else {
            let bl = pb.layout(p.k, p.n);
            (pb.buffer(bl, |i, j| entry(2, i, j), 99.0), bl, pb.offset)
        };
        let initial = |i, j| if p.accumulate { entry(3, i, j) } else { -77.0 };
        let mut c = pc.buffer(cl, initial, 55.0);
        let want = |i: usize, j: usize| {
            let base = if p.accumulate { entry(3, i, j) } else { 0.0 };
            (0..p.k).fold(base, |s, q| {
                let bq = if p.symmetric {
                    entry(1, j, q)
                } else {
                    entry(2, q, j)
                };
                s + entry(1, i, q) * bq
            })
        };
        let a_ptr = a[pa.offset..].as_ptr();
        let b_ptr = if p.symmetric {
            a_ptr
        } else {
            b[b_offset..].as_ptr()
        };
        product(
            MatMut {
                ptr: c[pc.offset..].as_mut_ptr(),
                layout: cl,
                _borrow: PhantomData,
            },
            MatRef {
                ptr: a_ptr,
                layout: al,
                _borrow: PhantomData,
            },
            MatRef {
                ptr: b_ptr,
                layout: bl,
                _borrow: PhantomData,
            },
        );
        let mut inside = vec![false; c.len()];
        for i in 0..p.m {
            for j in 0..p.n {
                let at = pc.offset + cl.offset(i, j) as usize;
                inside[at] = true;
                prop_assert_eq!(c[at], want(i, j), "c[{}, {}] of {:?}", i, j, p);
            }
        }
        for (at, v) in c.iter().enumerate() {
            prop_assert!(
                inside[at] || *v == 55.0,
                "element {} outside c changed: {:?}",
                at,
                p
            );
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

        /// BLAS's products (bands, GEMV, GEMM, SYRK) of row- and column-major blocks, padded
        /// or not, give the loop's exact values and write nothing outside the output.
        #[test]
        fn blas_products_equal_the_loop(p in case()) {
            let Some(blas) = blas::blas() else {
                return Err(TestCaseError::fail(
                    "no BLAS could be loaded: scripts/setup.sh installs Debian's libopenblas0-pthread",
                ));
            };
            check(p, |mut c, a, b| {
                assert!(blas_product(f64::routines(blas), &mut c, a, b, p.accumulate, p.threads));
            })?;
        }

        /// `faer`'s products, the fallback, give the same.
        #[test]
        fn faer_products_equal_the_loop(p in case()) {
            check(p, |c, a, b| f64::faer_product(c, a, b, p.accumulate, p.threads))?;
        }
    }

    /// Products on several threads at once (as a launch's points run them) each give the
    /// loop's exact values: the library's buffers are not shared between concurrent calls.
    #[test]
    fn concurrent_blas_products_equal_the_loop() {
        let Some(blas) = blas::blas() else {
            panic!(
                "no BLAS could be loaded: scripts/setup.sh installs Debian's libopenblas0-pthread"
            );
        };
        let n = 96;
        let layout = Layout {
            rows: n,
            cols: n,
            row_stride: n as isize,
            col_stride: 1,
        };
        std::thread::scope(|scope| {
            for seed in 0..4 {
                scope.spawn(move || {
                    let a: Vec<f64> = (0..n * n).map(|e| entry(seed, e / n, e % n)).collect();
                    let b: Vec<f64> = (0..n * n).map(|e| entry(seed + 9, e / n, e % n)).collect();
                    let want: Vec<f64> = (0..n * n)
                        .map(|e| (0..n).map(|q| a[e / n * n + q] * b[q * n + e % n]).sum())
                        .collect();
                    for round in 0..150 {
                        let mut c = vec![0.0; n * n];
                        let mut out = MatMut {
                            ptr: c.as_mut_ptr(),
                            layout,
                            _borrow: PhantomData,
                        };
                        let lhs = MatRef {
                            ptr: a.as_ptr(),
                            layout,
                            _borrow: PhantomData,
                        };
                        let rhs = MatRef {
                            ptr: b.as_ptr(),
                            layout,
                            _borrow: PhantomData,
                        };
                        assert!(blas_product(
                            f64::routines(blas),
                            &mut out,
                            lhs,
                            rhs,
                            false,
                            1
                        ));
                        assert!(c == want, "thread {seed}, round {round}: a wrong product");
                    }
                });
            }
        });
    }

    #[test]
    fn blocks_of_a_symmetric_product_are_told_apart() {
        let data = vec![0.0f64; 64];
        let rows = |first: usize, count: usize| MatRef {
            ptr: data[first * 8..].as_ptr(),
            layout: Layout {
                rows: count,
                cols: 8,
                row_stride: 8,
                col_stride: 1,
            },
            _borrow: PhantomData,
        };
        let (top, bottom) = (rows(0, 3), rows(5, 3));
        assert!(top.is_rows_of_transpose_of(&bottom.oriented(Orientation::Transposed)));
        assert!(top.is_rows_of_transpose_of(&top.oriented(Orientation::Transposed)));
        assert!(top.is_transpose_of(&top.oriented(Orientation::Transposed)));
        assert!(!top.is_transpose_of(&bottom.oriented(Orientation::Transposed)));
        // Not transposed, or starting mid-row: an ordinary product.
        assert!(!top.is_rows_of_transpose_of(&bottom));
        let shifted = MatRef {
            ptr: data[3..].as_ptr(),
            ..bottom
        };
        assert!(!top.is_rows_of_transpose_of(&shifted.oriented(Orientation::Transposed)));
    }

    #[test]
    fn blocks_without_a_unit_stride_stay_with_faer() {
        let Some(blas) = blas::blas() else {
            panic!(
                "no BLAS could be loaded: scripts/setup.sh installs Debian's libopenblas0-pthread"
            );
        };
        let data = vec![1.0; 64];
        let mut out = vec![0.0; 16];
        let strided = Layout {
            rows: 2,
            cols: 2,
            row_stride: 8,
            col_stride: 2,
        };
        let dense = Layout {
            rows: 2,
            cols: 2,
            row_stride: 2,
            col_stride: 1,
        };
        let c = MatMut {
            ptr: out.as_mut_ptr(),
            layout: dense,
            _borrow: PhantomData,
        };
        let a = MatRef {
            ptr: data.as_ptr(),
            layout: strided,
            _borrow: PhantomData,
        };
        let b = MatRef {
            ptr: data.as_ptr(),
            layout: dense,
            _borrow: PhantomData,
        };
        let mut c = c;
        assert!(!blas_product(f64::routines(blas), &mut c, a, b, false, 1));
        assert!(
            out.iter().all(|v| *v == 0.0),
            "a refused product wrote its output"
        );
    }
}
