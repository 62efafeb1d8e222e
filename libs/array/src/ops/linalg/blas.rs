//! The host's BLAS (OpenBLAS's CBLAS interface), loaded when the process first multiplies
//! floats: GEMM, SYRK and GEMV per point, each on the calling thread (the launch's points,
//! and [`super::gemm`]'s bands of a threaded product, bring their own parallelism).
//!
//! Calls come from several threads at once. OpenBLAS's threaded builds lock their buffers
//! and are set to one thread here, so each call runs on its caller's thread; its
//! sequential build may not lock (it hands two concurrent calls one buffer, and both
//! products come out wrong), so calls into a library that reports itself sequential take
//! turns.
//!
//! It is loaded at run time rather than linked, so that a host without it (a machine that
//! only runs a bundle built elsewhere) still runs every product, through `faer`, after one
//! warning. `DIFFUSE_BLAS` chooses the library: unset, Debian's `libopenblas.so.0`; a path or
//! file name, that library; `builtin`, no BLAS (faer's kernels, without a warning).
//!
//! BLAS reads a matrix whose elements lie along rows or along columns with a leading
//! dimension; [`Operand::of`] says how a strided block maps onto that, and products whose
//! blocks do not map (negative, zero or doubly strided steps) stay with `faer`.

use std::ffi::c_int;
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};

use libloading::Library;

/// The environment variable that chooses the BLAS library (see the module's doc).
pub(super) const BLAS_VARIABLE: &str = "DIFFUSE_BLAS";

/// The value of [`BLAS_VARIABLE`] that keeps every product on the built-in kernels.
const BUILTIN: &str = "builtin";

/// The library loaded when [`BLAS_VARIABLE`] is unset (Debian's `libopenblas0-*`).
const DEFAULT_LIBRARY: &str = "libopenblas.so.0";

/// CBLAS's enumerations, as its header numbers them.
const ROW_MAJOR: c_int = 101;
const NO_TRANS: c_int = 111;
const TRANS: c_int = 112;
const LOWER: c_int = 122;

/// `cblas_?gemm`: `C = alpha op(A) op(B) + beta C`.
type GemmFn<T> = unsafe extern "C" fn(
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    T,
    *const T,
    c_int,
    *const T,
    c_int,
    T,
    *mut T,
    c_int,
);
/// `cblas_?syrk`: one triangle of `C = alpha op(A) op(A)ᵀ + beta C`.
type SyrkFn<T> =
    unsafe extern "C" fn(c_int, c_int, c_int, c_int, c_int, T, *const T, c_int, T, *mut T, c_int);
/// `cblas_?gemv`: `y = alpha op(A) x + beta y`.
type GemvFn<T> = unsafe extern "C" fn(
    c_int,
    c_int,
    c_int,
    c_int,
    T,
    *const T,
    c_int,
    *const T,
    c_int,
    T,
    *mut T,
    c_int,
);

/// The three routines of one element type.
pub(super) struct Routines<T> {
    gemm: GemmFn<T>,
    syrk: SyrkFn<T>,
    gemv: GemvFn<T>,
    /// Whether calls take turns ([`TURNS`]): the library is a sequential build.
    take_turns: bool,
}

/// The turns of calls into a sequential BLAS, which may not be safe to call concurrently.
static TURNS: Mutex<()> = Mutex::new(());

/// `openblas_get_parallel`'s answer for a sequential build.
const SEQUENTIAL: c_int = 0;

/// A loaded BLAS: its routines for `f64` and `f32`, valid while the library stays loaded
/// (for the life of the process: it is never unloaded).
pub(super) struct Blas {
    double: Routines<f64>,
    single: Routines<f32>,
    _library: Library,
}

/// Float element types BLAS multiplies.
pub(super) trait BlasFloat: Copy {
    /// One, for `alpha` and an accumulating `beta`.
    const ONE: Self;
    /// Zero, for a replacing `beta`.
    const ZERO: Self;
    /// This type's routines in `blas`.
    fn routines(blas: &Blas) -> &Routines<Self>;
}

impl BlasFloat for f64 {
    const ONE: Self = 1.0;
    const ZERO: Self = 0.0;
    fn routines(blas: &Blas) -> &Routines<f64> {
        &blas.double
    }
}

impl BlasFloat for f32 {
    const ONE: Self = 1.0;
    const ZERO: Self = 0.0;
    fn routines(blas: &Blas) -> &Routines<f32> {
        &blas.single
    }
}

