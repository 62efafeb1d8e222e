//! Arithmetic on element types, and calling dtype-generic code on a run-time [`DType`].
//!
//! `diffuse_ir::Element` says what a store can hold; the traits here add what the array
//! operations compute with. Integer arithmetic wraps (as NumPy's does); float `maximum` and
//! `minimum` propagate NaN (as NumPy's do). Complex arithmetic is in [`crate::complex`].

use diffuse_ir::{Complex32, Complex64, DType, Element, Scalar};

/// Conversions every element type supports (`astype`, scalar operands).
pub trait Convert: Element {
    /// The value as `f64` (`bool` is 0 or 1).
    fn as_f64(self) -> f64;
    /// The value as `i64` (floats truncate toward zero, saturating; `bool` is 0 or 1).
    fn as_i64(self) -> i64;
    /// The nearest value of this type to `x` (`bool`: `x != 0`).
    fn from_f64(x: f64) -> Self;
    /// The value of this type closest to `x` (`bool`: `x != 0`; narrower ints wrap).
    fn from_i64(x: i64) -> Self;
    /// The value as a complex number (a real value has imaginary part 0).
    fn as_complex(self) -> Complex64 {
        Complex64::new(self.as_f64(), 0.0)
    }
    /// The value of this type closest to `z`: a real type takes the real part (as NumPy's
    /// `astype` does, discarding the imaginary part), `bool` is `z != 0`.
    fn from_complex(z: Complex64) -> Self {
        Self::from_f64(z.re)
    }
}

/// Converts between element types the way `astype` does: through `complex128` when either
/// side is complex, through `f64` when either side is a float, exactly through `i64` between
/// integers and booleans.
pub fn cast<T: Convert, U: Convert>(x: T) -> U {
    if T::DTYPE.is_complex() || U::DTYPE.is_complex() {
        U::from_complex(x.as_complex())
    } else if is_float(T::DTYPE) || is_float(U::DTYPE) {
        U::from_f64(x.as_f64())
    } else {
        U::from_i64(x.as_i64())
    }
}

/// True for `f64` and `f32`.
pub fn is_float(dtype: DType) -> bool {
    matches!(dtype, DType::F64 | DType::F32)
}

/// True for `complex128` and `complex64`.
pub fn is_complex(dtype: DType) -> bool {
    dtype.is_complex()
}

/// True for the types arithmetic is defined on (all but `bool`).
pub fn is_numeric(dtype: DType) -> bool {
    dtype != DType::Bool
}

/// Element types with sums, products and NumPy's order: the numbers, real and complex
/// (what reductions, scans and products compute with).
pub trait Arith: Convert {
    /// `a + b` (wrapping for integers).
    fn add(self, o: Self) -> Self;
    /// `a - b` (wrapping for integers).
    fn sub(self, o: Self) -> Self;
    /// `a * b` (wrapping for integers).
    fn mul(self, o: Self) -> Self;
    /// The larger of two values; NaN if either is NaN.
    fn maximum(self, o: Self) -> Self;
    /// The smaller of two values; NaN if either is NaN.
    fn minimum(self, o: Self) -> Self;
    /// True for NaN (a complex number with a NaN part); never for integers.
    fn is_nan(self) -> bool;
    /// `a < b` in NumPy's order (lexicographic for complex numbers); false with NaN.
    fn less(self, o: Self) -> bool;
}

/// Real element types: arithmetic and the total order of `<` (NaN aside).
pub trait Num: Arith + PartialOrd {
    /// `-a` (wrapping for integers).
    fn neg(self) -> Self;
    /// `|a|` (wrapping for the most negative integer).
    fn abs(self) -> Self;
}

