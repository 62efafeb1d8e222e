//! Element-wise operations: the operator catalog, its task kinds and their submission.
//!
//! Every element-wise kind computes `out = f(operands...)` with each operand a store
//! (broadcast against the output) or a scalar. The catalog below ([`UnaryOp`], [`BinaryOp`],
//! `where`) is the kinds' declared expression: the native variants are generated from it here,
//! and the JIT issue derives MLIR bodies from the same description.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock, RwLock};

use diffuse_ir::{
    DType, Element, IndexTask, PointTask, Privilege, Scalar, Shape, TaskKind, TaskKindBuilder,
};

use crate::array::Array;
use crate::broadcast::broadcast_shapes;
use crate::complex::ComplexFloat;
use crate::context::ArrayContext;
use crate::element::{
    cast, float_divmod, int_floor_divide, int_remainder, is_complex, is_float, is_numeric,
    scalar_as, shift_left, shift_right, with_any, with_arith, with_complex, with_float, with_int,
    with_numeric, Arith, Convert, Float, Num,
};
use crate::error::{ArrayError, ArrayResult};
use crate::kernels::{for_each_out_row, output_arg, sources, Broadcast, Row, Slot};
use crate::kinds::{kind, undefined, Kernel};
use crate::mlir::ElementwiseGenerator;

/// A one-operand element-wise operation.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum UnaryOp {
    /// `x` (assignment, copies, broadcasting fills).
    Copy,
    /// `-x`.
    Neg,
    /// `|x|`.
    Abs,
    /// `e^x`.
    Exp,
    /// `ln x`.
    Log,
    /// `sqrt x`.
    Sqrt,
    /// The error function.
    Erf,
    /// `sin x`.
    Sin,
    /// `cos x`.
    Cos,
    /// `tanh x`.
    Tanh,
    /// Logical not (bool).
    Not,
    /// The largest integer not above `x` (floats).
    Floor,
    /// The smallest integer not below `x` (floats).
    Ceil,
    /// `x` rounded toward zero (floats).
    Trunc,
    /// `x` rounded to the nearest integer, ties to even (floats).
    Rint,
    /// `tan x`.
    Tan,
    /// `asin x`.
    Arcsin,
    /// `acos x`.
    Arccos,
    /// `atan x`.
    Arctan,
    /// `sinh x`.
    Sinh,
    /// `cosh x`.
    Cosh,
    /// `log2 x`.
    Log2,
    /// `log10 x`.
    Log10,
    /// `ln(1 + x)`, accurate near 0.
    Log1p,
    /// `e^x - 1`, accurate near 0.
    Expm1,
    /// -1, 0 or 1 by the sign of `x` (numeric; NaN stays NaN, -0.0 gives 0.0).
    Sign,
    /// True for NaN (floats; bool result).
    IsNan,
    /// True for an infinity (floats; bool result).
    IsInf,
    /// True for a finite value (floats; bool result).
    IsFinite,
    /// Bitwise not (integers); logical not (bool).
    Invert,
    /// The real part (complex; the part type's result).
    Real,
    /// The imaginary part (complex; the part type's result).
    Imag,
    /// The complex conjugate (complex).
    Conj,
    /// The argument `atan2(im, re)` (complex; the part type's result).
    Angle,
}

impl UnaryOp {
    /// The operation's name (in kind names and errors).
    pub fn name(self) -> &'static str {
        match self {
            UnaryOp::Copy => "copy",
            UnaryOp::Neg => "neg",
            UnaryOp::Abs => "abs",
            UnaryOp::Exp => "exp",
            UnaryOp::Log => "log",
            UnaryOp::Sqrt => "sqrt",
            UnaryOp::Erf => "erf",
            UnaryOp::Sin => "sin",
            UnaryOp::Cos => "cos",
            UnaryOp::Tanh => "tanh",
            UnaryOp::Not => "logical_not",
            UnaryOp::Floor => "floor",
            UnaryOp::Ceil => "ceil",
            UnaryOp::Trunc => "trunc",
            UnaryOp::Rint => "rint",
            UnaryOp::Tan => "tan",
            UnaryOp::Arcsin => "arcsin",
            UnaryOp::Arccos => "arccos",
            UnaryOp::Arctan => "arctan",
            UnaryOp::Sinh => "sinh",
            UnaryOp::Cosh => "cosh",
            UnaryOp::Log2 => "log2",
            UnaryOp::Log10 => "log10",
            UnaryOp::Log1p => "log1p",
            UnaryOp::Expm1 => "expm1",
            UnaryOp::Sign => "sign",
            UnaryOp::IsNan => "isnan",
            UnaryOp::IsInf => "isinf",
            UnaryOp::IsFinite => "isfinite",
            UnaryOp::Invert => "invert",
            UnaryOp::Real => "real",
            UnaryOp::Imag => "imag",
            UnaryOp::Conj => "conjugate",
            UnaryOp::Angle => "angle",
        }
    }

    /// The element type of the result for an operand of `dtype`, or why there is none.
    pub fn result_dtype(self, dtype: DType) -> Result<DType, ArrayError> {
        let needs = |ok: bool, expected| {
            if ok {
                Ok(dtype)
            } else {
                Err(ArrayError::UnsupportedDType {
                    op: self.name(),
                    dtype,
                    expected,
                })
            }
        };
        let complex = is_complex(dtype);
        match self {
            UnaryOp::Copy => Ok(dtype),
            UnaryOp::Neg | UnaryOp::Sign => needs(is_numeric(dtype), "a numeric dtype"),
            // |z| of a complex number is real.
            UnaryOp::Abs => needs(is_numeric(dtype), "a numeric dtype").map(DType::real_part),
            UnaryOp::Not => needs(dtype == DType::Bool, "bool"),
            UnaryOp::Invert => needs(!is_float(dtype) && !complex, "an integer or bool dtype"),
            UnaryOp::IsNan | UnaryOp::IsInf | UnaryOp::IsFinite => {
                needs(is_float(dtype) || complex, "a float or complex dtype").map(|_| DType::Bool)
            }
            UnaryOp::Real | UnaryOp::Imag | UnaryOp::Angle => {
                needs(complex, "a complex dtype").map(DType::real_part)
            }
            UnaryOp::Conj => needs(complex, "a complex dtype"),
            // NumPy defines no rounding to integers but `rint`, and no `erf`, for complex.
            UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Trunc | UnaryOp::Erf => {
                needs(is_float(dtype), "a float dtype; convert with astype")
            }
            _ => needs(
                is_float(dtype) || complex,
                "a float or complex dtype; convert with astype",
            ),
        }
    }
}

