//! The distributed array: a view of a store plus the context its operations go to.

use std::fmt;

use diffuse_ir::{DType, Element, HostBlock, Partition, PendingUse, Shape, Store, Tuple, View};

use crate::context::ArrayContext;
use crate::error::{ArrayError, ArrayResult};

/// An n-d array (up to 6 dims; 0-d arrays hold one value) whose data lives in a diffuse store.
///
/// An `Array` is a handle: cloning it, or slicing it, gives another handle on the same
/// elements (a view never copies). Operations submit index tasks and return at once; only
/// reading values back ([`Array::to_vec`], [`Array::item`]) waits for them.
#[derive(Clone)]
pub struct Array {
    cx: ArrayContext,
    view: View,
}

impl Array {
    /// Wraps a view of a store created on `cx`'s IR context, e.g. the output of another
    /// library's task (this is how libraries compose: a sparse library's SpMV result is an
    /// array the array library keeps computing with, and their tasks fuse).
    pub fn from_view(cx: &ArrayContext, view: View) -> Self {
        Array {
            cx: cx.clone(),
            view,
        }
    }

    /// A new, zero-filled store of `shape` and `dtype`, as an array.
    pub(crate) fn fresh(cx: &ArrayContext, shape: Shape, dtype: DType) -> ArrayResult {
        let store = cx.ir().create_store(shape.as_slice(), dtype)?;
        Ok(Array::from_view(cx, store.view()))
    }

    /// An array holding `data` (row-major) with shape `shape`.
    pub fn from_vec<T: Element>(cx: &ArrayContext, shape: &[i64], data: Vec<T>) -> ArrayResult {
        let shape = Tuple::shape(shape)?;
        if data.len() as i64 != shape.volume() {
            return Err(ArrayError::HostData {
                op: "from_vec",
                reason: format!(
                    "{} values given for shape {shape} ({} elements)",
                    data.len(),
                    shape.volume()
                ),
            });
        }
        let store = cx.ir().store_from_vec(shape.as_slice(), data)?;
        Ok(Array::from_view(cx, store.view()))
    }

    /// The context the array's operations go to.
    pub fn context(&self) -> &ArrayContext {
        &self.cx
    }

    /// The array's extent in each dimension.
    pub fn shape(&self) -> Shape {
        self.view.shape()
    }

    /// Number of dimensions.
    pub fn ndim(&self) -> usize {
        self.view.shape().dims()
    }

    /// Number of elements.
    pub fn size(&self) -> usize {
        self.view.shape().volume() as usize
    }

    /// True when the array has no elements.
    pub fn is_empty(&self) -> bool {
        self.size() == 0
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.view.store().dtype()
    }

    /// The store window this array is.
    pub fn view(&self) -> &View {
        &self.view
    }

    /// The store holding the data (shared with every view of it).
    pub fn store(&self) -> &Store {
        self.view.store()
    }

    /// True when both arrays are windows of the same store.
    pub fn shares_store(&self, other: &Array) -> bool {
        self.store()
            .task_ref()
            .same_store(&other.store().task_ref())
    }

    /// Fails unless `values`, to be written into this array's store by `op`, belongs to
    /// the same context and has this array's dtype.
    pub(crate) fn check_values(&self, op: &'static str, values: &Array) -> Result<(), ArrayError> {
        self.context().check_same(values.context(), op)?;
        if values.dtype() != self.dtype() {
            return Err(ArrayError::DTypeMismatch {
                op,
                lhs: self.dtype(),
                rhs: values.dtype(),
            });
        }
        Ok(())
    }

    /// The partition through which the point tasks of a launch over `launch` (producing an
    /// array of shape `out`) see this array, broadcast NumPy-style to `out`.
    pub(crate) fn partition_for(&self, out: Shape, launch: Shape) -> Result<Partition, ArrayError> {
        crate::broadcast::operand_partition(&self.view, out, launch)
    }

    /// Copies the elements to the host, row-major, waiting for pending operations.
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>, ArrayError> {
        self.check_host_dtype::<T>("to_vec")?;
        Ok(self.cx.ir().read::<T>(&self.view)?)
    }

