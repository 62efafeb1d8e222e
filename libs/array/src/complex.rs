//! Complex arithmetic as NumPy computes it, so that complex results match NumPy's bit for bit.
//!
//! Sums and differences are part by part; a product rounds each part once after a fused
//! multiply-add, `re = fma(a, c, -(b d))`, `im = fma(a, d, b c)`, as NumPy's vectorized
//! `multiply` computes it on CPUs with FMA (inside `power`, NumPy multiplies by the
//! textbook formula, and so does `power` here). Division is
//! Smith's algorithm, scaled by the divisor's larger part, with NumPy's special case for a
//! zero divisor. The transcendental functions are the C library's (`cexp`, `csqrt`, ...),
//! which NumPy calls as well; `log2`, `log10`, `log1p`, `expm1` and `sign` follow NumPy's own
//! formulas, and `power` NumPy's repeated squaring for small integral exponents. Ordering
//! (comparisons, `maximum`, `minimum`, `sort`) is lexicographic, real part first, with NaN
//! propagating through `maximum` and `minimum`.

use diffuse_ir::{Complex32, Complex64, ComplexElement};

use crate::element::Arith;

/// The C library's complex functions (C99 `<complex.h>`), which take and return
/// `double _Complex` / `float _Complex`: two adjacent floats, laid out and passed as
/// `num_complex::Complex` (`#[repr(C)]`) is.
mod libm_complex {
    use diffuse_ir::{Complex32, Complex64};

    #[link(name = "m")]
    extern "C" {
        pub fn cexp(z: Complex64) -> Complex64;
        pub fn clog(z: Complex64) -> Complex64;
        pub fn csqrt(z: Complex64) -> Complex64;
        pub fn csin(z: Complex64) -> Complex64;
        pub fn ccos(z: Complex64) -> Complex64;
        pub fn ctan(z: Complex64) -> Complex64;
        pub fn casin(z: Complex64) -> Complex64;
        pub fn cacos(z: Complex64) -> Complex64;
        pub fn catan(z: Complex64) -> Complex64;
        pub fn csinh(z: Complex64) -> Complex64;
        pub fn ccosh(z: Complex64) -> Complex64;
        pub fn ctanh(z: Complex64) -> Complex64;
        pub fn cpow(z: Complex64, w: Complex64) -> Complex64;
        pub fn cexpf(z: Complex32) -> Complex32;
        pub fn clogf(z: Complex32) -> Complex32;
        pub fn csqrtf(z: Complex32) -> Complex32;
        pub fn csinf(z: Complex32) -> Complex32;
        pub fn ccosf(z: Complex32) -> Complex32;
        pub fn ctanf(z: Complex32) -> Complex32;
        pub fn casinf(z: Complex32) -> Complex32;
        pub fn cacosf(z: Complex32) -> Complex32;
        pub fn catanf(z: Complex32) -> Complex32;
        pub fn csinhf(z: Complex32) -> Complex32;
        pub fn ccoshf(z: Complex32) -> Complex32;
        pub fn ctanhf(z: Complex32) -> Complex32;
        pub fn cpowf(z: Complex32, w: Complex32) -> Complex32;
    }
}