/// A two-operand element-wise operation.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum BinaryOp {
    /// `a + b`.
    Add,
    /// `a - b`.
    Sub,
    /// `a * b`.
    Mul,
    /// `a / b` (floats).
    Div,
    /// `a ^ b` (floats).
    Pow,
    /// The larger value (NaN if either is NaN).
    Maximum,
    /// The smaller value (NaN if either is NaN).
    Minimum,
    /// `a < b`.
    Less,
    /// `a <= b`.
    LessEqual,
    /// `a > b`.
    Greater,
    /// `a >= b`.
    GreaterEqual,
    /// `a == b`.
    Equal,
    /// `a != b`.
    NotEqual,
    /// `a && b` (bool).
    And,
    /// `a || b` (bool).
    Or,
    /// `floor(a / b)` (numeric): integer division by 0 gives 0, floats follow NumPy's
    /// `divmod`.
    FloorDivide,
    /// `a - floor(a / b) * b`, with the divisor's sign (numeric): integer remainder by 0
    /// gives 0, floats follow NumPy's `divmod`.
    Remainder,
    /// `a & b` (integers, bool).
    BitAnd,
    /// `a | b` (integers, bool).
    BitOr,
    /// `a ^ b` (integers, bool).
    BitXor,
    /// `a << b` (integers): counts outside `0..bits` give 0.
    LeftShift,
    /// `a >> b`, arithmetic (integers): counts outside `0..bits` give 0 or -1 by the sign.
    RightShift,
    /// `atan2(a, b)` (floats).
    Arctan2,
}

impl BinaryOp {
    /// The operation's name (NumPy's, in kind names and errors).
    pub fn name(self) -> &'static str {
        match self {
            BinaryOp::Add => "add",
            BinaryOp::Sub => "subtract",
            BinaryOp::Mul => "multiply",
            BinaryOp::Div => "divide",
            BinaryOp::Pow => "power",
            BinaryOp::Maximum => "maximum",
            BinaryOp::Minimum => "minimum",
            BinaryOp::Less => "less",
            BinaryOp::LessEqual => "less_equal",
            BinaryOp::Greater => "greater",
            BinaryOp::GreaterEqual => "greater_equal",
            BinaryOp::Equal => "equal",
            BinaryOp::NotEqual => "not_equal",
            BinaryOp::And => "logical_and",
            BinaryOp::Or => "logical_or",
            BinaryOp::FloorDivide => "floor_divide",
            BinaryOp::Remainder => "remainder",
            BinaryOp::BitAnd => "bitwise_and",
            BinaryOp::BitOr => "bitwise_or",
            BinaryOp::BitXor => "bitwise_xor",
            BinaryOp::LeftShift => "left_shift",
            BinaryOp::RightShift => "right_shift",
            BinaryOp::Arctan2 => "arctan2",
        }
    }

    /// True for the comparisons (their result is bool).
    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinaryOp::Less
                | BinaryOp::LessEqual
                | BinaryOp::Greater
                | BinaryOp::GreaterEqual
                | BinaryOp::Equal
                | BinaryOp::NotEqual
        )
    }

    /// The element type of the result for operands of `dtype`, or why there is none.
    pub fn result_dtype(self, dtype: DType) -> Result<DType, ArrayError> {
        let (ok, expected) = match self {
            BinaryOp::Add
            | BinaryOp::Sub
            | BinaryOp::Mul
            | BinaryOp::Maximum
            | BinaryOp::Minimum
            | BinaryOp::Less
            | BinaryOp::LessEqual
            | BinaryOp::Greater
            | BinaryOp::GreaterEqual => (is_numeric(dtype), "a numeric dtype"),
            BinaryOp::FloorDivide | BinaryOp::Remainder => (
                is_numeric(dtype) && !is_complex(dtype),
                "an integer or float dtype",
            ),
            BinaryOp::Div | BinaryOp::Pow => (
                is_float(dtype) || is_complex(dtype),
                "a float or complex dtype; convert with astype",
            ),
            BinaryOp::Arctan2 => (is_float(dtype), "a float dtype; convert with astype"),
            BinaryOp::BitAnd | BinaryOp::BitOr | BinaryOp::BitXor => (
                !is_float(dtype) && !is_complex(dtype),
                "an integer or bool dtype",
            ),
            BinaryOp::LeftShift | BinaryOp::RightShift => {
                (is_numeric(dtype) && !is_float(dtype), "an integer dtype")
            }
            BinaryOp::Equal | BinaryOp::NotEqual => (true, ""),
            BinaryOp::And | BinaryOp::Or => (dtype == DType::Bool, "bool"),
        };
        if !ok {
            return Err(ArrayError::UnsupportedDType {
                op: self.name(),
                dtype,
                expected,
            });
        }
        Ok(if self.is_comparison() {
            DType::Bool
        } else {
            dtype
        })
    }
}

