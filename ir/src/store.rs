//! Stores (distributed arrays), the two kinds of references to them, and views.
//!
//! A store is referenced in two ways, counted separately (paper §5.1):
//! - [`Store`]: an *application handle*, held by user code and libraries' array objects;
//! - [`StoreRef`]: a *task reference*, held by submitted index tasks that have not finished.
//!
//! A store whose application handles are all gone but which pending tasks still produce and
//! consume is a temporary candidate; one with neither kind of reference is freed (its backend
//! allocation is dropped with it).

use std::any::Any;
use std::fmt;
use std::ops::Deref;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use crate::dtype::DType;
use crate::error::IrError;
use crate::tuple::{Point, Rect, Shape, Tuple};

/// A process-unique store identifier.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct StoreId(pub u64);

impl fmt::Display for StoreId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "S{}", self.0)
    }
}

/// What every reference to a store can see: identity, shape, dtype, reference counts and the
/// backend's allocation slot.
pub struct StoreCore {
    id: StoreId,
    shape: Shape,
    dtype: DType,
    app_handles: AtomicUsize,
    task_refs: AtomicUsize,
    allocation: OnceLock<Box<dyn Any + Send + Sync>>,
}

impl StoreCore {
    /// The store's unique id.
    pub fn id(&self) -> StoreId {
        self.id
    }

    /// The store's shape.
    pub fn shape(&self) -> Shape {
        self.shape
    }

    /// The store's element type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// The box `[0, shape)`.
    pub fn bounds(&self) -> Rect {
        Rect::from_shape(self.shape)
    }

    /// Size of the store's data in bytes.
    pub fn size_bytes(&self) -> usize {
        // Context::create_store rejects shapes whose byte size does not fit `isize`.
        self.shape.volume().max(0) as usize * self.dtype.size_bytes()
    }

    /// Number of live application handles ([`Store`] values).
    pub fn app_handles(&self) -> usize {
        self.app_handles.load(Ordering::Acquire)
    }

    /// Number of live task references ([`StoreRef`] values held by pending tasks).
    pub fn task_refs(&self) -> usize {
        self.task_refs.load(Ordering::Acquire)
    }

    /// True while the application still holds a handle.
    pub fn is_live(&self) -> bool {
        self.app_handles() > 0
    }

    /// The backend's allocation for this store, created by `init` on first use. It lives as
    /// long as the store and is dropped when the last reference of either kind goes.
    ///
    /// Fails with [`IrError::AllocationType`] if a different backend already attached an
    /// allocation of another type.
    pub fn allocation<A: Any + Send + Sync>(
        &self,
        init: impl FnOnce() -> A,
    ) -> Result<&A, IrError> {
        let slot = self.allocation.get_or_init(|| Box::new(init()));
        slot.downcast_ref::<A>().ok_or(IrError::AllocationType {
            store: self.id,
            wanted: std::any::type_name::<A>(),
        })
    }
}

impl StoreCore {
    /// Like [`StoreCore::allocation`] with a fallible `init`: its error is returned and the
    /// slot stays empty, so a later call may try again.
    pub fn try_allocation<A: Any + Send + Sync, E>(
        &self,
        init: impl FnOnce() -> Result<A, E>,
        wrong_type: impl FnOnce(IrError) -> E,
    ) -> Result<&A, E> {
        let slot = match self.allocation.get() {
            Some(slot) => slot,
            None => {
                // Another thread may win the race to set the slot: its allocation is kept
                // and this one dropped. Either way the slot is full afterwards.
                let _ = self.allocation.set(Box::new(init()?));
                self.allocation.get_or_init(|| Box::new(()))
            }
        };
        slot.downcast_ref::<A>().ok_or_else(|| {
            wrong_type(IrError::AllocationType {
                store: self.id,
                wanted: std::any::type_name::<A>(),
            })
        })
    }
}

impl fmt::Debug for StoreCore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}<{}>{}", self.id, self.dtype, self.shape)
    }
}

fn next_store_id() -> StoreId {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    StoreId(NEXT.fetch_add(1, Ordering::Relaxed))
}

/// An application handle to a store (RAII): cloning adds a handle, dropping removes one.
pub struct Store {
    core: Arc<StoreCore>,
}

impl Store {
    /// Creates a new store. Its contents are zero (false for `bool`) until written.
    pub(crate) fn new(shape: Shape, dtype: DType) -> Self {
        Store {
            core: Arc::new(StoreCore {
                id: next_store_id(),
                shape,
                dtype,
                app_handles: AtomicUsize::new(1),
                task_refs: AtomicUsize::new(0),
                allocation: OnceLock::new(),
            }),
        }
    }

    /// A task reference to the same store, for an index task argument.
    pub fn task_ref(&self) -> StoreRef {
        StoreRef::from_core(Arc::clone(&self.core))
    }

