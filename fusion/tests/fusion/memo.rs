//! Memoization (§5.2): a window isomorphic to one already planned (fresh stores, same
//! pattern) replays the decision with its own stores; windows that differ in aliasing,
//! liveness or coverage get other keys and are analysed afresh; the planner's counters.

use diffuse_fusion::{HeldStores, Planner, PlannerStats, Violation};
use diffuse_ir::{Context, IndexTask, Partition, Store, StoreId};

use crate::common::{
    analyse, blocked, canonicalize, ctx, group, plan_now, store, task, view_blocked, R, SUM, W,
};
use crate::figures::stencil_iteration;

const L: [i64; 1] = [4];

fn stats(analysed: u64, replayed: u64) -> PlannerStats {
    PlannerStats { analysed, replayed }
}

#[test]
fn an_isomorphic_stencil_iteration_replays_with_its_own_temporaries() {
    let c = ctx();
    let grid = store(&c, &[10, 10]);
    let mut planner = Planner::new();
    let first = stencil_iteration(&c, &grid, 8, &[2, 2]);
    let plan1 = plan_now(&mut planner, &first.tasks);
    assert!(!plan1.memoized);
    assert_eq!(plan1.groups, analyse(&first.tasks).groups);
    assert_eq!(planner.stats(), stats(1, 0));

    let second = stencil_iteration(&c, &grid, 8, &[2, 2]);
    assert_eq!(
        canonicalize(&first.tasks).key,
        canonicalize(&second.tasks).key
    );
    let plan2 = plan_now(&mut planner, &second.tasks);
    assert!(plan2.memoized);
    assert_eq!(
        plan2.groups,
        vec![second.fused_group(0, grid.id()), group(5..6, &[], None),]
    );
    for old in first.temporaries() {
        assert!(!plan2.groups[0].temporaries.contains(&old));
    }
    assert_eq!(planner.stats(), stats(1, 1));

    // A stencil over another (fresh, live) grid is isomorphic as well.
    let other_grid = store(&c, &[10, 10]);
    let third = stencil_iteration(&c, &other_grid, 8, &[2, 2]);
    let plan3 = plan_now(&mut planner, &third.tasks);
    assert!(plan3.memoized);
    assert_eq!(plan3.groups, analyse(&third.tasks).groups);
    assert_eq!(planner.stats(), stats(1, 2));
}

/// Figure 8's window over fresh stores; returns the tasks and the handles kept (v, norm).
fn figure8_window(c: &Context) -> (Vec<IndexTask>, Vec<Store>, StoreId) {
    let n = 16;
    let (x, y, z, w, v) = (
        store(c, &[n]),
        store(c, &[n]),
        store(c, &[n]),
        store(c, &[n]),
        store(c, &[n]),
    );
    let norm = store(c, &[]);
    let p = blocked(&x, &L);
    let half = view_blocked(&w, &[n / 2], &[n / 2], &L);
    let tasks = vec![
        task(&L, &[(&x, &p, R), (&z, &p, W)]),
        task(&L, &[(&y, &p, R), (&z, &p, R), (&w, &p, W)]),
        task(&L, &[(&w, &p, R), (&v, &p, W)]),
        task(&L, &[(&w, &half, R), (&norm, &Partition::replicate(), SUM)]),
    ];
    let w_id = w.id();
    (tasks, vec![v, norm], w_id)
}

/// The replayed decision must name the new window's stores everywhere, including in the
/// violation that ended a group (here the new `w`).
#[test]
fn a_replayed_violation_names_the_new_window_s_store() {
    let c = ctx();
    let mut planner = Planner::new();
    let (first, _kept1, w1) = figure8_window(&c);
    let plan1 = plan_now(&mut planner, &first);
    assert_eq!(
        plan1.groups[0].stopped_by,
        Some(Violation::TrueDependence(w1))
    );
    let (second, _kept2, w2) = figure8_window(&c);
    let plan2 = plan_now(&mut planner, &second);
    assert!(plan2.memoized);
    assert_eq!(plan2.groups.len(), 2);
    assert_eq!(plan2.groups[0].tasks, 0..3);
    assert_eq!(
        plan2.groups[0].stopped_by,
        Some(Violation::TrueDependence(w2)),
        "the replayed violation names the first window's store {w1}, not this window's {w2}"
    );
    assert_eq!(plan2.groups, analyse(&second).groups);
}

/// `t = f(a)` then `out = g(t, a)`, where the second task reads `a` through `second_read`.
fn two_step(c: &Context, second_read: impl Fn(&Store) -> Partition) -> (Vec<IndexTask>, Store) {
    let (a, t, out) = (store(c, &[16]), store(c, &[16]), store(c, &[16]));
    let p = blocked(&a, &L);
    let q = second_read(&a);
    let tasks = vec![
        task(&L, &[(&a, &p, R), (&t, &p, W)]),
        task(&L, &[(&t, &p, R), (&a, &q, R), (&out, &p, W)]),
    ];
    drop(t);
    (tasks, a)
}

#[test]
fn a_window_that_aliases_differently_is_not_replayed() {
    let c = ctx();
    let mut planner = Planner::new();
    let (same, _a1) = two_step(&c, |a| blocked(a, &L));
    // Replicate covers `a` as the blocked tiling does: only the partition pattern differs.
    let (replicated, _a2) = two_step(&c, |_| Partition::replicate());
    let (shifted, _a3) = two_step(&c, |a| view_blocked(a, &[2], &[12], &L));
    let keys = [&same, &replicated, &shifted].map(|w| canonicalize(w).key);
    assert_ne!(keys[0], keys[1]);
    assert_ne!(keys[0], keys[2]);
    assert_ne!(keys[1], keys[2]);
    assert!(!plan_now(&mut planner, &same).memoized);
    for w in [&replicated, &shifted] {
        let plan = plan_now(&mut planner, w);
        assert!(!plan.memoized);
        assert_eq!(plan.groups, analyse(w).groups);
    }
    assert_eq!(planner.stats(), stats(3, 0));
    // Each pattern replays on its next occurrence.
    let (same_again, _a4) = two_step(&c, |a| blocked(a, &L));
    let (replicated_again, _a5) = two_step(&c, |_| Partition::replicate());
    assert!(plan_now(&mut planner, &same_again).memoized);
    assert!(plan_now(&mut planner, &replicated_again).memoized);
    assert_eq!(planner.stats(), stats(3, 2));
}