/// Floating-point element types: division and the transcendental functions.
pub trait Float: Num {
    /// `a / b`.
    fn div(self, o: Self) -> Self;
    /// `a` raised to the power `b`.
    fn pow(self, o: Self) -> Self;
    /// `e^a`.
    fn exp(self) -> Self;
    /// Natural logarithm.
    fn ln(self) -> Self;
    /// Square root.
    fn sqrt(self) -> Self;
    /// The error function.
    fn erf(self) -> Self;
    /// Sine.
    fn sin(self) -> Self;
    /// Cosine.
    fn cos(self) -> Self;
    /// Hyperbolic tangent.
    fn tanh(self) -> Self;
    /// The largest integer not above the value.
    fn floor(self) -> Self;
    /// C's `fmod`: the remainder of truncated division, with the dividend's sign.
    fn fmod(self, o: Self) -> Self;
    /// The magnitude of `self` with the sign of `o`.
    fn copysign(self, o: Self) -> Self;
}

/// NumPy's float `divmod(a, b)`: `(floor_divide, remainder)`. The remainder has the
/// divisor's sign (zero gets it too) and the quotient is the floor of the exact quotient,
/// rounded back up where `fmod`'s remainder made it fall short; for `b == 0` both are what
/// IEEE division and `fmod` give.
pub fn float_divmod<T: Float>(a: T, b: T) -> (T, T) {
    let (zero, one, half) = (T::from_f64(0.0), T::from_f64(1.0), T::from_f64(0.5));
    let rem = a.fmod(b);
    if b == zero {
        return (a.div(b), rem);
    }
    let mut div = a.sub(rem).div(b);
    let rem = if rem != zero {
        if (b < zero) != (rem < zero) {
            div = div.sub(one);
            rem.add(b)
        } else {
            rem
        }
    } else {
        zero.copysign(b)
    };
    let quotient = if div != zero {
        let floor = div.floor();
        if div.sub(floor) > half {
            floor.add(one)
        } else {
            floor
        }
    } else {
        zero.copysign(a.div(b))
    };
    (quotient, rem)
}

/// Raises the floating-point divide-by-zero flag, which NumPy reports for integer division by
/// zero too: the point executor reads the flags after each kernel (`diffuse_backend::point::fp`)
/// and the Python package warns or raises as NumPy's error state says.
#[cold]
fn raise_divide_by_zero() {
    std::hint::black_box(std::hint::black_box(1.0_f64) / std::hint::black_box(0.0_f64));
}

/// NumPy's integer `floor_divide`: floored, 0 for a zero divisor, wrapping for the most
/// negative value divided by -1.
pub fn int_floor_divide(a: i64, b: i64) -> i64 {
    if b == 0 {
        raise_divide_by_zero();
        return 0;
    }
    let (q, r) = (a.wrapping_div(b), a.wrapping_rem(b));
    if r != 0 && (r < 0) != (b < 0) {
        q.wrapping_sub(1)
    } else {
        q
    }
}

/// NumPy's integer `remainder`: with the divisor's sign, 0 for a zero divisor.
pub fn int_remainder(a: i64, b: i64) -> i64 {
    if b == 0 {
        raise_divide_by_zero();
        return 0;
    }
    let r = a.wrapping_rem(b);
    if r != 0 && (r < 0) != (b < 0) {
        r.wrapping_add(b)
    } else {
        r
    }
}

/// NumPy's `left_shift` for a `bits`-wide integer: counts outside `0..bits` give 0.
pub fn shift_left(a: i64, count: i64, bits: i64) -> i64 {
    if (0..bits).contains(&count) {
        a.wrapping_shl(count as u32)
    } else {
        0
    }
}

/// NumPy's `right_shift` (arithmetic) for a `bits`-wide integer: counts outside `0..bits`
/// give the sign fill, 0 or -1.
pub fn shift_right(a: i64, count: i64, bits: i64) -> i64 {
    if (0..bits).contains(&count) {
        a >> count
    } else if a < 0 {
        -1
    } else {
        0
    }
}

/// `Convert` for the numeric types, by Rust's `as` casts (floats to integers truncate toward
/// zero, saturating; integers to narrower integers wrap).
macro_rules! cast_convert {
    ($($t:ty),*) => {
        $(impl Convert for $t {
            fn as_f64(self) -> f64 {
                self as f64
            }
            fn as_i64(self) -> i64 {
                self as i64
            }
            fn from_f64(x: f64) -> Self {
                x as $t
            }
            fn from_i64(x: i64) -> Self {
                x as $t
            }
        })*
    };
}

cast_convert!(f64, f32, i64, i32);

