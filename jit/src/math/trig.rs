//! `sin`, `cos`, `tan`, `atan`, `atan2`, `asin` and `acos` for device kernels,
//! straight-line `arith` over the library's single-instruction functions (module docs of
//! [`super`]).
//!
//! - `sin`, `cos`, `tan`: x = k pi/2 + r with k = roundeven(2x/pi) and pi/2 in three parts
//!   of 33, 33 and 53 bits (k pi/2 exact for |k| < 2^20: accurate for |x| below about 1.6e6;
//!   beyond that the reduction loses accuracy, having no Payne-Hanek step), then the Taylor
//!   polynomials of sin and cos on |r| <= pi/4 (to r^19 and r^20) and the quadrant k mod 4.
//! - `atan`: |x| > 1 reflected to pi/2 - atan(1/|x|), t > tan(pi/8) to pi/4 + atan((t - 1) /
//!   (t + 1)), then one halving `atan(u) = 2 atan(u / (1 + sqrt(1 + u^2)))` to |v| <=
//!   tan(pi/16) and the Taylor polynomial to v^25. `atan2(y, x)` is `atan(|y| / |x|)`
//!   placed in its quadrant (C's special cases for zeros and infinities);
//!   `asin(x) = atan2(x, sqrt((1 - x)(1 + x)))`, `acos(x) = atan2(sqrt((1 - x)(1 + x)), x)`.
//!
//! Measured against glibc (the library's tests): within 4 ulp on their test ranges.

use std::fmt::Write as _;

use super::{factorial_coefficients, hex, horner, with_sign_of_x};

/// Appends what `sin`, `cos` and `tan` share: x = k pi/2 + r, sin r (`%sin_r`), cos r
/// (`%cos_r`), the quadrant k mod 4 (`%q`, odd: `%odd`), and `%finite`, `%nan`, `%is_zero`.
fn reduce(s: &mut String) {
    let pio2: [f64; 3] = [
        f64::from_bits(0x3FF921FB54400000),
        f64::from_bits(0x3DD0B4611A600000),
        f64::from_bits(0x3BA3198A2E037073),
    ];
    let _ = write!(
        s,
        "    %a = math.absf %x : f64
    %inf = arith.constant {inf} : f64
    %finite = arith.cmpf olt, %a, %inf : f64
    %zero = arith.constant 0.0 : f64
    %xr = arith.select %finite, %x, %zero : f64
    %two_over_pi = arith.constant {two_over_pi} : f64
    %t = arith.mulf %xr, %two_over_pi : f64
    %k = math.roundeven %t : f64
    %p1 = arith.constant {p1} : f64
    %p2 = arith.constant {p2} : f64
    %p3 = arith.constant {p3} : f64
    %kp1 = arith.mulf %k, %p1 : f64
    %r1 = arith.subf %xr, %kp1 : f64
    %kp2 = arith.mulf %k, %p2 : f64
    %r2 = arith.subf %r1, %kp2 : f64
    %kp3 = arith.mulf %k, %p3 : f64
    %rr = arith.subf %r2, %kp3 : f64
    %z = arith.mulf %rr, %rr : f64
",
        inf = hex(f64::INFINITY),
        two_over_pi = hex(std::f64::consts::FRAC_2_PI),
        p1 = hex(pio2[0]),
        p2 = hex(pio2[1]),
        p3 = hex(pio2[2]),
    );
    // sin r = r + r z S(z), S(z) = -1/3! + z/5! - ... (to r^19).
    let odd_sign = |n: u32| if n % 4 == 3 { -1.0 } else { 1.0 };
    horner(
        s,
        "sp",
        "z",
        &factorial_coefficients((3..=19).rev().step_by(2), odd_sign),
    );
    // cos r = w + ((1 - w) - z/2) + z^2 C(z), w = 1 - z/2, C(z) = 1/4! - z/6! + ... (to r^20).
    let even_sign = |n: u32| if n.is_multiple_of(4) { 1.0 } else { -1.0 };
    horner(
        s,
        "cp",
        "z",
        &factorial_coefficients((4..=20).rev().step_by(2), even_sign),
    );
    let _ = write!(
        s,
        "    %rz = arith.mulf %rr, %z : f64
    %rzs = arith.mulf %rz, %sph0 : f64
    %sin_r = arith.addf %rr, %rzs : f64
    %half = arith.constant 0.5 : f64
    %one = arith.constant 1.0 : f64
    %hz = arith.mulf %half, %z : f64
    %w = arith.subf %one, %hz : f64
    %zz = arith.mulf %z, %z : f64
    %zzc = arith.mulf %zz, %cph0 : f64
    %omw = arith.subf %one, %w : f64
    %corr = arith.subf %omw, %hz : f64
    %tail = arith.addf %corr, %zzc : f64
    %cos_r = arith.addf %w, %tail : f64
    %quarter = arith.constant 0.25 : f64
    %four = arith.constant 4.0 : f64
    %k4 = arith.mulf %k, %quarter : f64
    %fk4 = math.floor %k4 : f64
    %f4 = arith.mulf %fk4, %four : f64
    %qf = arith.subf %k, %f4 : f64
    %q = arith.fptosi %qf : f64 to i64
    %c1 = arith.constant 1 : i64
    %c2 = arith.constant 2 : i64
    %c0 = arith.constant 0 : i64
    %q_odd = arith.andi %q, %c1 : i64
    %odd = arith.cmpi ne, %q_odd, %c0 : i64
    %nan = arith.subf %x, %x : f64
    %is_zero = arith.cmpf oeq, %x, %zero : f64
"
    );
}

