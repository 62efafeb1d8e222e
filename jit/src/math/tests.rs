//! The library's definitions (each once, in straight-line code where the host uses them,
//! parsed by MLIR) and the device-only functions' accuracy, measured on the host against
//! glibc.

use std::fmt::Write as _;

use diffuse_ir::KernelTarget;

use super::*;
use crate::compiler::{descriptor, Descriptor, MlirSession, LOWER_PIPELINE};

/// The symbols `convert-math-to-libm` calls for `math.exp`, `math.log`, `math.erf`.
const HOST_FUNCTIONS: [&str; 6] = ["exp", "log", "erf", "expf", "logf", "erff"];

/// The definition of `@name` in `text` (from its header to its closing brace).
fn definition_of<'a>(text: &'a str, name: &str) -> &'a str {
    let header = format!("func.func private @{name}(");
    let start = text.find(&header).unwrap_or_else(|| panic!("no @{name}"));
    let end = start + text[start..].find("\n}").expect("a closing brace");
    &text[start..end]
}

#[test]
fn the_host_prelude_defines_each_libm_name_once_in_straight_line_arith() {
    let text = prelude(KernelTarget::Host);
    for name in HOST_FUNCTIONS {
        let header = format!("func.func private @{name}(");
        assert_eq!(text.matches(header.as_str()).count(), 1, "{name}");
    }
    assert_eq!(text.matches("func.func").count(), HOST_FUNCTIONS.len());
    assert_eq!(text.matches("return").count(), HOST_FUNCTIONS.len());
    assert_eq!(text.matches('{').count(), text.matches('}').count());
    // A `math` op would be turned into a call to the function being defined.
    for banned in [
        "math.",
        "call",
        "scf.",
        "cf.",
        "#llvm.fastmath<fast>",
        "reassoc",
    ] {
        assert!(!text.contains(banned), "{banned}");
    }
}

#[test]
fn the_device_prelude_defines_each_function_once_and_the_hosts_as_the_host_does() {
    let host = prelude(KernelTarget::Host);
    let device = prelude(KernelTarget::Device);
    let names = FUNCTIONS
        .iter()
        .map(|f| f.name)
        .chain([
            "sqrt",
            "fabs",
            "floor",
            "ceil",
            "roundeven",
            "rint",
            "trunc",
        ])
        .chain(["fma", "round", "copysign", "rsqrt"]);
    for name in names {
        for name in [name.to_string(), format!("{name}f")] {
            let header = format!("func.func private @{name}(");
            assert_eq!(device.matches(&header).count(), 1, "{name}");
        }
    }
    // `exp`, `log` and `erf` give the CPU's results on the GPU.
    for name in HOST_FUNCTIONS {
        assert_eq!(
            definition_of(device, name),
            definition_of(host, name),
            "{name}"
        );
    }
}

#[test]
fn the_device_prelude_parses() {
    let text = format!("module {{\n{}\n}}", prelude(KernelTarget::Device));
    let session = MlirSession::new();
    let parsed = session.lower(&text, &[]).map(|_| ());
    if let Err(f) = parsed {
        panic!("{}: {}\n{text}", f.stage, f.diagnostics);
    }
}

/// The polynomial functions compiled for the host, with glibc's `sqrt`, `floor`,
/// `roundeven` and `copysign`: `@probe_<name>` applies `name` to each element (of two
/// arrays for two-argument functions).
struct Probe {
    session: MlirSession,
}

/// The definitions and `@probe_<name>`.
fn module(name: &str) -> String {
    let mut text = String::from("module {\n");
    text.push_str(&definitions(|_| true));
    let arity = FUNCTIONS
        .iter()
        .find(|f| f.name == name)
        .map_or(1, |f| f.params.len());
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
        let mut descriptors: Vec<Descriptor> = inputs.iter().map(|x| rank1(x.as_ptr())).collect();
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
