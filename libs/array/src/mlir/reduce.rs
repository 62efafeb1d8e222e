//! The generators of the reductions (`sum`, `prod`, `max`, `min`, `dot`) and of the matrix
//! products (`matvec`, `matmul`).
//!
//! Float sums, products and dot products fold in the native kernels' order (see
//! [`LANES`]), so their compiled results are the native ones bit for bit; integer reductions
//! (exact in any order) and `max`/`min` (order-independent but for which of two equal zeros
//! wins) stay one `linalg.generic`, which the JIT can fuse with element-wise producers.

use diffuse_ir::{
    element_type, tensor_type, DType, KernelError, KernelTarget, MlirArg, MlirGenerator,
    MlirSignature, Privilege, ReductionOp,
};

use super::elementwise::binary_op;
use super::{
    arg_name, check_arg, check_counts, check_rank, dim_list, element_function, function, generic,
    generic_function, unsupported, Emitter, Loop, TensorOperand,
};
use crate::element::is_float;
use crate::ops::elementwise::BinaryOp;
use crate::ops::linalg::Orientation;

/// The independent partial results the native reduction kernels (`ops/reduce.rs`) fold each
/// row into ([`diffuse_ir::REDUCTION_LANES`]). The lane-parallel kernels repeat exactly that
/// order, so the tests comparing them with the native kernels bit for bit would catch a
/// change of either side.
const LANES: usize = diffuse_ir::REDUCTION_LANES;

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
        let (inputs, acc) = self.check(sig)?;
        let dtype = sig.args[0].dtype;
        let rank = sig.args[0].rank;
        let ins: Vec<TensorOperand> = sig.args[..inputs]
            .iter()
            .enumerate()
            .map(|(i, arg)| TensorOperand::of(arg, arg_name(i), dim_list(0..rank)))
            .collect();
        // On the host, float sums and products follow the native kernels' lanes; a GPU
        // distributes the plain reduction loop over its threads instead.
        if is_float(dtype)
            && matches!(self.op, ReductionOp::Sum | ReductionOp::Prod)
            && sig.target == KernelTarget::Host
        {
            return function(name, symbol, sig, |e| {
                let out = TensorOperand::of(acc, arg_name(inputs), String::new());
                let total = self.lanes(e, &sig.args[0], inputs, &out)?;
                let result = e.fresh("r");
                e.line(format_args!(
                    "{result} = tensor.insert {total} into {}[] : {}",
                    out.value, out.ty
                ));
                Ok(vec![result])
            });
        }
        let out = TensorOperand::of(acc, arg_name(inputs), String::new());
        generic_function(
            name,
            symbol,
            sig,
            &vec![Loop::Reduction; rank],
            &ins,
            &out,
            |e, xs, acc| {
                let value = if self.product {
                    fold(e, name, BinaryOp::Mul, dtype, &xs[0], &xs[1])?
                } else {
                    xs[0].clone()
                };
                fold(e, name, combiner(self.op), dtype, acc, &value)
            },
        )
    }

    /// The contribution of one element folded into a partial result, for sums and products
    /// on the host: `(%a0: T, [%a1: T,] %acc: T) -> T`, `acc op a0` (`acc op (a0 * a1)` for
    /// `dot`). The JIT folds the partials in [`LANES`] order, as [`Self::lanes`] does.
    fn generate_element(
        &self,
        symbol: &str,
        sig: &MlirSignature<'_>,
    ) -> Option<Result<String, KernelError>> {
        if sig.target != KernelTarget::Host
            || !matches!(self.op, ReductionOp::Sum | ReductionOp::Prod)
        {
            return None;
        }
        Some(self.check(sig).and_then(|(inputs, acc)| {
            let (name, dtype) = (&self.name, acc.dtype);
            element_function(symbol, sig, dtype, |e| {
                let value = if self.product {
                    fold(e, name, BinaryOp::Mul, dtype, &arg_name(0), &arg_name(1))?
                } else {
                    arg_name(0)
                };
                fold(e, name, combiner(self.op), dtype, &arg_name(inputs), &value)
            })
        }))
    }
}

