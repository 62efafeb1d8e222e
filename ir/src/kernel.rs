//! What a native kernel sees when it runs one point task: typed, strided views of its
//! sub-stores, its scalars, and its launch point.
//!
//! Every sub-store is a box inside a row-major store, so its innermost dimension is always
//! contiguous: views hand out whole rows as slices, which keeps element-wise kernels as fast
//! as plain loops.

use std::cell::Cell;
use std::marker::PhantomData;
use std::ops::Deref;
use std::sync::Arc;

use crate::dtype::{DType, Element, Scalar};
use crate::error::KernelError;
use crate::privilege::Privilege;
use crate::tuple::{Point, Rect, Shape, Tuple};

/// The most store arguments one task may have (point tasks track them in a bit set).
pub const MAX_ARGS: usize = 64;

/// The native (Rust) implementation of a task kind: runs one point task.
pub type NativeKernel = Arc<dyn Fn(&PointTask<'_>) -> Result<(), KernelError> + Send + Sync>;

/// A backend's description of one argument's memory for one point task.
#[derive(Clone, Copy, Debug)]
pub struct RawView {
    ptr: *mut u8,
    dtype: DType,
    shape: Shape,
    strides: Tuple,
    privilege: Privilege,
    sub_store: Rect,
    store_shape: Shape,
}

// SAFETY: a RawView is a pointer plus layout. Backends only create them under the contract of
// `RawView::new`, which makes the memory valid for the point task's duration and free of
// conflicting access from other point tasks; moving that description to a worker thread is
// then sound.
unsafe impl Send for RawView {}
// SAFETY: as above; shared references to a RawView only allow copying the description.
unsafe impl Sync for RawView {}

impl RawView {
    /// Describes the sub-store `sub_store` of a store of shape `store_shape`: its
    /// `sub_store.extent()` elements of `dtype` lie at `ptr` with element `strides` (innermost
    /// stride must be 1) and are accessed with `privilege`. Kernels that depend on where their
    /// block lies (`arange`, counter-based random numbers) read the placement back through
    /// [`PointTask::sub_store`].
    ///
    /// # Safety
    /// For as long as any `PointTask` built from this view runs, every element the layout
    /// addresses must be valid, initialized memory of type `dtype`; if `privilege` changes the
    /// data, no other thread may access those elements, and if it only reads, no other thread
    /// may write them.
    pub unsafe fn new(
        ptr: *mut u8,
        dtype: DType,
        sub_store: Rect,
        store_shape: Shape,
        strides: Tuple,
        privilege: Privilege,
    ) -> Self {
        RawView {
            ptr,
            dtype,
            shape: sub_store.extent(),
            strides,
            privilege,
            sub_store,
            store_shape,
        }
    }
}

/// Row addressing shared by read and write views.
#[derive(Clone, Copy)]
struct Layout {
    shape: Shape,
    strides: Tuple,
}

impl Layout {
    #[inline]
    fn row_len(&self) -> usize {
        match self.shape.dims() {
            0 => 1,
            d => self.shape[d - 1].max(0) as usize,
        }
    }

    #[inline]
    fn rows(&self) -> usize {
        match self.shape.dims() {
            0 => 1,
            d => {
                self.shape.as_slice()[..d - 1]
                    .iter()
                    .map(|&e| e.max(0) as usize)
                    .product::<usize>()
                    * usize::from(self.row_len() > 0)
            }
        }
    }

    /// Element offset of the start of row `r` (rows in row-major order).
    #[inline]
    fn row_offset(&self, mut r: usize) -> isize {
        let d = self.shape.dims();
        let mut off = 0isize;
        for k in (0..d.saturating_sub(1)).rev() {
            let extent = self.shape[k] as usize;
            off += (r % extent) as isize * self.strides[k] as isize;
            r /= extent;
        }
        off
    }

    /// Element offset of a point, or `None` if it lies outside the view.
    #[inline]
    fn offset_of(&self, idx: &[i64]) -> Option<isize> {
        if idx.len() != self.shape.dims() {
            return None;
        }
        let mut off = 0isize;
        for (d, &i) in idx.iter().enumerate() {
            if i < 0 || i >= self.shape[d] {
                return None;
            }
            off += i as isize * self.strides[d] as isize;
        }
        Some(off)
    }
}

/// Read access to one argument's sub-store.
pub struct ReadView<'a, T> {
    ptr: *const T,
    layout: Layout,
    _borrow: PhantomData<&'a T>,
}