/// An operand of an element-wise operation: an array or a scalar.
#[derive(Clone, Copy, Debug)]
pub enum Operand<'a> {
    /// An array, broadcast against the result.
    Array(&'a Array),
    /// A scalar, converted to the arrays' dtype.
    Scalar(Scalar),
}

impl<'a> From<&'a Array> for Operand<'a> {
    fn from(a: &'a Array) -> Self {
        Operand::Array(a)
    }
}

macro_rules! operand_from_scalar {
    ($($t:ty),*) => {$(
        impl From<$t> for Operand<'_> {
            fn from(v: $t) -> Self {
                Operand::Scalar(v.into())
            }
        }
    )*};
}
operand_from_scalar!(
    f64,
    f32,
    i64,
    i32,
    bool,
    diffuse_ir::Complex32,
    diffuse_ir::Complex64
);

/// The operation of an element-wise task kind.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum ElementwiseOp {
    /// `out = op(x)`.
    Unary(UnaryOp),
    /// `out = op(a, b)`.
    Binary(BinaryOp),
    /// `out = cond ? a : b`, the condition a bool array before the two value operands.
    Where,
    /// `out = x` converted to the result dtype.
    Cast,
}

/// What an element-wise task kind computes: recorded when the library registers the kind, so
/// that the JIT can build the same body in MLIR (see [`elementwise_kind`]).
///
/// The kind's store arguments are its array operands in order (for `Where`, the condition
/// first), then the output; its scalars are its scalar operands in order. Array operands are
/// broadcast NumPy-style against the output's sub-store.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct ElementwiseKind {
    /// The operation.
    pub op: ElementwiseOp,
    /// The element type of the (value) operands.
    pub dtype: DType,
    /// The element type of the output.
    pub result: DType,
    /// The value operands, arrays or scalars, in order.
    pub operands: Vec<Slot>,
}

impl ElementwiseKind {
    /// The task kind's name: `array.<op>.<dtype>.<pattern>` (`array.cast.<from>.<to>`).
    pub(crate) fn kind_name(&self) -> String {
        let pattern = pattern(&self.operands);
        match self.op {
            ElementwiseOp::Unary(op) => format!("array.{}.{}.{pattern}", op.name(), self.dtype),
            ElementwiseOp::Binary(op) => format!("array.{}.{}.{pattern}", op.name(), self.dtype),
            ElementwiseOp::Where => format!("array.where.{}.a{pattern}", self.dtype),
            ElementwiseOp::Cast => format!("array.cast.{}.{}", self.dtype, self.result),
        }
    }

    /// Registers (once) the kind this describes, its native variant built by `declare` and
    /// its MLIR generator, and records the description.
    fn register(
        self,
        declare: impl FnOnce(TaskKindBuilder) -> Result<Arc<TaskKind>, diffuse_ir::IrError>,
    ) -> Result<Arc<TaskKind>, ArrayError> {
        if let Some(known) = registered()
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(&self)
        {
            return Ok(Arc::clone(known));
        }
        let registered_kind = kind(self.kind_name(), |b| {
            declare(b.mlir(Arc::new(ElementwiseGenerator(self.clone()))))
        })?;
        descriptions()
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .entry(registered_kind.id())
            .or_insert_with(|| self.clone());
        registered()
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(self, Arc::clone(&registered_kind));
        Ok(registered_kind)
    }
}

/// The kinds registered so far by description: every operation asks for its kind, and this
/// finds it without building the kind's name.
fn registered() -> &'static RwLock<hashbrown::HashMap<ElementwiseKind, Arc<TaskKind>>> {
    static TABLE: OnceLock<RwLock<hashbrown::HashMap<ElementwiseKind, Arc<TaskKind>>>> =
        OnceLock::new();
    TABLE.get_or_init(Default::default)
}

fn descriptions() -> &'static RwLock<HashMap<u32, ElementwiseKind>> {
    static TABLE: OnceLock<RwLock<HashMap<u32, ElementwiseKind>>> = OnceLock::new();
    TABLE.get_or_init(Default::default)
}

/// The description of `kind` if it is one of this library's element-wise kinds.
pub fn elementwise_kind(kind: &TaskKind) -> Option<ElementwiseKind> {
    descriptions()
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .get(&kind.id())
        .cloned()
}

/// Operands resolved for one task: arrays in order, scalars (converted) in order.
struct Resolved<'a> {
    cx: ArrayContext,
    dtype: DType,
    shape: Shape,
    slots: Vec<Slot>,
    arrays: Vec<&'a Array>,
    scalars: Vec<Scalar>,
}

