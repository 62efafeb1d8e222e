//! The MLIR generator of the SpMV kinds (the kernel ABI is `diffuse_ir::mlir`'s), so that a product
//! fuses, through the JIT, with the vector operations around it.
//!
//! One point task computes its tile of rows: an `scf.for` over the rows carries the output tensor
//! and where the row starts (the previous row's end; 0 for the tile's first), and inserts each
//! row's value; an inner `scf.for` over the row's entries `start..ends[i]` carries the running sum,
//! from `+0.0`, adding `value * x[column]` in stored order with a separate `arith.mulf` and
//! `arith.addf` (no `fma`, no fast-math flags, so LLVM may neither contract nor reorder them). That
//! is exactly what the native kernel computes, so compiled and native products are equal bit for
//! bit.
//!
//! For the host CPU the loops are not `linalg` ops, so they stay loops of their own inside a fused
//! kernel; one-shot bufferization writes the output in place (the row loop's `iter_args` is the
//! destination tensor, and every `tensor.insert` goes into it) and reads the entries and `x`
//! straight from their parameters, with no copy. The kind also has an element function, one
//! row's sum reading the row ends, entries and `x` whole: the JIT's element route calls it in
//! the loop nest of the work around the product, so a dot product of the product
//! (`p . (A p)`) folds in the same pass over the rows.
//!
//! For a GPU the row loop is a `linalg.generic` with one parallel dimension (the rows) over `ends`,
//! each row reading its start from the row before; its body runs the same inner loop over the row's
//! entries (reading the entries and `x` as tensors from above). The JIT's element-wise fusion then
//! moves the vector operations that consume the product into that body, so a product whose result
//! is a temporary (`r = b - A x`) leaves nothing in memory, and the GPU path maps the rows onto
//! threads as it maps any `linalg` op. The sums are the same, in the same order.
//!
//! The compiled code does not bounds-check. That is sound because a `CsrMatrix`'s stores are
//! private and built only by `CsrMatrix::from_host` from a [`crate::HostCsr`], whose row offsets
//! are non-decreasing from 0 to the entry count (so are each tile's row ends, from its first entry)
//! and whose column indices were checked against the column count when its `Triplets` were built
//! (`Triplets::push`); `spmv` checks that `x` has one element per column, and `Replicate` hands
//! every point the whole of the entries and of `x`.

use diffuse_ir::{
    element_type, tensor_type, DType, KernelError, KernelTarget, MlirGenerator, MlirSignature,
    Privilege, Tuple,
};

use crate::csr::IndexWidth;

/// Generates the kernel of `sparse.spmv.f64.<width>`:
/// `(y: Write, ends: Read, columns: Read, values: Read, x: Read) -> y`, all 1-d, no scalars,
/// the row ends and columns of the index width.
pub(crate) struct SpmvGenerator {
    /// The kind's name (for errors).
    pub(crate) name: &'static str,
    /// The width of the row ends and column indices (arguments 1 and 2).
    pub(crate) width: IndexWidth,
}

impl SpmvGenerator {
    /// The error for a signature this generator cannot implement.
    fn unsupported(&self, reason: impl Into<String>) -> KernelError {
        KernelError {
            kind: self.name.to_string(),
            point: Tuple::splat(0, 0),
            reason: format!("no MLIR kernel: {}", reason.into()),
        }
    }

    /// Checks `sig` against the kind's declaration: five 1-d store arguments of the declared
    /// element types and privileges, no scalars.
    fn check(&self, sig: &MlirSignature<'_>) -> Result<(), KernelError> {
        let index = match self.width {
            IndexWidth::I32 => DType::I32,
            IndexWidth::I64 => DType::I64,
        };
        let expected = [
            (DType::F64, Privilege::Write),
            (index, Privilege::Read),
            (index, Privilege::Read),
            (DType::F64, Privilege::Read),
            (DType::F64, Privilege::Read),
        ];
        if sig.args.len() != expected.len() || !sig.scalars.is_empty() {
            return Err(self.unsupported(format!(
                "expected {} store arguments and no scalars, got {} and {:?}",
                expected.len(),
                sig.args.len(),
                sig.scalars
            )));
        }
        for (i, (arg, &(dtype, privilege))) in sig.args.iter().zip(&expected).enumerate() {
            if arg.dtype != dtype || arg.privilege != privilege || arg.rank != 1 {
                return Err(self.unsupported(format!(
                    "argument {i} is a {}-d {} store with privilege {}; expected a 1-d {dtype} \
                     store with privilege {privilege}",
                    arg.rank, arg.dtype, arg.privilege
                )));
            }
        }
        Ok(())
    }
}