/// The process's BLAS, loaded on first use; `None` when `DIFFUSE_BLAS=builtin` or when the
/// library cannot be loaded (warned once).
pub(super) fn blas() -> Option<&'static Blas> {
    static BLAS: OnceLock<Option<Blas>> = OnceLock::new();
    BLAS.get_or_init(|| {
        let chosen = std::env::var(BLAS_VARIABLE).ok();
        let name = match chosen.as_deref() {
            Some(BUILTIN) => return None,
            Some(name) if !name.is_empty() => name,
            _ => DEFAULT_LIBRARY,
        };
        match load(name) {
            Ok(blas) => Some(blas),
            Err(e) => {
                tracing::warn!(
                    "no BLAS ({name}: {e}); float matrix products run the built-in kernels, \
                     slower (install Debian's libopenblas0-pthread, or set {BLAS_VARIABLE}={BUILTIN})"
                );
                None
            }
        }
    })
    .as_ref()
}

/// Loads `name` and looks up the routines; a library with OpenBLAS's thread control is set
/// to one thread, so that each call runs on its caller's thread.
fn load(name: &str) -> Result<Blas, libloading::Error> {
    // SAFETY: loading a BLAS runs only its initialisers, which set up its own state.
    let library = unsafe { Library::new(name)? };
    // SAFETY: each symbol is looked up with the type CBLAS (or OpenBLAS, for its own
    // functions) declares for it.
    unsafe {
        if let Ok(set_threads) =
            library.get::<unsafe extern "C" fn(c_int)>(b"openblas_set_num_threads\0")
        {
            set_threads(1);
        }
        // A library that does not say it is threaded is taken to be sequential.
        let take_turns = library
            .get::<unsafe extern "C" fn() -> c_int>(b"openblas_get_parallel\0")
            .map_or(true, |parallel| parallel() == SEQUENTIAL);
        let double = Routines {
            gemm: *library.get::<GemmFn<f64>>(b"cblas_dgemm\0")?,
            syrk: *library.get::<SyrkFn<f64>>(b"cblas_dsyrk\0")?,
            gemv: *library.get::<GemvFn<f64>>(b"cblas_dgemv\0")?,
            take_turns,
        };
        let single = Routines {
            gemm: *library.get::<GemmFn<f32>>(b"cblas_sgemm\0")?,
            syrk: *library.get::<SyrkFn<f32>>(b"cblas_ssyrk\0")?,
            gemv: *library.get::<GemvFn<f32>>(b"cblas_sgemv\0")?,
            take_turns,
        };
        Ok(Blas {
            double,
            single,
            _library: library,
        })
    }
}

/// A matrix as BLAS reads it in row-major terms: `NO_TRANS` when its rows are contiguous,
/// `TRANS` (the row-major matrix is its transpose) when its columns are, and the leading
/// dimension either way.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) struct Operand {
    trans: c_int,
    leading: c_int,
}

impl Operand {
    /// How BLAS reads a `rows x cols` matrix with these element strides; `None` when it
    /// cannot (no unit stride, a negative or too small leading stride, an extent past
    /// `c_int`).
    pub(super) fn of(
        rows: usize,
        cols: usize,
        row_stride: isize,
        col_stride: isize,
    ) -> Option<Self> {
        c_int::try_from(rows).ok()?;
        c_int::try_from(cols).ok()?;
        // A single row or column has no leading stride that matters: the smallest legal one.
        let fits = |unit: isize, leading: isize, across: usize, along: usize| {
            (unit == 1 || along <= 1)
                .then(|| {
                    if across <= 1 {
                        Some(along.max(1) as isize)
                    } else {
                        (leading >= along.max(1) as isize).then_some(leading)
                    }
                })
                .flatten()
                .and_then(|leading| c_int::try_from(leading).ok())
        };
        if let Some(leading) = fits(col_stride, row_stride, rows, cols) {
            return Some(Operand {
                trans: NO_TRANS,
                leading,
            });
        }
        fits(row_stride, col_stride, cols, rows).map(|leading| Operand {
            trans: TRANS,
            leading,
        })
    }

    /// True when the rows are contiguous (a row-major output BLAS can write).
    pub(super) fn is_row_major(self) -> bool {
        self.trans == NO_TRANS
    }
}

/// A vector's element stride, when BLAS can step through it (positive and within `c_int`).
pub(super) fn increment(len: usize, stride: isize) -> Option<c_int> {
    if len <= 1 {
        return Some(1);
    }
    (stride > 0).then(|| c_int::try_from(stride).ok()).flatten()
}

/// The extents of a product, `op(A)` of `m x k` and `op(B)` of `k x n`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Extents {
    pub m: usize,
    pub n: usize,
    pub k: usize,
}

impl Extents {
    /// The extents as `c_int`s, which the caller's operands already proved they fit.
    fn ints(self) -> (c_int, c_int, c_int) {
        let int = |x: usize| c_int::try_from(x).unwrap_or(c_int::MAX);
        (int(self.m), int(self.n), int(self.k))
    }
}