/// Checks operands against each other: one context, one dtype, broadcastable shapes. At
/// least one operand must be an array.
fn resolve<'a>(op: &'static str, operands: &[Operand<'a>]) -> Result<Resolved<'a>, ArrayError> {
    let arrays: Vec<&Array> = operands
        .iter()
        .filter_map(|o| match o {
            Operand::Array(a) => Some(*a),
            Operand::Scalar(_) => None,
        })
        .collect();
    let first = *arrays.first().ok_or(ArrayError::BadArgument {
        op,
        reason: "needs at least one array operand".into(),
    })?;
    let dtype = first.dtype();
    let mut shape = first.shape();
    for a in &arrays[1..] {
        first.context().check_same(a.context(), op)?;
        if a.dtype() != dtype {
            return Err(ArrayError::DTypeMismatch {
                op,
                lhs: dtype,
                rhs: a.dtype(),
            });
        }
        shape = broadcast_shapes(op, shape, a.shape())?;
    }
    let mut slots = Vec::with_capacity(operands.len());
    let mut scalars = Vec::new();
    for o in operands {
        match *o {
            Operand::Array(_) => slots.push(Slot::Array),
            Operand::Scalar(s) => {
                slots.push(Slot::Scalar);
                scalars.push(scalar_as(s, dtype).ok_or_else(|| ArrayError::ScalarDType {
                    op,
                    value: format!("{s:?}"),
                    dtype,
                })?);
            }
        }
    }
    Ok(Resolved {
        cx: first.context().clone(),
        dtype,
        shape,
        slots,
        arrays,
        scalars,
    })
}

/// The `a`/`s` pattern of operand slots, for kind names.
fn pattern(slots: &[Slot]) -> String {
    slots
        .iter()
        .map(|s| match s {
            Slot::Array => 'a',
            Slot::Scalar => 's',
        })
        .collect()
}

/// Declares the store arguments of an element-wise kind: one read per array operand, then the
/// written output.
fn declare_args(
    mut builder: TaskKindBuilder,
    slots: &[Slot],
    in_dtype: DType,
    out_dtype: DType,
) -> TaskKindBuilder {
    for (i, slot) in slots.iter().enumerate() {
        builder = match slot {
            Slot::Array => builder.arg(format!("in{i}"), in_dtype, Privilege::Read),
            Slot::Scalar => builder.scalar(in_dtype),
        };
    }
    builder
        .arg("out", out_dtype, Privilege::Write)
        .elementwise()
}

/// Submits `kind` over the output `out` (blocked over a launch chosen for its shape) with the
/// resolved operands; an empty output needs no task.
fn launch(kind: &Arc<TaskKind>, r: &Resolved<'_>, out: &Array) -> Result<(), ArrayError> {
    if out.is_empty() {
        return Ok(());
    }
    let launch = r.cx.launch_for(r.shape);
    let mut task = IndexTask::new(kind, launch);
    for a in &r.arrays {
        task = task.arg(
            a.store(),
            a.partition_for(r.shape, launch)?,
            Privilege::Read,
        );
    }
    task = task.arg(
        out.store(),
        out.partition_for(r.shape, launch)?,
        Privilege::Write,
    );
    for s in &r.scalars {
        task = task.scalar(*s);
    }
    r.cx.submit(task)
}

/// A native kernel applying `f` element by element to one operand.
fn unary_kernel<T: Element, U: Element>(
    slots: Vec<Slot>,
    f: impl Fn(T) -> U + Copy + Send + Sync + 'static,
) -> impl Kernel {
    row_kernel(
        slots,
        move |o: &mut [U], a: &[T]| o.iter_mut().zip(a).for_each(|(o, &x)| *o = f(x)),
        move |o: &mut [U], x: T| o.fill(f(x)),
    )
}

/// The native copy: whole rows at once (`memcpy`), a repeated value by filling.
fn copy_kernel<T: Element>(slots: Vec<Slot>) -> impl Kernel {
    row_kernel(
        slots,
        |o: &mut [T], a: &[T]| o.copy_from_slice(a),
        |o: &mut [T], x: T| o.fill(x),
    )
}

/// A native kernel over one operand, row by row of the output: `row` for an operand row,
/// `splat` for an operand repeated along the row (broadcast, or a scalar).
fn row_kernel<T: Element, U: Element>(
    slots: Vec<Slot>,
    row: impl Fn(&mut [U], &[T]) + Send + Sync + 'static,
    splat: impl Fn(&mut [U], T) + Send + Sync + 'static,
) -> impl Kernel {
    move |task| {
        let mut out = task.write::<U>(output_arg(&slots))?;
        let ins = sources::<T>(task, &slots, 0, out.shape())?;
        for_each_out_row(&mut out, |o, lead| match ins[0].row(lead) {
            Row::Slice(a) => row(o, a),
            Row::Splat(x) => splat(o, x),
        });
        Ok(())
    }
}

/// A native kernel applying `f` element by element to two operands.
fn binary_kernel<T: Element, U: Element>(
    slots: Vec<Slot>,
    f: impl Fn(T, T) -> U + Copy + Send + Sync + 'static,
) -> impl Kernel {
    move |task| {
        let mut out = task.write::<U>(output_arg(&slots))?;
        let ins = sources::<T>(task, &slots, 0, out.shape())?;
        for_each_out_row(&mut out, |o, lead| {
            match (ins[0].row(lead), ins[1].row(lead)) {
                (Row::Slice(a), Row::Slice(b)) => {
                    for ((o, &x), &y) in o.iter_mut().zip(a).zip(b) {
                        *o = f(x, y);
                    }
                }
                (Row::Slice(a), Row::Splat(y)) => {
                    o.iter_mut().zip(a).for_each(|(o, &x)| *o = f(x, y))
                }
                (Row::Splat(x), Row::Slice(b)) => {
                    o.iter_mut().zip(b).for_each(|(o, &y)| *o = f(x, y))
                }
                (Row::Splat(x), Row::Splat(y)) => o.fill(f(x, y)),
            }
        });
        Ok(())
    }
}

/// Registers (once) and returns the kind for `op` on `dtype` into `out` with operand pattern
/// `slots`; `kernel` registers the CPU kernel on the builder once its arguments are declared.
fn register_kind(
    op: ElementwiseOp,
    dtype: DType,
    out: DType,
    slots: &[Slot],
    kernel: impl FnOnce(TaskKindBuilder, Vec<Slot>) -> Result<Arc<TaskKind>, diffuse_ir::IrError>,
) -> Result<Arc<TaskKind>, ArrayError> {
    let description = ElementwiseKind {
        op,
        dtype,
        result: out,
        operands: slots.to_vec(),
    };
    let slots = slots.to_vec();
    description.register(move |b| kernel(declare_args(b, &slots, dtype, out), slots))
}

/// Registers (once) and returns the kind for `op` on `dtype` with operand pattern `slots`.
fn unary_kind(
    op: UnaryOp,
    dtype: DType,
    out: DType,
    slots: &[Slot],
) -> Result<Arc<TaskKind>, ArrayError> {
    let kernel = move |b: TaskKindBuilder, slots: Vec<Slot>| {
        macro_rules! float_fn {
            ($f:expr) => {
                with_float!(dtype, T => b.register(unary_kernel::<T, T>(slots, $f)), else undefined(op.name(), dtype))
            };
        }
        macro_rules! numeric_fn {
            ($f:expr) => {
                with_numeric!(dtype, T => b.register(unary_kernel::<T, T>(slots, $f)), else undefined(op.name(), dtype))
            };
        }
        macro_rules! float_test {
            ($f:expr, $complex:expr) => {
                with_float!(dtype, T => b.register(unary_kernel::<T, bool>(slots, $f)),
                    else with_complex!(dtype, T => b.register(unary_kernel::<T, bool>(slots, $complex)),
                    else undefined(op.name(), dtype)))
            };
        }
        // `$f` on floats (or all numbers), `$complex` on complex numbers.
        macro_rules! or_complex {
            ($with:ident, $f:expr, $complex:expr) => {
                $with!(dtype, T => b.register(unary_kernel::<T, T>(slots, $f)),
                    else with_complex!(dtype, T => b.register(unary_kernel::<T, T>(slots, $complex)),
                    else undefined(op.name(), dtype)))
            };
        }
        // A complex number's real-valued function `$f`.
        macro_rules! complex_part {
            ($f:expr) => {
                with_complex!(dtype, T => b.register(unary_kernel::<T, <T as ComplexFloat>::Part>(slots, $f)),
                    else undefined(op.name(), dtype))
            };
        }
        match op {
            UnaryOp::Copy => {
                with_any!(dtype, T => b.register(copy_kernel::<T>(slots)))
            }
            UnaryOp::Neg => or_complex!(with_numeric, Num::neg, ComplexFloat::neg),
            UnaryOp::Abs if is_complex(dtype) => complex_part!(ComplexFloat::abs),
            UnaryOp::Abs => numeric_fn!(Num::abs),
            UnaryOp::Not => b.register(unary_kernel::<bool, bool>(slots, |x| !x)),
            UnaryOp::Exp => or_complex!(with_float, Float::exp, ComplexFloat::exp),
            UnaryOp::Log => or_complex!(with_float, Float::ln, ComplexFloat::ln),
            UnaryOp::Sqrt => or_complex!(with_float, Float::sqrt, ComplexFloat::sqrt),
            UnaryOp::Erf => float_fn!(Float::erf),
            UnaryOp::Sin => or_complex!(with_float, Float::sin, ComplexFloat::sin),
            UnaryOp::Cos => or_complex!(with_float, Float::cos, ComplexFloat::cos),
            UnaryOp::Tanh => or_complex!(with_float, Float::tanh, ComplexFloat::tanh),
            UnaryOp::Floor => float_fn!(T::floor),
            UnaryOp::Ceil => float_fn!(T::ceil),
            UnaryOp::Trunc => float_fn!(T::trunc),
            UnaryOp::Rint => or_complex!(with_float, T::round_ties_even, ComplexFloat::rint),
            UnaryOp::Tan => or_complex!(with_float, T::tan, ComplexFloat::tan),
            UnaryOp::Arcsin => or_complex!(with_float, T::asin, ComplexFloat::asin),
            UnaryOp::Arccos => or_complex!(with_float, T::acos, ComplexFloat::acos),
            UnaryOp::Arctan => or_complex!(with_float, T::atan, ComplexFloat::atan),
            UnaryOp::Sinh => or_complex!(with_float, T::sinh, ComplexFloat::sinh),
            UnaryOp::Cosh => or_complex!(with_float, T::cosh, ComplexFloat::cosh),
            UnaryOp::Log2 => or_complex!(with_float, T::log2, ComplexFloat::log2),
            UnaryOp::Log10 => or_complex!(with_float, T::log10, ComplexFloat::log10),
            UnaryOp::Log1p => or_complex!(with_float, T::ln_1p, ComplexFloat::log1p),
            UnaryOp::Expm1 => or_complex!(with_float, T::exp_m1, ComplexFloat::expm1),
            UnaryOp::Real => complex_part!(ComplexFloat::re),
            UnaryOp::Imag => complex_part!(ComplexFloat::im),
            UnaryOp::Angle => complex_part!(ComplexFloat::angle),
            UnaryOp::Conj => {
                with_complex!(dtype, T => b.register(unary_kernel::<T, T>(slots, ComplexFloat::conj)),
                else undefined(op.name(), dtype))
            }
            UnaryOp::Sign if is_complex(dtype) => {
                with_complex!(dtype, T => b.register(unary_kernel::<T, T>(slots, ComplexFloat::sign)),
                    else undefined(op.name(), dtype))
            }
            UnaryOp::Sign => {
                with_numeric!(dtype, T => b.register(unary_kernel::<T, T>(slots, |x: T| {
                let zero = T::from_i64(0);
                if x > zero {
                    T::from_i64(1)
                } else if x < zero {
                    T::from_i64(-1)
                } else if x == zero {
                    zero
                } else {
                    x
                }
            })), else undefined(op.name(), dtype))
            }
            UnaryOp::IsNan => float_test!(T::is_nan, Arith::is_nan),
            UnaryOp::IsInf => float_test!(T::is_infinite, ComplexFloat::is_infinite),
            UnaryOp::IsFinite => float_test!(T::is_finite, ComplexFloat::is_finite),
            UnaryOp::Invert if dtype == DType::Bool => {
                b.register(unary_kernel::<bool, bool>(slots, |x| !x))
            }
            UnaryOp::Invert => {
                with_int!(dtype, T => b.register(unary_kernel::<T, T>(slots, |x: T| !x)), else undefined(op.name(), dtype))
            }
        }
    };
    register_kind(ElementwiseOp::Unary(op), dtype, out, slots, kernel)
}

/// Registers (once) and returns the kind for `op` on `dtype` with operand pattern `slots`.
// One closure body serves `i32` and `i64`: widening to `i64` is a no-op for the latter.
#[allow(clippy::useless_conversion)]
fn binary_kind(
    op: BinaryOp,
    dtype: DType,
    out: DType,
    slots: &[Slot],
) -> Result<Arc<TaskKind>, ArrayError> {
    let kernel = move |b: TaskKindBuilder, slots: Vec<Slot>| {
        macro_rules! arith {
            ($f:expr) => {
                with_arith!(dtype, T => b.register(binary_kernel::<T, _>(slots, $f)), else undefined(op.name(), dtype))
            };
        }
        // `$f` on real numbers, `$complex` on complex numbers.
        macro_rules! numeric {
            ($f:expr, $complex:expr) => {
                with_numeric!(dtype, T => b.register(binary_kernel::<T, _>(slots, $f)),
                    else with_complex!(dtype, T => b.register(binary_kernel::<T, _>(slots, $complex)),
                    else undefined(op.name(), dtype)))
            };
        }
        macro_rules! float {
            ($f:expr) => {
                with_float!(dtype, T => b.register(binary_kernel::<T, T>(slots, $f)), else undefined(op.name(), dtype))
            };
            ($f:expr, $complex:expr) => {
                with_float!(dtype, T => b.register(binary_kernel::<T, T>(slots, $f)),
                    else with_complex!(dtype, T => b.register(binary_kernel::<T, T>(slots, $complex)),
                    else undefined(op.name(), dtype)))
            };
        }
        macro_rules! int {
            ($f:expr) => {
                with_int!(dtype, T => b.register(binary_kernel::<T, T>(slots, $f)), else undefined(op.name(), dtype))
            };
        }
        match op {
            BinaryOp::Add => arith!(Arith::add),
            BinaryOp::Sub => arith!(Arith::sub),
            BinaryOp::Mul => arith!(Arith::mul),
            BinaryOp::Maximum => arith!(Arith::maximum),
            BinaryOp::Minimum => arith!(Arith::minimum),
            BinaryOp::Less => arith!(Arith::less),
            BinaryOp::LessEqual => numeric!(|x: T, y: T| x <= y, ComplexFloat::less_equal),
            BinaryOp::Greater => arith!(|x: T, y: T| Arith::less(y, x)),
            BinaryOp::GreaterEqual => {
                numeric!(|x: T, y: T| x >= y, |x: T, y: T| y.less_equal(x))
            }
            BinaryOp::Div => float!(Float::div, ComplexFloat::div),
            BinaryOp::Pow => float!(Float::pow, ComplexFloat::pow),
            BinaryOp::Equal => {
                with_any!(dtype, T => b.register(binary_kernel::<T, bool>(slots, |x: T, y: T| x == y)))
            }
            BinaryOp::NotEqual => {
                with_any!(dtype, T => b.register(binary_kernel::<T, bool>(slots, |x: T, y: T| x != y)))
            }
            BinaryOp::And => b.register(binary_kernel::<bool, bool>(slots, |x, y| x && y)),
            BinaryOp::Or => b.register(binary_kernel::<bool, bool>(slots, |x, y| x || y)),
            BinaryOp::FloorDivide => {
                with_float!(dtype, T => b.register(binary_kernel::<T, T>(slots, |x: T, y: T| float_divmod(x, y).0)),
            else int!(|x: T, y: T| int_floor_divide(x.into(), y.into()) as T))
            }
            BinaryOp::Remainder => {
                with_float!(dtype, T => b.register(binary_kernel::<T, T>(slots, |x: T, y: T| float_divmod(x, y).1)),
            else int!(|x: T, y: T| int_remainder(x.into(), y.into()) as T))
            }
            BinaryOp::BitAnd if dtype == DType::Bool => {
                b.register(binary_kernel::<bool, bool>(slots, |x, y| x & y))
            }
            BinaryOp::BitOr if dtype == DType::Bool => {
                b.register(binary_kernel::<bool, bool>(slots, |x, y| x | y))
            }
            BinaryOp::BitXor if dtype == DType::Bool => {
                b.register(binary_kernel::<bool, bool>(slots, |x, y| x ^ y))
            }
            BinaryOp::BitAnd => int!(|x: T, y: T| x & y),
            BinaryOp::BitOr => int!(|x: T, y: T| x | y),
            BinaryOp::BitXor => int!(|x: T, y: T| x ^ y),
            BinaryOp::LeftShift => {
                int!(|x: T, y: T| shift_left(x.into(), y.into(), T::BITS.into()) as T)
            }
            BinaryOp::RightShift => {
                int!(|x: T, y: T| shift_right(x.into(), y.into(), T::BITS.into()) as T)
            }
            BinaryOp::Arctan2 => float!(T::atan2),
        }
    };
    register_kind(ElementwiseOp::Binary(op), dtype, out, slots, kernel)
}

/// `op(x)` element-wise into a new array.
pub fn unary(op: UnaryOp, x: &Array) -> ArrayResult {
    let r = resolve(op.name(), &[Operand::Array(x)])?;
    let out_dtype = op.result_dtype(r.dtype)?;
    let out = Array::fresh(&r.cx, r.shape, out_dtype)?;
    let kind = unary_kind(op, r.dtype, out_dtype, &r.slots)?;
    launch(&kind, &r, &out)?;
    Ok(out)
}

/// `op(a, b)` element-wise into a new array, broadcasting arrays and scalars.
pub fn binary<'a, 'b>(
    op: BinaryOp,
    a: impl Into<Operand<'a>>,
    b: impl Into<Operand<'b>>,
) -> ArrayResult {
    let (a, b) = (a.into(), b.into());
    if let Some(result) = numpys_power_shortcut(op, &a, &b)? {
        return Ok(result);
    }
    let r = resolve(op.name(), &[a, b])?;
    let out_dtype = op.result_dtype(r.dtype)?;
    let out = Array::fresh(&r.cx, r.shape, out_dtype)?;
    let kind = binary_kind(op, r.dtype, out_dtype, &r.slots)?;
    launch(&kind, &r, &out)?;
    Ok(out)
}

/// NumPy computes a float array to the scalar power 2, 0.5 or -1 as `x * x`, `sqrt(x)` and
/// `1 / x` (not through `pow`, whose last bit can differ): the same operations, so results
/// match NumPy's bit for bit. None for any other power or operation.
fn numpys_power_shortcut(
    op: BinaryOp,
    a: &Operand<'_>,
    b: &Operand<'_>,
) -> Result<Option<Array>, ArrayError> {
    let (BinaryOp::Pow, Operand::Array(x), Operand::Scalar(e)) = (op, a, b) else {
        return Ok(None);
    };
    let complex = is_complex(x.dtype());
    if !is_float(x.dtype()) && !complex {
        return Ok(None);
    }
    let exponent = match *e {
        Scalar::F64(v) => v,
        Scalar::F32(v) => f64::from(v),
        Scalar::I64(v) => v as f64,
        Scalar::I32(v) => f64::from(v),
        Scalar::C64(z) if z.im == 0.0 => f64::from(z.re),
        Scalar::C128(z) if z.im == 0.0 => z.re,
        Scalar::Bool(_) | Scalar::C64(_) | Scalar::C128(_) => return Ok(None),
    };
    // NumPy's complex reciprocal is a formula of its own, not a division.
    if complex && exponent == -1.0 {
        return Ok(None);
    }
    Ok(Some(if exponent == 2.0 {
        binary(BinaryOp::Mul, *x, *x)?
    } else if exponent == 0.5 {
        unary(UnaryOp::Sqrt, x)?
    } else if exponent == -1.0 {
        binary(BinaryOp::Div, 1.0, *x)?
    } else {
        return Ok(None);
    }))
}

/// Overwrites `dst` with `src` (an array broadcast to `dst`'s shape, or a scalar): NumPy's
/// `dst[...] = src`. When `src` is a view of `dst`'s own store the values go through a
/// temporary copy first, so overlapping views read the old values.
pub fn assign<'a>(dst: &Array, src: impl Into<Operand<'a>>) -> Result<(), ArrayError> {
    let src = src.into();
    let staged;
    let src = match src {
        Operand::Array(a) if a.shares_store(dst) => {
            staged = unary(UnaryOp::Copy, a)?;
            Operand::Array(&staged)
        }
        other => other,
    };
    let r = match src {
        Operand::Array(a) => {
            dst.context().check_same(a.context(), "assign")?;
            if a.dtype() != dst.dtype() {
                return Err(ArrayError::DTypeMismatch {
                    op: "assign",
                    lhs: dst.dtype(),
                    rhs: a.dtype(),
                });
            }
            crate::broadcast::check_broadcasts_to("assign", a.shape(), dst.shape())?;
            let mut r = resolve("assign", &[src])?;
            r.shape = dst.shape();
            r
        }
        Operand::Scalar(s) => {
            let value = scalar_as(s, dst.dtype()).ok_or_else(|| ArrayError::ScalarDType {
                op: "assign",
                value: format!("{s:?}"),
                dtype: dst.dtype(),
            })?;
            Resolved {
                cx: dst.context().clone(),
                dtype: dst.dtype(),
                shape: dst.shape(),
                slots: vec![Slot::Scalar],
                arrays: Vec::new(),
                scalars: vec![value],
            }
        }
    };
    let kind = unary_kind(UnaryOp::Copy, r.dtype, r.dtype, &r.slots)?;
    launch(&kind, &r, dst)
}

