//! `expm1`, `log1p`, `log2`, `log10`, `tanh`, `sinh` and `cosh` for device kernels,
//! straight-line `arith` over the library's `exp` and `log` (module docs of [`super`]).
//!
//! - `expm1`: for |x| < 1/2 the Taylor polynomial of degree 16 (truncation below 2^-60
//!   relative), else `exp(x) - 1`.
//! - `log1p`: `log(u) * x / (u - 1)` with u = 1 + x (exact correction of u's rounding); `x`
//!   itself where u rounds to 1.
//! - `log2`: the exponent of x plus `log(m) / ln 2` for its mantissa m in [sqrt(1/2),
//!   sqrt(2)), so powers of two are exact; `log10`: `log(x) / ln 10`.
//! - `tanh(|x|) = expm1(2|x|) / (expm1(2|x|) + 2)`, 1 beyond 22; `sinh(|x|) = (e + e / (e +
//!   1)) / 2` with e = `expm1(|x|)`; `cosh = (exp(|x|) + 1 / exp(|x|)) / 2`; both
//!   `(exp(|x|/2) / 2) exp(|x|/2)` beyond 700, where `exp(|x|)` overflows first.
//!
//! Measured against glibc (the library's tests): within 4 ulp on their test ranges.

use std::fmt::Write as _;

use super::{biased_exponent, factorial_coefficients, hex, horner, with_sign_of_x};

/// `expm1`: for |x| < 1/2 the Taylor polynomial of degree 16, else `exp(x) - 1`.
pub(super) fn expm1(s: &mut String) {
    // x (1 + x (1/2! + x (1/3! + ... + x / 16!))).
    let coefficients = format!(
        "{} {}",
        factorial_coefficients((2..=16).rev(), |_| 1.0),
        hex(1.0)
    );
    horner(s, "p", "x", &coefficients);
    let _ = write!(
        s,
        "    %small = arith.mulf %x, %ph0 : f64
    %a = math.absf %x : f64
    %half = arith.constant 0.5 : f64
    %near = arith.cmpf olt, %a, %half : f64
    %e = math.exp %x : f64
    %one = arith.constant 1.0 : f64
    %far = arith.subf %e, %one : f64
    %r = arith.select %near, %small, %far : f64
"
    );
}

/// `log1p`: `log(u) * x / (u - 1)` with u = 1 + x; `x` itself where u rounds to 1.
pub(super) fn log1p(s: &mut String) {
    let _ = write!(
        s,
        "    %one = arith.constant 1.0 : f64
    %u = arith.addf %one, %x : f64
    %um1 = arith.subf %u, %one : f64
    %l = math.log %u : f64
    %q = arith.divf %x, %um1 : f64
    %g = arith.mulf %l, %q : f64
    %tiny = arith.cmpf oeq, %u, %one : f64
    %g1 = arith.select %tiny, %x, %g : f64
    %inf = arith.constant {inf} : f64
    %infinite = arith.cmpf oeq, %x, %inf : f64
    %r = arith.select %infinite, %x, %g1 : f64
",
        inf = hex(f64::INFINITY)
    );
}