/// `sin x`: for q = 0, 1, 2, 3: sin r, cos r, -sin r, -cos r.
pub(super) fn sin(s: &mut String) {
    reduce(s);
    signed_by_quadrant(s, "q", "cos_r", "sin_r");
    s.push_str(
        "    %v3 = arith.select %finite, %v2, %nan : f64
    %r = arith.select %is_zero, %x, %v3 : f64
",
    );
}

/// `cos x`: for q = 0, 1, 2, 3: cos r, -sin r, -cos r, sin r (sin's signs for q + 1).
pub(super) fn cos(s: &mut String) {
    reduce(s);
    s.push_str("    %q1 = arith.addi %q, %c1 : i64\n");
    signed_by_quadrant(s, "q1", "sin_r", "cos_r");
    s.push_str("    %r = arith.select %finite, %v2, %nan : f64\n");
}

/// Appends `%v2`: `%<odd>` for an odd quadrant, else `%<even>`, negated when bit 1 of
/// `%<quadrant>` is set.
fn signed_by_quadrant(s: &mut String, quadrant: &str, odd: &str, even: &str) {
    let _ = write!(
        s,
        "    %q_two = arith.andi %{quadrant}, %c2 : i64
    %negate = arith.cmpi ne, %q_two, %c0 : i64
    %v = arith.select %odd, %{odd}, %{even} : f64
    %nv = arith.negf %v : f64
    %v2 = arith.select %negate, %nv, %v : f64
"
    );
}

/// `tan x`: for q even sin r / cos r, for q odd -cos r / sin r.
pub(super) fn tan(s: &mut String) {
    reduce(s);
    s.push_str(
        "    %even_t = arith.divf %sin_r, %cos_r : f64
    %odd_t0 = arith.divf %cos_r, %sin_r : f64
    %odd_t = arith.negf %odd_t0 : f64
    %v = arith.select %odd, %odd_t, %even_t : f64
    %v3 = arith.select %finite, %v, %nan : f64
    %r = arith.select %is_zero, %x, %v3 : f64
",
    );
}

/// atan(`%{t}`) for t >= 0 (or NaN) into `%{stem}_atan` (module docs).
fn atan_core(s: &mut String, t: &str, stem: &str) {
    let pio4 = std::f64::consts::FRAC_PI_4;
    let pio2 = std::f64::consts::FRAC_PI_2;
    let _ = write!(
        s,
        "    %{stem}_one = arith.constant 1.0 : f64
    %{stem}_big = arith.cmpf ogt, %{t}, %{stem}_one : f64
    %{stem}_inv = arith.divf %{stem}_one, %{t} : f64
    %{stem}_u0 = arith.select %{stem}_big, %{stem}_inv, %{t} : f64
    %{stem}_tp8 = arith.constant {tp8} : f64
    %{stem}_mid = arith.cmpf ogt, %{stem}_u0, %{stem}_tp8 : f64
    %{stem}_um = arith.subf %{stem}_u0, %{stem}_one : f64
    %{stem}_up = arith.addf %{stem}_u0, %{stem}_one : f64
    %{stem}_uq = arith.divf %{stem}_um, %{stem}_up : f64
    %{stem}_u = arith.select %{stem}_mid, %{stem}_uq, %{stem}_u0 : f64
    %{stem}_u2 = arith.mulf %{stem}_u, %{stem}_u : f64
    %{stem}_u2p = arith.addf %{stem}_one, %{stem}_u2 : f64
    %{stem}_sq = math.sqrt %{stem}_u2p : f64
    %{stem}_den = arith.addf %{stem}_one, %{stem}_sq : f64
    %{stem}_v = arith.divf %{stem}_u, %{stem}_den : f64
    %{stem}_z = arith.mulf %{stem}_v, %{stem}_v : f64
",
        tp8 = hex(std::f64::consts::SQRT_2 - 1.0),
    );
    // atan v = v + v z A(z), A(z) = -1/3 + z/5 - ... (to v^25).
    let coefficients: Vec<String> = (0..=11u32)
        .rev()
        .map(|j| {
            let sign = if j % 2 == 0 { -1.0 } else { 1.0 };
            hex(sign / f64::from(2 * j + 3))
        })
        .collect();
    horner(
        s,
        &format!("{stem}_p"),
        &format!("{stem}_z"),
        &coefficients.join(" "),
    );
    let _ = write!(
        s,
        "    %{stem}_vz = arith.mulf %{stem}_v, %{stem}_z : f64
    %{stem}_vza = arith.mulf %{stem}_vz, %{stem}_ph0 : f64
    %{stem}_av = arith.addf %{stem}_v, %{stem}_vza : f64
    %{stem}_au = arith.addf %{stem}_av, %{stem}_av : f64
    %{stem}_pio4_hi = arith.constant {pio4_hi} : f64
    %{stem}_pio4_lo = arith.constant {pio4_lo} : f64
    %{stem}_m1 = arith.addf %{stem}_au, %{stem}_pio4_lo : f64
    %{stem}_m2 = arith.addf %{stem}_pio4_hi, %{stem}_m1 : f64
    %{stem}_a1 = arith.select %{stem}_mid, %{stem}_m2, %{stem}_au : f64
    %{stem}_pio2_hi = arith.constant {pio2_hi} : f64
    %{stem}_pio2_lo = arith.constant {pio2_lo} : f64
    %{stem}_b1 = arith.subf %{stem}_pio2_hi, %{stem}_a1 : f64
    %{stem}_b2 = arith.addf %{stem}_b1, %{stem}_pio2_lo : f64
    %{stem}_atan = arith.select %{stem}_big, %{stem}_b2, %{stem}_a1 : f64
",
        pio4_hi = hex(pio4),
        pio4_lo = hex(3.061616997868383e-17),
        pio2_hi = hex(pio2),
        pio2_lo = hex(6.123233995736766e-17),
    );
}

