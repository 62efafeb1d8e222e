//! `pow` and `fmod` for device kernels (module docs of [`super`]), and C's `%` on floats
//! routed to `fmod` ([`remainders_as_calls`]).
//!
//! - `pow(x, y)`: binary powering (six squarings) for an integer |y| <= 63, so exactly
//!   representable powers are exact; otherwise `exp(y log|x|)`, whose relative error grows
//!   as |y log|x|| 2^-53 (about 1e-13 near the overflow threshold); C99's special cases
//!   (zeros, infinities, negative bases, `pow(x, 0) = pow(1, y) = 1`) are selected exactly.
//! - `fmod`: exact, by integer shift-and-subtract (see [`fmod`]), so equal to glibc's.

use std::fmt::Write as _;

use super::{biased_exponent, hex, with_sign_of_x};

/// The composed module `text` with every `arith.remf` (C's `fmod`) as a call of `@fmod` or
/// `@fmodf`: the NVVM conversion has no lowering of `llvm.frem` without libdevice, and
/// `convert-math-to-libm` does not touch `arith` ops.
pub(crate) fn remainders_as_calls(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        out.push_str(&remainder_as_call(line).unwrap_or_else(|| line.to_string()));
        out.push('\n');
    }
    out
}

/// `%r = arith.remf %a, %b [fastmath<..>] : T` as `%r = func.call @fmod[f](%a, %b) : (T, T)
/// -> T`; `None` for any other line (and for types other than `f64` and `f32`).
fn remainder_as_call(line: &str) -> Option<String> {
    let (result, rest) = line.split_once(" = arith.remf ")?;
    let (operands, ty) = rest.rsplit_once(" : ")?;
    let operands = operands.split(" fastmath<").next()?;
    let (a, b) = operands.split_once(", ")?;
    let function = match ty.trim() {
        "f64" => "fmod",
        "f32" => "fmodf",
        _ => return None,
    };
    let ty = ty.trim();
    Some(format!(
        "{result} = func.call @{function}({a}, {b}) : ({ty}, {ty}) -> {ty}"
    ))
}

/// `pow(x, y)` (module docs).
pub(super) fn pow(s: &mut String) {
    let _ = write!(
        s,
        "    %zero = arith.constant 0.0 : f64
    %one = arith.constant 1.0 : f64
    %half = arith.constant 0.5 : f64
    %inf = arith.constant {inf} : f64
    %nan = arith.constant {nan} : f64
    %true = arith.constant true
    %i0 = arith.constant 0 : i64
    %i1 = arith.constant 1 : i64
    %ax = math.absf %x : f64
    %ay = math.absf %y : f64
    %l = math.log %ax : f64
    %yl = arith.mulf %y, %l : f64
    %e = math.exp %yl : f64
    %fy = math.floor %y : f64
    %y_int = arith.cmpf oeq, %fy, %y : f64
    %y_finite = arith.cmpf olt, %ay, %inf : f64
    %yh = arith.mulf %y, %half : f64
    %fyh = math.floor %yh : f64
    %c63 = arith.constant 63.0 : f64
    %small_int0 = arith.cmpf ole, %ay, %c63 : f64
    %small_int = arith.andi %small_int0, %y_int : i1
    %ay_small = arith.select %small_int, %ay, %zero : f64
    %n = arith.fptosi %ay_small : f64 to i64
",
        inf = hex(f64::INFINITY),
        nan = hex(f64::NAN),
    );
    // Binary powering of x by n = |y| for an integer |y| <= 63: six squarings.
    let (mut product, mut base) = ("one".to_string(), "x".to_string());
    for bit in 0..6 {
        let _ = write!(
            s,
            "    %shift{bit} = arith.constant {bit} : i64
    %n{bit} = arith.shrui %n, %shift{bit} : i64
    %bit{bit} = arith.andi %n{bit}, %i1 : i64
    %set{bit} = arith.cmpi ne, %bit{bit}, %i0 : i64
    %m{bit} = arith.mulf %{product}, %{base} : f64
    %p{bit} = arith.select %set{bit}, %m{bit}, %{product} : f64
    %b{bit} = arith.mulf %{base}, %{base} : f64
"
        );
        product = format!("p{bit}");
        base = format!("b{bit}");
    }
    s.push_str(
        "    %y_negative = arith.cmpf olt, %y, %zero : f64
    %recip = arith.divf %one, %p5 : f64
    %powered = arith.select %y_negative, %recip, %p5 : f64
    %p5_abs = math.absf %p5 : f64
    %overflowed0 = arith.cmpf oeq, %p5_abs, %inf : f64
    %x_finite = arith.cmpf olt, %ax, %inf : f64
    %overflowed = arith.andi %overflowed0, %x_finite : i1
    %lost = arith.andi %overflowed, %y_negative : i1
    %kept = arith.xori %lost, %true : i1
    %use_powering = arith.andi %small_int, %kept : i1
    %y_even = arith.cmpf oeq, %fyh, %yh : f64
    %not_even = arith.xori %y_even, %true : i1
    %odd0 = arith.andi %y_int, %not_even : i1
    %odd = arith.andi %odd0, %y_finite : i1
    %xb = arith.bitcast %x : f64 to i64
    %x_sign = arith.cmpi slt, %xb, %i0 : i64
    %negate = arith.andi %x_sign, %odd : i1
    %ne = arith.negf %e : f64
    %v0 = arith.select %negate, %ne, %e : f64
    %v = arith.select %use_powering, %powered, %v0 : f64
    %x_below = arith.cmpf olt, %x, %zero : f64
    %not_int = arith.xori %y_int, %true : i1
    %fraction = arith.andi %not_int, %y_finite : i1
    %negative_base = arith.andi %x_below, %x_finite : i1
    %bad = arith.andi %negative_base, %fraction : i1
    %v2 = arith.select %bad, %nan, %v : f64
    %x_one = arith.cmpf oeq, %x, %one : f64
    %y_zero = arith.cmpf oeq, %y, %zero : f64
    %ax_one = arith.cmpf oeq, %ax, %one : f64
    %y_inf = arith.cmpf oeq, %ay, %inf : f64
    %unit_inf = arith.andi %ax_one, %y_inf : i1
    %ones0 = arith.ori %x_one, %y_zero : i1
    %ones = arith.ori %ones0, %unit_inf : i1
    %r = arith.select %ones, %one, %v2 : f64
",
    );
}

