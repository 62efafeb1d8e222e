//! Device definitions of the libm functions the CPU kernels take from glibc: `expm1`,
//! `log1p`, `log2`, `log10`, `sinh`, `cosh`, `tanh`, `sin`, `cos`, `tan`, `atan`, `atan2`,
//! `asin`, `acos`, `pow` and `fmod` (`arith.remf`, routed to it by [`remainders_as_calls`]),
//! on `f64` and (computing in `f64`, rounding once) `f32`.
//!
//! They are straight-line `arith` over the shared prelude's `exp` and `log` and the
//! single-instruction functions (`sqrt`, `floor`, `roundeven`, `copysign`), reached through
//! `math` ops that `convert-math-to-libm` turns into calls, so that they compile for the device
//! and, in this module's tests, for the host, where they are measured against glibc.
//!
//! # Methods
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
//! - `sin`, `cos`, `tan`: x = k pi/2 + r with k = roundeven(2x/pi) and pi/2 in three parts
//!   of 33, 33 and 53 bits (k pi/2 exact for |k| < 2^20: accurate for |x| below about 1.6e6;
//!   beyond that the reduction loses accuracy, having no Payne-Hanek step), then the Taylor
//!   polynomials of sin and cos on |r| <= pi/4 (to r^19 and r^20) and the quadrant k mod 4.
//! - `atan`: |x| > 1 reflected to pi/2 - atan(1/|x|), t > tan(pi/8) to pi/4 + atan((t - 1) /
//!   (t + 1)), then one halving `atan(u) = 2 atan(u / (1 + sqrt(1 + u^2)))` to |v| <=
//!   tan(pi/16) and the Taylor polynomial to v^25. `atan2(y, x)` is `atan(|y| / |x|)`
//!   placed in its quadrant (C's special cases for zeros and infinities);
//!   `asin(x) = atan2(x, sqrt((1 - x)(1 + x)))`, `acos(x) = atan2(sqrt((1 - x)(1 + x)), x)`.
//! - `pow(x, y)`: binary powering (six squarings) for an integer |y| <= 63, so exactly
//!   representable powers are exact; otherwise `exp(y log|x|)`, whose relative error grows
//!   as |y log|x|| 2^-53 (about 1e-13 near the overflow threshold); C99's special cases
//!   (zeros, infinities, negative bases, `pow(x, 0) = pow(1, y) = 1`) are selected exactly.
//! - `fmod`: exact, by integer shift-and-subtract (see [`fmod`]).
//!
//! The measured errors (this module's tests, against glibc): within 4 ulp for `expm1`,
//! `log1p`, `log2`, `log10`, `tanh`, `sinh`, `cosh`, `sin`, `cos`, `tan`, `atan`, `atan2`,
//! `asin` and `acos` on their test ranges, and `pow` within 1e-13 relative; `fmod` equal to
//! glibc's. Apart from `fmod` they do not match glibc bitwise: a kernel using them differs
//! between CPU and GPU by those errors.

use std::fmt::Write as _;

use crate::math::{horner, LINKAGE};

/// One libm function of this module: its name (`f64`; the `f32` form adds an `f`), its
/// argument count (the arguments are `%x` and `%y`) and the body computing `%r`.
struct Function {
    /// The libm name.
    name: &'static str,
    /// 1 or 2.
    arity: usize,
    body: fn() -> String,
}

/// Every function this module defines (module docs).
const FUNCTIONS: [Function; 16] = [
    unary("expm1", expm1),
    unary("log1p", log1p),
    unary("log2", log2),
    unary("log10", log10),
    unary("tanh", tanh),
    unary("sinh", sinh),
    unary("cosh", cosh),
    unary("sin", || trig("sin")),
    unary("cos", || trig("cos")),
    unary("tan", || trig("tan")),
    unary("atan", atan),
    Function {
        name: "atan2",
        arity: 2,
        body: atan2,
    },
    unary("asin", asin),
    unary("acos", acos),
    Function {
        name: "pow",
        arity: 2,
        body: pow,
    },
    Function {
        name: "fmod",
        arity: 2,
        body: fmod,
    },
];

const fn unary(name: &'static str, body: fn() -> String) -> Function {
    Function {
        name,
        arity: 1,
        body,
    }
}

/// An `f64` constant as MLIR's exact hexadecimal form.
fn hex(v: f64) -> String {
    format!("0x{:016X}", v.to_bits())
}