/// `cond ? a : b` element-wise (NumPy's `where`), broadcasting all three; `a` and `b` may be
/// scalars.
pub fn where_<'a, 'b>(
    cond: &Array,
    a: impl Into<Operand<'a>>,
    b: impl Into<Operand<'b>>,
) -> ArrayResult {
    if cond.dtype() != DType::Bool {
        return Err(ArrayError::UnsupportedDType {
            op: "where",
            dtype: cond.dtype(),
            expected: "a bool condition",
        });
    }
    let values = [a.into(), b.into()];
    let r = match values {
        [Operand::Scalar(x), Operand::Scalar(y)] => both_scalars(cond, x, y)?,
        _ => resolve("where", &values)?,
    };
    cond.context().check_same(&r.cx, "where")?;
    let shape = broadcast_shapes("where", cond.shape(), r.shape)?;
    let out = Array::fresh(&r.cx, shape, r.dtype)?;
    if out.is_empty() {
        return Ok(out);
    }
    let kind = where_kind(r.dtype, &r.slots)?;
    let launch_domain = r.cx.launch_for(shape);
    let mut task = IndexTask::new(&kind, launch_domain).arg(
        cond.store(),
        cond.partition_for(shape, launch_domain)?,
        Privilege::Read,
    );
    for x in &r.arrays {
        task = task.arg(
            x.store(),
            x.partition_for(shape, launch_domain)?,
            Privilege::Read,
        );
    }
    task = task.arg(
        out.store(),
        out.partition_for(shape, launch_domain)?,
        Privilege::Write,
    );
    for s in &r.scalars {
        task = task.scalar(*s);
    }
    r.cx.submit(task)?;
    Ok(out)
}