/// A complex element type (`complex64`, `complex128`) with the operations the array
/// library computes on it.
pub trait ComplexFloat: Arith {
    /// The type of each part (`f32`, `f64`).
    type Part: diffuse_ir::Element + PartialOrd;
    /// The real part.
    fn re(self) -> Self::Part;
    /// The imaginary part.
    fn im(self) -> Self::Part;
    /// The complex conjugate.
    fn conj(self) -> Self;
    /// `|z|`, scaled by the larger part: `l sqrt(fma(r, r, 1))` with `r` the ratio of the
    /// smaller part to the larger `l` (NumPy's vectorized `absolute`); infinite when either
    /// part is, else NaN when either part is.
    fn abs(self) -> Self::Part;
    /// The argument, `atan2(im, re)`.
    fn angle(self) -> Self::Part;
    /// `-a`.
    fn neg(self) -> Self;
    /// `a / b` by Smith's algorithm, as NumPy divides.
    fn div(self, o: Self) -> Self;
    /// `a ** b` as NumPy's `power`: 1 for a zero exponent; for a zero base, 0 when the
    /// exponent's real part is positive, else NaN (an invalid operation); integral powers
    /// below 100 by repeated squaring; `cpow` otherwise.
    fn pow(self, o: Self) -> Self;
    /// `e^z`.
    fn exp(self) -> Self;
    /// The principal natural logarithm.
    fn ln(self) -> Self;
    /// The principal square root.
    fn sqrt(self) -> Self;
    /// `sin z`.
    fn sin(self) -> Self;
    /// `cos z`.
    fn cos(self) -> Self;
    /// `tan z`.
    fn tan(self) -> Self;
    /// `asin z`.
    fn asin(self) -> Self;
    /// `acos z`.
    fn acos(self) -> Self;
    /// `atan z`.
    fn atan(self) -> Self;
    /// `sinh z`.
    fn sinh(self) -> Self;
    /// `cosh z`.
    fn cosh(self) -> Self;
    /// `tanh z`.
    fn tanh(self) -> Self;
    /// `log2 z`: the natural logarithm times `log2(e)`.
    fn log2(self) -> Self;
    /// `log10 z`: the natural logarithm times `log10(e)`.
    fn log10(self) -> Self;
    /// `ln(1 + z)`.
    fn log1p(self) -> Self;
    /// `e^z - 1`, accurate for small real parts.
    fn expm1(self) -> Self;
    /// NumPy 2's `sign`: `z / hypot(re, im)`, 0 for 0, NaN for NaN.
    fn sign(self) -> Self;
    /// Each part rounded to the nearest integer, ties to even (NumPy's `rint`).
    fn rint(self) -> Self;
    /// True when either part is infinite.
    fn is_infinite(self) -> bool;
    /// True when both parts are finite.
    fn is_finite(self) -> bool;
    /// `a <= b` in NumPy's lexicographic order.
    fn less_equal(self, o: Self) -> bool;
}

