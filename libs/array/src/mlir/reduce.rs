//! The generators of the reductions (`sum`, `prod`, `max`, `min`, `dot`) and of the matrix
//! products (`matvec`, `matmul`).

use diffuse_ir::{
    element_type, DType, KernelError, MlirGenerator, MlirSignature, Privilege, ReductionOp,
};

use super::elementwise::binary_op;
use super::{
    arg_name, check_arg, check_counts, check_rank, dim_list, function, generic, unsupported,
    Emitter, Loop, TensorOperand,
};
use crate::element::is_float;
use crate::ops::elementwise::BinaryOp;

/// The element-wise operation that folds a contribution into a partial value by `op`, as the
/// native kernels combine them (wrapping integers, NaN-propagating `max` and `min`).
fn combiner(op: ReductionOp) -> BinaryOp {
    match op {
        ReductionOp::Sum => BinaryOp::Add,
        ReductionOp::Prod => BinaryOp::Mul,
        ReductionOp::Max => BinaryOp::Maximum,
        ReductionOp::Min => BinaryOp::Minimum,
    }
}

/// `op(acc, value)` for a numeric `dtype`; an error naming `kind` for `bool`, whose
/// reductions the library does not define.
fn fold(
    e: &mut Emitter,
    kind: &str,
    op: BinaryOp,
    dtype: DType,
    acc: &str,
    value: &str,
) -> Result<String, KernelError> {
    if dtype == DType::Bool {
        return Err(unsupported(kind, "bool reductions are not defined"));
    }
    binary_op(e, op, dtype, acc, value)
        .ok_or_else(|| unsupported(kind, format!("{op:?} is not defined on {dtype}")))
}

/// Generates the kernel of a whole-array reduction: argument 0 (times argument 1, element by
/// element, for `dot`) folded by `op` into the 0-d partial value that follows, with one
/// "reduction" loop per input dimension.
pub(crate) struct ReductionGenerator {
    /// The kind's name (for errors).
    pub(crate) name: String,
    /// The reduction operator, also the output's privilege.
    pub(crate) op: ReductionOp,
    /// True for `dot`: the contributions are the products of two aligned inputs.
    pub(crate) product: bool,
}

impl MlirGenerator for ReductionGenerator {
    fn generate(&self, symbol: &str, sig: &MlirSignature<'_>) -> Result<String, KernelError> {
        let name = &self.name;
        let inputs = 1 + usize::from(self.product);
        check_counts(name, sig, inputs + 1, &[])?;
        let dtype = sig.args[0].dtype;
        let acc = check_arg(name, sig, inputs, dtype, &[Privilege::Reduce(self.op)])?;
        check_rank(name, sig, inputs, 0)?;
        let rank = sig.args[0].rank;
        let mut ins = Vec::with_capacity(inputs);
        for i in 0..inputs {
            let arg = check_arg(name, sig, i, dtype, &[Privilege::Read])?;
            check_rank(name, sig, i, rank)?;
            ins.push(TensorOperand::of(arg, arg_name(i), dim_list(0..rank)));
        }
        let out = TensorOperand::of(acc, arg_name(inputs), String::new());
        function(name, symbol, sig, |e| {
            let loops = vec![Loop::Reduction; rank];
            let result = generic(e, &loops, &ins, &out, |e, xs, acc| {
                let value = if self.product {
                    fold(e, name, BinaryOp::Mul, dtype, &xs[0], &xs[1])?
                } else {
                    xs[0].clone()
                };
                fold(e, name, combiner(self.op), dtype, acc, &value)
            })?;
            Ok(vec![result])
        })
    }
}

/// A matrix product a [`ProductGenerator`] implements.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Product {
    /// `y = A x` (or `y += A x` through a `Reduce(Sum)` output): `A` 2-d, `x` and `y` 1-d.
    Matvec,
    /// `C = A B`, all 2-d.
    Matmul,
}

impl Product {
    /// The loops and the indexing-map results of the two inputs and the output.
    fn layout(self) -> (&'static [Loop], [&'static str; 3]) {
        use Loop::*;
        match self {
            Product::Matvec => (&[Parallel, Reduction], ["d0, d1", "d1", "d0"]),
            Product::Matmul => (
                &[Parallel, Parallel, Reduction],
                ["d0, d2", "d2, d1", "d0, d1"],
            ),
        }
    }
}

