//! The generator of the element-wise kinds, and the scalar operations their bodies are made
//! of (also used by the reductions).

use diffuse_ir::{
    element_type, DType, KernelError, MlirArg, MlirGenerator, MlirSignature, Privilege,
};

use super::{
    arg_name, check_arg, check_counts, dim_list, element_function, generic_function, scalar_name,
    unsupported, Emitter, Loop, TensorOperand,
};
use crate::element::is_float;
use crate::kernels::Slot;
use crate::ops::elementwise::{BinaryOp, ElementwiseKind, ElementwiseOp, UnaryOp};

/// Generates the kernel of an element-wise kind from its description: one `linalg.generic`
/// with a parallel loop per output dimension. Each array operand is indexed NumPy-style: its
/// dimensions align with the output's trailing ones, and a dimension of extent 1 (per
/// [`MlirArg::unit_dims`]) where the output's is not is read at index 0.
pub(crate) struct ElementwiseGenerator(pub(crate) ElementwiseKind);

impl MlirGenerator for ElementwiseGenerator {
    fn generate(&self, symbol: &str, sig: &MlirSignature<'_>) -> Result<String, KernelError> {
        let k = &self.0;
        let name = k.kind_name();
        let (conditions, out) = self.check(&name, sig)?;
        let out_index = sig.args.len() - 1;
        let mut ins = Vec::with_capacity(out_index);
        for (i, arg) in sig.args[..out_index].iter().enumerate() {
            let map = broadcast_map(arg, out).ok_or_else(|| {
                unsupported(
                    &name,
                    format!(
                        "argument {i} has {} dimensions, more than the output's {}",
                        arg.rank, out.rank
                    ),
                )
            })?;
            ins.push(TensorOperand::of(arg, arg_name(i), map));
        }
        let out_operand = TensorOperand::of(out, arg_name(out_index), dim_list(0..out.rank));
        generic_function(
            &name,
            symbol,
            sig,
            &vec![Loop::Parallel; out.rank],
            &ins,
            &out_operand,
            |e, xs, _| self.element(e, &name, conditions, xs),
        )
    }

    fn generate_element(
        &self,
        symbol: &str,
        sig: &MlirSignature<'_>,
    ) -> Option<Result<String, KernelError>> {
        let name = self.0.kind_name();
        Some(self.check(&name, sig).and_then(|(conditions, out)| {
            element_function(symbol, sig, out.dtype, |e| {
                let inputs: Vec<String> = (0..sig.args.len() - 1).map(arg_name).collect();
                self.element(e, &name, conditions, &inputs)
            })
        }))
    }
}

impl ElementwiseGenerator {
    /// Checks `sig` against the description; returns the number of condition operands and
    /// the output argument.
    fn check<'s>(
        &self,
        name: &str,
        sig: &'s MlirSignature<'_>,
    ) -> Result<(usize, &'s MlirArg), KernelError> {
        let k = &self.0;
        let conditions = usize::from(k.op == ElementwiseOp::Where);
        let arrays = k.operands.iter().filter(|&&s| s == Slot::Array).count();
        let scalars = vec![k.dtype; k.operands.len() - arrays];
        check_counts(name, sig, conditions + arrays + 1, &scalars)?;
        check_description(name, k)?;
        let out_index = sig.args.len() - 1;
        let out = check_arg(
            name,
            sig,
            out_index,
            k.result,
            &[Privilege::Write, Privilege::ReadWrite],
        )?;
        for i in 0..out_index {
            let dtype = if i < conditions { DType::Bool } else { k.dtype };
            check_arg(name, sig, i, dtype, &[Privilege::Read])?;
        }
        Ok((conditions, out))
    }

    /// Emits the computation of one output element from `xs`, the elements of the array
    /// operands (conditions first), and the scalar arguments; returns its value.
    fn element(
        &self,
        e: &mut Emitter,
        name: &str,
        conditions: usize,
        xs: &[String],
    ) -> Result<String, KernelError> {
        let k = &self.0;
        // The value operands in order: array elements (after the condition), function
        // arguments for scalars.
        let (mut array, mut scalar) = (conditions, 0);
        let values: Vec<String> = k
            .operands
            .iter()
            .map(|slot| match slot {
                Slot::Array => {
                    array += 1;
                    xs[array - 1].clone()
                }
                Slot::Scalar => {
                    scalar += 1;
                    scalar_name(scalar - 1)
                }
            })
            .collect();
        let undefined = || unsupported(name, "the operation is not defined for its dtype");
        Ok(match k.op {
            ElementwiseOp::Unary(op) => {
                unary_op(e, op, k.dtype, &values[0]).ok_or_else(undefined)?
            }
            ElementwiseOp::Binary(op) => {
                binary_op(e, op, k.dtype, &values[0], &values[1]).ok_or_else(undefined)?
            }
            ElementwiseOp::Where => {
                let zero = e.zero(DType::Bool);
                let c = e.value(format_args!("arith.cmpi ne, {}, {zero} : i8", xs[0]));
                select(e, &c, &values[0], &values[1], k.dtype)
            }
            ElementwiseOp::Cast => convert(e, k.dtype, k.result, &values[0]),
        })
    }
}