/// `t = f()` covering, then `out = g(t)`, with `t` of `t_len` elements, optionally held.
fn produce_consume(c: &Context, t_len: i64, hold: bool) -> (Vec<IndexTask>, StoreId, Vec<Store>) {
    let (t, out) = (store(c, &[t_len]), store(c, &[16]));
    let p = blocked(&out, &L);
    let tasks = vec![
        task(&L, &[(&t, &p, W)]),
        task(&L, &[(&t, &p, R), (&out, &p, W)]),
    ];
    let id = t.id();
    let kept = if hold { vec![out, t] } else { vec![out] };
    (tasks, id, kept)
}

#[test]
fn liveness_is_part_of_the_key() {
    let c = ctx();
    let mut planner = Planner::new();
    let (dropped, t1, _k1) = produce_consume(&c, 16, false);
    let (held, t2, _k2) = produce_consume(&c, 16, true);
    assert_eq!(held[0].args()[0].store.id(), t2);
    assert_ne!(canonicalize(&dropped).key, canonicalize(&held).key);
    assert_eq!(
        plan_now(&mut planner, &dropped).groups,
        vec![group(0..2, &[t1], None)]
    );
    let plan = plan_now(&mut planner, &held);
    assert!(!plan.memoized, "a temporary kept alive must not replay");
    assert_eq!(plan.groups, vec![group(0..2, &[], None)]);
    let (dropped_again, t3, _k3) = produce_consume(&c, 16, false);
    let plan = plan_now(&mut planner, &dropped_again);
    assert!(plan.memoized);
    assert_eq!(plan.groups, vec![group(0..2, &[t3], None)]);
    assert_eq!(planner.stats(), stats(2, 1));
}

/// The application drops a handle (on another thread) while its window is planned: the key
/// and the decision both follow the one snapshot taken before, so the decision remembered for
/// the held store keeps it, and a later window whose store is still held replays that.
#[test]
fn a_handle_dropped_during_planning_does_not_change_the_decision() {
    let c = ctx();
    let mut planner = Planner::new();
    let (window, t1, kept) = produce_consume(&c, 16, true);
    let held = HeldStores::of(&window);
    assert!(held.contains(t1));
    drop(kept);
    assert_eq!(
        planner.plan(&window, &held).groups,
        vec![group(0..2, &[], None)],
        "the snapshot said the application holds t"
    );
    let (again, _t2, _k2) = produce_consume(&c, 16, true);
    let plan = plan_now(&mut planner, &again);
    assert!(plan.memoized);
    assert_eq!(plan.groups, vec![group(0..2, &[], None)]);
}

#[test]
fn coverage_is_part_of_the_key() {
    // The same partition covers a 16-element store over L but not a 32-element one.
    let c = ctx();
    let mut planner = Planner::new();
    let (covered, t1, _k1) = produce_consume(&c, 16, false);
    let (uncovered, t2, _k2) = produce_consume(&c, 32, false);
    assert_ne!(canonicalize(&covered).key, canonicalize(&uncovered).key);
    assert_eq!(
        plan_now(&mut planner, &covered).groups,
        vec![group(0..2, &[t1], None)]
    );
    let plan = plan_now(&mut planner, &uncovered);
    assert!(!plan.memoized);
    assert_eq!(plan.groups, vec![group(0..2, &[], None)]);
    assert!(!plan.groups[0].temporaries.contains(&t2));
}

#[test]
fn launch_domains_are_renamed_like_stores() {
    // The decision depends only on which tasks share a launch domain, so the same pattern
    // over another domain replays.
    let c = ctx();
    let mut planner = Planner::new();
    let window = |launch: &[i64]| {
        let (a, b) = (store(&c, &[16]), store(&c, &[16]));
        let p = blocked(&a, launch);
        let tasks = vec![
            task(launch, &[(&a, &p, W)]),
            task(launch, &[(&a, &p, R), (&b, &p, W)]),
            task(&[16], &[(&b, &Partition::replicate(), R)]),
        ];
        (tasks, [a, b])
    };
    let (four, _s4) = window(&[4]);
    let (two, _s2) = window(&[2]);
    assert_eq!(canonicalize(&four).key, canonicalize(&two).key);
    assert!(!plan_now(&mut planner, &four).memoized);
    let plan = plan_now(&mut planner, &two);
    assert!(plan.memoized);
    assert_eq!(plan.groups, analyse(&two).groups);
}

#[test]
fn a_planner_without_memo_always_analyses() {
    let c = ctx();
    let mut planner = Planner::without_memo();
    let (first, _k1, _) = figure8_window(&c);
    let (second, _k2, _) = figure8_window(&c);
    let p1 = plan_now(&mut planner, &first);
    let p2 = plan_now(&mut planner, &second);
    assert!(!p1.memoized && !p2.memoized);
    assert_eq!(p1.groups, analyse(&first).groups);
    assert_eq!(p2.groups, analyse(&second).groups);
    assert_eq!(planner.stats(), stats(2, 0));
    assert_eq!(Planner::new().stats(), stats(0, 0));
}
