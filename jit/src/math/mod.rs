//! The math library of JIT-compiled kernels, as MLIR text, for the host CPU and for GPUs.
//!
//! A composed module reaches math functions through `convert-math-to-libm`: `math.exp`
//! becomes `func.call @exp` (`@expf` on `f32`), and a definition of that name in the module
//! is reused and then inlined into the loop (`inline`, then `symbol-dce` drops the unused
//! definitions). [`prelude`] is the text, to be pasted into a `builtin.module` body before
//! `convert-math-to-libm`, that defines the functions a target takes from this library:
//!
//! - [`exp_log`]: `exp`, `log` and `erf`, branch-free polynomials within 1 ulp of glibc
//!   (`erf` within 16), on both targets: on the host so that transcendental-heavy loops
//!   vectorize instead of calling libm once per element, on a GPU because it has no libm.
//!   The same text on both sides, so both give the same results.
//! - [`elementary`] (`expm1`, `log1p`, `log2`, `log10`, `sinh`, `cosh`, `tanh`), [`trig`]
//!   (`sin`, `cos`, `tan`, `atan`, `atan2`, `asin`, `acos`) and [`power`] (`pow`, `fmod`):
//!   the rest of libm the kernels use, built on `exp`, `log` and the single-instruction
//!   functions, for the GPU only. The host keeps glibc's, which are more accurate (these are
//!   within a few ulp of glibc, `fmod` exact), so CPU kernels match the native ones bitwise.
//! - [`instructions`]: `sqrt`, `fabs`, `floor`, `ceil`, `roundeven`, `rint`, `trunc`, `fma`,
//!   `round`, `copysign` and `rsqrt`, one PTX instruction or LLVM intrinsic each, for the GPU
//!   only (they compile for the device alone; the host has them from LLVM and glibc).
//!
//! Every polynomial function is written once, on `f64`, as a body over named SSA values
//! ([`Function`]); one template makes its definition and that of its `f32` form, which
//! widens the arguments, runs the same body and rounds once at the end. The definitions carry
//! `llvm.linkage = internal`, so one that is not inlined neither clashes with libm's symbol
//! of the same name nor is treated as a libm call by LLVM. A call to a function no target
//! defines (e.g. `cbrt` on a GPU) stays unresolved; the GPU path then reports the kernel as
//! unsupported and it runs on the CPU.

mod elementary;
mod exp_log;
mod instructions;
mod power;
#[cfg(test)]
mod tests;
mod trig;

use std::fmt::Write as _;
use std::sync::OnceLock;

use diffuse_ir::KernelTarget;

pub(crate) use power::remainders_as_calls;

/// One function of the library on `f64` (its `f32` form adds an `f` to the name).
struct Function {
    /// The libm name.
    name: &'static str,
    /// The SSA names (without `%`) of the arguments, which the body reads.
    params: &'static [&'static str],
    /// The SSA name of the result, which the body defines.
    result: &'static str,
    /// Appends the body's statements.
    body: fn(&mut String),
    /// True when host kernels take it from this library too, not from glibc.
    on_host: bool,
}

/// A function of one argument `%x` whose body defines `%r`, for the GPU only.
const fn unary(name: &'static str, body: fn(&mut String)) -> Function {
    Function {
        name,
        params: &["x"],
        result: "r",
        body,
        on_host: false,
    }
}

/// A function of two arguments `%x`, `%y` whose body defines `%r`, for the GPU only.
const fn binary(name: &'static str, body: fn(&mut String)) -> Function {
    Function {
        name,
        params: &["x", "y"],
        result: "r",
        body,
        on_host: false,
    }
}

/// Every polynomial function of the library (module docs).
const FUNCTIONS: [Function; 19] = [
    exp_log::EXP,
    exp_log::LOG,
    exp_log::ERF,
    unary("expm1", elementary::expm1),
    unary("log1p", elementary::log1p),
    unary("log2", elementary::log2),
    unary("log10", elementary::log10),
    unary("tanh", elementary::tanh),
    unary("sinh", elementary::sinh),
    unary("cosh", elementary::cosh),
    unary("sin", trig::sin),
    unary("cos", trig::cos),
    unary("tan", trig::tan),
    unary("atan", trig::atan),
    binary("atan2", trig::atan2),
    unary("asin", trig::asin),
    unary("acos", trig::acos),
    binary("pow", power::pow),
    binary("fmod", power::fmod),
];

/// MLIR text, to be pasted into a `builtin.module` body, that defines every function of the
/// library `target` uses (module docs) as `func.func private`.
pub(crate) fn prelude(target: KernelTarget) -> &'static str {
    static HOST: OnceLock<String> = OnceLock::new();
    static DEVICE: OnceLock<String> = OnceLock::new();
    match target {
        KernelTarget::Host => HOST.get_or_init(|| definitions(|f| f.on_host)),
        KernelTarget::Device => DEVICE.get_or_init(|| {
            let mut text = definitions(|_| true);
            for definition in instructions::definitions() {
                text.push_str(&definition);
                text.push('\n');
            }
            text
        }),
    }
}

/// The `f64` and `f32` definitions of the polynomial functions `wanted` selects: every
/// `f64` form first, then every `f32` form.
fn definitions(wanted: impl Fn(&Function) -> bool) -> String {
    let mut out = String::new();
    for function in FUNCTIONS.iter().filter(|f| wanted(f)) {
        define(&mut out, function, false);
    }
    for function in FUNCTIONS.iter().filter(|f| wanted(f)) {
        define(&mut out, function, true);
    }
    out
}

