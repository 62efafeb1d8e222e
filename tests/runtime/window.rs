//! The fusion window: with fusion off every task executes as submitted, the adaptive
//! window grows on a long fusible chain, and a full window keeps held scalar work buffered.

use crate::common::fusion::*;
use crate::common::submit_blocked;
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

// ---------------------------------------------------------------------------------------------
// Scalar work at the end of a full window.
// ---------------------------------------------------------------------------------------------

/// A full window keeps lone scalar work that stands before its last group buffered with
/// that group: `v = x + y`, then `s = 2 a + b` (scalar work, its handle still held) and
/// `t = s * x` fill a window of 3; only `v` runs. Once the application drops `s`, the next
/// flush fuses `s` into `t`'s launch (computed at every point) instead of running it as a
/// one-point launch of its own. Results as unfused.
#[test]
fn a_full_window_keeps_held_scalar_work_before_its_last_group() {
    let n = 16i64;
    let run = |fusion: FusionConfig| {
        let r = recording_rig(2, fusion, None, None);
        let c = &r.ctx;
        let launch = Tuple::shape(&[2]).unwrap();
        let (x, y) = (random_vector(c, n, 4), random_vector(c, n, 5));
        let a = c.store_from_vec(&[], vec![0.75]).unwrap();
        let b = c.store_from_vec(&[], vec![-2.0]).unwrap();
        let v = whole(c, &[n]);
        submit_blocked(c, &ew_add_kind(), launch, &v, &x, &y).unwrap();
        let (s, t) = submit_scaled_by_scalar_work(c, &x, &a, &b, launch);
        let executed_while_held = executed_groups(&r.runtime.take_stream_log());
        drop(s);
        c.flush_window().unwrap();
        let executed_at_flush = executed_groups(&r.runtime.take_stream_log());
        let values = (
            c.read::<f64>(&v.view()).unwrap(),
            c.read::<f64>(&t.view()).unwrap(),
        );
        (values, executed_while_held, executed_at_flush)
    };
    let (want, _, _) = run(FusionConfig::off());
    let ((v, t), while_held, at_flush) = run(fused(Some(3)));
    assert_eq!((bits(&v), bits(&t)), (bits(&want.0), bits(&want.1)));
    let names = |groups: &[(Vec<String>, usize)]| {
        groups.iter().map(|(g, _)| g.join("+")).collect::<Vec<_>>()
    };
    assert_eq!(names(&while_held), ["embedded_test.fusion.add"]);
    assert_eq!(
        names(&at_flush),
        ["embedded_test.fusion.scalar_axpy+embedded_test.fusion.scale_by_store"]
    );
    assert_eq!(at_flush[0].1, 1, "s is a temporary of the launch");
}
