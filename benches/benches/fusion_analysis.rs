//! The fusion analysis's cost per task: fresh (every window analysed) and memoized (an
//! isomorphic window replayed), over window sizes, and over launch domains of 1 to 2^20
//! points (flat: the analysis never looks at individual points).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use diffuse_benches::stencil_window;
use diffuse_fusion::Planner;

fn window_sizes(c: &mut Criterion) {
    let mut group = c.benchmark_group("analysis_by_window");
    for iterations in [1usize, 2, 4, 8, 16] {
        let window = stencil_window(64, iterations).expect("window builds");
        group.throughput(Throughput::Elements(window.len() as u64));
        group.bench_with_input(BenchmarkId::new("fresh", window.len()), &window, |b, w| {
            let mut planner = Planner::without_memo();
            b.iter(|| planner.plan(w));
        });
        group.bench_with_input(
            BenchmarkId::new("memoized", window.len()),
            &window,
            |b, w| {
                let mut planner = Planner::new();
                planner.plan(w);
                b.iter(|| planner.plan(w));
            },
        );
    }
    group.finish();
}

fn launch_sizes(c: &mut Criterion) {
    let mut group = c.benchmark_group("analysis_by_points");
    for log2 in [0u32, 5, 10, 15, 20] {
        let window = stencil_window(1 << log2, 4).expect("window builds");
        group.throughput(Throughput::Elements(window.len() as u64));
        group.bench_with_input(BenchmarkId::new("fresh", 1u64 << log2), &window, |b, w| {
            let mut planner = Planner::without_memo();
            b.iter(|| planner.plan(w));
        });
        group.bench_with_input(
            BenchmarkId::new("memoized", 1u64 << log2),
            &window,
            |b, w| {
                let mut planner = Planner::new();
                planner.plan(w);
                b.iter(|| planner.plan(w));
            },
        );
    }
    group.finish();
}

criterion_group!(benches, window_sizes, launch_sizes);
criterion_main!(benches);