/// `where` with two scalar values: they take the first one's dtype, the condition's shape.
fn both_scalars<'a>(cond: &Array, x: Scalar, y: Scalar) -> Result<Resolved<'a>, ArrayError> {
    let dtype = x.dtype();
    let y = scalar_as(y, dtype).ok_or_else(|| ArrayError::ScalarDType {
        op: "where",
        value: format!("{y:?}"),
        dtype,
    })?;
    Ok(Resolved {
        cx: cond.context().clone(),
        dtype,
        shape: cond.shape(),
        slots: vec![Slot::Scalar, Slot::Scalar],
        arrays: Vec::new(),
        scalars: vec![x, y],
    })
}

fn where_kind(dtype: DType, slots: &[Slot]) -> Result<Arc<TaskKind>, ArrayError> {
    let description = ElementwiseKind {
        op: ElementwiseOp::Where,
        dtype,
        result: dtype,
        operands: slots.to_vec(),
    };
    let slots = slots.to_vec();
    description.register(move |b| {
        let b = declare_args(
            b.arg("cond", DType::Bool, Privilege::Read),
            &slots,
            dtype,
            dtype,
        );
        with_any!(dtype, T => b.register(move |task: &PointTask<'_>| {
            // Argument 0 is the condition; the value operands' arrays follow it.
            let mut out = task.write::<T>(1 + output_arg(&slots))?;
            let cond = Broadcast::<bool>::new(task, 0, out.shape())?;
            let values = sources::<T>(task, &slots, 1, out.shape())?;
            for_each_out_row(&mut out, |o, lead| {
                let (c, x, y) = (cond.row(lead), values[0].row(lead), values[1].row(lead));
                let pick = |row: Row<'_, T>, i: usize| match row {
                    Row::Slice(s) => s[i],
                    Row::Splat(v) => v,
                };
                let cond_at = |i: usize| match c {
                    Row::Slice(s) => s[i],
                    Row::Splat(v) => v,
                };
                for (i, o) in o.iter_mut().enumerate() {
                    *o = if cond_at(i) { pick(x, i) } else { pick(y, i) };
                }
            });
            Ok(())
        }))
    })
}