/// `sign(n)/n!` for n in `degrees`, as [`horner`] coefficients (highest degree first).
fn factorial_coefficients(degrees: impl Iterator<Item = u32>, sign: impl Fn(u32) -> f64) -> String {
    degrees
        .map(|n| {
            let factorial: f64 = (1..=n).map(f64::from).product();
            hex(sign(n) / factorial)
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The `(name, func.func private text)` of every function (module docs).
pub(crate) fn definitions() -> Vec<(String, String)> {
    let mut out = Vec::new();
    for &Function { name, arity, body } in &FUNCTIONS {
        let params = ["%x", "%y"][..arity].to_vec();
        let typed = |ty: &str| {
            params
                .iter()
                .map(|p| format!("{p}: {ty}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        out.push((
            name.to_string(),
            format!(
                "func.func private @{name}({}) -> f64 {LINKAGE}\n{}    return %r : f64\n}}",
                typed("f64"),
                body()
            ),
        ));
        // The `f32` form computes in `f64` and rounds once.
        let mut f32_body = String::new();
        for p in &params {
            let _ = writeln!(f32_body, "    {p}d = arith.extf {p} : f32 to f64");
        }
        let wide: Vec<String> = params.iter().map(|p| format!("{p}d")).collect();
        let call = format!(
            "func.call @{name}({}) : ({}) -> f64",
            wide.join(", "),
            vec!["f64"; arity].join(", ")
        );
        out.push((
            format!("{name}f"),
            format!(
                "func.func private @{name}f({}) -> f32 {LINKAGE}\n{f32_body}    %d = {call}\n    %r = arith.truncf %d : f64 to f32\n    return %r : f32\n}}",
                typed("f32")
            ),
        ));
    }
    out
}

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

fn expm1() -> String {
    let mut s = String::new();
    // x (1 + x (1/2! + x (1/3! + ... + x / 16!))).
    let coefficients = format!(
        "{} {}",
        factorial_coefficients((2..=16).rev(), |_| 1.0),
        hex(1.0)
    );
    horner(&mut s, "p", "x", &coefficients);
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
    s
}

fn log1p() -> String {
    format!(
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
    )
}

fn log2() -> String {
    format!(
        "    %zero = arith.constant 0.0 : f64
    %inf = arith.constant {inf} : f64
    %least = arith.constant {least} : f64
    %scale = arith.constant {scale} : f64
    %sub = arith.cmpf olt, %x, %least : f64
    %xs = arith.mulf %x, %scale : f64
    %y = arith.select %sub, %xs, %x : f64
    %bits = arith.bitcast %y : f64 to i64
    %c52 = arith.constant 52 : i64
    %shifted = arith.shrui %bits, %c52 : i64
    %c2047 = arith.constant 2047 : i64
    %field = arith.andi %shifted, %c2047 : i64
    %c1023 = arith.constant 1023 : i64
    %e0 = arith.subi %field, %c1023 : i64
    %c54 = arith.constant 54 : i64
    %e1 = arith.subi %e0, %c54 : i64
    %e = arith.select %sub, %e1, %e0 : i64
    %mask = arith.constant 4503599627370495 : i64
    %one_bits = arith.constant 4607182418800017408 : i64
    %mantissa = arith.andi %bits, %mask : i64
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
        least = hex(f64::MIN_POSITIVE),
        scale = hex(2f64.powi(54)),
        sqrt2 = hex(std::f64::consts::SQRT_2),
        inv_ln2 = hex(std::f64::consts::LOG2_E),
    )
}

fn log10() -> String {
    format!(
        "    %l = math.log %x : f64
    %inv_ln10 = arith.constant {} : f64
    %r = arith.mulf %l, %inv_ln10 : f64
",
        hex(std::f64::consts::LOG10_E)
    )
}

fn tanh() -> String {
    let mut s = "    %a = math.absf %x : f64
    %two = arith.constant 2.0 : f64
    %a2 = arith.mulf %two, %a : f64
    %e = math.expm1 %a2 : f64
    %d = arith.addf %e, %two : f64
    %t = arith.divf %e, %d : f64
    %limit = arith.constant 22.0 : f64
    %saturated = arith.cmpf ogt, %a, %limit : f64
    %one = arith.constant 1.0 : f64
    %t1 = arith.select %saturated, %one, %t : f64
"
    .to_string();
    s.push_str(&with_sign_of_x("t1"));
    s
}

/// `%r = copysign(%{magnitude}, %x)` in bit operations (`math.copysign` has no lowering that
/// both the host and the device accept).
fn with_sign_of_x(magnitude: &str) -> String {
    format!(
        "    %sign_bits = arith.bitcast %x : f64 to i64
    %magnitude_bits = arith.bitcast %{magnitude} : f64 to i64
    %sign_mask = arith.constant {} : i64
    %magnitude_mask = arith.constant {} : i64
    %sign_only = arith.andi %sign_bits, %sign_mask : i64
    %magnitude_only = arith.andi %magnitude_bits, %magnitude_mask : i64
    %signed = arith.ori %sign_only, %magnitude_only : i64
    %r = arith.bitcast %signed : i64 to f64
",
        i64::MIN,
        i64::MAX
    )
}

/// `(exp(|x|/2) / 2) exp(|x|/2)` into `%large`, and `%beyond`: |x| > 700 (reads `%a`,
/// `%half`).
const LARGE_HALF_EXP: &str = "    %ah = arith.mulf %half, %a : f64
    %h = math.exp %ah : f64
    %hh = arith.mulf %half, %h : f64
    %large = arith.mulf %hh, %h : f64
    %c700 = arith.constant 700.0 : f64
    %beyond = arith.cmpf ogt, %a, %c700 : f64
";

fn sinh() -> String {
    format!(
        "    %a = math.absf %x : f64
    %half = arith.constant 0.5 : f64
    %one = arith.constant 1.0 : f64
    %e = math.expm1 %a : f64
    %e1 = arith.addf %e, %one : f64
    %f = arith.divf %e, %e1 : f64
    %s0 = arith.addf %e, %f : f64
    %s = arith.mulf %half, %s0 : f64
{LARGE_HALF_EXP}    %s1 = arith.select %beyond, %large, %s : f64
{}",
        with_sign_of_x("s1")
    )
}

fn cosh() -> String {
    format!(
        "    %a = math.absf %x : f64
    %half = arith.constant 0.5 : f64
    %one = arith.constant 1.0 : f64
    %e = math.exp %a : f64
    %inv = arith.divf %one, %e : f64
    %c0 = arith.addf %e, %inv : f64
    %c = arith.mulf %half, %c0 : f64
{LARGE_HALF_EXP}    %r = arith.select %beyond, %large, %c : f64
"
    )
}

/// `sin`, `cos` or `tan` (module docs).
fn trig(which: &str) -> String {
    let pio2: [f64; 3] = [
        f64::from_bits(0x3FF921FB54400000),
        f64::from_bits(0x3DD0B4611A600000),
        f64::from_bits(0x3BA3198A2E037073),
    ];
    let mut s = format!(
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
        &mut s,
        "sp",
        "z",
        &factorial_coefficients((3..=19).rev().step_by(2), odd_sign),
    );
    // cos r = w + ((1 - w) - z/2) + z^2 C(z), w = 1 - z/2, C(z) = 1/4! - z/6! + ... (to r^20).
    let even_sign = |n: u32| if n.is_multiple_of(4) { 1.0 } else { -1.0 };
    horner(
        &mut s,
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
    let select = match which {
        // q = 0, 1, 2, 3: sin r, cos r, -sin r, -cos r.
        "sin" => {
            "    %q_two = arith.andi %q, %c2 : i64
    %negate = arith.cmpi ne, %q_two, %c0 : i64
    %v = arith.select %odd, %cos_r, %sin_r : f64
    %nv = arith.negf %v : f64
    %v2 = arith.select %negate, %nv, %v : f64
    %v3 = arith.select %finite, %v2, %nan : f64
    %r = arith.select %is_zero, %x, %v3 : f64
"
        }
        // q = 0, 1, 2, 3: cos r, -sin r, -cos r, sin r.
        "cos" => {
            "    %q1 = arith.addi %q, %c1 : i64
    %q_two = arith.andi %q1, %c2 : i64
    %negate = arith.cmpi ne, %q_two, %c0 : i64
    %v = arith.select %odd, %sin_r, %cos_r : f64
    %nv = arith.negf %v : f64
    %v2 = arith.select %negate, %nv, %v : f64
    %r = arith.select %finite, %v2, %nan : f64
"
        }
        // q even: sin r / cos r; odd: -cos r / sin r.
        _ => {
            "    %even_t = arith.divf %sin_r, %cos_r : f64
    %odd_t0 = arith.divf %cos_r, %sin_r : f64
    %odd_t = arith.negf %odd_t0 : f64
    %v = arith.select %odd, %odd_t, %even_t : f64
    %v3 = arith.select %finite, %v, %nan : f64
    %r = arith.select %is_zero, %x, %v3 : f64
"
        }
    };
    s.push_str(select);
    s
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

fn atan() -> String {
    let mut s = String::from("    %a = math.absf %x : f64\n");
    atan_core(&mut s, "a", "at");
    s.push_str(&with_sign_of_x("at_atan"));
    s
}

fn atan2() -> String {
    // `%x` is atan2's first argument (y), `%y` its second (x).
    let mut s = String::from(
        "    %ay = math.absf %x : f64
    %ax = math.absf %y : f64
    %q = arith.divf %ay, %ax : f64
",
    );
    atan_core(&mut s, "q", "at");
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
{sign}",
        inf = hex(f64::INFINITY),
        pi_hi = hex(std::f64::consts::PI),
        pi_lo = hex(1.2246467991473532e-16),
        sign = with_sign_of_x("r0"),
    );
    s
}

/// sqrt((1 - x)(1 + x)) into `%c`.
const COSINE_OF_ASIN: &str = "    %one = arith.constant 1.0 : f64
    %omx = arith.subf %one, %x : f64
    %opx = arith.addf %one, %x : f64
    %p = arith.mulf %omx, %opx : f64
    %c = math.sqrt %p : f64
";

fn asin() -> String {
    format!("{COSINE_OF_ASIN}    %r = math.atan2 %x, %c : f64\n")
}

fn acos() -> String {
    format!("{COSINE_OF_ASIN}    %r = math.atan2 %c, %x : f64\n")
}

fn pow() -> String {
    let mut s = format!(
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
    s
}

/// `fmod(x, y)`, exact: the remainder of the integer significands of |x| and |y| (both
/// normalized to 53 bits, subnormals scaled by 2^54 first) by shift-and-subtract over the
/// exponent difference (one step per bit, so a loop of up to 2100 steps for the widest
/// ratios), scaled back in two exact steps and given the sign of x; NaN for an infinite x,
/// a zero y or a NaN, and x itself where |x| < |y| or y is infinite.
fn fmod() -> String {
    let scale = hex(2f64.powi(54));
    let mut s = format!(
        "    %zero = arith.constant 0.0 : f64
    %inf = arith.constant {inf} : f64
    %nan = arith.constant {nan} : f64
    %least = arith.constant {least} : f64
    %scale = arith.constant {scale} : f64
    %i0 = arith.constant 0 : i64
    %i1 = arith.constant 1 : i64
    %c52 = arith.constant 52 : i64
    %c54 = arith.constant 54 : i64
    %mask = arith.constant 4503599627370495 : i64
    %implicit = arith.constant 4503599627370496 : i64
    %ax = math.absf %x : f64
    %ay = math.absf %y : f64
",
        inf = hex(f64::INFINITY),
        nan = hex(f64::NAN),
        least = hex(f64::MIN_POSITIVE),
    );
    // The significand (53 bits, leading bit set) and unbiased exponent of %a<v>, for v in
    // x, y; a zero gets exponent -1077 and significand 2^52 (it never reaches the loop).
    for v in ["x", "y"] {
        let _ = write!(
            s,
            "    %{v}_sub = arith.cmpf olt, %a{v}, %least : f64
    %{v}_scaled = arith.mulf %a{v}, %scale : f64
    %{v}_n = arith.select %{v}_sub, %{v}_scaled, %a{v} : f64
    %{v}_bits = arith.bitcast %{v}_n : f64 to i64
    %{v}_field = arith.shrui %{v}_bits, %c52 : i64
    %{v}_shifted = arith.subi %{v}_field, %c54 : i64
    %{v}_e = arith.select %{v}_sub, %{v}_shifted, %{v}_field : i64
    %{v}_frac = arith.andi %{v}_bits, %mask : i64
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
    s.push_str(&with_sign_of_x("magnitude").replace("    %r = ", "    %reduced = "));
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
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compiler::{descriptor, Descriptor, MlirSession, LOWER_PIPELINE};

    /// The functions compiled for the host, with the CPU prelude's `exp` and `log` and
    /// glibc's `sqrt`, `floor`, `roundeven` and `copysign`: `@probe_<name>` applies `name`
    /// to each element (of two arrays for two-argument functions).
    struct Probe {
        session: MlirSession,
    }

    /// The definitions and `@probe_<name>`.
    fn module(name: &str) -> String {
        let mut text = String::from("module {\n");
        text.push_str(crate::math::prelude());
        for (_, definition) in definitions() {
            text.push_str(&definition);
            text.push('\n');
        }
        let arity = FUNCTIONS
            .iter()
            .find(|f| f.name == name)
            .map_or(1, |f| f.arity);
        {
            let (params, operands, call) = if arity == 1 {
                (
                    "%xs: memref<?xf64>",
                    "%v = memref.load %xs[%i] : memref<?xf64>",
                    format!("%r = func.call @{name}(%v) : (f64) -> f64"),
                )
            } else {
                (
                    "%xs: memref<?xf64>, %ys: memref<?xf64>",
                    "%v = memref.load %xs[%i] : memref<?xf64>\n      %w = memref.load %ys[%i] : memref<?xf64>",
                    format!("%r = func.call @{name}(%v, %w) : (f64, f64) -> f64"),
                )
            };
            let _ = write!(
                text,
                "func.func @probe_{name}({params}, %out: memref<?xf64>) attributes {{llvm.emit_c_interface}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %out, %c0 : memref<?xf64>
  scf.for %i = %c0 to %n step %c1 {{
      {operands}
      {call}
      memref.store %r, %out[%i] : memref<?xf64>
  }}
  return
}}
"
            );
        }
        text.push_str("}\n");
        text
    }

    impl Probe {
        fn new() -> Self {
            Probe {
                session: MlirSession::new(),
            }
        }

        /// `name` applied to `inputs` (one slice per argument) on the host.
        fn apply(&self, name: &str, inputs: &[&[f64]]) -> Vec<f64> {
            let lowered = self
                .session
                .lower(
                    &module(name),
                    &[
                        "builtin.module(convert-math-to-libm,inline,symbol-dce)",
                        LOWER_PIPELINE,
                    ],
                )
                .unwrap_or_else(|f| panic!("{}: {}", f.stage, f.diagnostics));
            let code = self
                .session
                .jit(&lowered, &format!("probe_{name}"), None)
                .unwrap_or_else(|f| panic!("{}: {}", f.stage, f.diagnostics));
            let n = inputs[0].len();
            let mut out = vec![0.0f64; n];
            let rank1 = |p: *const f64| descriptor(p as i64, &[n as i64], [1].into_iter());
            let mut descriptors: Vec<Descriptor> =
                inputs.iter().map(|x| rank1(x.as_ptr())).collect();
            descriptors.push(rank1(out.as_mut_ptr()));
            // SAFETY: one rank-1 descriptor per argument, each of `n` elements.
            unsafe { code.call(&mut descriptors, &[], &mut []) };
            out
        }
    }

    /// Distance in units in the last place (0 for equal values, both NaN included).
    fn ulps(a: f64, b: f64) -> f64 {
        if a == b || (a.is_nan() && b.is_nan()) {
            return 0.0;
        }
        if a.is_nan() || b.is_nan() || a.is_infinite() || b.is_infinite() {
            return f64::INFINITY;
        }
        let ulp = |v: f64| {
            let v = v.abs().max(f64::MIN_POSITIVE);
            f64::from_bits(v.to_bits() + 1) - v
        };
        (a - b).abs() / ulp(b)
    }

    /// A deterministic pseudo-random sequence in [lo, hi).
    fn uniform(n: usize, seed: u64, lo: f64, hi: f64) -> Vec<f64> {
        let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..n)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                lo + (hi - lo) * (s >> 11) as f64 / (1u64 << 53) as f64
            })
            .collect()
    }

    /// Checks `name` against `reference` within `limit` ulp on `inputs`, and exactly on
    /// `specials`.
    fn check(
        probe: &Probe,
        name: &str,
        reference: impl Fn(f64) -> f64,
        inputs: &[f64],
        limit: f64,
        specials: &[f64],
    ) {
        let got = probe.apply(name, &[inputs]);
        let worst = inputs
            .iter()
            .zip(&got)
            .map(|(&x, &g)| (ulps(g, reference(x)), x))
            .fold((0.0, 0.0), |a, b| if b.0 > a.0 { b } else { a });
        assert!(worst.0 <= limit, "{name}: {} ulp at {:e}", worst.0, worst.1);
        println!("{name}: at most {:.2} ulp from glibc", worst.0);
        let got = probe.apply(name, &[specials]);
        for (&x, &g) in specials.iter().zip(&got) {
            let want = reference(x);
            assert!(
                g.to_bits() == want.to_bits() || (g.is_nan() && want.is_nan()),
                "{name}({x:e}) = {g:e}, glibc {want:e}"
            );
        }
    }

    /// Every (a, b) with a in `first` and b in `second`, as the two argument arrays.
    fn every_pair(first: &[f64], second: &[f64]) -> (Vec<f64>, Vec<f64>) {
        first
            .iter()
            .flat_map(|&a| second.iter().map(move |&b| (a, b)))
            .unzip()
    }

    const SPECIALS: [f64; 5] = [0.0, -0.0, f64::INFINITY, f64::NEG_INFINITY, f64::NAN];

    #[test]
    fn exponential_and_logarithmic_functions_are_within_4_ulp_of_glibc() {
        let probe = Probe::new();
        let near = uniform(20_000, 1, -2.0, 2.0);
        let wide = uniform(20_000, 2, -700.0, 700.0);
        let tiny = uniform(5_000, 3, -1e-10, 1e-10);
        let all: Vec<f64> = [near.as_slice(), &wide, &tiny].concat();
        check(&probe, "expm1", f64::exp_m1, &all, 4.0, &SPECIALS);
        check(&probe, "sinh", f64::sinh, &all, 4.0, &SPECIALS);
        check(&probe, "cosh", f64::cosh, &all, 4.0, &SPECIALS);
        check(&probe, "tanh", f64::tanh, &all, 4.0, &SPECIALS);
        let positive: Vec<f64> = all.iter().map(|x| x.abs() * 1e3).collect();
        let above_minus_one: Vec<f64> = near.iter().map(|x| x.abs() - 0.999).collect();
        let log_inputs = [positive.as_slice(), &above_minus_one, &tiny].concat();
        let log_specials = [0.0, -0.0, -1.0, -2.0, f64::INFINITY, f64::NAN, 1.0, 1e-310];
        check(&probe, "log1p", f64::ln_1p, &log_inputs, 4.0, &log_specials);
        let powers = [
            1.0,
            2.0,
            8.0,
            0.5,
            2f64.powi(-1074),
            2f64.powi(1000),
            1e-310,
        ];
        check(
            &probe,
            "log2",
            f64::log2,
            &positive,
            4.0,
            &[&log_specials[..], &powers].concat(),
        );
        check(&probe, "log10", f64::log10, &positive, 4.0, &log_specials);
    }

    #[test]
    fn trigonometric_functions_are_within_4_ulp_of_glibc() {
        let probe = Probe::new();
        let inputs = [
            uniform(20_000, 4, -10.0, 10.0),
            uniform(20_000, 5, -1e5, 1e5),
            uniform(5_000, 6, -1e-8, 1e-8),
        ]
        .concat();
        check(&probe, "sin", f64::sin, &inputs, 4.0, &SPECIALS);
        check(&probe, "cos", f64::cos, &inputs, 4.0, &SPECIALS);
        check(&probe, "tan", f64::tan, &inputs, 4.0, &SPECIALS);
        check(&probe, "atan", f64::atan, &inputs, 4.0, &SPECIALS);
        let unit = uniform(20_000, 7, -1.0, 1.0);
        let unit_specials = [0.0, -0.0, 1.0, -1.0, 2.0, f64::NAN];
        check(&probe, "asin", f64::asin, &unit, 4.0, &unit_specials);
        check(&probe, "acos", f64::acos, &unit, 4.0, &unit_specials);
    }

    #[test]
    fn atan2_places_the_angle_in_its_quadrant_with_cs_special_cases() {
        let probe = Probe::new();
        let ys = uniform(20_000, 8, -100.0, 100.0);
        let xs = uniform(20_000, 9, -100.0, 100.0);
        let got = probe.apply("atan2", &[&ys, &xs]);
        for ((&y, &x), &g) in ys.iter().zip(&xs).zip(&got) {
            assert!(ulps(g, y.atan2(x)) <= 4.0, "atan2({y:e}, {x:e}) = {g:e}");
        }
        let values = [
            0.0,
            -0.0,
            1.0,
            -1.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
        ];
        let (ys, xs) = every_pair(&values, &values);
        let got = probe.apply("atan2", &[&ys, &xs]);
        for ((&y, &x), &g) in ys.iter().zip(&xs).zip(&got) {
            let want = y.atan2(x);
            assert!(
                ulps(g, want) <= 1.0 && g.is_sign_negative() == want.is_sign_negative()
                    || (g.is_nan() && want.is_nan()),
                "atan2({y:e}, {x:e}) = {g:e}, glibc {want:e}"
            );
        }
    }

    #[test]
    fn fmod_is_exact() {
        let probe = Probe::new();
        let mut xs = uniform(20_000, 12, -1e6, 1e6);
        let mut ys = uniform(20_000, 13, -10.0, 10.0);
        // Wide ratios, subnormals, and C's special cases.
        let odd = [
            (1e300, 3.0),
            (-1e300, 1e-300),
            (5e-324, 3e-320),
            (1e-310, 3e-322),
            (7.5, 2.5),
            (-7.5, 2.5),
            (-0.0, 1.0),
            (0.0, -1.0),
            (1.0, 0.0),
            (f64::INFINITY, 1.0),
            (1.0, f64::INFINITY),
            (-1.0, f64::NEG_INFINITY),
            (f64::NAN, 1.0),
            (1.0, f64::NAN),
            (2f64.powi(1023), 2f64.powi(-1074)),
            (f64::MAX, 1.5),
        ];
        xs.extend(odd.iter().map(|p| p.0));
        ys.extend(odd.iter().map(|p| p.1));
        let got = probe.apply("fmod", &[&xs, &ys]);
        for ((&x, &y), &g) in xs.iter().zip(&ys).zip(&got) {
            let want = x % y;
            assert!(
                g.to_bits() == want.to_bits() || (g.is_nan() && want.is_nan()),
                "fmod({x:e}, {y:e}) = {g:e}, glibc {want:e}"
            );
        }
    }

    #[test]
    fn remainders_become_calls_of_fmod() {
        let text = "    %3 = arith.remf %a, %b : f64\n    %4 = arith.remf %3, %c fastmath<contract> : f32\n    %5 = arith.addf %a, %b : f64";
        assert_eq!(
            remainders_as_calls(text),
            "    %3 = func.call @fmod(%a, %b) : (f64, f64) -> f64\n    %4 = func.call @fmodf(%3, %c) : (f32, f32) -> f32\n    %5 = arith.addf %a, %b : f64\n"
        );
    }

    #[test]
    fn pow_is_exact_on_small_integer_powers_and_follows_c99_special_cases() {
        let probe = Probe::new();
        let xs = uniform(20_000, 10, 0.0, 10.0);
        let ys = uniform(20_000, 11, -20.0, 20.0);
        let got = probe.apply("pow", &[&xs, &ys]);
        for ((&x, &y), &g) in xs.iter().zip(&ys).zip(&got) {
            let want = x.powf(y);
            assert!(
                (g - want).abs() <= 1e-13 * want.abs(),
                "pow({x:e}, {y:e}) = {g:e}, glibc {want:e}"
            );
        }
        let bases = [
            0.0,
            -0.0,
            1.0,
            -1.0,
            3.0,
            -3.0,
            0.5,
            -8.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
        ];
        let exponents = [
            0.0,
            -0.0,
            1.0,
            2.0,
            3.0,
            -2.0,
            -3.0,
            0.5,
            -0.5,
            63.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
        ];
        let (xs, ys) = every_pair(&bases, &exponents);
        let got = probe.apply("pow", &[&xs, &ys]);
        for ((&x, &y), &g) in xs.iter().zip(&ys).zip(&got) {
            let want = x.powf(y);
            let exact = (y.fract() == 0.0 && y.abs() <= 2.0) || !want.is_finite() || want == 0.0;
            let close = if exact {
                g.to_bits() == want.to_bits() || (g.is_nan() && want.is_nan())
            } else {
                (g - want).abs() <= 1e-15 * want.abs()
            };
            assert!(close, "pow({x:e}, {y:e}) = {g:e}, glibc {want:e}");
        }
    }
}