impl ReductionGenerator {
    /// Checks `sig`: one input (two for `dot`) of one dtype and rank, read, then the 0-d
    /// partial value reduced by the kind's operator. Returns the input count and the partial.
    fn check<'s>(&self, sig: &'s MlirSignature<'_>) -> Result<(usize, &'s MlirArg), KernelError> {
        let name = &self.name;
        let inputs = 1 + usize::from(self.product);
        check_counts(name, sig, inputs + 1, &[])?;
        let dtype = sig.args[0].dtype;
        let acc = check_arg(name, sig, inputs, dtype, &[Privilege::Reduce(self.op)])?;
        check_rank(name, sig, inputs, 0)?;
        for i in 0..inputs {
            check_arg(name, sig, i, dtype, &[Privilege::Read])?;
            check_rank(name, sig, i, sig.args[0].rank)?;
        }
        Ok((inputs, acc))
    }

    /// Emits the fold of argument 0 (times argument 1 element by element when `inputs` is
    /// 2, for `dot`; both described by `x`) into the 0-d partial value `out`, in the native
    /// kernels' order (see [`LANES`]), and returns the total (a scalar): one `scf.for` per
    /// leading dimension (over the rows), and per row a loop stepping by [`LANES`] with one
    /// accumulator per lane, the lanes' fold into the running value, and a loop over the
    /// remainder. Only for float sums and products, whose identities (`-0.0`, `1.0`) leave
    /// every value unchanged bit for bit, so folding untouched lanes (a row shorter than
    /// [`LANES`], or a 0-d input, where they are left out) adds no rounding.
    fn lanes(
        &self,
        e: &mut Emitter,
        x: &MlirArg,
        inputs: usize,
        out: &TensorOperand,
    ) -> Result<String, KernelError> {
        let (name, dtype, rank) = (&self.name, x.dtype, x.rank);
        let (ty, tensor) = (element_type(dtype), tensor_type(x));
        let combine = combiner(self.op);
        let identity = match self.op {
            ReductionOp::Sum => -0.0,
            _ => 1.0,
        };
        let operands: Vec<String> = (0..inputs).map(arg_name).collect();
        // The contribution of the element at `index` (comma-separated indices).
        let element = |e: &mut Emitter, index: &str| {
            let values: Vec<String> = operands
                .iter()
                .map(|a| e.value(format_args!("tensor.extract {a}[{index}] : {tensor}")))
                .collect();
            match values.as_slice() {
                [v] => Ok(v.clone()),
                [a, b] => fold(e, name, BinaryOp::Mul, dtype, a, b),
                _ => unreachable!("one or two inputs"),
            }
        };
        let start = e.value(format_args!("tensor.extract {}[] : {}", out.value, out.ty));
        if rank == 0 {
            // One row of one value: no full chunk, and the lanes' identities fold away.
            let value = element(e, "")?;
            return fold(e, name, combine, dtype, &start, &value);
        }
        // The index constants 0..=LANES (and up to the last dimension).
        let index: Vec<String> = (0..=LANES.max(rank))
            .map(|k| e.constant(k, "index"))
            .collect();
        let (zero, one, step) = (&index[0], &index[1], &index[LANES]);
        let extents: Vec<String> = index[..rank]
            .iter()
            .map(|dim| e.value(format_args!("tensor.dim {}, {dim} : {tensor}", operands[0])))
            .collect();
        // Every row has the innermost extent: full chunks up to `chunked`, then the rest.
        let len = &extents[rank - 1];
        let rest = e.value(format_args!("arith.remui {len}, {step} : index"));
        let chunked = e.value(format_args!("arith.subi {len}, {rest} : index"));
        let lane_start = e.float(identity, dtype);

        // One loop per leading dimension, threading the running value.
        let mut acc = start;
        let mut lead = Vec::new();
        let mut nest = Vec::new();
        for extent in &extents[..rank - 1] {
            let (result, i, carried) = (e.fresh("v"), e.fresh("i"), e.fresh("p"));
            e.line(format_args!(
                "{result} = scf.for {i} = {zero} to {extent} step {one} iter_args({carried} = {acc}) -> ({ty}) {{"
            ));
            e.indent += 2;
            nest.push(result);
            lead.push(i);
            acc = carried;
        }
        let at = |j: &str| {
            lead.iter()
                .map(String::as_str)
                .chain([j])
                .collect::<Vec<_>>()
                .join(", ")
        };

        // The full chunks of the row, one accumulator per lane.
        let (lanes, j) = (e.fresh("v"), e.fresh("i"));
        let carried: Vec<String> = (0..LANES).map(|_| e.fresh("p")).collect();
        let inits: Vec<String> = carried
            .iter()
            .map(|p| format!("{p} = {lane_start}"))
            .collect();
        let types = [ty; LANES].join(", ");
        e.line(format_args!(
            "{lanes}:{LANES} = scf.for {j} = {zero} to {chunked} step {step} iter_args({}) -> ({types}) {{",
            inits.join(", ")
        ));
        e.indent += 2;
        let mut next = Vec::with_capacity(LANES);
        for (k, lane) in carried.iter().enumerate() {
            let position = if k == 0 {
                j.clone()
            } else {
                e.value(format_args!("arith.addi {j}, {} : index", index[k]))
            };
            let value = element(e, &at(&position))?;
            next.push(fold(e, name, combine, dtype, lane, &value)?);
        }
        e.line(format_args!("scf.yield {} : {types}", next.join(", ")));
        e.indent -= 2;
        e.line("}");
        for k in 0..LANES {
            acc = fold(e, name, combine, dtype, &acc, &format!("{lanes}#{k}"))?;
        }

        // The remainder, in order.
        let (tail, j, carried) = (e.fresh("v"), e.fresh("i"), e.fresh("p"));
        e.line(format_args!(
            "{tail} = scf.for {j} = {chunked} to {len} step {one} iter_args({carried} = {acc}) -> ({ty}) {{"
        ));
        e.indent += 2;
        let value = element(e, &at(&j))?;
        let folded = fold(e, name, combine, dtype, &carried, &value)?;
        e.line(format_args!("scf.yield {folded} : {ty}"));
        e.indent -= 2;
        e.line("}");

        let mut acc = tail;
        for result in nest.into_iter().rev() {
            e.line(format_args!("scf.yield {acc} : {ty}"));
            e.indent -= 2;
            e.line("}");
            acc = result;
        }
        Ok(acc)
    }
}