impl<T: Element> ReadView<'_, T> {
    /// The elements `raw` describes, as `T`.
    fn of(raw: &RawView) -> Self {
        ReadView {
            ptr: raw.ptr as *const T,
            layout: Layout {
                shape: raw.shape,
                strides: raw.strides,
            },
            _borrow: PhantomData,
        }
    }

    /// Extent of the sub-store.
    pub fn shape(&self) -> Shape {
        self.layout.shape
    }

    /// Number of rows (product of all but the innermost extent; 1 for a 0-d view).
    pub fn rows(&self) -> usize {
        self.layout.rows()
    }

    /// Row `r` as a contiguous slice.
    #[inline]
    pub fn row(&self, r: usize) -> &[T] {
        assert!(r < self.rows(), "row {r} out of {} rows", self.rows());
        // SAFETY: the row lies inside the view (checked above); RawView's contract makes it
        // valid, initialized and not written by anyone else while this task runs.
        unsafe {
            std::slice::from_raw_parts(
                self.ptr.offset(self.layout.row_offset(r)),
                self.layout.row_len(),
            )
        }
    }

    /// The distance in elements between neighbours along each dimension (the innermost is
    /// 1), for routines that address the view themselves from [`ReadView::as_ptr`].
    pub fn strides(&self) -> Tuple {
        self.layout.strides
    }

    /// The address of the sub-store's first element (index 0 in every dimension): every
    /// element the shape and [`ReadView::strides`] address from it may be read while the
    /// view is borrowed.
    pub fn as_ptr(&self) -> *const T {
        self.ptr
    }

    /// The element at `idx` (sub-store-relative), or `None` outside the view.
    #[inline]
    pub fn get(&self, idx: &[i64]) -> Option<T> {
        let off = self.layout.offset_of(idx)?;
        // SAFETY: `offset_of` bounds-checked the index against the view.
        Some(unsafe { *self.ptr.offset(off) })
    }
}

/// Write (or read-write, or private reduction) access to one argument's sub-store. It reads
/// as a [`ReadView`] does (shape, rows, elements), through a shared borrow that keeps it
/// from being written meanwhile.
pub struct WriteView<'a, T> {
    view: ReadView<'a, T>,
    _borrow: PhantomData<&'a mut T>,
}

impl<'a, T> Deref for WriteView<'a, T> {
    type Target = ReadView<'a, T>;

    fn deref(&self) -> &ReadView<'a, T> {
        &self.view
    }
}

impl<T: Element> WriteView<'_, T> {
    /// Row `r` as a mutable slice.
    #[inline]
    pub fn row_mut(&mut self, r: usize) -> &mut [T] {
        assert!(r < self.rows(), "row {r} out of {} rows", self.rows());
        let ptr = self.ptr_mut();
        let layout = &self.view.layout;
        // SAFETY: in bounds (checked); RawView's contract gives this point task exclusive
        // access, and PointTask hands out at most one WriteView per argument.
        unsafe {
            std::slice::from_raw_parts_mut(ptr.offset(layout.row_offset(r)), layout.row_len())
        }
    }

    /// The address of the sub-store's first element, for writing: every element the shape
    /// and [`ReadView::strides`] address from it may be read and written while the view is
    /// borrowed mutably.
    pub fn as_mut_ptr(&mut self) -> *mut T {
        self.ptr_mut()
    }

    /// Stores `value` at `idx`; returns false (and stores nothing) outside the view.
    #[inline]
    pub fn set(&mut self, idx: &[i64], value: T) -> bool {
        match self.view.layout.offset_of(idx) {
            Some(off) => {
                // SAFETY: bounds-checked; exclusive access as for `row_mut`.
                unsafe { *self.ptr_mut().offset(off) = value };
                true
            }
            None => false,
        }
    }

    /// The sub-store's first element, for writing: the backend's pointer was mutable, and
    /// this view has the argument to itself.
    fn ptr_mut(&mut self) -> *mut T {
        self.view.ptr.cast_mut()
    }
}

/// One point task as a native kernel sees it.
pub struct PointTask<'a> {
    kind: &'a str,
    point: Point,
    launch_domain: Shape,
    args: &'a [RawView],
    scalars: &'a [Scalar],
    /// Bit `i` is set once argument `i` has been handed out for writing.
    written: Cell<u64>,
    /// Bit `i` is set once argument `i` has been handed out for reading.
    read: Cell<u64>,
}

