//! The Figure 2 five-point stencil fused: two executed tasks per iteration with four
//! temporaries, strips matching the unfused run, temporaries never allocated (lower peak
//! memory), and, with the JIT, one compiled kernel per iteration bitwise equal to the unfused
//! run.

use std::sync::Arc;

use crate::common::fusion::*;
use crate::common::view_at;
use diffuse::FusionConfig;
use diffuse_ir::{Context, IndexTask, Privilege, Store, TaskKind, Tuple, View};
use diffuse_jit::Jit;

// ---------------------------------------------------------------------------------------------
// Figure 2: the 5-point stencil.
// ---------------------------------------------------------------------------------------------

/// The five aliasing views of an (n+2)^2 grid: center, north, east, west, south.
pub(crate) fn stencil_views(grid: &Store, n: i64) -> [View; 5] {
    let v = |r: i64, c: i64| view_at(grid, &[r, c], &[n, n]);
    [v(1, 1), v(0, 1), v(1, 2), v(1, 0), v(2, 1)]
}

/// One iteration of Figure 2(a), lines 10-14, as the IR tasks of Figure 2(c):
/// `avg = center + north + east + west + south` (four ADDs, each into a fresh store whose
/// handle goes as soon as the next task consumed it), `work = 0.2 * avg` (MULT), and
/// `center[:] = work` (COPY).
pub(crate) fn stencil_iteration(c: &Context, grid: &Store, n: i64, launch: &[i64]) {
    stencil_iteration_adding_with(c, grid, n, launch, &ew_add_kind());
}

/// [`stencil_iteration`] with its four additions of kind `add_kind`.
pub(crate) fn stencil_iteration_adding_with(
    c: &Context,
    grid: &Store,
    n: i64,
    launch: &[i64],
    add_kind: &Arc<TaskKind>,
) {
    let launch = Tuple::shape(launch).unwrap();
    let [center, north, east, west, south] = stencil_views(grid, n);
    let part = |v: &View| v.blocked(launch).unwrap();
    let fresh = || whole(c, &[n, n]);
    let add = |out: &Store, a: &View, b: &View| {
        c.submit(
            IndexTask::new(add_kind, launch)
                .arg(out, part(&out.view()), Privilege::Write)
                .arg(a.store(), part(a), Privilege::Read)
                .arg(b.store(), part(b), Privilege::Read),
        )
        .unwrap();
    };
    let t1 = fresh();
    add(&t1, &center, &north);
    let t2 = fresh();
    add(&t2, &t1.view(), &east);
    drop(t1);
    let t3 = fresh();
    add(&t3, &t2.view(), &west);
    drop(t2);
    let t4 = fresh();
    add(&t4, &t3.view(), &south);
    drop(t3);
    let work = fresh();
    c.submit(
        IndexTask::new(&ew_scale_kind(), launch)
            .arg(&work, part(&work.view()), Privilege::Write)
            .arg(&t4, part(&t4.view()), Privilege::Read)
            .scalar(0.2),
    )
    .unwrap();
    drop(t4);
    c.submit(
        IndexTask::new(&ew_copy_kind(), launch)
            .arg(grid, part(&center), Privilege::Write)
            .arg(&work, part(&work.view()), Privilege::Read),
    )
    .unwrap();
    drop(work);
}

/// A new `(n+2)^2` grid holding [`stencil_init`].
pub(crate) fn stencil_grid(c: &Context, n: i64) -> Store {
    c.store_from_vec(&[n + 2, n + 2], stencil_init(n)).unwrap()
}

/// The grid's initial values.
pub(crate) fn stencil_init(n: i64) -> Vec<f64> {
    random_data(((n + 2) * (n + 2)) as usize, 2024)
}

