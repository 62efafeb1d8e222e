//! Floating-point exceptions (IEEE flags) raised by point tasks reach the application through
//! `Backend::take_fp_errors`, named by the task that raised them, on every path a point runs:
//! native unfused, native fused (strips), JIT-compiled fused and on worker threads (Legion's
//! in tests/legion/float_errors.rs); work that raises nothing records nothing.

use std::sync::Arc;

use diffuse::backend::point::fp::FpFlags;
use diffuse::{Backend, EmbeddedBackend, EmbeddedConfig, FusionConfig, Runtime, RuntimeConfig};
use diffuse_ir::{Context, IndexTask, Privilege, ReductionOp, TaskKind, Tuple};
use diffuse_jit::Jit;

use crate::common::embedded_backend;
use crate::common::fp::*;
use crate::common::fusion::ew_mul_kind;
use crate::common::submit_sum_all;
use crate::common::{binary_kind, Arith};

/// How the points of a test run.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Path {
    /// One task per launch, native kernels.
    Unfused,
    /// Fused, native kernels strip by strip.
    Strips,
    /// Fused, one JIT-compiled kernel per point.
    Compiled,
}

const PATHS: [Path; 3] = [Path::Unfused, Path::Strips, Path::Compiled];

/// An embedded backend of two processors that hands every launch to its worker threads
/// (nothing inline) and cuts fused points into small strips, and a context over it running
/// `path`.
fn setup(path: Path) -> (Arc<EmbeddedBackend>, Context) {
    let backend = Arc::new(
        EmbeddedBackend::new(EmbeddedConfig {
            procs: Some(2),
            inline_bytes: 0,
            strip_bytes: 256,
            ..Default::default()
        })
        .expect("embedded backend starts"),
    );
    let runtime = Runtime::new(
        backend.clone(),
        RuntimeConfig {
            fusion: if path == Path::Unfused {
                FusionConfig::off()
            } else {
                FusionConfig::default()
            },
            jit: (path == Path::Compiled).then(|| Arc::new(Jit::new())),
            gpu: None,
            placement: None,
            min_block: 1,
        },
    );
    (backend, Context::new(Arc::new(runtime)))
}