/// Trait methods `fn name(self) -> Self` that call the type's own method of that name.
macro_rules! inherent_unary {
    ($t:ty: $($name:ident),*) => {
        $(fn $name(self) -> Self {
            <$t>::$name(self)
        })*
    };
}

macro_rules! float_impls {
    ($t:ty, $erf:path) => {
        impl Num for $t {
            fn neg(self) -> Self {
                -self
            }
            fn abs(self) -> Self {
                <$t>::abs(self)
            }
        }
        impl Arith for $t {
            fn add(self, o: Self) -> Self {
                self + o
            }
            fn sub(self, o: Self) -> Self {
                self - o
            }
            fn mul(self, o: Self) -> Self {
                self * o
            }
            fn is_nan(self) -> bool {
                <$t>::is_nan(self)
            }
            fn less(self, o: Self) -> bool {
                self < o
            }
            fn maximum(self, o: Self) -> Self {
                if self.is_nan() || o.is_nan() {
                    <$t>::NAN
                } else {
                    <$t>::max(self, o)
                }
            }
            fn minimum(self, o: Self) -> Self {
                if self.is_nan() || o.is_nan() {
                    <$t>::NAN
                } else {
                    <$t>::min(self, o)
                }
            }
        }
        impl Float for $t {
            inherent_unary!($t: exp, ln, sqrt, sin, cos, tanh, floor);
            fn div(self, o: Self) -> Self {
                self / o
            }
            fn pow(self, o: Self) -> Self {
                self.powf(o)
            }
            fn erf(self) -> Self {
                $erf(self)
            }
            fn fmod(self, o: Self) -> Self {
                self % o
            }
            fn copysign(self, o: Self) -> Self {
                <$t>::copysign(self, o)
            }
        }
    };
}

float_impls!(f64, libm::erf);
float_impls!(f32, libm::erff);

macro_rules! int_impls {
    ($t:ty) => {
        impl Num for $t {
            fn neg(self) -> Self {
                self.wrapping_neg()
            }
            fn abs(self) -> Self {
                self.wrapping_abs()
            }
        }
        impl Arith for $t {
            fn add(self, o: Self) -> Self {
                self.wrapping_add(o)
            }
            fn sub(self, o: Self) -> Self {
                self.wrapping_sub(o)
            }
            fn mul(self, o: Self) -> Self {
                self.wrapping_mul(o)
            }
            fn is_nan(self) -> bool {
                false
            }
            fn less(self, o: Self) -> bool {
                self < o
            }
            fn maximum(self, o: Self) -> Self {
                Ord::max(self, o)
            }
            fn minimum(self, o: Self) -> Self {
                Ord::min(self, o)
            }
        }
    };
}

int_impls!(i64);
int_impls!(i32);

impl Convert for bool {
    fn as_f64(self) -> f64 {
        f64::from(u8::from(self))
    }
    fn as_i64(self) -> i64 {
        i64::from(self)
    }
    fn from_f64(x: f64) -> Self {
        x != 0.0
    }
    fn from_i64(x: i64) -> Self {
        x != 0
    }
    fn from_complex(z: Complex64) -> Self {
        z.re != 0.0 || z.im != 0.0
    }
}

/// `Convert` for the complex types: a real value is the real part of its complex number.
macro_rules! complex_convert {
    ($($t:ty => $part:ty),*) => {
        $(impl Convert for $t {
            fn as_f64(self) -> f64 {
                f64::from(self.re)
            }
            fn as_i64(self) -> i64 {
                self.re as i64
            }
            fn from_f64(x: f64) -> Self {
                <$t>::new(x as $part, 0.0)
            }
            fn from_i64(x: i64) -> Self {
                <$t>::new(x as $part, 0.0)
            }
            fn as_complex(self) -> Complex64 {
                Complex64::new(f64::from(self.re), f64::from(self.im))
            }
            fn from_complex(z: Complex64) -> Self {
                <$t>::new(z.re as $part, z.im as $part)
            }
        })*
    };
}

complex_convert!(Complex32 => f32, Complex64 => f64);

