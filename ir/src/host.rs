//! Typed host-side copies of store data, exchanged between the application and a backend.

use crate::dtype::{Complex32, Complex64, DType, Element};

/// A flat, row-major host vector of one dtype.
#[derive(Clone, PartialEq, Debug)]
pub enum HostData {
    /// `f64` values.
    F64(Vec<f64>),
    /// `f32` values.
    F32(Vec<f32>),
    /// `i64` values.
    I64(Vec<i64>),
    /// `i32` values.
    I32(Vec<i32>),
    /// `bool` values.
    Bool(Vec<bool>),
    /// `complex64` values.
    C64(Vec<Complex32>),
    /// `complex128` values.
    C128(Vec<Complex64>),
}

impl HostData {
    /// The dtype of the values.
    pub fn dtype(&self) -> DType {
        match self {
            HostData::F64(_) => DType::F64,
            HostData::F32(_) => DType::F32,
            HostData::I64(_) => DType::I64,
            HostData::I32(_) => DType::I32,
            HostData::Bool(_) => DType::Bool,
            HostData::C64(_) => DType::C64,
            HostData::C128(_) => DType::C128,
        }
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        match self {
            HostData::F64(v) => v.len(),
            HostData::F32(v) => v.len(),
            HostData::I64(v) => v.len(),
            HostData::I32(v) => v.len(),
            HostData::Bool(v) => v.len(),
            HostData::C64(v) => v.len(),
            HostData::C128(v) => v.len(),
        }
    }

    /// True when there are no values.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Wraps a typed vector.
    pub fn from_vec<T: Element>(values: Vec<T>) -> Self {
        T::wrap_host(values)
    }

    /// Unwraps into a typed vector; `Err(self)` if the dtype differs.
    pub fn into_vec<T: Element>(self) -> Result<Vec<T>, HostData> {
        T::unwrap_host(self)
    }

    /// The values' native-endian bytes.
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            HostData::F64(v) => bytes_of(v),
            HostData::F32(v) => bytes_of(v),
            HostData::I64(v) => bytes_of(v),
            HostData::I32(v) => bytes_of(v),
            HostData::Bool(v) => bytes_of(v),
            HostData::C64(v) => bytes_of(v),
            HostData::C128(v) => bytes_of(v),
        }
    }
}

/// The native-endian bytes of a slice of elements.
pub(crate) fn bytes_of<T: Element>(values: &[T]) -> &[u8] {
    // SAFETY: element types are plain old data without padding (bool is one byte, 0 or 1);
    // the byte slice covers exactly `values` and borrows it.
    unsafe {
        std::slice::from_raw_parts(values.as_ptr().cast::<u8>(), std::mem::size_of_val(values))
    }
}

/// The bytes of a mutable slice of elements, to be filled with values of the same type.
pub(crate) fn bytes_of_mut<T: Element>(values: &mut [T]) -> &mut [u8] {
    // SAFETY: as `bytes_of`; writers fill it only with bytes of valid `T` values (a store
    // of `T`'s dtype), so every element stays valid.
    unsafe {
        std::slice::from_raw_parts_mut(
            values.as_mut_ptr().cast::<u8>(),
            std::mem::size_of_val(values),
        )
    }
}

/// A store's elements handed over in the host memory that held them, without a copy
/// ([`crate::Executor::take_host`]): row-major, native-endian, of one dtype, kept alive by
/// the owner the backend gave with them (its buffer, freed when the block is dropped).
/// Whoever holds the block may read and write the bytes; nothing else uses them.
pub struct HostBlock {
    ptr: std::ptr::NonNull<u8>,
    bytes: usize,
    dtype: DType,
    _owner: Box<dyn std::any::Any + Send + Sync>,
}

// SAFETY: the bytes belong to the block alone (`HostBlock::new`'s contract) and live as long
// as its owner, which is itself `Send + Sync`.
unsafe impl Send for HostBlock {}
// SAFETY: as above; shared access only hands out the address.
unsafe impl Sync for HostBlock {}

impl HostBlock {
    /// A block of `bytes` bytes of `dtype` elements at `ptr`, alive as long as `owner`.
    ///
    /// # Safety
    /// `ptr` is valid for reads and writes of `bytes` bytes, aligned for `dtype`, for as long
    /// as `owner` lives, and nothing but the block's holder reads or writes them meanwhile.
    pub unsafe fn new(
        ptr: std::ptr::NonNull<u8>,
        bytes: usize,
        dtype: DType,
        owner: Box<dyn std::any::Any + Send + Sync>,
    ) -> Self {
        HostBlock {
            ptr,
            bytes,
            dtype,
            _owner: owner,
        }
    }

    /// The address of the first element.
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// The length in bytes.
    pub fn len_bytes(&self) -> usize {
        self.bytes
    }

    /// The dtype of the elements.
    pub fn dtype(&self) -> DType {
        self.dtype
    }
}

impl std::fmt::Debug for HostBlock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HostBlock({} bytes of {})", self.bytes, self.dtype)
    }
}