impl MlirGenerator for SpmvGenerator {
    fn generate(&self, symbol: &str, sig: &MlirSignature<'_>) -> Result<String, KernelError> {
        self.check(sig)?;
        let [y, ends, columns, values, x] = [0, 1, 2, 3, 4].map(|i| tensor_type(&sig.args[i]));
        let index = element_type(sig.args[1].dtype);
        let types = [&y, &ends, &columns, &values, &x];
        if sig.target == KernelTarget::Device {
            return Ok(device_kernel(symbol, types, index));
        }
        // Row `i` of the tile: `y[i]` is its sum; the next row starts where it ends.
        let sum = row_sum(&columns, index, &values, &x);
        Ok(format!(
            "func.func private @{symbol}(%y: {y}, %ends: {ends}, %columns: {columns}, \
%values: {values}, %x: {x}) -> ({y}) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0x0000000000000000 : f64
  %rows = tensor.dim %y, %c0 : {y}
  %out, %last = scf.for %i = %c0 to %rows step %c1 iter_args(%acc_y = %y, %lo = %c0) \
-> ({y}, index) {{
    %hi_raw = tensor.extract %ends[%i] : {ends}
    %hi = arith.index_cast %hi_raw : {index} to index
{sum}    %row = tensor.insert %sum into %acc_y[%i] : {y}
    scf.yield %row, %hi : {y}, index
  }}
  return %out : {y}
}}
"
        ))
    }

    /// The product of one row, for the JIT's loop nests on the host (a dot product of the
    /// product folds into the same loop): `(%i: index, %y: f64, %ends, %columns, %values, %x)
    /// -> f64`, the four tensors read whole (`element_reads_whole`), the
    /// row's entries from the end of the row before (0 for the tile's first).
    fn generate_element(
        &self,
        symbol: &str,
        sig: &MlirSignature<'_>,
    ) -> Option<Result<String, KernelError>> {
        if sig.target != KernelTarget::Host {
            return None;
        }
        Some(self.check(sig).map(|()| {
            let [ends, columns, values, x] = [1, 2, 3, 4].map(|i| tensor_type(&sig.args[i]));
            let index = element_type(sig.args[1].dtype);
            let bounds = row_bounds(&ends, index);
            let sum = row_sum(&columns, index, &values, &x);
            format!(
                "func.func private @{symbol}(%i: index, %y: f64, %ends: {ends}, \
%columns: {columns}, %values: {values}, %x: {x}) -> f64 {{
  %zero = arith.constant 0x0000000000000000 : f64
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %hi_raw = tensor.extract %ends[%i] : {ends}
{bounds}{sum}    return %sum : f64
}}
"
            )
        }))
    }

    /// The row ends, columns, values and `x`: the element function indexes them itself.
    fn element_reads_whole(&self, sig: &MlirSignature<'_>) -> Vec<usize> {
        if sig.target == KernelTarget::Host && self.check(sig).is_ok() {
            vec![1, 2, 3, 4]
        } else {
            Vec::new()
        }
    }
}