/// `atan x`: atan |x| with the sign of x.
pub(super) fn atan(s: &mut String) {
    s.push_str("    %a = math.absf %x : f64\n");
    atan_core(s, "a", "at");
    with_sign_of_x(s, "at_atan", "r");
}

/// `atan2(y, x)`: atan(|y| / |x|) placed in its quadrant, with C's special cases for zeros
/// and infinities.
pub(super) fn atan2(s: &mut String) {
    // `%x` is atan2's first argument (y), `%y` its second (x).
    s.push_str(
        "    %ay = math.absf %x : f64
    %ax = math.absf %y : f64
    %q = arith.divf %ay, %ax : f64
",
    );
    atan_core(s, "q", "at");
    let _ = write!(
        s,
        "    %zero = arith.constant 0.0 : f64
    %inf = arith.constant {inf} : f64
    %y_zero = arith.cmpf oeq, %ay, %zero : f64
    %x_zero = arith.cmpf oeq, %ax, %zero : f64
    %zeros = arith.andi %y_zero, %x_zero : i1
    %y_inf = arith.cmpf oeq, %ay, %inf : f64
    %x_inf = arith.cmpf oeq, %ax, %inf : f64
    %infs = arith.andi %y_inf, %x_inf : i1
    %a1 = arith.select %zeros, %zero, %at_atan : f64
    %a2 = arith.select %infs, %at_pio4_hi, %a1 : f64
    %xb = arith.bitcast %y : f64 to i64
    %c0 = arith.constant 0 : i64
    %x_negative = arith.cmpi slt, %xb, %c0 : i64
    %pi_hi = arith.constant {pi_hi} : f64
    %pi_lo = arith.constant {pi_lo} : f64
    %pm1 = arith.subf %pi_hi, %a2 : f64
    %pm = arith.addf %pm1, %pi_lo : f64
    %r1 = arith.select %x_negative, %pm, %a2 : f64
    %y_nonzero = arith.cmpf one, %ay, %zero : f64
    %vertical = arith.andi %x_zero, %y_nonzero : i1
    %r0 = arith.select %vertical, %at_pio2_hi, %r1 : f64
",
        inf = hex(f64::INFINITY),
        pi_hi = hex(std::f64::consts::PI),
        pi_lo = hex(1.2246467991473532e-16),
    );
    with_sign_of_x(s, "r0", "r");
}

/// sqrt((1 - x)(1 + x)) into `%c`.
const COSINE_OF_ASIN: &str = "    %one = arith.constant 1.0 : f64
    %omx = arith.subf %one, %x : f64
    %opx = arith.addf %one, %x : f64
    %p = arith.mulf %omx, %opx : f64
    %c = math.sqrt %p : f64
";

/// `asin(x) = atan2(x, sqrt((1 - x)(1 + x)))`.
pub(super) fn asin(s: &mut String) {
    let _ = writeln!(s, "{COSINE_OF_ASIN}    %r = math.atan2 %x, %c : f64");
}

/// `acos(x) = atan2(sqrt((1 - x)(1 + x)), x)`.
pub(super) fn acos(s: &mut String) {
    let _ = writeln!(s, "{COSINE_OF_ASIN}    %r = math.atan2 %c, %x : f64");
}
