//! Pass pipelines from a composed kernel module to PTX and host code, and the checks between
//! them.
//!
//! 1. [`bufferize_pipeline`]: the CPU path's fusion and bufferization (math through the
//!    device prelude, `arith.remf` through its `fmod` after
//!    [`remainders_as_calls`](crate::math::remainders_as_calls), element-wise fusion
//!    removing temporaries, in-place bufferization);
//!    [`to_device_loops`](super::host_loops::to_device_loops) turns the copies and the
//!    independent row loops bufferization left into parallel loop nests;
//!    [`LOOPS_PIPELINE`] lowers `linalg` to `scf.parallel` loops,
//!    [`explicit_launches`](super::launches::explicit_launches) writes full reductions and
//!    scalar bodies as `gpu.launch` ops, and [`mapping_pipeline`]
//!    tiles them so that the innermost dimension is spread over the 256 threads of a block
//!    (consecutive threads touch consecutive elements), maps them to the GPU grid and
//!    outlines them into `gpu.func` kernels.
//! 2. [`check_host`]: the host function may only compute sizes and launch kernels: any memory
//!    access, allocation or call left on the host (a reduction of another form, a temporary
//!    that was not fused away) would dereference device pointers on the CPU, so such a kernel is reported
//!    unsupported and runs on the CPU.
//! 3. [`nvvm_pipeline`]: MLIR's `gpu-lower-to-nvvm-pipeline` (NVVM, PTX through LLVM's NVPTX
//!    back end, `cubin-format=isa` so that no CUDA `ptxas` is needed; the driver JIT-compiles
//!    the PTX at load time) and the host's lowering to LLVM with launch calls.
//! 4. [`ptx_modules`] reads the PTX back from the `gpu.binary` ops, and [`check_ptx`] refuses
//!    PTX that calls functions it does not define (no libdevice: a math function without a
//!    device definition).

use melior::ir::attribute::AttributeLike;
use melior::ir::block::BlockLike;
use melior::ir::operation::{OperationLike, WalkOrder, WalkResult};
use melior::ir::Module;
use melior::ir::RegionLike;

use super::PtxModule;

/// Threads per block along the innermost dimension.
pub(crate) const BLOCK: usize = 256;

/// The parallel-loop tile sizes for kernels whose parallel loops have `rank` dimensions: the
/// innermost dimension in tiles of [`BLOCK`], the others one index per block.
/// `gpu-map-parallel-loops` maps loop dimensions 0, 1, 2 to the grid's x, y, z in order, so
/// for ranks above 3 only the first dimension is tiled (the rest run sequentially in each
/// thread). A loop of lower rank than `rank` takes the first of the sizes.
fn tile_sizes(rank: usize) -> String {
    let sizes: Vec<usize> = match rank {
        0 | 1 => vec![BLOCK],
        2 | 3 => std::iter::repeat_n(1, rank - 1)
            .chain(std::iter::once(BLOCK))
            .collect(),
        _ => vec![BLOCK],
    };
    sizes
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// Fusion and bufferization as on the CPU (the first half of the front end; its output goes
/// through [`to_device_loops`](super::host_loops::to_device_loops) before
/// [`mapping_pipeline`]). The final `canonicalize` drops loop-carried buffers and the copies
/// of a buffer onto itself that bufferization leaves.
pub(crate) fn bufferize_pipeline() -> &'static str {
    "builtin.module(convert-math-to-libm,inline,\
func.func(linalg-fuse-elementwise-ops,canonicalize,cse),eliminate-empty-tensors,\
one-shot-bufferize,func.func(buffer-hoisting,canonicalize))"
}

/// Bufferized `linalg` ops to `scf.parallel` loops (whose rank [`parallel_rank`] reads for
/// [`mapping_pipeline`]), with the deallocations of buffers placed (before
/// [`explicit_launches`](super::launches::explicit_launches) adds `gpu.launch` ops, whose
/// memory effects the deallocation analysis does not model).
pub(crate) const LOOPS_PIPELINE: &str =
    "builtin.module(func.func(convert-linalg-to-parallel-loops,canonicalize,cse),\
buffer-deallocation-pipeline,convert-bufferization-to-memref)";