/// `log2`: the exponent of x plus `log(m) / ln 2` for its mantissa m in [sqrt(1/2),
/// sqrt(2)), so powers of two are exact.
pub(super) fn log2(s: &mut String) {
    biased_exponent(s, "x", "x");
    let _ = write!(
        s,
        "    %zero = arith.constant 0.0 : f64
    %inf = arith.constant {inf} : f64
    %c1023 = arith.constant 1023 : i64
    %e = arith.subi %x_e, %c1023 : i64
    %mask = arith.constant 4503599627370495 : i64
    %one_bits = arith.constant 4607182418800017408 : i64
    %mantissa = arith.andi %x_bits, %mask : i64
    %m_bits = arith.ori %mantissa, %one_bits : i64
    %m0 = arith.bitcast %m_bits : i64 to f64
    %sqrt2 = arith.constant {sqrt2} : f64
    %above = arith.cmpf oge, %m0, %sqrt2 : f64
    %half = arith.constant 0.5 : f64
    %mh = arith.mulf %m0, %half : f64
    %m = arith.select %above, %mh, %m0 : f64
    %c1 = arith.constant 1 : i64
    %e_up = arith.addi %e, %c1 : i64
    %k = arith.select %above, %e_up, %e : i64
    %kf = arith.sitofp %k : i64 to f64
    %lm = math.log %m : f64
    %inv_ln2 = arith.constant {inv_ln2} : f64
    %lm2 = arith.mulf %lm, %inv_ln2 : f64
    %finite = arith.addf %kf, %lm2 : f64
    %is_zero = arith.cmpf oeq, %x, %zero : f64
    %is_inf = arith.cmpf oeq, %x, %inf : f64
    %positive = arith.cmpf ogt, %x, %zero : f64
    %below_inf = arith.cmpf olt, %x, %inf : f64
    %normal = arith.andi %positive, %below_inf : i1
    %ninf = arith.constant {ninf} : f64
    %nan = arith.constant {nan} : f64
    %special0 = arith.select %is_inf, %inf, %nan : f64
    %special = arith.select %is_zero, %ninf, %special0 : f64
    %r = arith.select %normal, %finite, %special : f64
",
        inf = hex(f64::INFINITY),
        ninf = hex(f64::NEG_INFINITY),
        nan = hex(f64::NAN),
        sqrt2 = hex(std::f64::consts::SQRT_2),
        inv_ln2 = hex(std::f64::consts::LOG2_E),
    );
}

/// `log10`: `log(x) / ln 10`.
pub(super) fn log10(s: &mut String) {
    let _ = writeln!(
        s,
        "    %l = math.log %x : f64
    %inv_ln10 = arith.constant {} : f64
    %r = arith.mulf %l, %inv_ln10 : f64",
        hex(std::f64::consts::LOG10_E)
    );
}

/// `tanh(|x|) = expm1(2|x|) / (expm1(2|x|) + 2)`, 1 beyond 22, with the sign of x.
pub(super) fn tanh(s: &mut String) {
    s.push_str(
        "    %a = math.absf %x : f64
    %two = arith.constant 2.0 : f64
    %a2 = arith.mulf %two, %a : f64
    %e = math.expm1 %a2 : f64
    %d = arith.addf %e, %two : f64
    %t = arith.divf %e, %d : f64
    %limit = arith.constant 22.0 : f64
    %saturated = arith.cmpf ogt, %a, %limit : f64
    %one = arith.constant 1.0 : f64
    %t1 = arith.select %saturated, %one, %t : f64
",
    );
    with_sign_of_x(s, "t1", "r");
}

/// `sinh(|x|) = (e + e / (e + 1)) / 2` with e = `expm1(|x|)`, with the sign of x.
pub(super) fn sinh(s: &mut String) {
    let terms = "    %e = math.expm1 %a : f64
    %e1 = arith.addf %e, %one : f64
    %g = arith.divf %e, %e1 : f64
";
    half_sum_or_large(s, terms, "s1");
    with_sign_of_x(s, "s1", "r");
}

/// `cosh(x) = (exp(|x|) + 1 / exp(|x|)) / 2`.
pub(super) fn cosh(s: &mut String) {
    let terms = "    %e = math.exp %a : f64
    %g = arith.divf %one, %e : f64
";
    half_sum_or_large(s, terms, "r");
}

/// `sinh` or `cosh` of |x| into `%<result>`: `(e + g) / 2` with `%e` and `%g` from `terms`
/// (which read `%a` = |x| and `%one`), or beyond 700, where `exp(|x|)` overflows first,
/// `(exp(|x|/2) / 2) exp(|x|/2)`.
fn half_sum_or_large(s: &mut String, terms: &str, result: &str) {
    let _ = write!(
        s,
        "    %a = math.absf %x : f64
    %half = arith.constant 0.5 : f64
    %one = arith.constant 1.0 : f64
{terms}    %sum = arith.addf %e, %g : f64
    %moderate = arith.mulf %half, %sum : f64
    %ah = arith.mulf %half, %a : f64
    %h = math.exp %ah : f64
    %hh = arith.mulf %half, %h : f64
    %large = arith.mulf %hh, %h : f64
    %c700 = arith.constant 700.0 : f64
    %beyond = arith.cmpf ogt, %a, %c700 : f64
    %{result} = arith.select %beyond, %large, %moderate : f64
"
    );
}
