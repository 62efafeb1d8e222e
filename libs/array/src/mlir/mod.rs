//! MLIR generators for the library's task kinds (the kernel ABI is `diffuse_ir::mlir`'s).
//!
//! Each family has one generator type, attached to its kinds when they are registered:
//!
//! - [`ElementwiseGenerator`]: every element-wise kind (unary and binary operations, `where`,
//!   `astype`, copies and scalar fills): one `linalg.generic` over the output, NumPy
//!   broadcasting in the inputs' indexing maps;
//! - [`ReductionGenerator`]: `sum`, `prod`, `max`, `min` and `dot` into a 0-d partial value
//!   (float sums, products and dot products as `scf.for` loops folding eight lanes in the
//!   native kernels' order, the others as one `linalg.generic`);
//! - [`ProductGenerator`]: `matvec` (written or summed into the output) and `matmul`, each
//!   matrix read as stored or transposed (its indexing map's results swapped).
//!
//! The bodies compute what the native kernels compute, bit for bit where the operations are
//! exact: integers wrap; float `maximum`/`minimum` are NaN if either operand is, and of two
//! equal values (`-0.0` and `0.0`) return the first, as the native kernels and NumPy do (not
//! `arith.maximumf`, which orders `-0.0` first); comparisons are ordered except `!=` (true on
//! NaN, as in Rust); casts follow Rust's `as` through `f64` when either side is a float
//! (float-to-integer saturates with NaN to 0, `x != 0` to bool, `i64` to `f32` rounds twice)
//! and through `i64` otherwise; float sums, products and dot products add in the native
//! kernels' eight-lane order. What can differ: float `matvec` and `matmul` add in a
//! different order from their native kernels (a tuned GEMM's blocks and fused multiply-adds,
//! which the runtime prefers on CPUs), so float results may round differently, a `max` or `min` reduction over both `-0.0` and `0.0` may return the
//! other zero, and the JIT evaluates `exp`, `log` and `erf` with its own polynomials rather
//! than libm.
//!
//! The index-driven creation kinds (`arange`, `linspace`, `random`) have no generator: their
//! values depend on each element's global index, and the ABI does not pass a point's offset
//! in its store. `zeros` launches no task; `full` and `ones` are element-wise copies of a
//! scalar.

mod elementwise;
mod reduce;
#[cfg(test)]
mod test_support;

use std::collections::BTreeMap;
use std::fmt::{Display, Write as _};

use diffuse_ir::{
    element_type, tensor_type, DType, KernelError, MlirArg, MlirSignature, Privilege, Tuple,
    MAX_DIMS,
};

use crate::element::is_float;

pub(crate) use elementwise::ElementwiseGenerator;
pub(crate) use reduce::{Product, ProductGenerator, ReductionGenerator};

/// The error a generator reports for a signature or operation it cannot implement.
fn unsupported(kind: &str, reason: impl Into<String>) -> KernelError {
    KernelError {
        kind: kind.to_string(),
        point: Tuple::splat(0, 0),
        reason: format!("no MLIR kernel: {}", reason.into()),
    }
}

/// Checks that `sig` has `args` store arguments and exactly the scalar types `scalars`.
fn check_counts(
    kind: &str,
    sig: &MlirSignature<'_>,
    args: usize,
    scalars: &[DType],
) -> Result<(), KernelError> {
    if sig.args.len() != args || sig.scalars != scalars {
        return Err(unsupported(
            kind,
            format!(
                "expected {args} store arguments and scalars {scalars:?}, got {} and {:?}",
                sig.args.len(),
                sig.scalars
            ),
        ));
    }
    Ok(())
}