    /// An application handle to the store `task_ref` names (for what must keep a store the
    /// application can observe, such as a recording's held stores).
    pub(crate) fn from_task_ref(task_ref: &StoreRef) -> Store {
        task_ref.core.app_handles.fetch_add(1, Ordering::AcqRel);
        Store {
            core: Arc::clone(&task_ref.core),
        }
    }

    /// A view of the whole store.
    pub fn view(&self) -> View {
        View {
            store: self.clone(),
            offset: Tuple::splat(self.shape.dims(), 0),
            shape: self.shape,
        }
    }
}

/// `Clone` (one more count), `Drop` (one fewer), `Deref` to the [`StoreCore`] and `Debug` as
/// the core, for a handle type `$handle { core: Arc<StoreCore> }` counted in `core.$count`.
macro_rules! counted_handle {
    ($handle:ident, $count:ident) => {
        impl Clone for $handle {
            fn clone(&self) -> Self {
                self.core.$count.fetch_add(1, Ordering::AcqRel);
                $handle {
                    core: Arc::clone(&self.core),
                }
            }
        }

        impl Drop for $handle {
            fn drop(&mut self) {
                self.core.$count.fetch_sub(1, Ordering::AcqRel);
            }
        }

        impl Deref for $handle {
            type Target = StoreCore;
            fn deref(&self) -> &StoreCore {
                &self.core
            }
        }

        impl fmt::Debug for $handle {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Debug::fmt(&*self.core, f)
            }
        }
    };
}

counted_handle!(Store, app_handles);

/// A task's reference to a store (RAII): counted separately from application handles, so the
/// runtime can tell stores the application can still observe from task-internal ones.
pub struct StoreRef {
    core: Arc<StoreCore>,
}

impl StoreRef {
    fn from_core(core: Arc<StoreCore>) -> Self {
        core.task_refs.fetch_add(1, Ordering::AcqRel);
        StoreRef { core }
    }

    /// True when both references name the same store.
    pub fn same_store(&self, other: &StoreRef) -> bool {
        Arc::ptr_eq(&self.core, &other.core)
    }
}

counted_handle!(StoreRef, task_refs);

/// A rectangular window `[offset, offset + shape)` into a store. Views alias their store; they
/// never copy. Tasks access a view through a partition built from its offset and shape.
#[derive(Clone, Debug)]
pub struct View {
    store: Store,
    offset: Point,
    shape: Shape,
}

/// True when `[offset, offset + shape)` has the dimensions of `extent` and lies inside
/// `[0, extent)` (overflow-safe).
fn box_fits(offset: &Point, shape: &Shape, extent: &Shape) -> bool {
    offset.dims() == extent.dims()
        && shape.dims() == extent.dims()
        && (0..extent.dims()).all(|d| {
            offset[d] >= 0
                && shape[d] >= 0
                && offset[d]
                    .checked_add(shape[d])
                    .is_some_and(|end| end <= extent[d])
        })
}

impl View {
    /// The view `[offset, offset + shape)` of `store`; fails if it does not fit.
    pub fn new(store: &Store, offset: Point, shape: Shape) -> Result<Self, IrError> {
        if !box_fits(&offset, &shape, &store.shape()) {
            return Err(IrError::ViewOutOfBounds {
                store: store.id(),
                store_shape: store.shape(),
                offset,
                shape,
            });
        }
        Ok(View {
            store: store.clone(),
            offset,
            shape,
        })
    }

    /// A view of this view: `offset` is relative to this view's origin.
    pub fn subview(&self, offset: Point, shape: Shape) -> Result<Self, IrError> {
        if !box_fits(&offset, &shape, &self.shape) {
            return Err(IrError::ViewOutOfBounds {
                store: self.store.id(),
                store_shape: self.store.shape(),
                offset: offset.checked_add(&self.offset).unwrap_or(offset),
                shape,
            });
        }
        // Inside this view, so the absolute offset is inside the store and cannot overflow.
        View::new(
            &self.store,
            offset.zip_with(&self.offset, |a, b| a + b),
            shape,
        )
    }

    /// The store the view aliases.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Origin of the view within its store.
    pub fn offset(&self) -> Point {
        self.offset
    }

    /// Extent of the view.
    pub fn shape(&self) -> Shape {
        self.shape
    }

    /// The view as a box in store coordinates.
    pub fn bounds(&self) -> Rect {
        Rect {
            lo: self.offset,
            hi: self.offset.zip_with(&self.shape, |o, s| o + s),
        }
    }

    /// True when the view covers its whole store.
    pub fn is_whole_store(&self) -> bool {
        self.shape == self.store.shape() && self.offset.as_slice().iter().all(|&o| o == 0)
    }
}