impl<'a> PointTask<'a> {
    /// Assembles a point task for a native kernel.
    pub fn new(
        kind: &'a str,
        point: Point,
        launch_domain: Shape,
        args: &'a [RawView],
        scalars: &'a [Scalar],
    ) -> Self {
        PointTask {
            kind,
            point,
            launch_domain,
            args,
            scalars,
            written: Cell::new(0),
            read: Cell::new(0),
        }
    }

    /// The launch point this task runs at.
    pub fn point(&self) -> Point {
        self.point
    }

    /// The launch domain of the index task.
    pub fn launch_domain(&self) -> Shape {
        self.launch_domain
    }

    /// Number of store arguments.
    pub fn arg_count(&self) -> usize {
        self.args.len()
    }

    /// Where argument `i`'s sub-store lies, in the coordinates of its whole store.
    pub fn sub_store(&self, i: usize) -> Result<Rect, KernelError> {
        Ok(self.raw(i)?.sub_store)
    }

    /// The shape of argument `i`'s whole store.
    pub fn store_shape(&self, i: usize) -> Result<Shape, KernelError> {
        Ok(self.raw(i)?.store_shape)
    }

    /// The privilege of argument `i`.
    pub fn privilege(&self, i: usize) -> Result<Privilege, KernelError> {
        Ok(self.raw(i)?.privilege)
    }

    /// An error for this point task with the given reason (for kernels' own checks).
    pub fn error(&self, reason: impl Into<String>) -> KernelError {
        KernelError {
            kind: self.kind.to_string(),
            point: self.point,
            reason: reason.into(),
        }
    }

    fn raw(&self, i: usize) -> Result<&RawView, KernelError> {
        self.args.get(i).ok_or_else(|| {
            self.error(format!(
                "argument {i} requested but the task has {} arguments",
                self.args.len()
            ))
        })
    }

    fn typed<T: Element>(&self, i: usize) -> Result<&RawView, KernelError> {
        let raw = self.raw(i)?;
        if raw.dtype != T::DTYPE {
            return Err(self.error(format!(
                "argument {i} is a {} store, the kernel asked for {}",
                raw.dtype,
                T::DTYPE
            )));
        }
        Ok(raw)
    }

    /// Read access to argument `i` (privilege `Read`, or `ReadWrite` not yet taken for
    /// writing). Task kinds have at most [`MAX_ARGS`] arguments.
    pub fn read<T: Element>(&self, i: usize) -> Result<ReadView<'_, T>, KernelError> {
        let raw = self.typed::<T>(i)?;
        if !raw.privilege.reads() || self.written.get() & (1 << i) != 0 {
            return Err(self.error(format!(
                "argument {i} has privilege {} or was already taken for writing (read it through \
                 its WriteView)",
                raw.privilege
            )));
        }
        self.read.set(self.read.get() | (1 << i));
        Ok(ReadView::of(raw))
    }

    /// Write access to argument `i` (`Write`, `ReadWrite`, or the point's private
    /// accumulator for `Reduce`, which starts at the operator's identity). Each argument can be
    /// taken for writing once per point task.
    pub fn write<T: Element>(&self, i: usize) -> Result<WriteView<'_, T>, KernelError> {
        let raw = self.typed::<T>(i)?;
        if !raw.privilege.mutates() || (self.written.get() | self.read.get()) & (1 << i) != 0 {
            return Err(self.error(format!(
                "argument {i} has privilege {} or was already taken",
                raw.privilege
            )));
        }
        self.written.set(self.written.get() | (1 << i));
        Ok(WriteView {
            view: ReadView::of(raw),
            _borrow: PhantomData,
        })
    }

    /// Scalar argument `i` as type `T`.
    pub fn scalar<T: Element>(&self, i: usize) -> Result<T, KernelError> {
        let s = self.scalars.get(i).copied().ok_or_else(|| {
            self.error(format!(
                "scalar {i} requested but the task has {} scalars",
                self.scalars.len()
            ))
        })?;
        T::from_scalar(s).ok_or_else(|| {
            self.error(format!(
                "scalar {i} is {}, the kernel asked for {}",
                s.dtype(),
                T::DTYPE
            ))
        })
    }
}