/// Checks that the description is one the library registers: the operand count fits the
/// operation, and the result dtype is the operation's on the operand dtype.
fn check_description(name: &str, k: &ElementwiseKind) -> Result<(), KernelError> {
    let (operands, result) = match k.op {
        ElementwiseOp::Unary(op) => (1, op.result_dtype(k.dtype).ok()),
        ElementwiseOp::Binary(op) => (2, op.result_dtype(k.dtype).ok()),
        ElementwiseOp::Where => (2, Some(k.dtype)),
        ElementwiseOp::Cast => (1, Some(k.result)),
    };
    if k.operands.len() != operands || result != Some(k.result) {
        return Err(unsupported(
            name,
            format!(
                "{:?} on {} with {} operands into {} is not a defined operation",
                k.op,
                k.dtype,
                k.operands.len(),
                k.result
            ),
        ));
    }
    Ok(())
}

/// The results of the indexing map of an input `arg` broadcast NumPy-style against an
/// output `out` (the loops are the output's dimensions): the input's dimension `j` is the
/// output's `j + out.rank - arg.rank`, or the constant 0 where the input has extent 1 and the
/// output may not. `None` when the input has more dimensions than the output.
fn broadcast_map(arg: &MlirArg, out: &MlirArg) -> Option<String> {
    let shift = out.rank.checked_sub(arg.rank)?;
    let results: Vec<String> = (0..arg.rank)
        .map(|j| {
            let d = j + shift;
            if arg.is_unit(j) && !out.is_unit(d) {
                "0".to_string()
            } else {
                format!("d{d}")
            }
        })
        .collect();
    Some(results.join(", "))
}

/// Emits `arith.<op> a, b` for values of `dtype`.
fn arith(e: &mut Emitter, op: &str, dtype: DType, a: &str, b: &str) -> String {
    e.value(format_args!(
        "arith.{op} {a}, {b} : {}",
        element_type(dtype)
    ))
}

/// [`arith`] with `ops.0` for a float `dtype`, `ops.1` for an integer one.
fn typed_arith(e: &mut Emitter, ops: (&str, &str), dtype: DType, a: &str, b: &str) -> String {
    let op = if is_float(dtype) { ops.0 } else { ops.1 };
    arith(e, op, dtype, a, b)
}

/// Compares `a` and `b` of `dtype` with the float predicate `preds.0` or the signed-integer
/// one `preds.1`, and returns the outcome as a bool byte.
fn compare(e: &mut Emitter, preds: (&str, &str), dtype: DType, a: &str, b: &str) -> String {
    let bit = compare_bit(e, preds, dtype, a, b);
    bool_byte(e, &bit)
}

/// An `i1` as the bool byte 0 or 1.
fn bool_byte(e: &mut Emitter, bit: &str) -> String {
    e.value(format_args!("arith.extui {bit} : i1 to i8"))
}

/// `c ? a : b` for an `i1` condition and values of `dtype`.
fn select(e: &mut Emitter, c: &str, a: &str, b: &str, dtype: DType) -> String {
    e.value(format_args!(
        "arith.select {c}, {a}, {b} : {}",
        element_type(dtype)
    ))
}

/// `0 - x` for an integer `dtype` (wrapping).
fn int_negate(e: &mut Emitter, x: &str, dtype: DType) -> String {
    let zero = e.zero(dtype);
    arith(e, "subi", dtype, &zero, x)
}