/// Generates the kernel of a matrix product: one `linalg.generic` adding `a * b` over the
/// reduction loop into the output, which starts from zero (`-0.0` for floats, the native
/// kernels' starting value) when it is written and from its partial value when it is reduced.
pub(crate) struct ProductGenerator {
    /// The kind's name (for errors).
    pub(crate) name: String,
    /// Which product.
    pub(crate) product: Product,
}

impl MlirGenerator for ProductGenerator {
    fn generate(&self, symbol: &str, sig: &MlirSignature<'_>) -> Result<String, KernelError> {
        let name = &self.name;
        let (loops, maps) = self.product.layout();
        check_counts(name, sig, 3, &[])?;
        let dtype = sig.args[0].dtype;
        let out_privileges: &[Privilege] = match self.product {
            Product::Matvec => &[Privilege::Write, Privilege::Reduce(ReductionOp::Sum)],
            Product::Matmul => &[Privilege::Write],
        };
        let operand = |i: usize, privileges: &[Privilege]| {
            let arg = check_arg(name, sig, i, dtype, privileges)?;
            // An operand has one dimension per result of its indexing map.
            check_rank(name, sig, i, maps[i].split(',').count())?;
            Ok::<_, KernelError>(TensorOperand::of(arg, arg_name(i), maps[i].to_string()))
        };
        let ins = [
            operand(0, &[Privilege::Read])?,
            operand(1, &[Privilege::Read])?,
        ];
        let mut out = operand(2, out_privileges)?;
        let written = sig.args[2].privilege == Privilege::Write;
        function(name, symbol, sig, |e| {
            if written {
                let ty = element_type(dtype);
                let zero = if is_float(dtype) {
                    e.float(-0.0, dtype)
                } else {
                    e.zero(dtype)
                };
                let filled = e.fresh("r");
                e.line(format_args!(
                    "{filled} = linalg.fill ins({zero} : {ty}) outs({} : {}) -> {}",
                    out.value, out.ty, out.ty
                ));
                out.value = filled;
            }
            let result = generic(e, loops, &ins, &out, |e, xs, acc| {
                let product = fold(e, name, BinaryOp::Mul, dtype, &xs[0], &xs[1])?;
                fold(e, name, BinaryOp::Add, dtype, acc, &product)
            })?;
            Ok(vec![result])
        })
    }
}

#[cfg(test)]
mod tests {
    use diffuse_ir::MlirArg;

    use super::*;

    fn arg(dtype: DType, rank: usize, privilege: Privilege) -> MlirArg {
        MlirArg {
            dtype,
            rank,
            privilege,
            unit_dims: 0,
        }
    }

    /// The text `g` generates as `symbol` for `args` (no scalars).
    fn generate(g: &dyn MlirGenerator, symbol: &str, args: &[MlirArg]) -> String {
        g.generate(symbol, &MlirSignature { args, scalars: &[] })
            .expect("generates")
    }

    #[test]
    fn reductions_fold_every_dimension_into_the_partial_value() {
        let g = ReductionGenerator {
            name: "array.max.f32".into(),
            op: ReductionOp::Max,
            product: false,
        };
        let args = [
            arg(DType::F32, 3, Privilege::Read),
            arg(DType::F32, 0, Privilege::Reduce(ReductionOp::Max)),
        ];
        let text = generate(&g, "k1", &args);
        assert!(
            text.starts_with(
                "func.func private @k1(%a0: tensor<?x?x?xf32>, %a1: tensor<f32>) -> (tensor<f32>)"
            ),
            "{text}"
        );
        assert!(text.contains("indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> ()>], iterator_types = [\"reduction\", \"reduction\", \"reduction\"]"), "{text}");
        assert!(text.contains("outs(%a1 : tensor<f32>)"), "{text}");
        // NaN-propagating; of two equal values the partial one stays.
        assert!(
            text.contains("%v0 = arith.cmpf oge, %o0, %x0 : f32"),
            "{text}"
        );
        assert!(
            text.contains("%v1 = arith.select %v0, %o0, %x0 : f32"),
            "{text}"
        );
        assert!(text.contains("arith.cmpf uno, %o0, %x0 : f32"), "{text}");
        // The output must be the 0-d reduction by the kind's operator.
        let wrong = [
            args[0],
            arg(DType::F32, 0, Privilege::Reduce(ReductionOp::Min)),
        ];
        assert!(g
            .generate(
                "k1",
                &MlirSignature {
                    args: &wrong,
                    scalars: &[]
                }
            )
            .is_err());
        let wrong = [
            args[0],
            arg(DType::F32, 1, Privilege::Reduce(ReductionOp::Max)),
        ];
        assert!(g
            .generate(
                "k1",
                &MlirSignature {
                    args: &wrong,
                    scalars: &[]
                }
            )
            .is_err());
    }