/// A case: what it computes, the kind, its operands and the exception it raises.
type Case = (&'static str, fn() -> Arc<TaskKind>, f64, f64, FpFlags);

#[test]
fn each_category_is_recorded_under_the_task_that_raised_it() {
    let cases: [Case; 4] = [
        ("1 / 0", div_kind, 1.0, 0.0, FpFlags::DIVIDE),
        ("0 / 0", div_kind, 0.0, 0.0, FpFlags::INVALID),
        ("1e308 * 1e10", ew_mul_kind, 1e308, 1e10, FpFlags::OVERFLOW),
        (
            "1e-300 * 1e-300",
            ew_mul_kind,
            1e-300,
            1e-300,
            FpFlags::UNDERFLOW,
        ),
    ];
    for path in PATHS {
        for (what, kind, x, y, want) in cases {
            let (backend, ctx) = setup(path);
            let a = filled(&ctx, x);
            let b = filled(&ctx, y);
            let out = apply(&ctx, &kind(), &a, &b);
            ctx.read::<f64>(&out.view()).unwrap();
            let raised = backend.take_fp_errors();
            assert_eq!(
                union(&raised),
                want,
                "{what} on the {path:?} path raised {raised:?}"
            );
            assert!(
                raised.iter().all(|(name, _)| name.contains(kind().name())),
                "{what} on the {path:?} path: {raised:?}"
            );
            assert!(
                backend.take_fp_errors().is_empty(),
                "a take leaves nothing behind"
            );
        }
    }
}

#[test]
fn a_division_by_zero_inside_a_fused_chain_is_recorded_on_every_path() {
    for path in PATHS {
        let (backend, ctx) = setup(path);
        // An error-free run first, so that the compiled kernel exists and is seen to run.
        chain(&ctx, 3.0, 2.0);
        let stats = backend.stats();
        match path {
            Path::Unfused => assert_eq!(stats.tasks_executed, 3, "{stats:?}"),
            Path::Strips => assert!(stats.strip_points > 0, "no strips: {stats:?}"),
            Path::Compiled => assert!(stats.compiled_points > 0, "nothing compiled: {stats:?}"),
        }
        let got = chain(&ctx, 1.0, 0.0);
        assert!(got.iter().all(|v| *v == f64::INFINITY), "{got:?}");
        let raised = backend.take_fp_errors();
        // Native kernels are watched one constituent at a time, and a compiled point that
        // raised runs again natively: the divide alone raised, on every path.
        assert_eq!(
            raised,
            vec![(Arc::from(div_kind().name()), FpFlags::DIVIDE)],
            "{path:?}"
        );
    }
}

/// `max(out, a)` through an ordered comparison, as vector code compiles it (`cmpf olt`).
const MAX: Arith = Arith {
    // The same value without an ordered comparison, which LLVM may compile to a signaling
    // one (even behind a NaN test): `total_cmp` compares bits, `!=` is quiet.
    native: |_, o, a| {
        if !o.is_nan() && !a.is_nan() && o != a && o.total_cmp(&a).is_lt() {
            a
        } else {
            o
        }
    },
    mlir: "%c = arith.cmpf olt, %x0, %x1 : {T}\n%r = arith.select %c, %x1, %x0 : {T}\n\
           linalg.yield %r : {T}",
    scaled: false,
};

/// `out = max(a, b)` (`MAX`), element-wise.
fn max_kind() -> Arc<TaskKind> {
    binary_kind("fp_max", true, MAX)
}

/// `out = max(out, a)` in place (`ReadWrite`), element-wise: a fused task of it cannot run
/// a point twice.
fn max_into_kind() -> Arc<TaskKind> {
    crate::common::unary_kind(
        "fp_max_into",
        Privilege::ReadWrite,
        true,
        Arith {
            mlir: "%c = arith.cmpf olt, %o, %x0 : {T}\n%r = arith.select %c, %x0, %o : {T}\n\
                   linalg.yield %r : {T}",
            ..MAX
        },
    )
}

#[test]
fn a_compiled_kernel_that_cannot_run_twice_reports_under_the_fused_name() {
    let (backend, ctx) = setup(Path::Compiled);
    let (a, b, acc) = (filled(&ctx, 1.0), filled(&ctx, 0.0), filled(&ctx, 0.0));
    let launch = Tuple::shape(&[2]).unwrap();
    for _ in 0..2 {
        let q = apply(&ctx, &div_kind(), &a, &b);
        ctx.submit(
            IndexTask::new(&max_into_kind(), launch)
                .arg(
                    &acc,
                    acc.view().blocked(launch).unwrap(),
                    Privilege::ReadWrite,
                )
                .arg(&q, q.view().blocked(launch).unwrap(), Privilege::Read),
        )
        .unwrap();
        ctx.read::<f64>(&acc.view()).unwrap();
    }
    let got = ctx.read::<f64>(&acc.view()).unwrap();
    assert!(got.iter().all(|v| *v == f64::INFINITY), "{got:?}");
    assert!(backend.stats().compiled_points > 0, "{:?}", backend.stats());
    let raised = backend.take_fp_errors();
    let div = div_kind().name().to_string();
    assert_eq!(union(&raised), FpFlags::DIVIDE, "{raised:?}");
    assert!(
        raised
            .iter()
            .any(|(name, _)| name.contains(&div) && name.contains('+')),
        "{raised:?}"
    );
}

#[test]
fn comparisons_of_nan_raise_nothing_compiled_or_native() {
    // Ordered comparisons of NaN in vector code raise `invalid`, IEEE comparisons do not
    // (and NumPy reports nothing): a compiled point that raised runs again natively.
    for path in PATHS {
        let (backend, ctx) = setup(path);
        let (nan, two, one) = (filled(&ctx, f64::NAN), filled(&ctx, 2.0), filled(&ctx, 1.0));
        for (i, a) in [&two, &nan, &nan].into_iter().enumerate() {
            let m = apply(&ctx, &max_kind(), a, &one);
            let out = apply(&ctx, &ew_mul_kind(), &m, &one);
            let got = ctx.read::<f64>(&out.view()).unwrap();
            assert_eq!(got[0].is_nan(), i > 0, "{got:?}");
            if path == Path::Compiled && i == 0 {
                let stats = backend.stats();
                assert!(stats.compiled_points > 0, "nothing compiled: {stats:?}");
            }
        }
        assert_eq!(backend.take_fp_errors(), Vec::new(), "{path:?}");
    }
}

#[test]
fn work_that_raises_nothing_records_nothing() {
    for path in PATHS {
        let (backend, ctx) = setup(path);
        let got = chain(&ctx, 3.0, 2.0);
        assert!(got.iter().all(|v| *v == 4.0), "{got:?}");
        // Exact and inexact results alike: 1/3 is inexact, which NumPy never reports.
        chain(&ctx, 1.0, 3.0);
        assert_eq!(
            backend.take_fp_errors(),
            Vec::new(),
            "{path:?} recorded exceptions for error-free work"
        );
    }
}

#[test]
fn flags_raised_before_a_point_are_not_blamed_on_it() {
    // One processor and small stores: points run inline, on this thread.
    let backend = embedded_backend(1);
    let ctx = crate::common::unfused(backend.clone());
    diffuse::backend::point::fp::raise(FpFlags::DIVIDE | FpFlags::INVALID);
    let got = chain(&ctx, 3.0, 2.0);
    assert!(got.iter().all(|v| *v == 4.0));
    assert!(backend.take_fp_errors().is_empty());
}

#[test]
fn a_reduction_overflowing_when_points_fold_is_recorded() {
    // Each point's partial sum is 1e308; their fold overflows.
    let (backend, ctx) = setup(Path::Unfused);
    let mut data = vec![0.0; N];
    data[0] = 1e308;
    data[N / 2] = 1e308;
    let input = ctx.store_from_vec(&[N as i64], data).unwrap();
    let out = ctx.store_from_vec::<f64>(&[], vec![0.0]).unwrap();
    let launch = Tuple::shape(&[2]).unwrap();
    let sum = crate::common::reduce_all_kind(ReductionOp::Sum);
    submit_sum_all(&ctx, &input, &out, launch).unwrap();
    assert_eq!(ctx.read_scalar::<f64>(&out.view()).unwrap(), f64::INFINITY);
    assert_eq!(
        backend.take_fp_errors(),
        vec![(Arc::from(sum.name()), FpFlags::OVERFLOW)]
    );
}

#[test]
fn underflow_alone_keeps_a_compiled_point_compiled() {
    // Underflow is common in lanes a kernel discards and NumPy ignores it by default: a
    // compiled point that raised only underflow is not run again, and reports it as the
    // fused task's.
    let (backend, ctx) = setup(Path::Compiled);
    chain(&ctx, 3.0, 2.0);
    let before = backend.stats().compiled_points;
    assert!(before > 0, "nothing compiled");
    chain(&ctx, 1e-300, 1e300);
    assert!(
        backend.stats().compiled_points > before,
        "the point ran again natively"
    );
    let raised = backend.take_fp_errors();
    assert_eq!(union(&raised), FpFlags::UNDERFLOW, "{raised:?}");
    assert!(
        raised.iter().all(|(name, _)| name.contains('+')),
        "{raised:?}"
    );
}