/// `op(x)` for an operand of `dtype`, as the native kernels compute it; `None` where the
/// operation is not defined for `dtype`.
pub(super) fn unary_op(e: &mut Emitter, op: UnaryOp, dtype: DType, x: &str) -> Option<String> {
    let ty = element_type(dtype);
    let float = is_float(dtype);
    let math = |e: &mut Emitter, f: &str| e.value(format_args!("math.{f} {x} : {ty}"));
    Some(match op {
        UnaryOp::Copy => x.to_string(),
        UnaryOp::Neg if float => e.value(format_args!("arith.negf {x} : {ty}")),
        UnaryOp::Neg if dtype != DType::Bool => int_negate(e, x, dtype),
        UnaryOp::Abs if float => math(e, "absf"),
        // `wrapping_abs`: the most negative value stays itself.
        UnaryOp::Abs if dtype != DType::Bool => {
            let zero = e.zero(dtype);
            let negative = e.value(format_args!("arith.cmpi slt, {x}, {zero} : {ty}"));
            let negated = int_negate(e, x, dtype);
            select(e, &negative, &negated, x, dtype)
        }
        UnaryOp::Not if dtype == DType::Bool => {
            let zero = e.zero(dtype);
            let bit = e.value(format_args!("arith.cmpi eq, {x}, {zero} : i8"));
            bool_byte(e, &bit)
        }
        UnaryOp::Exp if float => math(e, "exp"),
        UnaryOp::Log if float => math(e, "log"),
        UnaryOp::Sqrt if float => math(e, "sqrt"),
        UnaryOp::Erf if float => math(e, "erf"),
        UnaryOp::Sin if float => math(e, "sin"),
        UnaryOp::Cos if float => math(e, "cos"),
        UnaryOp::Tanh if float => math(e, "tanh"),
        UnaryOp::Floor if float => math(e, "floor"),
        UnaryOp::Ceil if float => math(e, "ceil"),
        UnaryOp::Trunc if float => math(e, "trunc"),
        UnaryOp::Rint if float => math(e, "roundeven"),
        UnaryOp::Tan if float => math(e, "tan"),
        UnaryOp::Arcsin if float => math(e, "asin"),
        UnaryOp::Arccos if float => math(e, "acos"),
        UnaryOp::Arctan if float => math(e, "atan"),
        UnaryOp::Sinh if float => math(e, "sinh"),
        UnaryOp::Cosh if float => math(e, "cosh"),
        UnaryOp::Log2 if float => math(e, "log2"),
        UnaryOp::Log10 if float => math(e, "log10"),
        UnaryOp::Log1p if float => math(e, "log1p"),
        UnaryOp::Expm1 if float => math(e, "expm1"),
        UnaryOp::Sign if dtype != DType::Bool => {
            let zero = e.zero(dtype);
            let (one, minus_one) = if float {
                (e.float(1.0, dtype), e.float(-1.0, dtype))
            } else {
                (e.constant(1, ty), e.constant(-1, ty))
            };
            let above = compare_bit(e, ("ogt", "sgt"), dtype, x, &zero);
            let below = compare_bit(e, ("olt", "slt"), dtype, x, &zero);
            // Floats: 0 for either zero, NaN stays; integers: the one left is 0.
            let rest = if float {
                let is_zero = compare_bit(e, ("oeq", "eq"), dtype, x, &zero);
                select(e, &is_zero, &zero, x, dtype)
            } else {
                zero
            };
            let low = select(e, &below, &minus_one, &rest, dtype);
            select(e, &above, &one, &low, dtype)
        }
        UnaryOp::IsNan if float => {
            let bit = e.value(format_args!("arith.cmpf uno, {x}, {x} : {ty}"));
            bool_byte(e, &bit)
        }
        UnaryOp::IsInf | UnaryOp::IsFinite if float => {
            let magnitude = math(e, "absf");
            let inf = e.float(f64::INFINITY, dtype);
            let pred = if op == UnaryOp::IsInf { "oeq" } else { "olt" };
            let bit = e.value(format_args!("arith.cmpf {pred}, {magnitude}, {inf} : {ty}"));
            bool_byte(e, &bit)
        }
        UnaryOp::Invert if dtype == DType::Bool => return unary_op(e, UnaryOp::Not, dtype, x),
        UnaryOp::Invert if !float => {
            let ones = e.constant(-1, ty);
            arith(e, "xori", dtype, x, &ones)
        }
        _ => return None,
    })
}