macro_rules! complex_float {
    ($t:ty, $part:ty, $log2e:expr, $log10e:expr,
     [$exp:ident, $ln:ident, $sqrt:ident, $sin:ident, $cos:ident, $tan:ident, $asin:ident,
      $acos:ident, $atan:ident, $sinh:ident, $cosh:ident, $tanh:ident, $cpow:ident]) => {
        impl Arith for $t {
            fn add(self, o: Self) -> Self {
                <$t>::new(self.re + o.re, self.im + o.im)
            }
            fn sub(self, o: Self) -> Self {
                <$t>::new(self.re - o.re, self.im - o.im)
            }
            fn mul(self, o: Self) -> Self {
                ComplexElement::fused_product(self, o)
            }
            // The larger (smaller) value in lexicographic order; a NaN operand (the first
            // if both) wins.
            fn maximum(self, o: Self) -> Self {
                if Arith::is_nan(self) || !Arith::is_nan(o) && o.less_equal(self) {
                    self
                } else {
                    o
                }
            }
            fn minimum(self, o: Self) -> Self {
                if Arith::is_nan(self) || !Arith::is_nan(o) && self.less_equal(o) {
                    self
                } else {
                    o
                }
            }
            fn is_nan(self) -> bool {
                self.re.is_nan() || self.im.is_nan()
            }
            // NumPy's order: by real part where neither imaginary part is NaN, else by
            // imaginary part where the real parts are equal.
            fn less(self, o: Self) -> bool {
                self.re < o.re && !self.im.is_nan() && !o.im.is_nan()
                    || self.re == o.re && self.im < o.im
            }
        }

        impl ComplexFloat for $t {
            type Part = $part;

            fn re(self) -> $part {
                self.re
            }
            fn im(self) -> $part {
                self.im
            }
            fn conj(self) -> Self {
                <$t>::new(self.re, -self.im)
            }
            fn abs(self) -> $part {
                let (re, im) = (self.re.abs(), self.im.abs());
                let (larger, smaller) = if re >= im { (re, im) } else { (im, re) };
                if re.is_infinite() || im.is_infinite() {
                    <$part>::INFINITY
                } else if re.is_nan() || im.is_nan() {
                    <$part>::NAN
                } else if larger == 0.0 {
                    0.0
                } else {
                    let ratio = smaller / larger;
                    larger * ratio.mul_add(ratio, 1.0).sqrt()
                }
            }
            fn angle(self) -> $part {
                self.im.atan2(self.re)
            }
            fn neg(self) -> Self {
                <$t>::new(-self.re, -self.im)
            }
            fn div(self, o: Self) -> Self {
                let (a, b, c, d) = (self.re, self.im, o.re, o.im);
                let (c_abs, d_abs) = (c.abs(), d.abs());
                if c_abs >= d_abs {
                    if c_abs == 0.0 && d_abs == 0.0 {
                        // A zero divisor: infinities or NaN, part by part.
                        <$t>::new(a / c_abs, b / c_abs)
                    } else {
                        let ratio = d / c;
                        let scale = 1.0 / (c + d * ratio);
                        <$t>::new((a + b * ratio) * scale, (b - a * ratio) * scale)
                    }
                } else {
                    let ratio = c / d;
                    let scale = 1.0 / (d + c * ratio);
                    <$t>::new((a * ratio + b) * scale, (b * ratio - a) * scale)
                }
            }
            fn pow(self, o: Self) -> Self {
                let one = <$t>::new(1.0, 0.0);
                if o.re == 0.0 && o.im == 0.0 {
                    return one;
                }
                if self.re == 0.0 && self.im == 0.0 {
                    if o.re > 0.0 {
                        return <$t>::new(0.0, 0.0);
                    }
                    // NaN from an invalid operation, so the flag NumPy warns about is raised.
                    let nan = std::hint::black_box(<$part>::INFINITY) * std::hint::black_box(0.0);
                    return <$t>::new(nan, nan);
                }
                if o.im == 0.0 && o.re.fract() == 0.0 && o.re.abs() < 100.0 {
                    let n = o.re as i32;
                    let mul = |x: Self, y: Self| {
                        <$t>::new(x.re * y.re - x.im * y.im, x.re * y.im + x.im * y.re)
                    };
                    // Repeated squaring, lowest bit first.
                    let (mut left, mut acc, mut square) = (n.unsigned_abs(), one, self);
                    let power = loop {
                        if left & 1 == 1 {
                            acc = mul(acc, square);
                        }
                        left >>= 1;
                        if left == 0 {
                            break acc;
                        }
                        square = mul(square, square);
                    };
                    return if n < 0 { one.div(power) } else { power };
                }
                // SAFETY: a pure C library function on plain values.
                unsafe { libm_complex::$cpow(self, o) }
            }
            fn exp(self) -> Self {
                // SAFETY: as in `pow`.
                unsafe { libm_complex::$exp(self) }
            }
            fn ln(self) -> Self {
                // SAFETY: as in `pow`.
                unsafe { libm_complex::$ln(self) }
            }
            fn sqrt(self) -> Self {
                // SAFETY: as in `pow`.
                unsafe { libm_complex::$sqrt(self) }
            }
            fn sin(self) -> Self {
                // SAFETY: as in `pow`.
                unsafe { libm_complex::$sin(self) }
            }
            fn cos(self) -> Self {
                // SAFETY: as in `pow`.
                unsafe { libm_complex::$cos(self) }
            }
            fn tan(self) -> Self {
                // SAFETY: as in `pow`.
                unsafe { libm_complex::$tan(self) }
            }
            fn asin(self) -> Self {
                // SAFETY: as in `pow`.
                unsafe { libm_complex::$asin(self) }
            }
            fn acos(self) -> Self {
                // SAFETY: as in `pow`.
                unsafe { libm_complex::$acos(self) }
            }
            fn atan(self) -> Self {
                // SAFETY: as in `pow`.
                unsafe { libm_complex::$atan(self) }
            }
            fn sinh(self) -> Self {
                // SAFETY: as in `pow`.
                unsafe { libm_complex::$sinh(self) }
            }
            fn cosh(self) -> Self {
                // SAFETY: as in `pow`.
                unsafe { libm_complex::$cosh(self) }
            }
            fn tanh(self) -> Self {
                // SAFETY: as in `pow`.
                unsafe { libm_complex::$tanh(self) }
            }
            fn log2(self) -> Self {
                let l = ComplexFloat::ln(self);
                <$t>::new(l.re * $log2e, l.im * $log2e)
            }
            fn log10(self) -> Self {
                let l = ComplexFloat::ln(self);
                <$t>::new(l.re * $log10e, l.im * $log10e)
            }
            fn log1p(self) -> Self {
                let re = self.re + 1.0;
                <$t>::new(re.hypot(self.im).ln(), self.im.atan2(re))
            }
            fn expm1(self) -> Self {
                let half_sin = (self.im / 2.0).sin();
                <$t>::new(
                    self.re.exp_m1() * self.im.cos() - 2.0 * half_sin * half_sin,
                    self.re.exp() * self.im.sin(),
                )
            }
            fn sign(self) -> Self {
                let magnitude = self.re.hypot(self.im);
                if magnitude == 0.0 {
                    <$t>::new(0.0, 0.0)
                } else if magnitude.is_nan() {
                    <$t>::new(<$part>::NAN, <$part>::NAN)
                } else if magnitude.is_infinite() {
                    match (self.re.is_infinite(), self.im.is_infinite()) {
                        (true, true) => <$t>::new(<$part>::NAN, <$part>::NAN),
                        (true, false) => <$t>::new((1.0 as $part).copysign(self.re), 0.0),
                        _ => <$t>::new(0.0, (1.0 as $part).copysign(self.im)),
                    }
                } else {
                    <$t>::new(self.re / magnitude, self.im / magnitude)
                }
            }
            fn rint(self) -> Self {
                <$t>::new(self.re.round_ties_even(), self.im.round_ties_even())
            }
            fn is_infinite(self) -> bool {
                self.re.is_infinite() || self.im.is_infinite()
            }
            fn is_finite(self) -> bool {
                self.re.is_finite() && self.im.is_finite()
            }
            fn less_equal(self, o: Self) -> bool {
                self.re < o.re && !self.im.is_nan() && !o.im.is_nan()
                    || self.re == o.re && self.im <= o.im
            }
        }
    };
}

