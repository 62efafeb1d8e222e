//! Element types of stores, the Rust types that carry them, and typed scalars.

use std::fmt;

use crate::host::HostData;
use crate::privilege::ReductionOp;

/// The element type of a store.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum DType {
    /// 64-bit IEEE float.
    F64,
    /// 32-bit IEEE float.
    F32,
    /// 64-bit signed integer.
    I64,
    /// 32-bit signed integer.
    I32,
    /// Boolean, one byte per element (0 or 1).
    Bool,
    /// Complex number of two 32-bit floats (real part first), NumPy's `complex64`.
    C64,
    /// Complex number of two 64-bit floats (real part first), NumPy's `complex128`.
    C128,
}

impl DType {
    /// Size of one element in bytes.
    pub fn size_bytes(self) -> usize {
        match self {
            DType::C128 => 16,
            DType::F64 | DType::I64 | DType::C64 => 8,
            DType::F32 | DType::I32 => 4,
            DType::Bool => 1,
        }
    }

    /// The lower-case name used in messages and kernel names (`f64`, `bool`, ...).
    pub fn name(self) -> &'static str {
        match self {
            DType::F64 => "f64",
            DType::F32 => "f32",
            DType::I64 => "i64",
            DType::I32 => "i32",
            DType::Bool => "bool",
            DType::C64 => "c64",
            DType::C128 => "c128",
        }
    }

    /// True for the complex types.
    pub fn is_complex(self) -> bool {
        matches!(self, DType::C64 | DType::C128)
    }

    /// The type of one part (real or imaginary) of a complex type; the type itself otherwise.
    pub fn real_part(self) -> DType {
        match self {
            DType::C64 => DType::F32,
            DType::C128 => DType::F64,
            other => other,
        }
    }

    /// The complex type whose parts are this float type (`None` for non-floats).
    pub fn complex_of(self) -> Option<DType> {
        match self {
            DType::F32 | DType::C64 => Some(DType::C64),
            DType::F64 | DType::C128 => Some(DType::C128),
            _ => None,
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for f64 {}
    impl Sealed for f32 {}
    impl Sealed for i64 {}
    impl Sealed for i32 {}
    impl Sealed for bool {}
    impl Sealed for super::Complex32 {}
    impl Sealed for super::Complex64 {}
}

pub use num_complex::{Complex32, Complex64};

/// A Rust type that is the element type of some [`DType`]; implemented for exactly
/// `f64`, `f32`, `i64`, `i32`, `bool`, [`Complex32`] and [`Complex64`].
pub trait Element:
    sealed::Sealed + Copy + PartialEq + fmt::Debug + Send + Sync + Default + 'static
{
    /// The store dtype this Rust type represents.
    const DTYPE: DType;

    /// The identity of a reduction operator: `0` for sum (`-0.0` for floats), `1` for product,
    /// the largest value for min and the smallest for max (the infinities for floats); for
    /// `bool`, sum is `or` and product is `and`.
    fn reduction_identity(op: ReductionOp) -> Self;

    /// Combines an accumulated value with a contribution.
    fn reduce(op: ReductionOp, acc: Self, value: Self) -> Self;

    /// Wraps a value as a typed [`Scalar`].
    fn into_scalar(self) -> Scalar;

    /// Extracts a value of this type from a [`Scalar`] of the same dtype.
    fn from_scalar(s: Scalar) -> Option<Self>;

    /// Wraps a vector of this type as [`HostData`].
    fn wrap_host(values: Vec<Self>) -> HostData;

    /// Unwraps [`HostData`] of this dtype; `Err` gives it back unchanged otherwise.
    fn unwrap_host(data: HostData) -> Result<Vec<Self>, HostData>;
}

/// `Element`'s conversions to and from [`Scalar`] and [`HostData`] for the type whose
/// variant of both is `$dt`.
macro_rules! host_conversions {
    ($dt:ident) => {
        fn into_scalar(self) -> Scalar {
            Scalar::$dt(self)
        }

        fn from_scalar(s: Scalar) -> Option<Self> {
            match s {
                Scalar::$dt(v) => Some(v),
                _ => None,
            }
        }

        fn wrap_host(values: Vec<Self>) -> HostData {
            HostData::$dt(values)
        }

        fn unwrap_host(data: HostData) -> Result<Vec<Self>, HostData> {
            match data {
                HostData::$dt(v) => Ok(v),
                other => Err(other),
            }
        }
    };
}

/// A reduction's `min`/`max` step: `value` where `take_value` or where it is NaN, unless the
/// accumulated value already is NaN (NaN wins, as in NumPy).
fn nan_wins<T: Copy>(acc: T, value: T, take_value: bool, is_nan: impl Fn(T) -> bool) -> T {
    if is_nan(acc) {
        acc
    } else if take_value || is_nan(value) {
        value
    } else {
        acc
    }
}

macro_rules! numeric_element {
    ($t:ty, $dt:ident, zero: $zero:expr, lowest: $lowest:expr, highest: $highest:expr,
     add: $add:expr, mul: $mul:expr, is_nan: $is_nan:expr) => {
        impl Element for $t {
            const DTYPE: DType = DType::$dt;

            fn reduction_identity(op: ReductionOp) -> Self {
                match op {
                    ReductionOp::Sum => $zero,
                    ReductionOp::Prod => 1 as $t,
                    ReductionOp::Min => $highest,
                    ReductionOp::Max => $lowest,
                }
            }

            fn reduce(op: ReductionOp, acc: Self, value: Self) -> Self {
                let is_nan: fn(Self) -> bool = $is_nan;
                match op {
                    ReductionOp::Sum => $add(acc, value),
                    ReductionOp::Prod => $mul(acc, value),
                    ReductionOp::Min => nan_wins(acc, value, value < acc, is_nan),
                    ReductionOp::Max => nan_wins(acc, value, value > acc, is_nan),
                }
            }

            host_conversions!($dt);
        }
    };
}

// For floats the identities are -0.0 (so a sum of -0.0 stays -0.0) and the infinities (so
// infinite data survives min and max).
// Integer sums and products wrap (as the array library's kernels do); min and max of floats
// propagate NaN.
numeric_element!(f64, F64, zero: -0.0, lowest: f64::NEG_INFINITY, highest: f64::INFINITY,
    add: |a, b| a + b, mul: |a, b| a * b, is_nan: f64::is_nan);
numeric_element!(f32, F32, zero: -0.0, lowest: f32::NEG_INFINITY, highest: f32::INFINITY,
    add: |a, b| a + b, mul: |a, b| a * b, is_nan: f32::is_nan);
numeric_element!(i64, I64, zero: 0, lowest: i64::MIN, highest: i64::MAX,
    add: i64::wrapping_add, mul: i64::wrapping_mul, is_nan: |_| false);
numeric_element!(i32, I32, zero: 0, lowest: i32::MIN, highest: i32::MAX,
    add: i32::wrapping_add, mul: i32::wrapping_mul, is_nan: |_| false);

impl Element for bool {
    const DTYPE: DType = DType::Bool;

    fn reduction_identity(op: ReductionOp) -> Self {
        matches!(op, ReductionOp::Prod | ReductionOp::Min)
    }

    fn reduce(op: ReductionOp, acc: Self, value: Self) -> Self {
        match op {
            ReductionOp::Sum | ReductionOp::Max => acc || value,
            ReductionOp::Prod | ReductionOp::Min => acc && value,
        }
    }

    host_conversions!(Bool);
}

/// The complex element types ([`Complex32`], [`Complex64`]).
pub trait ComplexElement: Element {
    /// `a b` with each part rounded once after a fused multiply-add, `re = fma(a.re, b.re,
    /// -(a.im b.im))`, `im = fma(a.re, b.im, a.im b.re)`: how NumPy's vectorized `multiply`
    /// rounds on CPUs with FMA, and so every complex product diffuse computes.
    fn fused_product(self, o: Self) -> Self;
}

/// NumPy's order of complex numbers: by real part, then by imaginary part.
fn complex_less<T: PartialOrd>(a: &num_complex::Complex<T>, b: &num_complex::Complex<T>) -> bool {
    a.re < b.re || (a.re == b.re && a.im < b.im)
}

macro_rules! complex_element {
    ($t:ty, $part:ty, $dt:ident) => {
        impl Element for $t {
            const DTYPE: DType = DType::$dt;

            fn reduction_identity(op: ReductionOp) -> Self {
                let part = |v: $part| <$t>::new(v, v);
                match op {
                    ReductionOp::Sum => part(-0.0),
                    ReductionOp::Prod => <$t>::new(1.0, 0.0),
                    ReductionOp::Min => part(<$part>::INFINITY),
                    ReductionOp::Max => part(<$part>::NEG_INFINITY),
                }
            }

            // NumPy's lexicographic order between numbers.
            fn reduce(op: ReductionOp, acc: Self, value: Self) -> Self {
                let is_nan = |z: Self| z.re.is_nan() || z.im.is_nan();
                match op {
                    ReductionOp::Sum => acc + value,
                    ReductionOp::Prod => acc.fused_product(value),
                    ReductionOp::Min => nan_wins(acc, value, complex_less(&value, &acc), is_nan),
                    ReductionOp::Max => nan_wins(acc, value, complex_less(&acc, &value), is_nan),
                }
            }

            host_conversions!($dt);
        }
    };
}

macro_rules! complex_product {
    ($($t:ty),*) => {$(
        impl ComplexElement for $t {
            fn fused_product(self, o: Self) -> Self {
                <$t>::new(
                    self.re.mul_add(o.re, -(self.im * o.im)),
                    self.re.mul_add(o.im, self.im * o.re),
                )
            }
        }
    )*};
}

complex_product!(Complex32, Complex64);

complex_element!(Complex32, f32, C64);
complex_element!(Complex64, f64, C128);

/// A typed scalar passed by value to a task (e.g. the `0.2` of the stencil's `MULT`).
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Scalar {
    /// An `f64` value.
    F64(f64),
    /// An `f32` value.
    F32(f32),
    /// An `i64` value.
    I64(i64),
    /// An `i32` value.
    I32(i32),
    /// A `bool` value.
    Bool(bool),
    /// A `complex64` value.
    C64(Complex32),
    /// A `complex128` value.
    C128(Complex64),
}

impl Scalar {
    /// The dtype of the value.
    pub fn dtype(&self) -> DType {
        match self {
            Scalar::F64(_) => DType::F64,
            Scalar::F32(_) => DType::F32,
            Scalar::I64(_) => DType::I64,
            Scalar::I32(_) => DType::I32,
            Scalar::Bool(_) => DType::Bool,
            Scalar::C64(_) => DType::C64,
            Scalar::C128(_) => DType::C128,
        }
    }
}