/// `op(a, b)` for operands of `dtype`, as the native kernels compute it; `None` where the
/// operation is not defined for `dtype`.
pub(super) fn binary_op(
    e: &mut Emitter,
    op: BinaryOp,
    dtype: DType,
    a: &str,
    b: &str,
) -> Option<String> {
    let float = is_float(dtype);
    let numeric = dtype != DType::Bool;
    Some(match op {
        BinaryOp::Add if numeric => typed_arith(e, ("addf", "addi"), dtype, a, b),
        BinaryOp::Sub if numeric => typed_arith(e, ("subf", "subi"), dtype, a, b),
        BinaryOp::Mul if numeric => typed_arith(e, ("mulf", "muli"), dtype, a, b),
        BinaryOp::Div if float => arith(e, "divf", dtype, a, b),
        BinaryOp::Pow if float => {
            e.value(format_args!("math.powf {a}, {b} : {}", element_type(dtype)))
        }
        BinaryOp::Maximum if float => float_extremum(e, "oge", dtype, a, b),
        BinaryOp::Minimum if float => float_extremum(e, "ole", dtype, a, b),
        BinaryOp::Maximum if numeric => arith(e, "maxsi", dtype, a, b),
        BinaryOp::Minimum if numeric => arith(e, "minsi", dtype, a, b),
        // Rust's float comparisons are false on NaN, except `!=`.
        BinaryOp::Less if numeric => compare(e, ("olt", "slt"), dtype, a, b),
        BinaryOp::LessEqual if numeric => compare(e, ("ole", "sle"), dtype, a, b),
        BinaryOp::Greater if numeric => compare(e, ("ogt", "sgt"), dtype, a, b),
        BinaryOp::GreaterEqual if numeric => compare(e, ("oge", "sge"), dtype, a, b),
        BinaryOp::Equal => compare(e, ("oeq", "eq"), dtype, a, b),
        BinaryOp::NotEqual => compare(e, ("une", "ne"), dtype, a, b),
        BinaryOp::And if !numeric => arith(e, "andi", dtype, a, b),
        BinaryOp::Or if !numeric => arith(e, "ori", dtype, a, b),
        BinaryOp::BitAnd if !float => arith(e, "andi", dtype, a, b),
        BinaryOp::BitOr if !float => arith(e, "ori", dtype, a, b),
        BinaryOp::BitXor if !float => arith(e, "xori", dtype, a, b),
        BinaryOp::FloorDivide if float => float_divmod(e, dtype, a, b).0,
        BinaryOp::Remainder if float => float_divmod(e, dtype, a, b).1,
        BinaryOp::FloorDivide if numeric => int_divmod(e, dtype, a, b).0,
        BinaryOp::Remainder if numeric => int_divmod(e, dtype, a, b).1,
        BinaryOp::LeftShift if numeric && !float => shift(e, true, dtype, a, b),
        BinaryOp::RightShift if numeric && !float => shift(e, false, dtype, a, b),
        BinaryOp::Arctan2 if float => e.value(format_args!(
            "math.atan2 {a}, {b} : {}",
            element_type(dtype)
        )),
        _ => return None,
    })
}

/// Compares `a` and `b` of `dtype` with the float predicate `preds.0` or the signed-integer
/// one `preds.1`; returns the `i1`.
fn compare_bit(e: &mut Emitter, preds: (&str, &str), dtype: DType, a: &str, b: &str) -> String {
    let (op, pred) = if is_float(dtype) {
        ("cmpf", preds.0)
    } else {
        ("cmpi", preds.1)
    };
    e.value(format_args!(
        "arith.{op} {pred}, {a}, {b} : {}",
        element_type(dtype)
    ))
}

/// NumPy's float `divmod(a, b)` as the native `float_divmod` computes it, step for step:
/// `(floor_divide, remainder)`.
fn float_divmod(e: &mut Emitter, dtype: DType, a: &str, b: &str) -> (String, String) {
    let ty = element_type(dtype);
    let zero = e.zero(dtype);
    let one = e.float(1.0, dtype);
    let half = e.float(0.5, dtype);
    let rem = arith(e, "remf", dtype, a, b);
    let quotient = arith(e, "divf", dtype, a, b);
    let b_zero = e.value(format_args!("arith.cmpf oeq, {b}, {zero} : {ty}"));
    let a_less_rem = arith(e, "subf", dtype, a, &rem);
    let div = arith(e, "divf", dtype, &a_less_rem, b);
    let rem_nonzero = e.value(format_args!("arith.cmpf une, {rem}, {zero} : {ty}"));
    let b_negative = e.value(format_args!("arith.cmpf olt, {b}, {zero} : {ty}"));
    let rem_negative = e.value(format_args!("arith.cmpf olt, {rem}, {zero} : {ty}"));
    let signs_differ = e.value(format_args!("arith.xori {b_negative}, {rem_negative} : i1"));
    let adjust = e.value(format_args!(
        "arith.andi {rem_nonzero}, {signs_differ} : i1"
    ));
    let rem_plus_b = arith(e, "addf", dtype, &rem, b);
    let div_less_one = arith(e, "subf", dtype, &div, &one);
    let rem = select(e, &adjust, &rem_plus_b, &rem, dtype);
    let div = select(e, &adjust, &div_less_one, &div, dtype);
    let signed_zero = zero_signed_as(e, dtype, b);
    let rem = select(e, &rem_nonzero, &rem, &signed_zero, dtype);
    let floor = e.value(format_args!("math.floor {div} : {ty}"));
    let fraction = arith(e, "subf", dtype, &div, &floor);
    let round_up = e.value(format_args!("arith.cmpf ogt, {fraction}, {half} : {ty}"));
    let floor_plus_one = arith(e, "addf", dtype, &floor, &one);
    let floor = select(e, &round_up, &floor_plus_one, &floor, dtype);
    let div_nonzero = e.value(format_args!("arith.cmpf une, {div}, {zero} : {ty}"));
    let quotient_zero = zero_signed_as(e, dtype, &quotient);
    let floor_div = select(e, &div_nonzero, &floor, &quotient_zero, dtype);
    // For b == 0 the remainder above is still fmod's NaN, as NumPy gives.
    (select(e, &b_zero, &quotient, &floor_div, dtype), rem)
}