impl<T: BlasFloat> Routines<T> {
    /// This call's turn, when calls take turns.
    fn turn(&self) -> Option<MutexGuard<'static, ()>> {
        self.take_turns
            .then(|| TURNS.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// `c = a b` (or `c += a b` when `accumulate`) with `c` row-major.
    ///
    /// # Safety
    /// Each pointer addresses the matrix its operand describes, with `extents`' shapes; `c`'s
    /// elements are this call's alone.
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn gemm(
        &self,
        extents: Extents,
        (a, a_ptr): (Operand, *const T),
        (b, b_ptr): (Operand, *const T),
        (c, c_ptr): (Operand, *mut T),
        accumulate: bool,
    ) {
        let (m, n, k) = extents.ints();
        let beta = if accumulate { T::ONE } else { T::ZERO };
        let _turn = self.turn();
        // SAFETY: by the caller's promise.
        unsafe {
            (self.gemm)(
                ROW_MAJOR,
                a.trans,
                b.trans,
                m,
                n,
                k,
                T::ONE,
                a_ptr,
                a.leading,
                b_ptr,
                b.leading,
                beta,
                c_ptr,
                c.leading,
            )
        }
    }

    /// The lower triangle of `c = a aᵀ` (`m x m`, from `a` of `m x k`), `c` row-major.
    ///
    /// # Safety
    /// As for [`Routines::gemm`], with `n = m`.
    pub(super) unsafe fn syrk_lower(
        &self,
        extents: Extents,
        (a, a_ptr): (Operand, *const T),
        (c, c_ptr): (Operand, *mut T),
    ) {
        let (m, _, k) = extents.ints();
        let _turn = self.turn();
        // SAFETY: by the caller's promise.
        unsafe {
            (self.syrk)(
                ROW_MAJOR,
                LOWER,
                a.trans,
                m,
                k,
                T::ONE,
                a_ptr,
                a.leading,
                T::ZERO,
                c_ptr,
                c.leading,
            )
        }
    }

    /// `y = a x` (or `y += a x` when `accumulate`) for `a` of `m x k` (`extents.n` is 1).
    ///
    /// # Safety
    /// `a_ptr` addresses the matrix `a` describes; `x_ptr` `k` elements `x_step` apart;
    /// `y_ptr` `m` elements `y_step` apart, this call's alone.
    pub(super) unsafe fn gemv(
        &self,
        extents: Extents,
        (a, a_ptr): (Operand, *const T),
        (x_ptr, x_step): (*const T, c_int),
        (y_ptr, y_step): (*mut T, c_int),
        accumulate: bool,
    ) {
        let (m, _, k) = extents.ints();
        let beta = if accumulate { T::ONE } else { T::ZERO };
        // A transposed operand is the stored `k x m` row-major matrix, read transposed.
        let (rows, cols) = if a.trans == NO_TRANS { (m, k) } else { (k, m) };
        let _turn = self.turn();
        // SAFETY: by the caller's promise.
        unsafe {
            (self.gemv)(
                ROW_MAJOR,
                a.trans,
                rows,
                cols,
                T::ONE,
                a_ptr,
                a.leading,
                x_ptr,
                x_step,
                beta,
                y_ptr,
                y_step,
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operands_map_row_and_column_major_blocks_and_refuse_the_rest() {
        let row = |leading| {
            Some(Operand {
                trans: NO_TRANS,
                leading,
            })
        };
        let col = |leading| {
            Some(Operand {
                trans: TRANS,
                leading,
            })
        };
        assert_eq!(Operand::of(3, 4, 4, 1), row(4));
        assert_eq!(Operand::of(3, 4, 10, 1), row(10));
        assert_eq!(Operand::of(3, 4, 1, 3), col(3));
        assert_eq!(Operand::of(3, 4, 1, 7), col(7));
        // A single row or column: any stride across it.
        assert_eq!(Operand::of(1, 4, 99, 1), row(4));
        assert_eq!(Operand::of(4, 1, 1, 99), row(1));
        assert_eq!(Operand::of(4, 2, 1, 99), col(99));
        assert_eq!(Operand::of(4, 1, 5, 0), row(5));
        // Neither stride is one, a leading stride too small or negative.
        assert_eq!(Operand::of(3, 4, 8, 2), None);
        assert_eq!(Operand::of(3, 4, 3, 1), None);
        assert_eq!(Operand::of(3, 4, -4, 1), None);
        assert_eq!(Operand::of(3, 4, 0, 1), None);
    }

    #[test]
    fn increments_must_be_positive() {
        assert_eq!(increment(5, 3), Some(3));
        assert_eq!(increment(1, -3), Some(1));
        assert_eq!(increment(5, -1), None);
        assert_eq!(increment(5, 0), None);
    }
}