    /// Copies the elements into `out` (row-major), which holds exactly `size()` elements,
    /// waiting for pending operations that write them: one copy into memory the caller
    /// owns (a NumPy array's buffer).
    pub fn read_into<T: Element>(&self, out: &mut [T]) -> Result<(), ArrayError> {
        self.check_host_dtype::<T>("read_into")?;
        Ok(self.cx.ir().read_into::<T>(&self.view, out)?)
    }

    /// The elements, handed over in the host memory that holds them, when this array is its
    /// whole store and the runtime's backend keeps it in one host buffer (see
    /// [`diffuse_ir::Executor::take_host`]); `None` otherwise. The caller uses the array's
    /// store no more afterwards: an array moving to a host library without a copy.
    pub fn take_host(&self) -> Result<Option<HostBlock>, ArrayError> {
        Ok(self.cx.ir().take_host(&self.view)?)
    }

    /// The single value of a one-element (e.g. 0-d) array, waiting for pending operations.
    pub fn item<T: Element>(&self) -> Result<T, ArrayError> {
        self.check_host_dtype::<T>("item")?;
        if self.size() != 1 {
            return Err(ArrayError::HostData {
                op: "item",
                reason: format!(
                    "an array of shape {} has {} elements, not 1",
                    self.shape(),
                    self.size()
                ),
            });
        }
        Ok(self.cx.ir().read_scalar::<T>(&self.view)?)
    }

    /// Overwrites the elements with row-major host `data`, ordered after pending operations.
    pub fn write_from<T: Element>(&self, data: Vec<T>) -> Result<(), ArrayError> {
        self.check_host_dtype::<T>("write_from")?;
        if data.len() != self.size() {
            return Err(ArrayError::HostData {
                op: "write_from",
                reason: format!(
                    "{} values given for an array of shape {} ({} elements)",
                    data.len(),
                    self.shape(),
                    self.size()
                ),
            });
        }
        Ok(self.cx.ir().write(&self.view, data)?)
    }

    /// What buffered work still does with this array's store (see
    /// [`diffuse_ir::Executor::pending_use`]): a front end runs a small operation on host
    /// copies when its operands need not wait, instead of deferring it.
    pub fn pending_use(&self) -> PendingUse {
        self.cx.ir().pending_use(&self.view)
    }

    /// The one-element view at `index` (relative to this array), or an error naming the
    /// index and the shape.
    fn element_view(&self, op: &'static str, index: &[i64]) -> Result<View, ArrayError> {
        let shape = self.shape();
        let inside = index.len() == shape.dims()
            && index
                .iter()
                .zip(shape.as_slice())
                .all(|(&i, &n)| (0..n).contains(&i));
        if !inside {
            return Err(ArrayError::BadArgument {
                op,
                reason: format!("index {index:?} is outside an array of shape {shape}"),
            });
        }
        Ok(self
            .view
            .subview(Tuple::new(index)?, Tuple::shape(&vec![1; index.len()])?)?)
    }

    /// The element at `index`, read without a task: it waits only for pending work that
    /// writes this array's store.
    pub fn element<T: Element>(&self, index: &[i64]) -> Result<T, ArrayError> {
        self.check_host_dtype::<T>("element")?;
        let view = self.element_view("element", index)?;
        Ok(self.cx.ir().read_scalar::<T>(&view)?)
    }

    /// Stores `value` at `index` without a task, after pending work that uses this array's
    /// store (callers that want it buffered and fused submit a fill instead).
    pub fn set_element<T: Element>(&self, index: &[i64], value: T) -> Result<(), ArrayError> {
        self.check_host_dtype::<T>("set_element")?;
        let view = self.element_view("set_element", index)?;
        Ok(self.cx.ir().write(&view, vec![value])?)
    }

    pub(crate) fn check_host_dtype<T: Element>(&self, op: &'static str) -> Result<(), ArrayError> {
        if T::DTYPE == self.dtype() {
            Ok(())
        } else {
            Err(ArrayError::HostData {
                op,
                reason: format!(
                    "the array holds {} but {} was requested",
                    self.dtype(),
                    T::DTYPE
                ),
            })
        }
    }
}

impl fmt::Debug for Array {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Array({} {} at {} of store {})",
            self.dtype(),
            self.shape(),
            self.view.offset(),
            self.store().id()
        )
    }
}