/// Parallel loops mapped to the GPU and outlined (`rank`: from [`parallel_rank`]).
pub(crate) fn mapping_pipeline(rank: usize) -> String {
    format!(
        "builtin.module(symbol-dce,func.func(scf-parallel-loop-tiling{{parallel-loop-tile-sizes={} no-min-max-bounds=true}},\
gpu-map-parallel-loops,convert-parallel-loops-to-gpu,canonicalize,cse),\
gpu-kernel-outlining,canonicalize)",
        tile_sizes(rank)
    )
}

/// The highest number of dimensions of the outermost `scf.parallel` loops of `module` (0
/// without any): a matrix-vector product over 2-d and 1-d stores has 1-d loops, whose
/// threads must spread along that dimension.
pub(crate) fn parallel_rank(module: &Module<'_>) -> usize {
    let mut rank = 0;
    module.as_operation().walk(WalkOrder::PreOrder, |op| {
        let name = op.name();
        if name.as_string_ref().as_str() != Ok("scf.parallel") {
            return WalkResult::Advance;
        }
        let dimensions = op
            .region(0)
            .ok()
            .and_then(|r| r.first_block())
            .map_or(0, |b| b.argument_count());
        rank = rank.max(dimensions);
        WalkResult::Skip
    });
    rank
}

/// Device code to PTX for `chip` (e.g. `sm_90`) with PTX ISA `features` (e.g. `+ptx80`),
/// host code to the LLVM dialect.
pub(crate) fn nvvm_pipeline(chip: &str, features: &str) -> String {
    format!(
        "builtin.module(gpu-lower-to-nvvm-pipeline{{cubin-format=isa cubin-chip={chip} \
cubin-features={features} opt-level=3}})"
    )
}

/// Ops the host function may contain: index arithmetic, memref metadata (no data access),
/// structured control flow, and kernel launches.
fn host_op_allowed(name: &str) -> bool {
    name.starts_with("arith.")
        || name.starts_with("index.")
        || matches!(
            name,
            "func.func"
                | "func.return"
                | "gpu.launch_func"
                | "affine.apply"
                | "affine.min"
                | "affine.max"
                | "memref.dim"
                | "memref.cast"
                | "memref.subview"
                | "memref.reinterpret_cast"
                | "memref.extract_strided_metadata"
                | "memref.collapse_shape"
                | "memref.expand_shape"
                | "scf.if"
                | "scf.for"
                | "scf.yield"
                | "ub.poison"
                | "builtin.unrealized_conversion_cast"
        )
}

/// Checks that the host function of an outlined module (after [`mapping_pipeline`]) only
/// computes sizes and launches kernels; `Err` names what else it does. Also returns the
/// number of kernel launches.
pub(crate) fn check_host(module: &Module<'_>) -> Result<usize, String> {
    let mut refused: Vec<String> = Vec::new();
    let mut launches = 0;
    module.as_operation().walk(WalkOrder::PreOrder, |op| {
        let name = op.name();
        let name = name.as_string_ref().as_str().unwrap_or("?");
        match name {
            "builtin.module" => WalkResult::Advance,
            // Device code, and declarations of functions the device code calls (checked in
            // the PTX).
            "gpu.module" => WalkResult::Skip,
            "gpu.launch_func" => {
                launches += 1;
                WalkResult::Advance
            }
            _ if host_op_allowed(name) => WalkResult::Advance,
            _ => {
                if !refused.iter().any(|r| r == name) {
                    refused.push(name.to_string());
                }
                WalkResult::Advance
            }
        }
    });
    if refused.is_empty() {
        Ok(launches)
    } else {
        Err(format!(
            "after mapping to the GPU, the host code still does {} (only parallel loop nests \
run on the GPU: element-wise loops that fuse completely, copies, independent row loops, \
full reductions into 0-d stores and loop-free scalar bodies; temporaries that stay in memory \
do not)",
            refused.join(", ")
        ))
    }
}