/// The sequential model of `iters` stencil iterations, in the kernels' arithmetic order.
pub(crate) fn stencil_model(n: i64, iters: usize) -> Vec<f64> {
    let m = (n + 2) as usize;
    let mut g = stencil_init(n);
    for _ in 0..iters {
        let mut work = vec![0.0; (n * n) as usize];
        for i in 1..=n as usize {
            for j in 1..=n as usize {
                let avg = g[i * m + j]
                    + g[(i - 1) * m + j]
                    + g[i * m + j + 1]
                    + g[i * m + j - 1]
                    + g[(i + 1) * m + j];
                work[(i - 1) * n as usize + j - 1] = 0.2 * avg;
            }
        }
        for i in 1..=n as usize {
            for j in 1..=n as usize {
                g[i * m + j] = work[(i - 1) * n as usize + j - 1];
            }
        }
    }
    g
}

/// Runs `iters` stencil iterations; returns the grid and the rig.
pub(crate) fn run_stencil(
    n: i64,
    iters: usize,
    fusion: FusionConfig,
    strip_bytes: Option<usize>,
    jit: Option<Arc<Jit>>,
) -> (Vec<f64>, Rig) {
    run_stencil_adding_with(n, iters, fusion, strip_bytes, jit, &ew_add_kind())
}

/// [`run_stencil`] with the additions of kind `add_kind`.
pub(crate) fn run_stencil_adding_with(
    n: i64,
    iters: usize,
    fusion: FusionConfig,
    strip_bytes: Option<usize>,
    jit: Option<Arc<Jit>>,
    add_kind: &Arc<TaskKind>,
) -> (Vec<f64>, Rig) {
    let r = recording_rig(2, fusion, strip_bytes, jit);
    let grid = stencil_grid(&r.ctx, n);
    for _ in 0..iters {
        stencil_iteration_adding_with(&r.ctx, &grid, n, &[2, 2], add_kind);
    }
    r.ctx.flush_window().unwrap();
    let out = r.ctx.read::<f64>(&grid.view()).unwrap();
    (out, r)
}

#[test]
pub(crate) fn stencil_runs_two_tasks_per_iteration_with_four_temporaries() {
    let (n, iters) = (12, 6);
    let want = stencil_model(n, iters);
    let (off, off_rig) = run_stencil(n, iters, FusionConfig::off(), None, None);
    assert_eq!(
        bits(&off),
        bits(&want),
        "fusion off vs the sequential model"
    );
    assert_eq!(off_rig.backend.stats().tasks_executed, 6 * iters as u64);
    let fused_name = [
        ew_add_kind(),
        ew_add_kind(),
        ew_add_kind(),
        ew_add_kind(),
        ew_scale_kind(),
    ]
    .iter()
    .map(|k| k.name().to_string())
    .collect::<Vec<_>>()
    .join("+");
    for window in [Some(6), Some(7), Some(12), None] {
        let (on, r) = run_stencil(n, iters, fused(window), None, None);
        assert_eq!(bits(&on), bits(&off), "window {window:?}: fusion on vs off");
        assert_eq!(r.ctx.tasks_submitted(), 6 * iters as u64);
        assert_eq!(
            r.backend.stats().tasks_executed,
            2 * iters as u64,
            "window {window:?}: executed {:?}",
            r.runtime.take_stream_log()
        );
        let log = r.runtime.take_stream_log();
        let executed: Vec<&String> = log.iter().flat_map(|f| &f.executed).collect();
        let five = format!("{fused_name} (temporaries: 4)");
        let copy = ew_copy_kind().name().to_string();
        assert_eq!(
            executed.iter().filter(|e| ***e == five).count(),
            iters,
            "window {window:?}: {executed:?}"
        );
        assert_eq!(
            executed.iter().filter(|e| ***e == copy).count(),
            iters,
            "window {window:?}: {executed:?}"
        );
        assert_eq!(executed.len(), 2 * iters, "window {window:?}: {executed:?}");
        if window == Some(6) {
            // Every window after the first two is isomorphic to one already planned.
            let stats = r.runtime.planner_stats();
            assert!(stats.replayed > 0, "window 6: {stats:?}");
        }
        // The default strip size holds a whole 6x6 sub-store: no point is cut into strips.
        assert_eq!(r.backend.stats().strip_points, 0, "window {window:?}");
    }
}