/// A matrix product a [`ProductGenerator`] implements, with how it reads its matrices.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Product {
    /// `y = op(A) x` (or `y += op(A) x` through a `Reduce(Sum)` output): `A` 2-d, `x` and `y`
    /// 1-d.
    Matvec(Orientation),
    /// `C = op(A) op(B)`, all 2-d.
    Matmul(Orientation, Orientation),
}

impl Product {
    /// The loops and the indexing-map results of the two inputs and the output: `d0` runs
    /// over the output's rows, `d1` over its columns (matmul), the last loop over the summed
    /// dimension; a transposed matrix swaps its map's results.
    fn layout(self) -> (&'static [Loop], [&'static str; 3]) {
        use Loop::*;
        let transposed = |o: Orientation, stored: &'static str, swapped: &'static str| match o {
            Orientation::AsStored => stored,
            Orientation::Transposed => swapped,
        };
        match self {
            Product::Matvec(a) => (
                &[Parallel, Reduction],
                [transposed(a, "d0, d1", "d1, d0"), "d1", "d0"],
            ),
            Product::Matmul(a, b) => (
                &[Parallel, Parallel, Reduction],
                [
                    transposed(a, "d0, d2", "d2, d0"),
                    transposed(b, "d2, d1", "d1, d2"),
                    "d0, d1",
                ],
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
            Product::Matvec(_) => &[Privilege::Write, Privilege::Reduce(ReductionOp::Sum)],
            Product::Matmul(..) => &[Privilege::Write],
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
    use super::super::test_support::{arg, assert_contains, assert_lacks};
    use super::*;

    /// The text `g` generates as `symbol` for `args` (no scalars).
    fn generate(g: &dyn MlirGenerator, symbol: &str, args: &[MlirArg]) -> String {
        g.generate(symbol, &MlirSignature::host(args, &[]))
            .expect("generates")
    }

    /// The generator of kind `name`: a reduction by `op`, of the elementwise products of two
    /// inputs when `product`.
    fn reduction(name: &str, op: ReductionOp, product: bool) -> ReductionGenerator {
        ReductionGenerator {
            name: name.into(),
            op,
            product,
        }
    }

    /// Two inputs of `dtype` read and an output of `dtype` with `out`, of ranks `ranks`.
    fn product_args(dtype: DType, ranks: [usize; 3], out: Privilege) -> [MlirArg; 3] {
        [
            arg(dtype, ranks[0], Privilege::Read),
            arg(dtype, ranks[1], Privilege::Read),
            arg(dtype, ranks[2], out),
        ]
    }

    /// The arguments of a dot product of two `rank`-d inputs of `dtype` into a 0-d sum.
    fn dot_args(dtype: DType, rank: usize) -> [MlirArg; 3] {
        product_args(dtype, [rank, rank, 0], Privilege::Reduce(ReductionOp::Sum))
    }

    /// True when `g` refuses to generate `symbol` for `args` (no scalars).
    fn rejects(g: &dyn MlirGenerator, symbol: &str, args: &[MlirArg]) -> bool {
        g.generate(symbol, &MlirSignature::host(args, &[])).is_err()
    }

    #[test]
    fn reductions_fold_every_dimension_into_the_partial_value() {
        let g = reduction("array.max.f32", ReductionOp::Max, false);
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
        assert_contains(
            &text,
            &[
                "indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> ()>], iterator_types = [\"reduction\", \"reduction\", \"reduction\"]",
                "outs(%a1 : tensor<f32>)",
            ],
        );
        // NaN-propagating; of two equal values the partial one stays.
        assert_contains(
            &text,
            &[
                "%v0 = arith.cmpf oge, %o0, %x0 : f32",
                "%v1 = arith.select %v0, %o0, %x0 : f32",
                "arith.cmpf uno, %o0, %x0 : f32",
            ],
        );
        // The output must be the 0-d reduction by the kind's operator.
        let wrong = [
            args[0],
            arg(DType::F32, 0, Privilege::Reduce(ReductionOp::Min)),
        ];
        assert!(rejects(&g, "k1", &wrong));
        let wrong = [
            args[0],
            arg(DType::F32, 1, Privilege::Reduce(ReductionOp::Max)),
        ];
        assert!(rejects(&g, "k1", &wrong));
    }

    #[test]
    fn dot_sums_wrapping_products() {
        let g = reduction("array.dot.i64", ReductionOp::Sum, true);
        let args = dot_args(DType::I64, 1);
        let text = generate(&g, "k0", &args);
        assert_contains(
            &text,
            &[
                "ins(%a0, %a1 : tensor<?xi64>, tensor<?xi64>) outs(%a2 : tensor<i64>)",
                "%v0 = arith.muli %x0, %x1 : i64",
                "%v1 = arith.addi %o0, %v0 : i64",
            ],
        );
        // The two inputs have one rank.
        let wrong = [args[0], arg(DType::I64, 2, Privilege::Read), args[2]];
        assert!(rejects(&g, "k0", &wrong));
    }

    #[test]
    fn float_sums_and_products_fold_lanes_in_the_native_order() {
        let g = reduction("array.prod.f32", ReductionOp::Prod, false);
        let reduce = Privilege::Reduce(ReductionOp::Prod);
        let args = [
            arg(DType::F32, 1, Privilege::Read),
            arg(DType::F32, 0, reduce),
        ];
        let text = generate(&g, "k0", &args);
        // Full chunks of eight: `%v12` = the length minus its remainder modulo 8 (`%v9`),
        // every lane starting from the identity 1.0.
        assert_contains(
            &text,
            &[
                "%v11 = arith.remui %v10, %v9 : index",
                "%v12 = arith.subi %v10, %v11 : index",
                "%v13 = arith.constant 0x3F800000 : f32",
                "%v14:8 = scf.for %i0 = %v1 to %v12 step %v9 iter_args(%p0 = %v13, %p1 = %v13, %p2 = %v13, %p3 = %v13, %p4 = %v13, %p5 = %v13, %p6 = %v13, %p7 = %v13) -> (f32, f32, f32, f32, f32, f32, f32, f32) {",
            ],
        );
        // Lane k takes the values 8i + k.
        assert_contains(
            &text,
            &[
                "%v35 = arith.addi %i0, %v8 : index",
                "%v36 = tensor.extract %a0[%v35] : tensor<?xf32>",
                "%v37 = arith.mulf %p7, %v36 : f32",
            ],
        );
        // The lanes fold into the partial value in order, then the remainder one by one.
        assert_contains(
            &text,
            &[
                "%v38 = arith.mulf %v0, %v14#0 : f32",
                "%v45 = arith.mulf %v44, %v14#7 : f32",
                "%v46 = scf.for %i1 = %v12 to %v10 step %v2 iter_args(%p8 = %v45) -> (f32) {",
                "%r0 = tensor.insert %v46 into %a1[] : tensor<f32>",
            ],
        );
        assert_lacks(&text, &["linalg"]);

        // A 2-d dot: one loop over the rows carries the partial value; the products are
        // added to lanes starting from -0.0.
        let g = reduction("array.dot.f64", ReductionOp::Sum, true);
        let args = dot_args(DType::F64, 2);
        let text = generate(&g, "k0", &args);
        assert_contains(
            &text,
            &[
                "arith.constant 0x8000000000000000 : f64",
                "= scf.for %i0 = %v1 to %v10 step %v2 iter_args(%p0 = %v0) -> (f64) {",
                "tensor.extract %a0[%i0, %i1] : tensor<?x?xf64>",
                "tensor.extract %a1[%i0, %i1] : tensor<?x?xf64>",
                "arith.mulf",
            ],
        );
        assert_lacks(&text, &["math.fma"]);

        // A 0-d input: one value, folded into the partial value.
        let args = [
            arg(DType::F32, 0, Privilege::Read),
            arg(DType::F32, 0, reduce),
        ];
        let g = reduction("array.prod.f32", ReductionOp::Prod, false);
        let text = generate(&g, "k0", &args);
        assert_contains(&text, &["%v2 = arith.mulf %v0, %v1 : f32"]);
        assert_lacks(&text, &["scf.for"]);
    }

    #[test]
    fn products_start_from_zero_or_from_the_partial_value() {
        let g = ProductGenerator {
            name: "array.matvec.f64".into(),
            product: Product::Matvec(Orientation::AsStored),
        };
        let mut args = product_args(DType::F64, [2, 1, 1], Privilege::Write);
        let text = generate(&g, "k0", &args);
        assert_contains(
            &text,
            &[
                "%r0 = linalg.fill ins(%v0 : f64) outs(%a2 : tensor<?xf64>)",
                "arith.constant 0x8000000000000000 : f64",
                "indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = [\"parallel\", \"reduction\"]",
                "outs(%r0 : tensor<?xf64>)",
                "return %r1 : tensor<?xf64>",
            ],
        );
        args[2].privilege = Privilege::Reduce(ReductionOp::Sum);
        let text = generate(&g, "k0", &args);
        assert_lacks(&text, &["linalg.fill"]);
        assert_contains(&text, &["outs(%a2 : tensor<?xf64>)"]);
        let g = ProductGenerator {
            name: "array.matmul.i32".into(),
            product: Product::Matmul(Orientation::AsStored, Orientation::AsStored),
        };
        let args = product_args(DType::I32, [2, 2, 2], Privilege::Write);
        let text = generate(&g, "k0", &args);
        assert_contains(
            &text,
            &[
                "affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>",
                "arith.constant 0 : i32",
            ],
        );
        let wrong = [
            args[0],
            args[1],
            arg(DType::I32, 2, Privilege::Reduce(ReductionOp::Sum)),
        ];
        assert!(rejects(&g, "k0", &wrong));
    }

    #[test]
    fn transposed_matrices_swap_their_indexing_maps() {
        use Orientation::{AsStored, Transposed};
        let maps = |product: Product, ranks: [usize; 3]| {
            let g = ProductGenerator {
                name: "array.product.f64".into(),
                product,
            };
            generate(&g, "k0", &product_args(DType::F64, ranks, Privilege::Write))
        };
        assert_contains(
            &maps(Product::Matvec(Transposed), [2, 1, 1]),
            &["affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0)>"],
        );
        for (a, b, a_map, b_map) in [
            (Transposed, AsStored, "(d2, d0)", "(d2, d1)"),
            (AsStored, Transposed, "(d0, d2)", "(d1, d2)"),
            (Transposed, Transposed, "(d2, d0)", "(d1, d2)"),
        ] {
            let expected = format!(
                "affine_map<(d0, d1, d2) -> {a_map}>, affine_map<(d0, d1, d2) -> {b_map}>, affine_map<(d0, d1, d2) -> (d0, d1)>"
            );
            assert_contains(
                &maps(Product::Matmul(a, b), [2, 2, 2]),
                &[expected.as_str()],
            );
        }
    }
}