/// `fmod(x, y)`, exact: the remainder of the integer significands of |x| and |y| (both
/// normalized to 53 bits, subnormals scaled by 2^54 first) by shift-and-subtract over the
/// exponent difference (one step per bit, so a loop of up to 2100 steps for the widest
/// ratios), scaled back in two exact steps and given the sign of x; NaN for an infinite x,
/// a zero y or a NaN, and x itself where |x| < |y| or y is infinite.
pub(super) fn fmod(s: &mut String) {
    let _ = write!(
        s,
        "    %zero = arith.constant 0.0 : f64
    %inf = arith.constant {inf} : f64
    %nan = arith.constant {nan} : f64
    %i0 = arith.constant 0 : i64
    %i1 = arith.constant 1 : i64
    %c52 = arith.constant 52 : i64
    %mask = arith.constant 4503599627370495 : i64
    %implicit = arith.constant 4503599627370496 : i64
    %ax = math.absf %x : f64
    %ay = math.absf %y : f64
",
        inf = hex(f64::INFINITY),
        nan = hex(f64::NAN),
    );
    // The significand (53 bits, leading bit set) and biased exponent of %a<v>, for v in
    // x, y; a zero gets exponent -54 and significand 2^52 (it never reaches the loop).
    for v in ["x", "y"] {
        biased_exponent(s, v, &format!("a{v}"));
        let _ = write!(
            s,
            "    %{v}_frac = arith.andi %{v}_bits, %mask : i64
    %{v}_m = arith.ori %{v}_frac, %implicit : i64
"
        );
    }
    let _ = write!(
        s,
        "    %ordered = arith.cmpf oge, %ax, %ay : f64
    %gap0 = arith.subi %x_e, %y_e : i64
    %gap = arith.select %ordered, %gap0, %i0 : i64
    %steps = arith.index_cast %gap : i64 to index
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %m = scf.for %k = %c0 to %steps step %c1 iter_args(%acc = %x_m) -> (i64) {{
      %ge = arith.cmpi uge, %acc, %y_m : i64
      %less = arith.subi %acc, %y_m : i64
      %kept = arith.select %ge, %less, %acc : i64
      %next = arith.shli %kept, %i1 : i64
      scf.yield %next : i64
    }}
    %ge_last = arith.cmpi uge, %m, %y_m : i64
    %less_last = arith.subi %m, %y_m : i64
    %rem = arith.select %ge_last, %less_last, %m : i64
    %rem_f = arith.sitofp %rem : i64 to f64
    %bias = arith.constant 1075 : i64
    %k0 = arith.subi %y_e, %bias : i64
    %c200 = arith.constant 200 : i64
    %lowest = arith.constant -900 : i64
    %deep = arith.cmpi slt, %k0, %lowest : i64
    %k_up = arith.addi %k0, %c200 : i64
    %k = arith.select %deep, %k_up, %k0 : i64
    %c1023 = arith.constant 1023 : i64
    %k_biased = arith.addi %k, %c1023 : i64
    %k_bits = arith.shli %k_biased, %c52 : i64
    %pow_k = arith.bitcast %k_bits : i64 to f64
    %one = arith.constant 1.0 : f64
    %down = arith.constant {down} : f64
    %post = arith.select %deep, %down, %one : f64
    %r0 = arith.mulf %rem_f, %pow_k : f64
    %magnitude = arith.mulf %r0, %post : f64
",
        down = hex(2f64.powi(-200)),
    );
    // rem 2^(y_e - 1075), as (rem 2^(y_e - 1075 + 200)) 2^-200 where the exponent is below
    // -900 (2^k is built from its bits, which needs k >= -1022).
    with_sign_of_x(s, "magnitude", "reduced");
    s.push_str(
        "    %x_finite = arith.cmpf olt, %ax, %inf : f64
    %y_nonzero = arith.cmpf one, %ay, %zero : f64
    %valid = arith.andi %x_finite, %y_nonzero : i1
    %y_nan = arith.cmpf uno, %y, %y : f64
    %r1 = arith.select %ordered, %reduced, %x : f64
    %r2 = arith.select %valid, %r1, %nan : f64
    %r = arith.select %y_nan, %y, %r2 : f64
",
    );
}
