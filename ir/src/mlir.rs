//! The MLIR kernel ABI: what a task kind's MLIR generator receives and must produce, so that
//! the JIT can compose the bodies of fused tasks without knowing any library.
//!
//! A generator returns the text of one `func.func private @<symbol>` (plus, optionally,
//! private helper functions whose names start with `<symbol>_`) with this signature:
//!
//! ```text
//! func.func private @<symbol>(%arg0: tensor<?x..xT0>, ..., %s0: S0, ...) -> (tensor<..>, ...)
//! ```
//!
//! - one ranked tensor per store argument, in declaration order, with dynamic sizes
//!   (`tensor<?x?xf64>`; rank 0 is `tensor<f64>`), element types from [`element_type`];
//! - then one value per declared scalar, in order, of [`element_type`] of its dtype;
//! - it returns the new value of every argument whose privilege is not `Read`, in order.
//!
//! What an argument's tensor holds on entry depends on its privilege: `Read` and `ReadWrite`
//! the sub-store's values; `Write` a tensor of the sub-store's shape whose contents are
//! undefined (use it as the destination, e.g. `outs` of a `linalg.generic`); `Reduce(op)` the
//! running partial value, which the returned tensor must combine with this point's
//! contribution by `op`. [`MlirArg::unit_dims`] says which dimensions have extent 1 in every
//! point the kernel is compiled for, which is how element-wise kernels express NumPy
//! broadcasting in their indexing maps (`affine_map<(d0, d1) -> (0, d1)>`).
//!
//! Rules that keep fragments composable: no attribute or type aliases (`#map = ...`): write
//! maps inline; no global symbols other than `@<symbol>` and its `@<symbol>_` helpers; math
//! through the `math` dialect (the JIT lowers `exp`, `log` and `erf` to vectorizable
//! polynomials and the rest to libm). Element-wise kernels should be one `linalg.generic` on
//! tensors per output, so the JIT can fuse them with their neighbours and remove temporaries.
//!
//! A kind may also give an element function ([`MlirGenerator::generate_element`]): one
//! element of an element-wise kind, one element's contribution to a sum or product, or one
//! element that reads some arguments whole at indices of its own (a sparse matrix row,
//! [`MlirGenerator::element_reads_whole`]). When every constituent of a fused task has one,
//! the JIT calls them in program order inside one loop nest, folding sums and products in
//! the order of [`REDUCTION_LANES`], so a vector update and the dot product of its result
//! read memory once and give the bits of separate kernels.
//!
//! A library adds a generator for a new kind without touching the JIT:
//!
//! ```
//! use diffuse_ir::{element_type, tensor_type, KernelError, MlirGenerator, MlirSignature};
//!
//! /// `out = 2 * x`, element-wise over 1-d f64 stores.
//! struct Twice;
//!
//! impl MlirGenerator for Twice {
//!     fn generate(&self, symbol: &str, sig: &MlirSignature<'_>) -> Result<String, KernelError> {
//!         let t = tensor_type(&sig.args[0]);
//!         let f = element_type(sig.args[0].dtype);
//!         Ok(format!(
//!             "func.func private @{symbol}(%x: {t}, %out: {t}) -> {t} {{
//!   %r = linalg.generic {{indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
//!       iterator_types = [\"parallel\"]}} ins(%x : {t}) outs(%out : {t}) {{
//!   ^bb0(%a: {f}, %o: {f}):
//!     %two = arith.constant 2.0 : {f}
//!     %y = arith.mulf %a, %two : {f}
//!     linalg.yield %y : {f}
//!   }} -> {t}
//!   return %r : {t}
//! }}"
//!         ))
//!     }
//! }
//! ```
//!
//! and registers it with `TaskKind::builder(..).mlir(Arc::new(Twice))`.

use crate::dtype::DType;
use crate::error::KernelError;
use crate::privilege::Privilege;

/// How one store argument appears to a generated kernel.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct MlirArg {
    /// The element type.
    pub dtype: DType,
    /// The rank of the store (and of the tensor).
    pub rank: usize,
    /// The argument's privilege.
    pub privilege: Privilege,
    /// Bit `d` is set when dimension `d` has extent 1 at every point the kernel serves.
    pub unit_dims: u8,
}

impl MlirArg {
    /// True when dimension `d` has extent 1 (see [`MlirArg::unit_dims`]).
    pub fn is_unit(&self, d: usize) -> bool {
        d < 8 && self.unit_dims & (1 << d) != 0
    }
}

