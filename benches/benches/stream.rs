//! A STREAM-like triad, `a[i] = b[i] + s * c[i]` over 10^7 `f64`, on one thread and on every
//! core: the machine's memory-bandwidth ceiling, against which fused element-wise kernels are
//! judged (criterion reports it as throughput: 24 bytes moved per element).
//!
//! In the same group and run, the triad written with the array library,
//! `a = b + c * 3.0` (two tasks, fused into one with `c * 3.0` a temporary, its kernel
//! JIT-compiled), on the embedded backend with one processor per core: its throughput over
//! the all-core triad's is the fraction of STREAM bandwidth a fused kernel reaches.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::sync::Arc;

use diffuse::{EmbeddedConfig, RuntimeConfig};
use diffuse_array::{s, Array, ArrayContext};
use diffuse_jit::Jit;

const N: usize = 10_000_000;

/// The triad over one band of the arrays.
fn triad(a: &mut [f64], b: &[f64], c: &[f64], s: f64) {
    for ((a, &b), &c) in a.iter_mut().zip(b).zip(c) {
        *a = b + s * c;
    }
}

fn stream(crit: &mut Criterion) {
    let b: Vec<f64> = (0..N).map(|i| i as f64).collect();
    let c: Vec<f64> = (0..N).map(|i| (N - i) as f64).collect();
    let mut a = vec![0.0; N];
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut group = crit.benchmark_group("stream_triad");
    group.throughput(Throughput::Bytes(
        (3 * N * std::mem::size_of::<f64>()) as u64,
    ));
    group.bench_function("1_thread", |bench| {
        bench.iter(|| triad(&mut a, &b, &c, 3.0))
    });
    group.bench_function(format!("{threads}_threads"), |bench| {
        bench.iter(|| {
            let band = N.div_ceil(threads);
            std::thread::scope(|scope| {
                for ((a, b), c) in a.chunks_mut(band).zip(b.chunks(band)).zip(c.chunks(band)) {
                    scope.spawn(move || triad(a, b, c, 3.0));
                }
            });
        })
    });
    let jit = Arc::new(Jit::new());
    let cx = ArrayContext::new(
        // The default adaptive window: the read-back flushes both tasks, the handle of
        // `c * 3.0` already gone, so they fuse with it as a temporary. A blocking JIT, so
        // every timed iteration runs the compiled kernel.
        diffuse::embedded_with(
            EmbeddedConfig::default(),
            RuntimeConfig {
                jit: Some(Arc::clone(&jit)),
                ..Default::default()
            },
        )
        .expect("embedded backend starts"),
    );
    let b = Array::from_vec(&cx, &[N as i64], b).expect("b");
    let c = Array::from_vec(&cx, &[N as i64], c).expect("c");
    let fused_triad = || -> f64 {
        let a = (&b + (&c * 3.0)).expect("triad");
        a.slice(&s![-1..])
            .and_then(|last| last.item::<f64>())
            .expect("read back")
    };
    assert_eq!(
        fused_triad(),
        (N - 1) as f64 + 3.0,
        "the fused triad is wrong"
    );
    assert_eq!(
        jit.stats().kernels_compiled,
        1,
        "the triad did not run as one compiled kernel"
    );
    group.bench_function(format!("diffuse_fused_{threads}_procs"), |bench| {
        bench.iter(fused_triad)
    });
    group.finish();
}

criterion_group!(benches, stream);
criterion_main!(benches);
