//! What one launch costs once every decision is memoized: the runtime's replay of a launch
//! plan plus the embedded backend's dispatch of its point task, for tiny arrays where that
//! overhead is all there is.
//!
//! - `dispatch/unfused`: one element-wise task per iteration (fusion off).
//! - `dispatch/fused_native` and `dispatch/fused_compiled`: a fused group of two tasks (the
//!   first one's result a temporary) through the native constituents or the JIT-compiled
//!   kernel; their difference is the compiled path's per-task overhead over the native one.
//!
//! Every iteration submits the tasks and flushes, on one processor, 64-element arrays.

use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion};
use diffuse::{BackendConfig, EmbeddedConfig, FusionConfig, Runtime, RuntimeConfig};
use diffuse_array::{Array, ArrayContext};
use diffuse_ir::Context;
use diffuse_jit::Jit;

/// A one-processor array context with `fusion` and `jit`, and its runtime (for counters).
fn context(fusion: FusionConfig, jit: Option<Arc<Jit>>) -> (ArrayContext, Arc<Runtime>) {
    let runtime = diffuse::start(
        &BackendConfig::Embedded(EmbeddedConfig {
            procs: Some(1),
            ..Default::default()
        }),
        RuntimeConfig {
            fusion,
            jit,
            gpu: None,
            placement: None,
            min_block: diffuse::DEFAULT_MIN_BLOCK,
        },
    )
    .expect("embedded backend starts");
    (ArrayContext::new(Context::new(runtime.clone())), runtime)
}

/// Two 64-element inputs.
fn inputs(cx: &ArrayContext) -> (Array, Array) {
    let a = Array::from_vec(cx, &[64], (0..64).map(f64::from).collect()).expect("a");
    let b = Array::from_vec(cx, &[64], vec![0.5; 64]).expect("b");
    (a, b)
}

fn dispatch(c: &mut Criterion) {
    let mut group = c.benchmark_group("dispatch");
    let (cx, _) = context(FusionConfig::off(), None);
    let (a, b) = inputs(&cx);
    group.bench_function("unfused", |bench| {
        bench.iter(|| {
            let sum = (&a + &b).expect("a + b");
            cx.flush().expect("flush");
            sum
        })
    });
    let fused_pair = |cx: &ArrayContext, a: &Array, b: &Array| {
        let out = ((a + b) * b).expect("(a + b) * b");
        cx.flush().expect("flush");
        out
    };
    for (label, jit) in [
        ("fused_native", None),
        ("fused_compiled", Some(Arc::new(Jit::new()))),
    ] {
        let compiled = jit.is_some();
        let (cx, runtime) = context(FusionConfig::default(), jit);
        let (a, b) = inputs(&cx);
        fused_pair(&cx, &a, &b);
        group.bench_function(label, |bench| bench.iter(|| fused_pair(&cx, &a, &b)));
        let stats = runtime.stats();
        assert!(stats.tasks_executed > 0, "{label}: nothing ran");
        assert_eq!(
            stats.compiled_points == stats.points_executed,
            compiled,
            "{label}: expected every point {} compiled code: {stats:?}",
            if compiled { "to run" } else { "not to run" }
        );
    }
    group.finish();
}

criterion_group!(benches, dispatch);
criterion_main!(benches);