/// `copysign(0, x)` for a float `x` of `dtype`: -0.0 when the sign bit of `x` is set.
fn zero_signed_as(e: &mut Emitter, dtype: DType, x: &str) -> String {
    let (ty, int) = (
        element_type(dtype),
        if dtype == DType::F32 { "i32" } else { "i64" },
    );
    let bits = e.value(format_args!("arith.bitcast {x} : {ty} to {int}"));
    let int_zero = e.constant(0, int);
    let negative = e.value(format_args!("arith.cmpi slt, {bits}, {int_zero} : {int}"));
    let (plus, minus) = (e.zero(dtype), e.float(-0.0, dtype));
    select(e, &negative, &minus, &plus, dtype)
}

/// NumPy's integer `(floor_divide, remainder)`: 0 for a zero divisor, and the most negative
/// value divided by -1 wraps (the hardware division never sees either case).
fn int_divmod(e: &mut Emitter, dtype: DType, a: &str, b: &str) -> (String, String) {
    let ty = element_type(dtype);
    let bits = if dtype == DType::I32 { 32 } else { 64 };
    let zero = e.zero(dtype);
    let one = e.constant(1, ty);
    let minus_one = e.constant(-1, ty);
    let min = e.constant(i64::MIN >> (64 - bits), ty);
    let b_zero = e.value(format_args!("arith.cmpi eq, {b}, {zero} : {ty}"));
    let b_minus_one = e.value(format_args!("arith.cmpi eq, {b}, {minus_one} : {ty}"));
    let a_min = e.value(format_args!("arith.cmpi eq, {a}, {min} : {ty}"));
    let overflow = e.value(format_args!("arith.andi {a_min}, {b_minus_one} : i1"));
    let unsafe_divisor = e.value(format_args!("arith.ori {b_zero}, {overflow} : i1"));
    let divisor = select(e, &unsafe_divisor, &one, b, dtype);
    let q = arith(e, "divsi", dtype, a, &divisor);
    let r = arith(e, "remsi", dtype, a, &divisor);
    let r_nonzero = e.value(format_args!("arith.cmpi ne, {r}, {zero} : {ty}"));
    let r_negative = e.value(format_args!("arith.cmpi slt, {r}, {zero} : {ty}"));
    let d_negative = e.value(format_args!("arith.cmpi slt, {divisor}, {zero} : {ty}"));
    let signs_differ = e.value(format_args!("arith.xori {r_negative}, {d_negative} : i1"));
    let adjust = e.value(format_args!("arith.andi {r_nonzero}, {signs_differ} : i1"));
    let q_less_one = arith(e, "subi", dtype, &q, &one);
    let r_plus_d = arith(e, "addi", dtype, &r, &divisor);
    let q = select(e, &adjust, &q_less_one, &q, dtype);
    let r = select(e, &adjust, &r_plus_d, &r, dtype);
    (
        select(e, &b_zero, &zero, &q, dtype),
        select(e, &b_zero, &zero, &r, dtype),
    )
}

/// NumPy's `left_shift` (`left`) or arithmetic `right_shift` of `a` by `count`: counts
/// outside `0..bits` give 0, or the sign fill for a right shift.
fn shift(e: &mut Emitter, left: bool, dtype: DType, a: &str, count: &str) -> String {
    let ty = element_type(dtype);
    let bits = if dtype == DType::I32 { 32 } else { 64 };
    let zero = e.zero(dtype);
    let width = e.constant(bits, ty);
    let from_zero = e.value(format_args!("arith.cmpi sge, {count}, {zero} : {ty}"));
    let below_width = e.value(format_args!("arith.cmpi slt, {count}, {width} : {ty}"));
    let in_range = e.value(format_args!("arith.andi {from_zero}, {below_width} : i1"));
    let safe = select(e, &in_range, count, &zero, dtype);
    let (op, outside) = if left {
        ("shli", zero.clone())
    } else {
        let negative = e.value(format_args!("arith.cmpi slt, {a}, {zero} : {ty}"));
        let minus_one = e.constant(-1, ty);
        ("shrsi", select(e, &negative, &minus_one, &zero, dtype))
    };
    let shifted = arith(e, op, dtype, a, &safe);
    select(e, &in_range, &shifted, &outside, dtype)
}