complex_float!(
    Complex64,
    f64,
    std::f64::consts::LOG2_E,
    std::f64::consts::LOG10_E,
    [cexp, clog, csqrt, csin, ccos, ctan, casin, cacos, catan, csinh, ccosh, ctanh, cpow]
);
complex_float!(
    Complex32,
    f32,
    std::f32::consts::LOG2_E,
    std::f32::consts::LOG10_E,
    [
        cexpf, clogf, csqrtf, csinf, ccosf, ctanf, casinf, cacosf, catanf, csinhf, ccoshf, ctanhf,
        cpowf
    ]
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn division_follows_smiths_algorithm_and_numpys_zero_divisor() {
        let z = Complex64::new(1.0, 2.0).div(Complex64::new(3.0, -4.0));
        assert_eq!(z, Complex64::new(-0.2, 0.4));
        let inf = Complex64::new(1.0, -1.0).div(Complex64::new(0.0, 0.0));
        assert_eq!((inf.re, inf.im), (f64::INFINITY, f64::NEG_INFINITY));
        assert!(Complex64::new(0.0, 0.0)
            .div(Complex64::new(0.0, 0.0))
            .is_nan());
    }

    #[test]
    fn integral_powers_square_repeatedly_and_others_call_cpow() {
        let z = Complex64::new(1.5, -0.5);
        assert_eq!(z.pow(Complex64::new(2.0, 0.0)), Complex64::new(2.0, -1.5));
        assert_eq!(z.pow(Complex64::new(3.0, 0.0)), Complex64::new(2.25, -3.25));
        let inverse = z.pow(Complex64::new(-1.0, 0.0));
        assert_eq!(inverse, Complex64::new(1.0, 0.0).div(z));
        assert_eq!(
            Complex64::new(0.0, 0.0).pow(Complex64::new(0.0, 0.0)),
            Complex64::new(1.0, 0.0)
        );
        let root = ComplexFloat::pow(Complex64::new(-4.0, 0.0), Complex64::new(0.5, 0.0));
        assert!((root.re).abs() < 1e-15 && (root.im - 2.0).abs() < 1e-15);
    }

    #[test]
    fn c_library_functions_are_linked_and_principal() {
        let s = ComplexFloat::sqrt(Complex64::new(-4.0, 0.0));
        assert_eq!(s, Complex64::new(0.0, 2.0));
        let e = ComplexFloat::exp(Complex32::new(0.0, std::f32::consts::PI));
        assert!((e.re + 1.0).abs() < 1e-6 && e.im.abs() < 1e-6);
        assert_eq!(
            ComplexFloat::ln(Complex64::new(1.0, 0.0)),
            Complex64::new(0.0, 0.0)
        );
        let log2 = ComplexFloat::log2(Complex64::new(8.0, 0.0));
        assert!((log2.re - 3.0).abs() < 1e-15 && log2.im == 0.0);
    }

    #[test]
    fn ordering_is_lexicographic_and_nan_wins_maximum_and_minimum() {
        let (a, b) = (Complex64::new(1.0, 5.0), Complex64::new(1.0, 6.0));
        assert!(a.less(b) && !b.less(a) && a.less_equal(a));
        assert_eq!(a.maximum(b), b);
        assert_eq!(a.minimum(b), a);
        let nan = Complex64::new(0.0, f64::NAN);
        assert!(a.maximum(nan).is_nan() && nan.minimum(a).is_nan());
        // A NaN imaginary part orders nothing by the real parts.
        let half_nan = Complex64::new(-1.5, f64::NAN);
        let zero = Complex64::new(0.0, 0.0);
        assert!(!half_nan.less(zero) && !zero.less(half_nan) && !half_nan.less_equal(zero));
    }

    #[test]
    fn absolute_value_scales_by_the_larger_part() {
        assert_eq!(ComplexFloat::abs(Complex64::new(3.0, -4.0)), 5.0);
        assert_eq!(ComplexFloat::abs(Complex64::new(0.0, -0.0)), 0.0);
        assert_eq!(
            ComplexFloat::abs(Complex64::new(f64::NAN, f64::INFINITY)),
            f64::INFINITY
        );
        assert!(ComplexFloat::abs(Complex64::new(f64::NAN, 1.0)).is_nan());
        assert_eq!(ComplexFloat::abs(Complex32::new(3e30, 4e30)), 5e30);
    }

    #[test]
    fn sign_is_the_unit_complex_number() {
        assert_eq!(Complex64::new(3.0, 4.0).sign(), Complex64::new(0.6, 0.8));
        assert_eq!(Complex64::new(0.0, 0.0).sign(), Complex64::new(0.0, 0.0));
        assert_eq!(
            Complex64::new(f64::NEG_INFINITY, 2.0).sign(),
            Complex64::new(-1.0, 0.0)
        );
    }
}
