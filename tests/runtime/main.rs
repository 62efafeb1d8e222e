//! The runtime over the embedded backend: it must execute `diffuse-ir` index tasks with
//! exactly the semantics of a plain sequential evaluation, whatever the processor count,
//! fused or not: fusion against the unfused run and a sequential model, compiled kernels,
//! temporaries, the window, faults, placement, memory, reductions, views, scalars and
//! floating-point exceptions.

// Helpers return `IrError`, which is large by design (see the IR crate).
#![allow(clippy::result_large_err)]

// The Legion helpers of the shared module are for the Legion binary.
#[allow(dead_code)]
#[path = "../common/mod.rs"]
mod common;

mod compiled;
mod elementwise_prop;
mod faults;
mod float_errors;
mod fused_faults;
mod fusion_property;
mod memory;
mod placement;
mod reductions;
mod replay_property;
mod scalars;
mod stencil;
mod temporaries;
mod views;
mod window;