/// The native float `maximum` (`pred` `oge`) or `minimum` (`ole`): NaN if either operand is
/// NaN, otherwise `a` unless `b` is strictly beyond it, so that of two equal zeros `a`
/// wins. (`arith.maximumf` and `minimumf` order `-0.0` below `0.0`, which the native kernels
/// and NumPy do not.)
fn float_extremum(e: &mut Emitter, pred: &str, dtype: DType, a: &str, b: &str) -> String {
    let ty = element_type(dtype);
    let keep_a = e.value(format_args!("arith.cmpf {pred}, {a}, {b} : {ty}"));
    let picked = select(e, &keep_a, a, b, dtype);
    let unordered = e.value(format_args!("arith.cmpf uno, {a}, {b} : {ty}"));
    let nan = e.float(f64::NAN, dtype);
    select(e, &unordered, &nan, &picked, dtype)
}

/// `x` of `from` converted to `to` as the native `cast` does it (Rust's `as` through `f64`
/// when either side is a float, through `i64` otherwise): conversions the table below does
/// not do in one step go through that wide type.
fn convert(e: &mut Emitter, from: DType, to: DType, x: &str) -> String {
    use DType::*;
    let (src, dst) = (element_type(from), element_type(to));
    match (from, to) {
        _ if from == to => x.to_string(),
        (F32, F64) => e.value(format_args!("arith.extf {x} : f32 to f64")),
        (I64 | I32, F64) => e.value(format_args!("arith.sitofp {x} : {src} to f64")),
        (Bool, F64) => e.value(format_args!("arith.uitofp {x} : i8 to f64")),
        (I32, I64) => e.value(format_args!("arith.extsi {x} : i32 to i64")),
        (Bool, I64) => e.value(format_args!("arith.extui {x} : i8 to i64")),
        (F64, F32) => e.value(format_args!("arith.truncf {x} : f64 to f32")),
        // Rounds twice, through f64, as the native cast does. Canonicalization would fold
        // `truncf(sitofp x)` into one rounding, so the f64 is the sum of x's two halves,
        // each exact in f64, rounded once by the addition.
        (I64, F32) => {
            let shift = e.constant(32, "i64");
            let mask = e.constant(0xFFFF_FFFF_u32, "i64");
            let high = e.value(format_args!("arith.shrsi {x}, {shift} : i64"));
            let low = e.value(format_args!("arith.andi {x}, {mask} : i64"));
            let high = e.value(format_args!("arith.sitofp {high} : i64 to f64"));
            let low = e.value(format_args!("arith.uitofp {low} : i64 to f64"));
            let scale = e.float(4294967296.0, F64);
            let high = e.value(format_args!("arith.mulf {high}, {scale} : f64"));
            let wide = e.value(format_args!("arith.addf {high}, {low} : f64"));
            convert(e, F64, F32, &wide)
        }
        (F64, I64 | I32) => saturate(e, x, to),
        (F64, Bool) => {
            // `x != 0.0`: true for NaN.
            let zero = e.zero(F64);
            let bit = e.value(format_args!("arith.cmpf une, {x}, {zero} : f64"));
            bool_byte(e, &bit)
        }
        (I64, I32) => e.value(format_args!("arith.trunci {x} : i64 to {dst}")),
        (I64, Bool) => {
            let zero = e.zero(I64);
            let bit = e.value(format_args!("arith.cmpi ne, {x}, {zero} : i64"));
            bool_byte(e, &bit)
        }
        _ => {
            let wide = if is_float(from) || is_float(to) {
                F64
            } else {
                I64
            };
            let w = convert(e, from, wide, x);
            convert(e, wide, to, &w)
        }
    }
}

