//! The fusion window: with fusion off every task executes as submitted, and the adaptive
//! window grows on a long fusible chain.

use crate::common::fusion::*;
use crate::stencil::*;
use diffuse::FusionConfig;
use diffuse_ir::{IndexTask, Privilege, Store, Tuple};

// ---------------------------------------------------------------------------------------------
// Fusion off.
// ---------------------------------------------------------------------------------------------

#[test]
fn fusion_off_executes_every_task_as_submitted() {
    let (n, iters) = (10, 5);
    let r = recording_rig(2, FusionConfig::off(), Some(8), None);
    let grid = stencil_grid(&r.ctx, n);
    for i in 0..iters {
        stencil_iteration(&r.ctx, &grid, n, &[2, 2]);
        // Nothing is buffered: every task has run by the time it was submitted.
        assert_eq!(r.backend.stats().tasks_executed, r.ctx.tasks_submitted());
        assert_eq!(r.ctx.tasks_submitted(), 6 * (i as u64 + 1));
    }
    r.ctx.flush_window().unwrap();
    assert_eq!(r.backend.stats().tasks_executed, 6 * iters as u64);
    assert_eq!(
        r.backend.stats().strip_points,
        0,
        "unfused tasks never run in strips"
    );
    assert!(r.runtime.take_stream_log().is_empty());
    assert_eq!(r.runtime.planner_stats().analysed, 0);
    assert_eq!(
        bits(&r.ctx.read::<f64>(&grid.view()).unwrap()),
        bits(&stencil_model(n, iters))
    );
}

// ---------------------------------------------------------------------------------------------
// The adaptive window.
// ---------------------------------------------------------------------------------------------

/// A long chain that fuses entirely: each full window is one group, so the adaptive window
/// doubles and keeps buffering (16 -> 32 -> 64): the 40 tasks execute as one fused task. A
/// chain longer than the largest window runs in windows of [`ADAPTIVE_MAX`] tasks.
#[test]
fn adaptive_window_grows_on_a_long_fusible_chain() {
    let n = 12usize;
    let r = rig(2, fused(None), None, None);
    assert_eq!(r.runtime.window_size(), diffuse::runtime::ADAPTIVE_START);
    let c = &r.ctx;
    let launch = Tuple::shape(&[3]).unwrap();
    let x = c.store_from_vec(&[n as i64], vec![0.5f64; n]).unwrap();
    let y = c.store_from_vec(&[n as i64], random_data(n, 3)).unwrap();
    let part = |s: &Store| s.view().blocked(launch).unwrap();
    // Submits `x += y` `times` times.
    let accumulate = |times: usize| {
        for _ in 0..times {
            c.submit(
                IndexTask::new(&ew_add_assign_kind(), launch)
                    .arg(&x, part(&x), Privilege::ReadWrite)
                    .arg(&y, part(&y), Privilege::Read),
            )
            .unwrap();
        }
    };
    accumulate(40);
    c.flush_window().unwrap();
    assert_eq!(
        r.runtime.window_size(),
        4 * diffuse::runtime::ADAPTIVE_START
    );
    assert_eq!(r.backend.stats().tasks_executed, 1);
    let want: Vec<f64> = random_data(n, 3)
        .iter()
        .map(|y| (0..40).fold(0.5, |x, _| x + y))
        .collect();
    assert_eq!(bits(&c.read::<f64>(&x.view()).unwrap()), bits(&want));

    // 600 more: two full windows of ADAPTIVE_MAX run as the window fills, the rest at the
    // flush.
    let max = diffuse::runtime::ADAPTIVE_MAX;
    accumulate(600);
    assert_eq!(r.runtime.window_size(), max);
    assert_eq!(r.backend.stats().tasks_executed, 1 + (600 / max) as u64);
    c.flush_window().unwrap();
    assert_eq!(r.backend.stats().tasks_executed, 2 + (600 / max) as u64);
    let want: Vec<f64> = random_data(n, 3)
        .iter()
        .map(|y| (0..640).fold(0.5, |x, _| x + y))
        .collect();
    assert_eq!(bits(&c.read::<f64>(&x.view()).unwrap()), bits(&want));
}