#[test]
pub(crate) fn stencil_in_strips_matches_unfused() {
    let (n, iters) = (16, 4);
    let (off, _) = run_stencil(n, iters, FusionConfig::off(), None, None);
    assert_eq!(bits(&off), bits(&stencil_model(n, iters)));
    for strip_bytes in [8, 64, 256] {
        let (on, r) = run_stencil(n, iters, fused(Some(6)), Some(strip_bytes), None);
        assert!(
            r.backend.stats().strip_points > 0,
            "strip_bytes {strip_bytes}: no point ran in strips"
        );
        assert_eq!(r.backend.stats().tasks_executed, 2 * iters as u64);
        assert_eq!(
            bits(&on),
            bits(&off),
            "strip_bytes {strip_bytes}: fusion on vs off"
        );
    }
}

#[test]
pub(crate) fn stencil_temporaries_are_never_allocated() {
    let (n, iters) = (32i64, 3);
    let peak = |fusion: FusionConfig| {
        let r = rig(2, fusion, None, None);
        let grid = r
            .ctx
            .store_from_vec(&[n + 2, n + 2], stencil_init(n))
            .unwrap();
        // Warm-up iteration, then measure steady state.
        stencil_iteration(&r.ctx, &grid, n, &[2, 2]);
        r.ctx.flush_window().unwrap();
        r.backend.reset_peak_memory();
        for _ in 0..iters {
            stencil_iteration(&r.ctx, &grid, n, &[2, 2]);
        }
        r.ctx.flush_window().unwrap();
        let out = r.ctx.read::<f64>(&grid.view()).unwrap();
        (r.backend.stats().peak_store_bytes as usize, out)
    };
    let (peak_off, off) = peak(FusionConfig::off());
    let (peak_on, on) = peak(fused(Some(6)));
    assert_eq!(bits(&on), bits(&off));
    let grid_bytes = ((n + 2) * (n + 2) * 8) as usize;
    let plane = (n * n * 8) as usize;
    // Fused: the grid and `work`, never an `avg` temporary. Unfused: at least two n x n
    // temporaries live at once (an ADD's input and output) on top of the grid.
    assert!(
        peak_on <= grid_bytes + plane,
        "fusion on: peak {peak_on} bytes, grid {grid_bytes} + work {plane}"
    );
    assert!(
        peak_off >= grid_bytes + 2 * plane,
        "fusion off: peak {peak_off}"
    );
    assert!(peak_on < peak_off, "peak on {peak_on} vs off {peak_off}");
}

/// The stencil's fused task (four ADDs and the MULT, four temporaries) runs as one compiled
/// kernel, compiled once for all iterations, and computes the unfused grid bit for bit.
#[test]
pub(crate) fn stencil_runs_compiled_and_matches_unfused() {
    let (n, iters) = (12, 5);
    let (off, _) = run_stencil(n, iters, FusionConfig::off(), None, None);
    let jit = Arc::new(Jit::new());
    let (on, r) = run_stencil(n, iters, fused(Some(6)), None, Some(jit.clone()));
    assert_eq!(bits(&on), bits(&off), "JIT on vs fusion off");
    assert_eq!(r.backend.stats().tasks_executed, 2 * iters as u64);
    let runs = r.observed.take_fused();
    assert_eq!(runs.len(), iters, "one fused task per iteration");
    for (i, run) in runs.iter().enumerate() {
        assert_eq!(run.temporaries, 4, "iteration {i}");
        assert_eq!(
            run.compiled_points, 4,
            "iteration {i}: every point of the 2x2 launch"
        );
    }
    assert_eq!(r.backend.stats().compiled_points, 4 * iters as u64);
    let stats = jit.stats();
    assert_eq!(
        (stats.kernels_compiled, stats.compile_failures),
        (1, 0),
        "{stats:?}"
    );
}
