//! MLIR generators of the test kinds, written as a library author would against the ABI of
//! `diffuse_ir::mlir` (tensors in, tensors out): [`Elementwise`], one `linalg.generic` whose
//! region body the kind supplies, and [`Reduction`], a fold of one input along its trailing
//! dimensions. Bodies compute exactly what the native kernels compute, in the same order of
//! floating-point operations (MLIR's lowering neither reassociates nor contracts to FMA, and
//! loops run in row-major order), so compiled and native results are bitwise equal.

use diffuse_ir::{
    element_type, tensor_type, KernelError, MlirArg, MlirGenerator, MlirSignature, Point,
    Privilege, ReductionOp,
};

/// A generator error for `symbol` (the point is not known at generation time).
fn unsupported(symbol: &str, reason: impl Into<String>) -> KernelError {
    KernelError {
        kind: symbol.to_string(),
        point: Point::scalar(),
        reason: reason.into(),
    }
}

/// Argument `i` of `sig`, or an error.
fn arg<'a>(symbol: &str, sig: &'a MlirSignature<'_>, i: usize) -> Result<&'a MlirArg, KernelError> {
    sig.args
        .get(i)
        .ok_or_else(|| unsupported(symbol, format!("no argument {i} in {:?}", sig.args)))
}

/// `affine_map<(d0, .., d{loops-1}) -> (results)>`.
fn affine_map(loops: usize, results: &[String]) -> String {
    format!(
        "affine_map<({}) -> ({})>",
        dims(loops).join(", "),
        results.join(", ")
    )
}

/// The identity results `d0, .., d{n-1}`.
fn dims(n: usize) -> Vec<String> {
    (0..n).map(|d| format!("d{d}")).collect()
}

/// One `linalg.generic` input: the tensor argument, its type and indexing map.
struct Input {
    value: String,
    ty: String,
    map: String,
}

/// The text of `func.func private @symbol` for `sig` (store arguments `%a<i>`, scalars
/// `%s<i>`) returning argument `out`, computed by one `linalg.generic` over `iterators` that
/// reads `ins` (block arguments `%x<k>`) and stores into `out` (block argument `%o`, indexing
/// map `out_map`) what `body` yields. Every argument but `out` must be `Read`.
fn function(
    symbol: &str,
    sig: &MlirSignature<'_>,
    iterators: &[&str],
    ins: &[Input],
    out: usize,
    out_map: &str,
    body: &str,
) -> Result<String, KernelError> {
    let out_arg = arg(symbol, sig, out)?;
    for (i, a) in sig.args.iter().enumerate() {
        if (i == out) == (a.privilege == Privilege::Read) {
            return Err(unsupported(
                symbol,
                format!("argument {i} has privilege {:?}", a.privilege),
            ));
        }
    }
    let el = element_type(out_arg.dtype);
    let ty = tensor_type(out_arg);
    let params: Vec<String> = sig
        .args
        .iter()
        .enumerate()
        .map(|(i, a)| format!("%a{i}: {}", tensor_type(a)))
        .chain(
            sig.scalars
                .iter()
                .enumerate()
                .map(|(i, &d)| format!("%s{i}: {}", element_type(d))),
        )
        .collect();
    let maps: Vec<&str> = ins
        .iter()
        .map(|i| i.map.as_str())
        .chain(std::iter::once(out_map))
        .collect();
    let iterators: Vec<String> = iterators.iter().map(|i| format!("\"{i}\"")).collect();
    let ins_clause = if ins.is_empty() {
        String::new()
    } else {
        let values: Vec<&str> = ins.iter().map(|i| i.value.as_str()).collect();
        let types: Vec<&str> = ins.iter().map(|i| i.ty.as_str()).collect();
        format!("ins({} : {}) ", values.join(", "), types.join(", "))
    };
    let block: Vec<String> = (0..ins.len())
        .map(|k| format!("%x{k}: {el}"))
        .chain(std::iter::once(format!("%o: {el}")))
        .collect();
    let body = body.replace("{T}", el).replace('\n', "\n    ");
    Ok(format!(
        "func.func private @{symbol}({params}) -> {ty} {{
  %r = linalg.generic {{indexing_maps = [{maps}], iterator_types = [{iterators}]}}
      {ins_clause}outs(%a{out} : {ty}) {{
  ^bb0({block}):
    {body}
  }} -> {ty}
  return %r : {ty}
}}",
        params = params.join(", "),
        maps = maps.join(", "),
        iterators = iterators.join(", "),
        block = block.join(", "),
    ))
}

