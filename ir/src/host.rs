//! Typed host-side copies of store data, exchanged between the application and a backend.

use crate::dtype::{DType, Element};

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
}