/// The GPU form of the kernel (module docs): the rows as a parallel `linalg.generic` over
/// `ends` into `y`, row `i` starting at `ends[i - 1]` (0 for the first), each row's sum the
/// host form's inner loop. `types` are the tensor types of `y, ends, columns, values, x`;
/// `index` the indices' element type.
fn device_kernel(symbol: &str, types: [&String; 5], index: &str) -> String {
    let [y, ends, columns, values, x] = types;
    let bounds = row_bounds(ends, index);
    let sum = row_sum(columns, index, values, x);
    format!(
        "func.func private @{symbol}(%y: {y}, %ends: {ends}, %columns: {columns}, \
%values: {values}, %x: {x}) -> ({y}) {{
  %zero = arith.constant 0x0000000000000000 : f64
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %out = linalg.generic {{indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], \
iterator_types = [\"parallel\"]}} ins(%ends : {ends}) outs(%y : {y}) {{
  ^bb0(%hi_raw: {index}, %unused: f64):
    %i = linalg.index 0 : index
{bounds}{sum}    linalg.yield %sum : f64
  }} -> {y}
  return %out : {y}
}}
"
    )
}

/// The lines computing row `%i`'s bounds `%lo` (the end of the row before it, 0 for the
/// first) and `%hi` (its end, `%hi_raw`, read from `ends`, of type `ends`, whose elements are
/// `index`-typed `index`); `%c0` and `%c1` are defined around them.
fn row_bounds(ends: &str, index: &str) -> String {
    format!(
        "    %first = arith.cmpi eq, %i, %c0 : index
    %above = arith.maxui %i, %c1 : index
    %before = arith.subi %above, %c1 : index
    %lo_raw = tensor.extract %ends[%before] : {ends}
    %lo_end = arith.index_cast %lo_raw : {index} to index
    %lo = arith.select %first, %c0, %lo_end : index
    %hi = arith.index_cast %hi_raw : {index} to index
"
    )
}

/// The lines computing `%sum`, one row's product `sum over k in lo..hi of values[k] *
/// x[columns[k]]` from the row's bounds `%lo` and `%hi` (`index` values), from +0.0, in
/// stored order (the native kernel's), multiplying then adding (never a fused multiply-add);
/// `%zero` and `%c1` are defined around them. The arguments are the tensor types of the entries' columns,
/// values and `x`, and the columns' element type.
fn row_sum(columns: &str, column: &str, values: &str, x: &str) -> String {
    format!(
        "    %sum = scf.for %k = %lo to %hi step %c1 iter_args(%acc = %zero) -> (f64) {{
      %col = tensor.extract %columns[%k] : {columns}
      %j = arith.index_cast %col : {column} to index
      %v = tensor.extract %values[%k] : {values}
      %xj = tensor.extract %x[%j] : {x}
      %prod = arith.mulf %v, %xj : f64
      %next = arith.addf %acc, %prod : f64
      scf.yield %next : f64
    }}
"
    )
}

#[cfg(test)]
mod tests {
    use diffuse_ir::{MlirArg, ReductionOp};

    use super::*;

    fn arg(dtype: DType, privilege: Privilege) -> MlirArg {
        MlirArg {
            dtype,
            rank: 1,
            privilege,
            unit_dims: 0,
        }
    }

    fn args(index: DType) -> [MlirArg; 5] {
        [
            arg(DType::F64, Privilege::Write),
            arg(index, Privilege::Read),
            arg(index, Privilege::Read),
            arg(DType::F64, Privilege::Read),
            arg(DType::F64, Privilege::Read),
        ]
    }

    fn generator(width: IndexWidth) -> SpmvGenerator {
        SpmvGenerator {
            name: "sparse.spmv.test",
            width,
        }
    }

    fn generate(g: &SpmvGenerator, args: &[MlirArg]) -> Result<String, KernelError> {
        g.generate("k0", &MlirSignature::host(args, &[]))
    }