/// `x as i64` / `x as i32` for an `f64` `x`: truncation toward zero, saturating at the
/// integer type's bounds, NaN to 0. (`arith.fptosi` alone is poison out of range, so it only
/// ever sees in-range values.)
fn saturate(e: &mut Emitter, x: &str, to: DType) -> String {
    let (ty, min, max) = match to {
        DType::I32 => ("i32", i64::from(i32::MIN), i64::from(i32::MAX)),
        _ => ("i64", i64::MIN, i64::MAX),
    };
    // -2^(bits-1) and 2^(bits-1), both exact in f64.
    let lo = e.float(min as f64, DType::F64);
    let hi = e.float(-(min as f64), DType::F64);
    let above = e.value(format_args!("arith.cmpf oge, {x}, {hi} : f64"));
    let below = e.value(format_args!("arith.cmpf olt, {x}, {lo} : f64"));
    let from_lo = e.value(format_args!("arith.cmpf oge, {x}, {lo} : f64"));
    let under_hi = e.value(format_args!("arith.cmpf olt, {x}, {hi} : f64"));
    let fits = e.value(format_args!("arith.andi {from_lo}, {under_hi} : i1"));
    let zero = e.zero(DType::F64);
    let safe = select(e, &fits, x, &zero, DType::F64);
    let truncated = e.value(format_args!("arith.fptosi {safe} : f64 to {ty}"));
    let max = e.constant(max, ty);
    let min = e.constant(min, ty);
    let high = select(e, &above, &max, &truncated, to);
    select(e, &below, &min, &high, to)
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{assert_contains, assert_lacks};
    use super::*;

    fn arg(dtype: DType, rank: usize, privilege: Privilege, unit_dims: u8) -> MlirArg {
        MlirArg {
            dtype,
            rank,
            privilege,
            unit_dims,
        }
    }

    fn read(dtype: DType, rank: usize, unit_dims: u8) -> MlirArg {
        arg(dtype, rank, Privilege::Read, unit_dims)
    }

    fn write(dtype: DType, rank: usize) -> MlirArg {
        arg(dtype, rank, Privilege::Write, 0)
    }

    fn kind(
        op: ElementwiseOp,
        dtype: DType,
        result: DType,
        operands: &[Slot],
    ) -> ElementwiseGenerator {
        ElementwiseGenerator(ElementwiseKind {
            op,
            dtype,
            result,
            operands: operands.to_vec(),
        })
    }

    fn binary(op: BinaryOp, dtype: DType, operands: &[Slot]) -> ElementwiseGenerator {
        let result = op.result_dtype(dtype).unwrap();
        kind(ElementwiseOp::Binary(op), dtype, result, operands)
    }

    /// The text of the 1-d cast from `from` to `to`.
    fn cast_text(from: DType, to: DType) -> String {
        let g = kind(ElementwiseOp::Cast, from, to, &[Slot::Array]);
        generate(&g, &[read(from, 1, 0), write(to, 1)], &[])
    }

    fn generate(g: &ElementwiseGenerator, args: &[MlirArg], scalars: &[DType]) -> String {
        g.generate("k0", &MlirSignature::host(args, scalars))
            .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn inputs_broadcast_through_their_maps() {
        // out[i, j] = a[0, j] + b[j] for a 1 x n and an n against an m x n output.
        let g = binary(BinaryOp::Add, DType::F64, &[Slot::Array, Slot::Array]);
        let text = generate(
            &g,
            &[
                read(DType::F64, 2, 0b01),
                read(DType::F64, 1, 0),
                write(DType::F64, 2),
            ],
            &[],
        );
        assert_contains(
            &text,
            &[
                "indexing_maps = [affine_map<(d0, d1) -> (0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = [\"parallel\", \"parallel\"]",
                "ins(%a0, %a1 : tensor<?x?xf64>, tensor<?xf64>) outs(%a2 : tensor<?x?xf64>)",
                "arith.addf %x0, %x1 : f64",
            ],
        );
        // A unit dimension of the output too is indexed normally; a missing one is skipped.
        let mut out = write(DType::F64, 3);
        out.unit_dims = 0b010;
        let text = generate(
            &g,
            &[read(DType::F64, 2, 0b11), read(DType::F64, 3, 0b100), out],
            &[],
        );
        assert_contains(
            &text,
            &[
                "affine_map<(d0, d1, d2) -> (d1, 0)>, affine_map<(d0, d1, d2) -> (d0, d1, 0)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>",
            ],
        );
    }

    #[test]
    fn scalars_are_function_arguments_used_in_the_body() {
        let g = binary(BinaryOp::Sub, DType::I32, &[Slot::Scalar, Slot::Array]);
        let text = generate(
            &g,
            &[read(DType::I32, 1, 0), write(DType::I32, 1)],
            &[DType::I32],
        );
        assert!(text.starts_with("func.func private @k0(%a0: tensor<?xi32>, %a1: tensor<?xi32>, %s0: i32) -> (tensor<?xi32>)"), "{text}");
        assert_contains(&text, &["arith.subi %s0, %x0 : i32"]);
        // A scalar fill: no inputs, one 0-d output.
        let fill = kind(
            ElementwiseOp::Unary(UnaryOp::Copy),
            DType::Bool,
            DType::Bool,
            &[Slot::Scalar],
        );
        let text = generate(&fill, &[write(DType::Bool, 0)], &[DType::Bool]);
        assert_contains(
            &text,
            &[
                "linalg.generic {indexing_maps = [affine_map<() -> ()>], iterator_types = []} outs(%a0 : tensor<i8>)",
                "linalg.yield %s0 : i8",
                "return %r0 : tensor<i8>",
            ],
        );
    }

    #[test]
    fn comparisons_follow_rust_on_nan_and_store_bytes() {
        let aa = [Slot::Array, Slot::Array];
        let args = [
            read(DType::F32, 1, 0),
            read(DType::F32, 1, 0),
            write(DType::Bool, 1),
        ];
        for (op, pred) in [
            (BinaryOp::Less, "cmpf olt"),
            (BinaryOp::GreaterEqual, "cmpf oge"),
            (BinaryOp::Equal, "cmpf oeq"),
            (BinaryOp::NotEqual, "cmpf une"),
        ] {
            let text = generate(&binary(op, DType::F32, &aa), &args, &[]);
            assert_contains(
                &text,
                &[
                    &format!("arith.{pred}, %x0, %x1 : f32"),
                    "arith.extui %v0 : i1 to i8",
                    "-> (tensor<?xi8>)",
                ],
            );
        }
        let args = [
            read(DType::I64, 1, 0),
            read(DType::I64, 1, 0),
            write(DType::Bool, 1),
        ];
        let text = generate(&binary(BinaryOp::LessEqual, DType::I64, &aa), &args, &[]);
        assert_contains(&text, &["arith.cmpi sle, %x0, %x1 : i64"]);
    }

    #[test]
    fn where_selects_on_a_nonzero_condition_byte() {
        let g = kind(
            ElementwiseOp::Where,
            DType::F64,
            DType::F64,
            &[Slot::Array, Slot::Scalar],
        );
        let text = generate(
            &g,
            &[
                read(DType::Bool, 1, 0b1),
                read(DType::F64, 2, 0),
                write(DType::F64, 2),
            ],
            &[DType::F64],
        );
        assert_contains(
            &text,
            &[
                "affine_map<(d0, d1) -> (0)>, affine_map<(d0, d1) -> (d0, d1)>",
                "arith.cmpi ne, %x0, %v0 : i8",
                "arith.select %v1, %x1, %s0 : f64",
            ],
        );
    }

    #[test]
    fn float_to_int_casts_saturate_without_poison() {
        let text = cast_text(DType::F32, DType::I32);
        // Through f64, as the native cast goes.
        assert_contains(&text, &["arith.extf %x0 : f32 to f64"]);
        // -2^31 and 2^31 as f64 bits, and the saturated values.
        assert_contains(
            &text,
            &[
                "arith.constant 0xC1E0000000000000 : f64",
                "arith.constant 0x41E0000000000000 : f64",
                "arith.constant 2147483647 : i32",
                "arith.constant -2147483648 : i32",
            ],
        );
        // fptosi only sees the value selected when it fits.
        let safe = text.lines().find(|l| l.contains("arith.fptosi")).unwrap();
        assert!(safe.contains(": f64 to i32"), "{text}");
        let operand = safe.split_whitespace().nth(3).unwrap();
        assert_contains(&text, &[&format!("{operand} = arith.select")]);
        // i64 -> f32 rounds twice, through an f64 that is not a bare `sitofp`.
        let text = cast_text(DType::I64, DType::F32);
        assert_lacks(&text, &["arith.sitofp %x0"]);
        assert_contains(
            &text,
            &[
                "%v8 = arith.addf %v7, %v5 : f64",
                "arith.truncf %v8 : f64 to f32",
            ],
        );
        // Float to bool is `!= 0.0`, true for NaN.
        let text = cast_text(DType::F64, DType::Bool);
        assert_contains(&text, &["arith.cmpf une, %x0, %v0 : f64"]);
    }

    #[test]
    fn bad_signatures_are_typed_errors() {
        let g = binary(BinaryOp::Add, DType::F64, &[Slot::Array, Slot::Array]);
        let sig = |args: &[MlirArg]| {
            g.generate("k0", &MlirSignature::host(args, &[]))
                .unwrap_err()
                .reason
        };
        // An input with more dimensions than the output.
        let reason = sig(&[
            read(DType::F64, 2, 0),
            read(DType::F64, 1, 0),
            write(DType::F64, 1),
        ]);
        assert!(reason.contains("more than the output's 1"), "{reason}");
        // Seven dimensions.
        let reason = sig(&[
            read(DType::F64, 1, 0),
            read(DType::F64, 1, 0),
            write(DType::F64, 7),
        ]);
        assert!(reason.contains("at most 6"), "{reason}");
        // Wrong dtype and wrong argument count.
        let reason = sig(&[
            read(DType::F32, 1, 0),
            read(DType::F64, 1, 0),
            write(DType::F64, 1),
        ]);
        assert!(reason.contains("argument 0 is a f32 store"), "{reason}");
        assert!(sig(&[read(DType::F64, 1, 0), write(DType::F64, 1)]).contains("expected 3 store"));
        // An operation the dtype does not have.
        let exp = kind(
            ElementwiseOp::Unary(UnaryOp::Exp),
            DType::I64,
            DType::I64,
            &[Slot::Array],
        );
        let err = exp
            .generate(
                "k0",
                &MlirSignature::host(&[read(DType::I64, 1, 0), write(DType::I64, 1)], &[]),
            )
            .unwrap_err();
        assert_eq!(err.kind, "array.exp.i64.a");
        assert!(
            err.reason.contains("not a defined operation"),
            "{}",
            err.reason
        );
    }
}
