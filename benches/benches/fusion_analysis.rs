//! The fusion analysis's cost per task: fresh (every window analysed) and memoized (an
//! isomorphic window replayed), over window sizes, and over launch domains of 1 to 2^20
//! points (flat: the analysis never looks at individual points).

use criterion::measurement::WallTime;
use criterion::{
    criterion_group, criterion_main, BenchmarkGroup, BenchmarkId, Criterion, Throughput,
};
use diffuse_benches::stencil_window;
use diffuse_fusion::{HeldStores, Planner};
use diffuse_ir::IndexTask;

/// Benchmarks planning `window` from scratch and replayed from the memo, labelled `label`.
fn bench_window(group: &mut BenchmarkGroup<'_, WallTime>, label: u64, window: &[IndexTask]) {
    group.throughput(Throughput::Elements(window.len() as u64));
    group.bench_with_input(BenchmarkId::new("fresh", label), window, |b, w| {
        let mut planner = Planner::without_memo();
        b.iter(|| planner.plan(w, &HeldStores::of(w)));
    });
    group.bench_with_input(BenchmarkId::new("memoized", label), window, |b, w| {
        let mut planner = Planner::new();
        planner.plan(w, &HeldStores::of(w));
        b.iter(|| planner.plan(w, &HeldStores::of(w)));
    });
}

fn window_sizes(c: &mut Criterion) {
    let mut group = c.benchmark_group("analysis_by_window");
    for iterations in [1usize, 2, 4, 8, 16] {
        let window = stencil_window(64, iterations).expect("window builds");
        bench_window(&mut group, window.len() as u64, &window);
    }
    group.finish();
}

fn launch_sizes(c: &mut Criterion) {
    let mut group = c.benchmark_group("analysis_by_points");
    for log2 in [0u32, 5, 10, 15, 20] {
        let window = stencil_window(1 << log2, 4).expect("window builds");
        bench_window(&mut group, 1u64 << log2, &window);
    }
    group.finish();
}

criterion_group!(benches, window_sizes, launch_sizes);
criterion_main!(benches);