/// Converts a scalar operand to `dtype` if that loses nothing: any number to a float type,
/// an integral value that fits to an integer type, a bool only to bool. `None` otherwise.
pub fn scalar_as(value: Scalar, dtype: DType) -> Option<Scalar> {
    let as_f64 = match value {
        Scalar::F64(v) => v,
        Scalar::F32(v) => f64::from(v),
        Scalar::I64(v) => v as f64,
        Scalar::I32(v) => f64::from(v),
        Scalar::Bool(b) => return (dtype == DType::Bool).then_some(Scalar::Bool(b)),
        Scalar::C64(z) => return complex_scalar_as(Convert::as_complex(z), dtype),
        Scalar::C128(z) => return complex_scalar_as(z, dtype),
    };
    let as_int = match value {
        Scalar::I64(v) => Some(v),
        Scalar::I32(v) => Some(i64::from(v)),
        _ if as_f64.fract() == 0.0 && as_f64.abs() < 9.007_199_254_740_992e15 => {
            Some(as_f64 as i64)
        }
        _ => None,
    };
    match dtype {
        DType::F64 => Some(Scalar::F64(as_f64)),
        DType::F32 => Some(Scalar::F32(as_f64 as f32)),
        DType::I64 => as_int.map(Scalar::I64),
        DType::I32 => as_int.and_then(|v| i32::try_from(v).ok()).map(Scalar::I32),
        DType::Bool => None,
        DType::C64 => Some(Scalar::C64(Complex32::new(as_f64 as f32, 0.0))),
        DType::C128 => Some(Scalar::C128(Complex64::new(as_f64, 0.0))),
    }
}

/// A complex scalar operand converted to `dtype`: only to a complex type (meeting a real
/// array, NumPy makes the result complex; the caller promotes first).
fn complex_scalar_as(z: Complex64, dtype: DType) -> Option<Scalar> {
    match dtype {
        DType::C64 => Some(Scalar::C64(Convert::from_complex(z))),
        DType::C128 => Some(Scalar::C128(z)),
        _ => None,
    }
}

/// Expands `$body` with `$t` bound to the Rust type of `$dtype` when it is a float type;
/// otherwise evaluates `$otherwise`.
macro_rules! with_float {
    ($dtype:expr, $t:ident => $body:expr, else $otherwise:expr) => {
        diffuse_ir::with_dtypes!($dtype, [F64 => f64, F32 => f32], $t => $body, else $otherwise)
    };
}

/// Like [`with_float`] for the integer types.
macro_rules! with_int {
    ($dtype:expr, $t:ident => $body:expr, else $otherwise:expr) => {
        diffuse_ir::with_dtypes!($dtype, [I64 => i64, I32 => i32], $t => $body, else $otherwise)
    };
}

/// Like [`with_float`] for the numeric types (floats and integers).
macro_rules! with_numeric {
    ($dtype:expr, $t:ident => $body:expr, else $otherwise:expr) => {
        diffuse_ir::with_dtypes!(
            $dtype,
            [I64 => i64, I32 => i32, F64 => f64, F32 => f32],
            $t => $body,
            else $otherwise
        )
    };
}

/// Like [`with_float`] for the types with arithmetic (`Arith`): integers, floats, complex.
macro_rules! with_arith {
    ($dtype:expr, $t:ident => $body:expr, else $otherwise:expr) => {
        diffuse_ir::with_dtypes!(
            $dtype,
            [
                I64 => i64, I32 => i32, F64 => f64, F32 => f32,
                C64 => diffuse_ir::Complex32, C128 => diffuse_ir::Complex64
            ],
            $t => $body,
            else $otherwise
        )
    };
}

/// Like [`with_float`] for the complex types.
macro_rules! with_complex {
    ($dtype:expr, $t:ident => $body:expr, else $otherwise:expr) => {
        diffuse_ir::with_dtypes!(
            $dtype,
            [C64 => diffuse_ir::Complex32, C128 => diffuse_ir::Complex64],
            $t => $body,
            else $otherwise
        )
    };
}

pub(crate) use diffuse_ir::with_element_type as with_any;
pub(crate) use {with_arith, with_complex, with_float, with_int, with_numeric};