    #[test]
    fn the_kernel_has_the_abi_signature_and_sums_in_stored_order() {
        let targets = [KernelTarget::Host, KernelTarget::Device];
        for (width, index) in [(IndexWidth::I32, DType::I32), (IndexWidth::I64, DType::I64)] {
            for target in targets {
                let ty = element_type(index);
                let args = args(index);
                let sig = MlirSignature {
                    args: &args,
                    scalars: &[],
                    target,
                };
                let text = generator(width).generate("k0", &sig).expect("generates");
                // The rows: a loop on the host, a parallel `linalg.generic` for a GPU.
                let device = text.contains("linalg.generic") && text.contains(r#"["parallel"]"#);
                assert_eq!(device, target == KernelTarget::Device, "{text}");
                assert!(
                    text.starts_with(&format!(
                        "func.func private @k0(%y: tensor<?xf64>, %ends: tensor<?x{ty}>, \
                     %columns: tensor<?x{ty}>, %values: tensor<?xf64>, %x: tensor<?xf64>) -> \
                     (tensor<?xf64>) {{"
                    )),
                    "{text}"
                );
                assert!(
                    text.contains(&format!("arith.index_cast %col : {ty} to index")),
                    "{text}"
                );
                // A row starts where the one before it ends.
                assert!(
                    text.contains(&format!("arith.index_cast %hi_raw : {ty} to index")),
                    "{text}"
                );
                // Multiply, then add to the running sum: never a fused multiply-add.
                assert!(text.contains("%prod = arith.mulf %v, %xj : f64"), "{text}");
                assert!(
                    text.contains("%next = arith.addf %acc, %prod : f64"),
                    "{text}"
                );
                assert!(!text.contains("fma"), "{text}");
                assert!(!text.contains("fastmath"), "{text}");
                // From +0.0, like the native kernel (not the -0.0 of `Sum` reductions).
                assert!(
                    text.contains("arith.constant 0x0000000000000000 : f64"),
                    "{text}"
                );
                assert!(text.contains("return %out : tensor<?xf64>"), "{text}");
            }
        }
    }

    /// On the host, one row's sum as an element function taking its index and the row ends,
    /// entries and `x` whole; none for a GPU (its kernel is a `linalg.generic` already).
    #[test]
    fn the_element_function_reads_the_entries_whole_on_the_host() {
        let g = generator(IndexWidth::I64);
        let args = args(DType::I64);
        let host = MlirSignature::host(&args, &[]);
        assert_eq!(g.element_reads_whole(&host), [1, 2, 3, 4]);
        let text = g
            .generate_element("e0", &host)
            .expect("an element function")
            .expect("generates");
        assert!(
            text.starts_with(
                "func.func private @e0(%i: index, %y: f64, %ends: tensor<?xi64>, \
                 %columns: tensor<?xi64>, %values: tensor<?xf64>, %x: tensor<?xf64>) -> f64 {"
            ),
            "{text}"
        );
        assert!(
            text.contains("%hi_raw = tensor.extract %ends[%i]"),
            "{text}"
        );
        assert!(
            text.contains("%lo = arith.select %first, %c0, %lo_end"),
            "{text}"
        );
        assert!(text.contains("return %sum : f64"), "{text}");
        let device = MlirSignature {
            target: KernelTarget::Device,
            ..host
        };
        assert!(g.generate_element("e0", &device).is_none());
        assert!(g.element_reads_whole(&device).is_empty());
        // A signature the kind does not have reads nothing whole.
        assert!(g
            .element_reads_whole(&MlirSignature::host(&args[..4], &[]))
            .is_empty());
    }

    #[test]
    fn other_signatures_are_refused() {
        let g = generator(IndexWidth::I32);
        // 64-bit indices for the 32-bit kind, or row ends of another width than the columns.
        assert!(generate(&g, &args(DType::I64)).is_err());
        let mut mixed = args(DType::I32);
        mixed[1].dtype = DType::I64;
        assert!(generate(&g, &mixed).is_err());
        let mut wrong = args(DType::I32);
        wrong[0].privilege = Privilege::Reduce(ReductionOp::Sum);
        let err = generate(&g, &wrong).unwrap_err();
        assert!(err.reason.contains("argument 0"), "{}", err.reason);
        let mut wrong = args(DType::I32);
        wrong[4].rank = 2;
        assert!(generate(&g, &wrong).is_err());
        assert!(generate(&g, &args(DType::I32)[..4]).is_err());
        let with_scalar = args(DType::I32);
        let sig = MlirSignature::host(&with_scalar, &[DType::F64]);
        assert!(g.generate("k0", &sig).is_err());
    }
}