    #[test]
    fn dot_sums_wrapping_products() {
        let g = ReductionGenerator {
            name: "array.dot.i64".into(),
            op: ReductionOp::Sum,
            product: true,
        };
        let args = [
            arg(DType::I64, 1, Privilege::Read),
            arg(DType::I64, 1, Privilege::Read),
            arg(DType::I64, 0, Privilege::Reduce(ReductionOp::Sum)),
        ];
        let text = generate(&g, "k0", &args);
        assert!(
            text.contains("ins(%a0, %a1 : tensor<?xi64>, tensor<?xi64>) outs(%a2 : tensor<i64>)"),
            "{text}"
        );
        assert!(text.contains("%v0 = arith.muli %x0, %x1 : i64"), "{text}");
        assert!(text.contains("%v1 = arith.addi %o0, %v0 : i64"), "{text}");
        // The two inputs have one rank.
        let wrong = [args[0], arg(DType::I64, 2, Privilege::Read), args[2]];
        assert!(g
            .generate(
                "k0",
                &MlirSignature {
                    args: &wrong,
                    scalars: &[]
                }
            )
            .is_err());
    }

    #[test]
    fn products_start_from_zero_or_from_the_partial_value() {
        let g = ProductGenerator {
            name: "array.matvec.f64".into(),
            product: Product::Matvec,
        };
        let mut args = [
            arg(DType::F64, 2, Privilege::Read),
            arg(DType::F64, 1, Privilege::Read),
            arg(DType::F64, 1, Privilege::Write),
        ];
        let text = generate(&g, "k0", &args);
        assert!(
            text.contains("%r0 = linalg.fill ins(%v0 : f64) outs(%a2 : tensor<?xf64>)"),
            "{text}"
        );
        assert!(
            text.contains("arith.constant 0x8000000000000000 : f64"),
            "{text}"
        );
        assert!(text.contains("indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = [\"parallel\", \"reduction\"]"), "{text}");
        assert!(text.contains("outs(%r0 : tensor<?xf64>)"), "{text}");
        assert!(text.contains("return %r1 : tensor<?xf64>"), "{text}");
        args[2].privilege = Privilege::Reduce(ReductionOp::Sum);
        let text = generate(&g, "k0", &args);
        assert!(!text.contains("linalg.fill"), "{text}");
        assert!(text.contains("outs(%a2 : tensor<?xf64>)"), "{text}");
        let g = ProductGenerator {
            name: "array.matmul.i32".into(),
            product: Product::Matmul,
        };
        let args = [
            arg(DType::I32, 2, Privilege::Read),
            arg(DType::I32, 2, Privilege::Read),
            arg(DType::I32, 2, Privilege::Write),
        ];
        let text = generate(&g, "k0", &args);
        assert!(text.contains("affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>"), "{text}");
        assert!(text.contains("arith.constant 0 : i32"), "{text}");
        let wrong = [
            args[0],
            args[1],
            arg(DType::I32, 2, Privilege::Reduce(ReductionOp::Sum)),
        ];
        assert!(g
            .generate(
                "k0",
                &MlirSignature {
                    args: &wrong,
                    scalars: &[]
                }
            )
            .is_err());
    }
}
