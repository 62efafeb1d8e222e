//! Device functions that are one PTX instruction or LLVM intrinsic each, in `f64` and `f32`:
//! `sqrt` (`sqrt.rn`), `fabs` (`abs`), `floor`, `ceil`, `roundeven` and `rint` (`cvt` with a
//! rounding mode), `trunc` and `fma` (LLVM intrinsics the NVVM conversion accepts), `round`
//! (from `trunc`), `copysign` (bit operations) and `rsqrt` (as `1 / sqrt`). They are PTX
//! inline assembly because the NVVM conversion refuses the corresponding LLVM intrinsics (it
//! reserves them for libdevice, which is not available here), so they compile for the device
//! only; all but `rsqrt` are exact, as glibc's.

/// The `func.func private` text of every function (module docs), on `f64` and `f32`.
pub(super) fn definitions() -> Vec<String> {
    let mut defs = Vec::new();
    // Single-instruction functions, as PTX (inline assembly: the NVVM conversion refuses the
    // corresponding LLVM intrinsics, reserving them for libdevice) or as LLVM intrinsics it
    // accepts (`trunc`, `fma`). These exist only in device code.
    for (suffix, ty, reg, bits) in [("", "f64", "d", "i64"), ("f", "f32", "f", "i32")] {
        let asm = |name: &str, instruction: &str| {
            format!(
                "func.func private @{name}{suffix}(%x: {ty}) -> {ty} {{\n  %r = llvm.inline_asm \"{instruction}.{ty} $0, $1;\", \"={reg},{reg}\" %x : ({ty}) -> {ty}\n  return %r : {ty}\n}}"
            )
        };
        defs.push(asm("sqrt", "sqrt.rn"));
        defs.push(asm("fabs", "abs"));
        defs.push(asm("floor", &format!("cvt.rmi.{ty}")));
        defs.push(asm("ceil", &format!("cvt.rpi.{ty}")));
        defs.push(asm("roundeven", &format!("cvt.rni.{ty}")));
        defs.push(asm("rint", &format!("cvt.rni.{ty}")));
        defs.push(
            format!(
                "func.func private @trunc{suffix}(%x: {ty}) -> {ty} {{\n  %r = llvm.intr.trunc(%x) : ({ty}) -> {ty}\n  return %r : {ty}\n}}"
            ),
        );
        defs.push(
            format!(
                "func.func private @fma{suffix}(%a: {ty}, %b: {ty}, %c: {ty}) -> {ty} {{\n  %r = llvm.intr.fma(%a, %b, %c) : ({ty}, {ty}, {ty}) -> {ty}\n  return %r : {ty}\n}}"
            ),
        );
        // Half-way cases away from zero: trunc, plus one step when the fraction is >= 1/2.
        defs.push(format!(
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
        ));
        let (sign, magnitude) = if ty == "f64" {
            (i64::MIN.to_string(), i64::MAX.to_string())
        } else {
            (i32::MIN.to_string(), i32::MAX.to_string())
        };
        defs.push(format!(
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
        ));
        defs.push(format!(
            "func.func private @rsqrt{suffix}(%x: {ty}) -> {ty} {{
  %one = arith.constant 1.0 : {ty}
  %s = llvm.inline_asm \"sqrt.rn.{ty} $0, $1;\", \"={reg},{reg}\" %x : ({ty}) -> {ty}
  %r = arith.divf %one, %s : {ty}
  return %r : {ty}
}}"
        ));
    }
    defs
}
