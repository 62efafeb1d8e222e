//! The differential fusion property (see `common::streams`) on the embedded backend: on the
//! native fused path (`jit: None`), and with the JIT on, where every kind of the streams has
//! an MLIR generator (`common::generators`), so fused tasks run compiled kernels (composed
//! bodies, temporaries as SSA values, scalars, 0-d stores read by every element, `ReadWrite`
//! and `Reduce` outputs) whose results must still be bitwise equal to the unfused run and the
//! model. Coverage counters fail the tests if strips, temporaries or compiled code stop being
//! exercised.
//!
//! The native property runs 3,000 random streams by default (about a second), the JIT property
//! 80 (about 20-25 s on two cores, nearly all of it compiling some 200 kernels). For longer
//! local runs set `DIFFUSE_FUSION_CASES` or `DIFFUSE_JIT_CASES`, e.g.
//! `DIFFUSE_FUSION_CASES=20000 cargo test -p diffuse --test runtime fusion_property:: --
//! --nocapture`.

use crate::common::streams::*;

/// The differential property on the native fused path.
#[test]
fn fused_streams_match_unfused_and_sequential() {
    let cov = run_property(
        cases_from_env("DIFFUSE_FUSION_CASES", 3000),
        None,
        On::Embedded,
    );
    // Without a JIT, fused element-wise points run strip by strip when strips are small.
    cov.shares(&[
        ("cases with strips", &cov.strip_cases, 0.05),
        (
            "cases with strips and temporaries",
            &cov.strip_temporary_cases,
            0.03,
        ),
    ]);
}

/// Random streams of the JIT property by default: compiling a new fused signature takes about
/// 0.1 s here, and the random streams produce two or three new ones per case.
const JIT_CASES: u32 = 80;

/// The differential property with fused tasks running JIT-compiled kernels.
#[test]
fn jit_fused_streams_match_unfused_and_sequential() {
    let (cov, jit) =
        run_compiled_property(cases_from_env("DIFFUSE_JIT_CASES", JIT_CASES), On::Embedded);
    let stats = jit.stats();
    eprintln!("JIT: {stats:?}");
    // Every kind of the streams has an MLIR generator: a composed kernel that does not
    // compile is a composer bug (its points would silently run natively).
    assert_eq!(
        stats.compile_failures, 0,
        "kernels failed to compile: {stats:?}"
    );
    // Most fused tasks run compiled code (the others have a point whose sub-stores do not
    // fit the compiled kernel, or reduce into a store they also access otherwise).
    assert!(
        cov.compiled_tasks.get() * 2 >= cov.fused_tasks.get(),
        "only {} of {} fused tasks ran compiled code",
        cov.compiled_tasks.get(),
        cov.fused_tasks.get()
    );
    cov.shares(&[
        ("cases running compiled code", &cov.compiled_cases, 0.3),
        (
            "compiled fused tasks with temporaries",
            &cov.compiled_with_temporaries,
            0.1,
        ),
        (
            "compiled fused tasks with reductions",
            &cov.compiled_reductions,
            0.05,
        ),
    ]);
    assert!(
        stats.kernels_compiled as usize >= cov.cases.get() / 4,
        "only {} kernels compiled in {} cases",
        stats.kernels_compiled,
        cov.cases.get()
    );
}

/// Random streams of the simulated-GPU property by default: each GPU-placed kernel is also
/// built for the GPU (PTX), which costs about as much again as the CPU kernel.
const SIM_GPU_CASES: u32 = 40;

/// The differential property with the simulated GPU: each task (fused or not) placed on the
/// GPU or the CPUs by a coin flip, so stores move between host and device copies in every
/// order; GPU launches run asynchronously on the simulator thread, so a missing wait shows
/// up as a wrong value. Fused = unfused = the sequential model, bit for bit.
#[test]
fn sim_gpu_streams_match_unfused_and_sequential() {
    let (cov, _jit) = run_compiled_property(
        cases_from_env("DIFFUSE_SIM_GPU_CASES", SIM_GPU_CASES),
        On::SimGpu,
    );
    cov.share("cases with GPU points", cov.gpu_cases.get(), 0.2);
}
