//! Math functions for device code.
//!
//! The composed module reaches math functions through `convert-math-to-libm`: `math.sqrt`
//! becomes `func.call @sqrt`, and a definition of `@sqrt` in the module is then inlined into
//! the loop. On the CPU the shared prelude ([`crate::math`]: `exp`, `log`, `erf` and their
//! `f32` forms, in plain `arith`) defines some of them and libm the rest. A GPU has no libm
//! (and CUDA's libdevice is not available here), so every function a device kernel calls must
//! be defined in the module. The device prelude is
//! - the shared prelude (the same polynomials on both sides, so `exp`, `log` and `erf` give
//!   the CPU's results);
//! - single-instruction definitions of the functions that PTX has as instructions, in `f64`
//!   and `f32`: `sqrt` (`sqrt.rn`), `fabs` (`abs`), `floor`, `ceil`, `roundeven` and `rint`
//!   (`cvt` with a rounding mode), `trunc` and `fma` (LLVM intrinsics the NVVM conversion
//!   accepts), `round` (from `trunc`), `copysign` (bit operations) and `rsqrt` (as
//!   `1 / sqrt`). They are PTX inline assembly because the NVVM conversion refuses the
//!   corresponding LLVM intrinsics (it reserves them for libdevice), so they compile for the
//!   device only; all but `rsqrt` are exact, as glibc's;
//! - the rest of libm that the kernels use (`sin`, `tanh`, `pow`, `atan2`, `fmod`, ...), built
//!   on those ([`libm`](super::libm)): within a few ulp of glibc (`fmod` exact), not bitwise
//!   equal to it.
//!
//! A call to anything else (e.g. `cbrt`) stays unresolved; the PTX check then reports the
//! kernel as unsupported on the GPU, and it runs on the CPU.

/// The device prelude: `shared` (the CPU prelude) plus the single-instruction definitions
/// (module docs) of the functions `shared` does not define.
pub(crate) fn device_prelude(shared: &str) -> String {
    let mut out = String::from(shared);
    out.push('\n');
    for (name, text) in definitions().into_iter().chain(super::libm::definitions()) {
        if !defines(shared, &name) {
            out.push_str(&text);
            out.push('\n');
        }
    }
    out
}

/// True when `text` contains a definition or declaration of the function `@name`.
fn defines(text: &str, name: &str) -> bool {
    let needle = format!("@{name}(");
    text.match_indices(&needle).any(|(i, _)| {
        text[..i]
            .rsplit('\n')
            .next()
            .is_some_and(|line| line.contains("func.func"))
    })
}