/// What a generator is asked to implement: the kind's store arguments and scalars as the
/// kernel will see them.
#[derive(Clone, Copy, Debug)]
pub struct MlirSignature<'a> {
    /// The store arguments, in declaration order.
    pub args: &'a [MlirArg],
    /// The scalar argument types, in declaration order.
    pub scalars: &'a [DType],
    /// What the kernel is compiled for.
    pub target: KernelTarget,
}

impl<'a> MlirSignature<'a> {
    /// The signature of a point task compiled for the host CPU.
    pub fn host(args: &'a [MlirArg], scalars: &'a [DType]) -> Self {
        MlirSignature {
            args,
            scalars,
            target: KernelTarget::Host,
        }
    }
}

/// What a generated kernel is compiled for. A generator may schedule its loops per target
/// (the values must agree up to the rounding of a different summation order): the host path
/// vectorizes hand-written loops, while the GPU path maps `linalg` ops and the plain
/// reduction loops they lower to onto threads, and runs nothing else there.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum KernelTarget {
    /// The host CPU.
    #[default]
    Host,
    /// A GPU.
    Device,
}

/// Produces the MLIR body of one point task of a kind, for the JIT to compose into fused
/// kernels (the ABI is documented in this module).
pub trait MlirGenerator: Send + Sync {
    /// Returns the text of `func.func private @symbol` implementing one point task of `sig`.
    fn generate(&self, symbol: &str, sig: &MlirSignature<'_>) -> Result<String, KernelError>;

    /// For element-wise kinds, optionally: the text of `func.func private @symbol`
    /// computing one element, `(%a0: T0, .., %s0: S0, ..) -> (..)`: one element value per
    /// store argument in declaration order (the element at the same position of the
    /// iteration space, broadcasting already applied; for a `Write` argument its current,
    /// meaningless value), then the scalars, returning the new element of every argument
    /// whose privilege is not `Read`, in order (element types from [`element_type`]).
    ///
    /// When every constituent of a fused task has one and they all write the same
    /// iteration space, the JIT builds one loop nest that calls them in program order on
    /// each element, so every intermediate value, even one used several times, stays in a
    /// register. The default, `None`, keeps the kind on the `linalg` route of
    /// [`MlirGenerator::generate`].
    ///
    /// A reduction (`Sum` or `Prod` into a 0-d `Reduce` argument, for the host, over inputs
    /// of the iteration space's shape) may have one too: its `Reduce` argument's value is a
    /// partial result, which the function returns with the element's contribution folded in.
    /// The JIT then folds every row of the innermost dimension in the order of
    /// [`REDUCTION_LANES`], so a reduction computes the same bits in the loop nest as on its
    /// own.
    fn generate_element(
        &self,
        _symbol: &str,
        _sig: &MlirSignature<'_>,
    ) -> Option<Result<String, KernelError>> {
        None
    }

    /// The store arguments (by position) that [`MlirGenerator::generate_element`]'s
    /// function reads whole rather than at its element: a sparse row reads its entries and
    /// the vector it multiplies. When there are any, the function's parameters start with
    /// the element's indices in the iteration space (one `index` per dimension), and each of
    /// these arguments is passed as its tensor instead of an element value. They are read
    /// only, and the JIT checks no extent of theirs: the function must stay within them.
    fn element_reads_whole(&self, _sig: &MlirSignature<'_>) -> Vec<usize> {
        Vec::new()
    }
}

/// The order in which float sums and products are folded, by native kernels and compiled
/// ones alike, so that both give the same bits: each row of the innermost dimension folds
/// its element `REDUCTION_LANES * i + k` into partial result `k` (each starting from the
/// operator's identity), the partials into the running value in order `0..REDUCTION_LANES`,
/// then the row's last `len % REDUCTION_LANES` elements one by one. Independent partials let
/// the loop vectorize.
pub const REDUCTION_LANES: usize = 8;

/// The MLIR element type a dtype is passed as: `f64`, `f32`, `i64`, `i32`, `i8` for
/// `bool` (one byte, 0 or 1, as stored), and `complex<f32>` / `complex<f64>` (the two parts
/// adjacent, real first, as stored).
pub fn element_type(dtype: DType) -> &'static str {
    match dtype {
        DType::F64 => "f64",
        DType::F32 => "f32",
        DType::I64 => "i64",
        DType::I32 => "i32",
        DType::Bool => "i8",
        DType::C64 => "complex<f32>",
        DType::C128 => "complex<f64>",
    }
}

/// The tensor type of an argument: `tensor<?x?xf64>`, `tensor<f64>` for rank 0.
pub fn tensor_type(arg: &MlirArg) -> String {
    format!(
        "tensor<{}{}>",
        "?x".repeat(arg.rank),
        element_type(arg.dtype)
    )
}