/// `x` converted to `dtype` element by element (NumPy's `astype`): floats to integers
/// truncate toward zero, anything to bool tests `!= 0`.
pub fn astype(x: &Array, dtype: DType) -> ArrayResult {
    let out = Array::fresh(x.context(), x.shape(), dtype)?;
    if x.is_empty() {
        return Ok(out);
    }
    let from = x.dtype();
    let description = ElementwiseKind {
        op: ElementwiseOp::Cast,
        dtype: from,
        result: dtype,
        operands: vec![Slot::Array],
    };
    let kind = description.register(move |b| {
        let b = b
            .arg("in", from, Privilege::Read)
            .arg("out", dtype, Privilege::Write)
            .aligned(&[0, 1])
            .elementwise();
        with_any!(from, T => with_any!(dtype, U => b.register(
            unary_kernel::<T, U>(vec![Slot::Array], cast::<T, U>)
        )))
    })?;
    let r = Resolved {
        cx: x.context().clone(),
        dtype: from,
        shape: x.shape(),
        slots: vec![Slot::Array],
        arrays: vec![x],
        scalars: Vec::new(),
    };
    launch(&kind, &r, &out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_elementwise_kind_records_its_expression() {
        let cx = ArrayContext::new(diffuse::embedded(Default::default()).unwrap());
        let a = Array::from_vec(&cx, &[3], vec![1.0f32, 2.0, 3.0]).unwrap();
        let doubled = binary(BinaryOp::Mul, &a, 2.0).unwrap();
        let mask = unary(UnaryOp::Neg, &doubled).unwrap().less(&a).unwrap();
        where_(&mask, 1.0, &a).unwrap().astype(DType::I32).unwrap();
        let described = |name: &str| {
            let kind = TaskKind::lookup(name).unwrap_or_else(|| panic!("{name} not registered"));
            elementwise_kind(&kind).unwrap()
        };
        let mul = described("array.multiply.f32.as");
        assert_eq!(mul.op, ElementwiseOp::Binary(BinaryOp::Mul));
        assert_eq!((mul.dtype, mul.result), (DType::F32, DType::F32));
        assert_eq!(mul.operands, vec![Slot::Array, Slot::Scalar]);
        assert_eq!(described("array.less.f32.aa").result, DType::Bool);
        assert_eq!(
            described("array.neg.f32.a").op,
            ElementwiseOp::Unary(UnaryOp::Neg)
        );
        assert_eq!(
            described("array.where.f32.asa").operands,
            vec![Slot::Scalar, Slot::Array]
        );
        let cast = described("array.cast.f32.i32");
        assert_eq!(
            (cast.op, cast.dtype, cast.result),
            (ElementwiseOp::Cast, DType::F32, DType::I32)
        );
        // Kinds that are not element-wise carry no description.
        a.sum().unwrap();
        assert!(elementwise_kind(&TaskKind::lookup("array.sum.f32").unwrap()).is_none());
    }
}