/// (libm name, `func.func private` text) for every function of the device prelude.
fn definitions() -> Vec<(String, String)> {
    let mut defs = Vec::new();
    // Single-instruction functions, as PTX (inline assembly: the NVVM conversion refuses the
    // corresponding LLVM intrinsics, reserving them for libdevice) or as LLVM intrinsics it
    // accepts (`trunc`, `fma`). These exist only in device code.
    for (suffix, ty, reg, bits) in [("", "f64", "d", "i64"), ("f", "f32", "f", "i32")] {
        let asm = |name: &str, instruction: &str| {
            (
                format!("{name}{suffix}"),
                format!(
                    "func.func private @{name}{suffix}(%x: {ty}) -> {ty} {{\n  %r = llvm.inline_asm \"{instruction}.{ty} $0, $1;\", \"={reg},{reg}\" %x : ({ty}) -> {ty}\n  return %r : {ty}\n}}"
                ),
            )
        };
        defs.push(asm("sqrt", "sqrt.rn"));
        defs.push(asm("fabs", "abs"));
        defs.push(asm("floor", &format!("cvt.rmi.{ty}")));
        defs.push(asm("ceil", &format!("cvt.rpi.{ty}")));
        defs.push(asm("roundeven", &format!("cvt.rni.{ty}")));
        defs.push(asm("rint", &format!("cvt.rni.{ty}")));
        defs.push((
            format!("trunc{suffix}"),
            format!(
                "func.func private @trunc{suffix}(%x: {ty}) -> {ty} {{\n  %r = llvm.intr.trunc(%x) : ({ty}) -> {ty}\n  return %r : {ty}\n}}"
            ),
        ));
        defs.push((
            format!("fma{suffix}"),
            format!(
                "func.func private @fma{suffix}(%a: {ty}, %b: {ty}, %c: {ty}) -> {ty} {{\n  %r = llvm.intr.fma(%a, %b, %c) : ({ty}, {ty}, {ty}) -> {ty}\n  return %r : {ty}\n}}"
            ),
        ));
        // Half-way cases away from zero: trunc, plus one step when the fraction is >= 1/2.
        defs.push((
            format!("round{suffix}"),
            format!(
                "func.func private @round{suffix}(%x: {ty}) -> {ty} {{
  %t = llvm.intr.trunc(%x) : ({ty}) -> {ty}
  %d = arith.subf %x, %t : {ty}
  %ad = llvm.inline_asm \"abs.{ty} $0, $1;\", \"={reg},{reg}\" %d : ({ty}) -> {ty}
  %half = arith.constant 0.5 : {ty}
  %far = arith.cmpf oge, %ad, %half : {ty}
  %zero = arith.constant 0.0 : {ty}
  %neg = arith.cmpf olt, %x, %zero : {ty}
  %one = arith.constant 1.0 : {ty}
  %mone = arith.constant -1.0 : {ty}
  %step = arith.select %neg, %mone, %one : {ty}
  %up = arith.addf %t, %step : {ty}
  %r = arith.select %far, %up, %t : {ty}
  return %r : {ty}
}}"
            ),
        ));
        let (sign, magnitude) = if ty == "f64" {
            (i64::MIN.to_string(), i64::MAX.to_string())
        } else {
            (i32::MIN.to_string(), i32::MAX.to_string())
        };
        defs.push((
            format!("copysign{suffix}"),
            format!(
                "func.func private @copysign{suffix}(%a: {ty}, %b: {ty}) -> {ty} {{
  %ia = arith.bitcast %a : {ty} to {bits}
  %ib = arith.bitcast %b : {ty} to {bits}
  %m = arith.constant {magnitude} : {bits}
  %s = arith.constant {sign} : {bits}
  %am = arith.andi %ia, %m : {bits}
  %bs = arith.andi %ib, %s : {bits}
  %o = arith.ori %am, %bs : {bits}
  %r = arith.bitcast %o : {bits} to {ty}
  return %r : {ty}
}}"
            ),
        ));
        defs.push((
            format!("rsqrt{suffix}"),
            format!(
                "func.func private @rsqrt{suffix}(%x: {ty}) -> {ty} {{
  %one = arith.constant 1.0 : {ty}
  %s = llvm.inline_asm \"sqrt.rn.{ty} $0, $1;\", \"={reg},{reg}\" %x : ({ty}) -> {ty}
  %r = arith.divf %one, %s : {ty}
  return %r : {ty}
}}"
            ),
        ));
    }
    defs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compiler::MlirSession;

    #[test]
    fn the_shared_prelude_takes_precedence() {
        let shared = "func.func private @sqrt(%x: f64) -> f64 {\n  return %x : f64\n}\n";
        let p = device_prelude(shared);
        assert_eq!(p.matches("func.func private @sqrt(").count(), 1, "{p}");
        assert!(p.contains("func.func private @sqrtf("));
        // The real shared prelude's functions are not redefined.
        let p = device_prelude(crate::math::prelude());
        for name in ["exp", "log", "erf", "expf", "logf", "erff", "sqrt", "floor"] {
            let header = format!("func.func private @{name}(");
            assert_eq!(p.matches(&header).count(), 1, "{name}");
        }
    }

    #[test]
    fn the_device_prelude_parses() {
        let text = format!("module {{\n{}\n}}", device_prelude(crate::math::prelude()));
        let session = MlirSession::new();
        let parsed = session.lower(&text, &[]).map(|_| ());
        if let Err(f) = parsed {
            panic!("{}: {}\n{text}", f.stage, f.diagnostics);
        }
    }
}