/// Argument `i` of `sig`, checked to have `dtype`, one of the `privileges` and at most
/// [`MAX_DIMS`] dimensions.
fn check_arg<'s>(
    kind: &str,
    sig: &MlirSignature<'s>,
    i: usize,
    dtype: DType,
    privileges: &[Privilege],
) -> Result<&'s MlirArg, KernelError> {
    let arg = &sig.args[i];
    if arg.dtype != dtype || !privileges.contains(&arg.privilege) {
        return Err(unsupported(
            kind,
            format!(
                "argument {i} is a {} store with privilege {}; expected {dtype} with one of {}",
                arg.dtype,
                arg.privilege,
                privileges
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
    }
    if arg.rank > MAX_DIMS {
        return Err(unsupported(
            kind,
            format!(
                "argument {i} has {} dimensions; at most {MAX_DIMS} are supported",
                arg.rank
            ),
        ));
    }
    Ok(arg)
}

/// Checks that argument `i` has rank `rank`.
fn check_rank(
    kind: &str,
    sig: &MlirSignature<'_>,
    i: usize,
    rank: usize,
) -> Result<(), KernelError> {
    let found = sig.args[i].rank;
    if found != rank {
        return Err(unsupported(
            kind,
            format!("argument {i} has {found} dimensions; expected {rank}"),
        ));
    }
    Ok(())
}

/// The SSA name of store argument `i` in a kernel function.
fn arg_name(i: usize) -> String {
    format!("%a{i}")
}

/// The SSA name of scalar argument `j` in a kernel function.
fn scalar_name(j: usize) -> String {
    format!("%s{j}")
}

/// A kernel function's parameter list: each store argument typed by `arg_type` (its tensor
/// type, or its element type for an element function), then the scalars.
fn parameters(sig: &MlirSignature<'_>, arg_type: impl Fn(&MlirArg) -> String) -> Vec<String> {
    sig.args
        .iter()
        .enumerate()
        .map(|(i, a)| format!("{}: {}", arg_name(i), arg_type(a)))
        .chain(
            sig.scalars
                .iter()
                .enumerate()
                .map(|(j, &d)| format!("{}: {}", scalar_name(j), element_type(d))),
        )
        .collect()
}

/// The text of a kernel function under construction: its instructions and a counter per
/// name prefix that keeps every SSA name it hands out distinct.
#[derive(Default)]
struct Emitter {
    text: String,
    indent: usize,
    next: BTreeMap<&'static str, usize>,
}

impl Emitter {
    /// A fresh SSA name `%<prefix><n>`.
    fn fresh(&mut self, prefix: &'static str) -> String {
        let n = self.next.entry(prefix).or_default();
        *n += 1;
        format!("%{prefix}{}", *n - 1)
    }

    /// Appends one line at the current indentation.
    fn line(&mut self, line: impl Display) {
        let _ = writeln!(self.text, "{:1$}{line}", "", self.indent);
    }

    /// Emits `%vN = <rhs>` and returns `%vN`.
    fn value(&mut self, rhs: impl Display) -> String {
        let name = self.fresh("v");
        self.line(format_args!("{name} = {rhs}"));
        name
    }

    /// An `arith.constant` of type `ty` written as `literal`.
    fn constant(&mut self, literal: impl Display, ty: &str) -> String {
        self.value(format_args!("arith.constant {literal} : {ty}"))
    }

    /// The float constant `x` of the float `dtype`, written by its exact bits (so `-0.0`,
    /// NaN and the infinities survive).
    fn float(&mut self, x: f64, dtype: DType) -> String {
        let ty = element_type(dtype);
        match dtype {
            DType::F32 => self.constant(format_args!("0x{:08X}", (x as f32).to_bits()), ty),
            _ => self.constant(format_args!("0x{:016X}", x.to_bits()), ty),
        }
    }

    /// The zero of `dtype` (`0.0`, `0`, or `false` as the byte 0).
    fn zero(&mut self, dtype: DType) -> String {
        if is_float(dtype) {
            self.float(0.0, dtype)
        } else {
            self.constant(0, element_type(dtype))
        }
    }
}

/// Builds `func.func private @symbol` for `sig`: store argument `i` is [`arg_name`]`(i)`,
/// scalar `j` is [`scalar_name`]`(j)`. `body` emits the instructions and returns the new
/// values of the arguments whose privilege is not `Read`, in order.
fn function(
    kind: &str,
    symbol: &str,
    sig: &MlirSignature<'_>,
    body: impl FnOnce(&mut Emitter) -> Result<Vec<String>, KernelError>,
) -> Result<String, KernelError> {
    let params = parameters(sig, tensor_type);
    let results: Vec<String> = sig
        .args
        .iter()
        .filter(|a| a.privilege != Privilege::Read)
        .map(tensor_type)
        .collect();
    let mut e = Emitter {
        indent: 2,
        ..Emitter::default()
    };
    let values = body(&mut e)?;
    if values.len() != results.len() {
        return Err(unsupported(
            kind,
            format!(
                "the kernel returns {} values for {} written arguments",
                values.len(),
                results.len()
            ),
        ));
    }
    let results = results.join(", ");
    e.line(format_args!("return {} : {results}", values.join(", ")));
    Ok(format!(
        "func.func private @{symbol}({}) -> ({results}) {{\n{}}}\n",
        params.join(", "),
        e.text
    ))
}

/// Builds an element function `func.func private @symbol` for `sig` (see
/// `MlirGenerator::generate_element`): one scalar of its element type per store argument,
/// named [`arg_name`]`(i)`, then the scalars; `body` emits the instructions and returns the
/// one value returned, of dtype `result`.
fn element_function(
    symbol: &str,
    sig: &MlirSignature<'_>,
    result: DType,
    body: impl FnOnce(&mut Emitter) -> Result<String, KernelError>,
) -> Result<String, KernelError> {
    let params = parameters(sig, |a| element_type(a.dtype).to_string());
    let mut e = Emitter {
        indent: 2,
        ..Emitter::default()
    };
    let value = body(&mut e)?;
    let ty = element_type(result);
    e.line(format_args!("return {value} : {ty}"));
    Ok(format!(
        "func.func private @{symbol}({}) -> ({ty}) {{\n{}}}\n",
        params.join(", "),
        e.text
    ))
}

/// The kind of one loop of a `linalg.generic`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Loop {
    /// Independent iterations.
    Parallel,
    /// Iterations folded into the output.
    Reduction,
}

/// One tensor operand of a `linalg.generic`.
struct TensorOperand {
    /// The tensor value.
    value: String,
    /// Its tensor type.
    ty: String,
    /// Its element type.
    elem: &'static str,
    /// The results of its indexing map, comma-separated (`d0, 0`; empty for rank 0).
    map: String,
}

impl TensorOperand {
    /// `value`, a tensor of `arg`'s type, indexed by the map results `map`.
    fn of(arg: &MlirArg, value: String, map: String) -> Self {
        TensorOperand {
            value,
            ty: tensor_type(arg),
            elem: element_type(arg.dtype),
            map,
        }
    }
}

/// `d0, d1, ..` for the loop dimensions `dims`.
fn dim_list(dims: impl IntoIterator<Item = usize>) -> String {
    dims.into_iter()
        .map(|d| format!("d{d}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Builds `func.func private @symbol` for `sig` (see [`function`]) whose body is one
/// [`generic`] (`loops`, `ins`, `out`, `body`), returning its result.
fn generic_function(
    kind: &str,
    symbol: &str,
    sig: &MlirSignature<'_>,
    loops: &[Loop],
    ins: &[TensorOperand],
    out: &TensorOperand,
    body: impl FnOnce(&mut Emitter, &[String], &str) -> Result<String, KernelError>,
) -> Result<String, KernelError> {
    function(kind, symbol, sig, |e| {
        Ok(vec![generic(e, loops, ins, out, body)?])
    })
}

/// Emits a `linalg.generic` with one loop per entry of `loops` over `ins` into `out`, and
/// returns its result. `body` receives the block arguments of the inputs (in order) and of
/// the output, emits the region's instructions and returns the value to yield.
fn generic(
    e: &mut Emitter,
    loops: &[Loop],
    ins: &[TensorOperand],
    out: &TensorOperand,
    body: impl FnOnce(&mut Emitter, &[String], &str) -> Result<String, KernelError>,
) -> Result<String, KernelError> {
    let domain = format!("({})", dim_list(0..loops.len()));
    let maps: Vec<String> = ins
        .iter()
        .chain([out])
        .map(|o| format!("affine_map<{domain} -> ({})>", o.map))
        .collect();
    let iterators: Vec<&str> = loops
        .iter()
        .map(|l| match l {
            Loop::Parallel => "\"parallel\"",
            Loop::Reduction => "\"reduction\"",
        })
        .collect();
    let ins_clause = if ins.is_empty() {
        String::new()
    } else {
        let values: Vec<&str> = ins.iter().map(|o| o.value.as_str()).collect();
        let types: Vec<&str> = ins.iter().map(|o| o.ty.as_str()).collect();
        format!(" ins({} : {})", values.join(", "), types.join(", "))
    };
    let result = e.fresh("r");
    e.line(format_args!(
        "{result} = linalg.generic {{indexing_maps = [{}], iterator_types = [{}]}}{ins_clause} outs({} : {}) {{",
        maps.join(", "),
        iterators.join(", "),
        out.value,
        out.ty
    ));
    let block_ins: Vec<String> = ins.iter().map(|_| e.fresh("x")).collect();
    let block_out = e.fresh("o");
    let block_args: Vec<String> = block_ins
        .iter()
        .zip(ins)
        .map(|(name, o)| format!("{name}: {}", o.elem))
        .chain([format!("{block_out}: {}", out.elem)])
        .collect();
    e.line(format_args!("^bb0({}):", block_args.join(", ")));
    e.indent += 2;
    let yielded = body(e, &block_ins, &block_out)?;
    e.line(format_args!("linalg.yield {yielded} : {}", out.elem));
    e.indent -= 2;
    e.line(format_args!("}} -> {}", out.ty));
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::test_support::{arg, assert_contains};
    use super::*;

    #[test]
    fn functions_return_one_value_per_non_read_argument() {
        let args = [
            arg(DType::F64, 1, Privilege::Read),
            arg(DType::I32, 2, Privilege::Write),
            arg(
                DType::F32,
                0,
                Privilege::Reduce(diffuse_ir::ReductionOp::Sum),
            ),
        ];
        let sig = MlirSignature::host(&args, &[DType::Bool]);
        let text = function("k", "f", &sig, |_| Ok(vec![arg_name(1), arg_name(2)])).unwrap();
        assert!(text.starts_with(
            "func.func private @f(%a0: tensor<?xf64>, %a1: tensor<?x?xi32>, %a2: tensor<f32>, %s0: i8) -> (tensor<?x?xi32>, tensor<f32>) {"
        ), "{text}");
        assert_contains(&text, &["return %a1, %a2 : tensor<?x?xi32>, tensor<f32>"]);
        let wrong = function("k", "f", &sig, |_| Ok(vec![arg_name(1)]));
        assert!(wrong.unwrap_err().reason.contains("1 values for 2"));
    }

    #[test]
    fn float_constants_are_exact_bits() {
        let mut e = Emitter::default();
        e.float(-0.0, DType::F64);
        e.float(f64::NAN, DType::F32);
        e.zero(DType::Bool);
        assert_eq!(
            e.text,
            "%v0 = arith.constant 0x8000000000000000 : f64\n\
             %v1 = arith.constant 0x7FC00000 : f32\n\
             %v2 = arith.constant 0 : i8\n"
        );
    }
}