/// Appends the definition of `function` on `f64`, or with `narrow` its `f32` form, which
/// widens its arguments (`%f32_<param>`) to the body's and rounds the body's result once.
fn define(out: &mut String, function: &Function, narrow: bool) {
    let Function {
        name,
        params,
        result,
        body,
        ..
    } = function;
    let (suffix, ty, prefix) = if narrow {
        ("f", "f32", "f32_")
    } else {
        ("", "f64", "")
    };
    let typed: Vec<String> = params
        .iter()
        .map(|p| format!("%{prefix}{p}: {ty}"))
        .collect();
    let _ = writeln!(
        out,
        "func.func private @{name}{suffix}({}) -> {ty} {LINKAGE}",
        typed.join(", ")
    );
    if narrow {
        for p in *params {
            let _ = writeln!(out, "    %{p} = arith.extf %f32_{p} : f32 to f64");
        }
    }
    body(out);
    if narrow {
        let _ = writeln!(
            out,
            "    %f32_{result} = arith.truncf %{result} : f64 to f32"
        );
    }
    let _ = writeln!(out, "    return %{prefix}{result} : {ty}\n}}");
}

/// The attributes and opening brace of every polynomial function: internal linkage, so that
/// a definition that is not inlined neither clashes with nor stands for libm's.
const LINKAGE: &str = "attributes {llvm.linkage = #llvm.linkage<internal>} {";

/// Appends the straight-line Horner evaluation at `%<x>` of the polynomial whose
/// `coefficients` are listed highest degree first, separated by white space: an MLIR float
/// constant (defined as `%<stem><k>` for the coefficient of degree k) or, starting with `%`,
/// an SSA value the body defines before. Step k multiplies the running value by x into
/// `%<stem>m<k>` and adds coefficient k into `%<stem>h<k>`, so the result is `%<stem>h0`.
/// Each step carries `fastmath<contract>` so that LLVM may fuse it into an FMA.
fn horner(out: &mut String, stem: &str, x: &str, coefficients: &str) {
    let coefficients: Vec<&str> = coefficients.split_whitespace().collect();
    let degree = coefficients.len() - 1;
    let mut running = String::new();
    for (k, coefficient) in (0..=degree).rev().zip(coefficients) {
        let operand = match coefficient.strip_prefix('%') {
            Some(name) => name.to_string(),
            None => {
                let _ = writeln!(out, "    %{stem}{k} = arith.constant {coefficient} : f64");
                format!("{stem}{k}")
            }
        };
        if k == degree {
            running = operand;
            continue;
        }
        let _ = writeln!(
            out,
            "    %{stem}m{k} = arith.mulf %{running}, %{x} fastmath<contract> : f64"
        );
        let _ = writeln!(
            out,
            "    %{stem}h{k} = arith.addf %{stem}m{k}, %{operand} fastmath<contract> : f64"
        );
        running = format!("{stem}h{k}");
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

/// Appends `%<result> = copysign(%<magnitude>, %x)` in bit operations (`math.copysign` has no
/// lowering that both the host and the device accept).
fn with_sign_of_x(out: &mut String, magnitude: &str, result: &str) {
    let _ = write!(
        out,
        "    %sign_bits = arith.bitcast %x : f64 to i64
    %magnitude_bits = arith.bitcast %{magnitude} : f64 to i64
    %sign_mask = arith.constant {} : i64
    %magnitude_mask = arith.constant {} : i64
    %sign_only = arith.andi %sign_bits, %sign_mask : i64
    %magnitude_only = arith.andi %magnitude_bits, %magnitude_mask : i64
    %signed = arith.ori %sign_only, %magnitude_only : i64
    %{result} = arith.bitcast %signed : i64 to f64
",
        i64::MIN,
        i64::MAX
    );
}

/// Appends the bits and the biased exponent of `%<input>` (non-negative or NaN), a subnormal
/// scaled by 2^54 first: `%<v>_sub` (it was subnormal), `%<v>_bits` (of the scaled value)
/// and `%<v>_e` (its exponent field, less 54 for a subnormal); every name starts with `%<v>_`.
fn biased_exponent(out: &mut String, v: &str, input: &str) {
    let _ = write!(
        out,
        "    %{v}_least = arith.constant {least} : f64
    %{v}_scale = arith.constant {scale} : f64
    %{v}_sub = arith.cmpf olt, %{input}, %{v}_least : f64
    %{v}_scaled = arith.mulf %{input}, %{v}_scale : f64
    %{v}_n = arith.select %{v}_sub, %{v}_scaled, %{input} : f64
    %{v}_bits = arith.bitcast %{v}_n : f64 to i64
    %{v}_c52 = arith.constant 52 : i64
    %{v}_field = arith.shrui %{v}_bits, %{v}_c52 : i64
    %{v}_c54 = arith.constant 54 : i64
    %{v}_shifted = arith.subi %{v}_field, %{v}_c54 : i64
    %{v}_e = arith.select %{v}_sub, %{v}_shifted, %{v}_field : i64
",
        least = hex(f64::MIN_POSITIVE),
        scale = hex(2f64.powi(54)),
    );
}
