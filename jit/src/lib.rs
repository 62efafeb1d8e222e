//! `diffuse-jit`: composes the MLIR bodies of a fused task's constituent kernels, fuses their
//! loops, removes temporaries, and compiles the result for CPUs (and GPUs), caching kernels by
//! canonical fused-task key. Depends only on `diffuse-ir`.
//!
//! Empty until the JIT issue (#5) lands; until then every task runs its native variant.