/// An element-wise kind's generator: argument `out` (`Write`, `ReadWrite` or `Reduce`)
/// becomes, element by element, what `body` yields from the arguments `inputs` (all `Read`).
/// Inputs are broadcast NumPy-style: their dimensions align with the output's trailing ones,
/// and a dimension of extent 1 where the output's is not ([`MlirArg::is_unit`]) is read at
/// index 0, so a 0-d input is one value for every element.
pub struct Elementwise {
    /// The argument written.
    pub out: usize,
    /// The arguments read, in the order the body names them: `%x0`, `%x1`, ...
    pub inputs: &'static [usize],
    /// MLIR operations ending in `linalg.yield`: `%o` is the output's incoming value (the
    /// old value for `ReadWrite`, the running partial value for `Reduce`), `%s<i>` scalar
    /// `i`, and `{T}` stands for the element type.
    pub body: &'static str,
}

impl MlirGenerator for Elementwise {
    fn generate(&self, symbol: &str, sig: &MlirSignature<'_>) -> Result<String, KernelError> {
        let out = arg(symbol, sig, self.out)?;
        let ins = self
            .inputs
            .iter()
            .map(|&i| {
                let a = arg(symbol, sig, i)?;
                let shift = out.rank.checked_sub(a.rank).ok_or_else(|| {
                    unsupported(
                        symbol,
                        format!("argument {i} has a higher rank than the output"),
                    )
                })?;
                let results: Vec<String> = (0..a.rank)
                    .map(|j| {
                        let d = j + shift;
                        if a.is_unit(j) && !out.is_unit(d) {
                            "0".to_string()
                        } else {
                            format!("d{d}")
                        }
                    })
                    .collect();
                Ok(Input {
                    value: format!("%a{i}"),
                    ty: tensor_type(a),
                    map: affine_map(out.rank, &results),
                })
            })
            .collect::<Result<Vec<_>, KernelError>>()?;
        function(
            symbol,
            sig,
            &vec!["parallel"; out.rank],
            &ins,
            self.out,
            &affine_map(out.rank, &dims(out.rank)),
            self.body,
        )
    }
}

/// A reduction kind's generator: argument 0 (`Read`) folded into argument 1 (`Reduce(op)`)
/// along its trailing dimensions, the accumulator keeping the leading `keep` (0: a 0-d total,
/// 1: one value per row of a 2-d input). Each accumulator element takes its contributions in
/// row-major order, as a sequential native loop does.
pub struct Reduction {
    /// Leading input dimensions the accumulator has.
    pub keep: usize,
}

impl MlirGenerator for Reduction {
    fn generate(&self, symbol: &str, sig: &MlirSignature<'_>) -> Result<String, KernelError> {
        let (input, acc) = (arg(symbol, sig, 0)?, arg(symbol, sig, 1)?);
        let Privilege::Reduce(op) = acc.privilege else {
            return Err(unsupported(symbol, "argument 1 is not reduced into"));
        };
        if acc.rank != self.keep || input.rank < self.keep {
            return Err(unsupported(
                symbol,
                format!(
                    "a rank-{} input cannot fold into a rank-{} accumulator keeping {} dims",
                    input.rank, acc.rank, self.keep
                ),
            ));
        }
        let iterators: Vec<&str> = (0..input.rank)
            .map(|d| {
                if d < self.keep {
                    "parallel"
                } else {
                    "reduction"
                }
            })
            .collect();
        let ins = [Input {
            value: "%a0".into(),
            ty: tensor_type(input),
            map: affine_map(input.rank, &dims(input.rank)),
        }];
        let body = format!("{}\nlinalg.yield %r : {{T}}", combine(op));
        function(
            symbol,
            sig,
            &iterators,
            &ins,
            1,
            &affine_map(input.rank, &dims(self.keep)),
            &body,
        )
    }
}

/// Operations setting `%r` to `op(%o, %x0)` exactly as `Element::reduce` computes it for
/// floats: `Min` and `Max` keep the first NaN (the partial value's if it is one, else the
/// contribution's) and otherwise replace the partial value only by a strictly smaller
/// (larger) contribution, so signed zeros fold as natively too.
fn combine(op: ReductionOp) -> String {
    let pick = |better: &str| {
        format!(
            "%acc_nan = arith.cmpf uno, %o, %o : {{T}}
%x_nan = arith.cmpf uno, %x0, %x0 : {{T}}
%better = arith.cmpf {better}, %x0, %o : {{T}}
%take = arith.ori %better, %x_nan : i1
%picked = arith.select %take, %x0, %o : {{T}}
%r = arith.select %acc_nan, %o, %picked : {{T}}"
        )
    };
    match op {
        ReductionOp::Sum => "%r = arith.addf %o, %x0 : {T}".into(),
        ReductionOp::Prod => "%r = arith.mulf %o, %x0 : {T}".into(),
        ReductionOp::Min => pick("olt"),
        ReductionOp::Max => pick("ogt"),
    }
}