/// The PTX of every `gpu.binary` op of a lowered module, in module order.
pub(crate) fn ptx_modules(module: &Module<'_>) -> Vec<PtxModule> {
    let mut out = Vec::new();
    module.as_operation().walk(WalkOrder::PreOrder, |op| {
        let name = op.name();
        if name.as_string_ref().as_str() != Ok("gpu.binary") {
            return WalkResult::Advance;
        }
        let symbol = op
            .attribute("sym_name")
            .ok()
            .map(|a| {
                // SAFETY: `sym_name` of a symbol op is a string attribute.
                let s = unsafe { mlir_sys::mlirStringAttrGetValue(a.to_raw()) };
                string_ref(s)
            })
            .unwrap_or_default();
        if let Ok(objects) = op.attribute("objects") {
            let raw = objects.to_raw();
            // SAFETY: `objects` of `gpu.binary` is an array of `#gpu.object` attributes.
            let count = unsafe { mlir_sys::mlirArrayAttrGetNumElements(raw) };
            for i in 0..count {
                // SAFETY: as above, `i` in range.
                let object = unsafe { mlir_sys::mlirArrayAttrGetElement(raw, i) };
                // SAFETY: a `#gpu.object` attribute.
                let text = string_ref(unsafe { mlir_sys::mlirGPUObjectAttrGetObject(object) });
                out.push(PtxModule {
                    name: symbol.clone(),
                    ptx: text.trim_end_matches('\0').to_string(),
                });
            }
        }
        WalkResult::Skip
    });
    out
}

fn string_ref(s: mlir_sys::MlirStringRef) -> String {
    if s.data.is_null() {
        return String::new();
    }
    // SAFETY: MLIR string refs point at `length` valid bytes.
    let bytes = unsafe { std::slice::from_raw_parts(s.data.cast::<u8>(), s.length) };
    String::from_utf8_lossy(bytes).into_owned()
}

/// PTX that declares functions without defining them (`.extern .func name`) cannot be
/// loaded: names them.
pub(crate) fn check_ptx(modules: &[PtxModule]) -> Result<(), String> {
    let mut missing: Vec<String> = Vec::new();
    for m in modules {
        for line in m.ptx.lines() {
            let line = line.trim();
            if let Some(rest) = line.strip_prefix(".extern .func") {
                // `.extern .func (.param .b64 retval0) name(` or `.extern .func name(`.
                let rest = rest.trim_start();
                let rest = match rest.strip_prefix('(') {
                    Some(r) => r.split_once(')').map(|(_, tail)| tail).unwrap_or(r),
                    None => rest,
                };
                let name = rest
                    .trim_start()
                    .split(|c: char| c == '(' || c.is_whitespace())
                    .next()
                    .unwrap_or("?")
                    .to_string();
                if !missing.contains(&name) {
                    missing.push(name);
                }
            }
        }
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "device code calls {} with no GPU definition (no libdevice here; math functions \
the device prelude defines: exp, log, erf, sqrt, fabs, floor, ceil, trunc, round, rint, fma, \
copysign, rsqrt, expm1, log1p, log2, log10, sinh, cosh, tanh, sin, cos, tan, asin, acos, atan, \
atan2, pow, fmod)",
            missing.join(", ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiles_put_the_innermost_dimension_on_the_threads() {
        assert_eq!(tile_sizes(1), "256");
        assert_eq!(tile_sizes(2), "1,256");
        assert_eq!(tile_sizes(3), "1,1,256");
        assert_eq!(tile_sizes(5), "256");
    }

    #[test]
    fn unresolved_device_functions_are_named() {
        let m = PtxModule {
            name: "k".into(),
            ptx: ".version 8.0\n.extern .func  (.param .b64 func_retval0) sin\n(\n.param .b64 p\n);\n.visible .entry k()\n{\n}\n".into(),
        };
        let err = check_ptx(&[m]).unwrap_err();
        assert!(err.contains("calls sin "), "{err}");
        let ok = PtxModule {
            name: "k".into(),
            ptx: ".version 8.0\n.visible .entry k()\n{\n}\n".into(),
        };
        assert!(check_ptx(&[ok]).is_ok());
    }
}
