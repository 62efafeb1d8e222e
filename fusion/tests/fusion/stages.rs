//! Stages of a group launched over one point: a constraint on stores does not end such a
//! group (there is no other point to communicate with); the task that violates it starts a
//! stage that runs after the earlier ones (their reductions folded). Launch domains still
//! end it, groups over several points never have stages, and memoized decisions replay them.

use diffuse_fusion::{HeldStores, PlanOptions, Planner, Violation};
use diffuse_ir::{IndexTask, Partition, Store};

use crate::common::{
    analyse, assert_two_groups_split_by, blocked, ctx, plan_now, store, task, view_blocked, R, SUM,
    W,
};

/// The stencil of the paper's Figure 2 on an 8 x 8 grid over `launch`: the five shifted
/// interior views of `grid` summed into `tmp`, then `tmp` copied back into the interior.
fn stencil(grid: &Store, tmp: &Store, launch: &[i64]) -> Vec<IndexTask> {
    let view = |r: i64, c: i64| view_blocked(grid, &[r, c], &[6, 6], launch);
    let whole = blocked(tmp, launch);
    vec![
        task(
            launch,
            &[
                (grid, &view(1, 1), R),
                (grid, &view(0, 1), R),
                (grid, &view(2, 1), R),
                (grid, &view(1, 0), R),
                (grid, &view(1, 2), R),
                (tmp, &whole, W),
            ],
        ),
        task(launch, &[(tmp, &whole, R), (grid, &view(1, 1), W)]),
    ]
}

#[test]
fn a_one_point_stencil_and_its_copy_back_are_one_group_of_two_stages() {
    let c = ctx();
    let grid = store(&c, &[8, 8]);
    let tmp = store(&c, &[6, 6]);
    let window = stencil(&grid, &tmp, &[1, 1]);
    let tmp_id = tmp.id();
    drop(tmp);
    let plan = analyse(&window);
    assert_eq!(plan.groups.len(), 1, "{plan:?}");
    let g = &plan.groups[0];
    assert_eq!(g.tasks, 0..2);
    assert_eq!(g.stages, vec![1]);
    assert_eq!(g.stopped_by, None);
    // `tmp` is written whole and read through the same partition: still a temporary.
    assert_eq!(g.temporaries, vec![tmp_id]);
}

#[test]
fn over_several_points_the_copy_back_ends_the_group() {
    let c = ctx();
    let grid = store(&c, &[8, 8]);
    let tmp = store(&c, &[6, 6]);
    let window = stencil(&grid, &tmp, &[2, 1]);
    let plan = analyse(&window);
    assert_two_groups_split_by(&plan, Violation::AntiDependence(grid.id()));
    assert!(plan.groups.iter().all(|g| g.stages.is_empty()));
}

#[test]
fn without_the_option_a_one_point_group_ends_at_the_dependence() {
    let c = ctx();
    let grid = store(&c, &[8, 8]);
    let tmp = store(&c, &[6, 6]);
    let window = stencil(&grid, &tmp, &[1, 1]);
    let options = PlanOptions {
        one_point_stages: false,
        ..PlanOptions::default()
    };
    let plan = diffuse_fusion::analyse_with(&window, &HeldStores::of(&window), options);
    assert_two_groups_split_by(&plan, Violation::AntiDependence(grid.id()));
}

#[test]
fn reading_what_a_one_point_group_reduced_starts_a_stage() {
    let c = ctx();
    let x = store(&c, &[8]);
    let acc = store(&c, &[]);
    let whole = blocked(&x, &[1]);
    let head = view_blocked(&x, &[0], &[4], &[1]);
    let window = [
        // Stage 1: a write of x through its head.
        task(&[1], &[(&x, &head, W)]),
        // Stage 2 (reads x through another partition): the sum of x into acc.
        task(
            &[1],
            &[(&x, &whole, R), (&acc, &Partition::replicate(), SUM)],
        ),
        // Reads acc (the reduction constraint): stage 3, after stage 2's sum is folded.
        task(&[1], &[(&acc, &Partition::replicate(), R), (&x, &whole, W)]),
        // Over two points: another launch domain ends the group.
        task(
            &[2],
            &[
                (&x, &blocked(&x, &[2]), R),
                (&acc, &Partition::replicate(), SUM),
            ],
        ),
    ];
    let plan = analyse(&window);
    assert_two_groups_split_by(&plan, Violation::LaunchDomain);
    assert_eq!(plan.groups[0].tasks, 0..3);
    assert_eq!(plan.groups[0].stages, vec![1, 2]);
}

#[test]
fn each_stage_is_checked_on_its_own_and_a_third_stage_follows_a_second() {
    let c = ctx();
    let x = store(&c, &[8]);
    let y = store(&c, &[8]);
    let whole = |s: &Store| blocked(s, &[1]);
    let head = view_blocked(&x, &[0], &[4], &[1]);
    let tail = view_blocked(&x, &[4], &[4], &[1]);
    let window = [
        task(&[1], &[(&x, &whole(&x), W)]),
        // Stage 2: reads x through its head.
        task(&[1], &[(&x, &head, R), (&y, &whole(&y), W)]),
        // Joins stage 2: another read of x, through its tail.
        task(&[1], &[(&x, &tail, R), (&y, &whole(&y), R)]),
        // Writes x, which stage 2 read through two partitions: stage 3.
        task(&[1], &[(&y, &whole(&y), R), (&x, &head, W)]),
    ];
    let plan = analyse(&window);
    assert_eq!(plan.groups.len(), 1, "{plan:?}");
    assert_eq!(plan.groups[0].stages, vec![1, 3]);
}

#[test]
fn a_store_reached_through_two_partitions_across_stages_is_not_temporary() {
    let c = ctx();
    let t = store(&c, &[8]);
    let out = store(&c, &[4]);
    let whole = blocked(&t, &[1]);
    let shifted = view_blocked(&t, &[2], &[4], &[1]);
    let window = [
        task(&[1], &[(&t, &whole, W)]),
        task(&[1], &[(&t, &shifted, R), (&out, &blocked(&out, &[1]), W)]),
    ];
    drop(t);
    let plan = analyse(&window);
    assert_eq!(plan.groups.len(), 1, "{plan:?}");
    assert_eq!(plan.groups[0].stages, vec![1]);
    assert!(plan.groups[0].temporaries.is_empty());
}

#[test]
fn memoized_decisions_replay_the_stages() {
    let c = ctx();
    let mut planner = Planner::new();
    let (grid, tmp) = (store(&c, &[8, 8]), store(&c, &[6, 6]));
    let first = plan_now(&mut planner, &stencil(&grid, &tmp, &[1, 1]));
    let (grid2, tmp2) = (store(&c, &[8, 8]), store(&c, &[6, 6]));
    let second = plan_now(&mut planner, &stencil(&grid2, &tmp2, &[1, 1]));
    assert!(!first.memoized && second.memoized);
    assert_eq!(first.groups[0].stages, vec![1]);
    assert_eq!(second.groups[0].stages, vec![1]);
}

#[test]
fn a_memoized_decision_with_stages_is_not_replayed_over_several_points() {
    let c = ctx();
    let mut planner = Planner::new();
    let (grid, tmp) = (store(&c, &[8, 8]), store(&c, &[6, 6]));
    let one = plan_now(&mut planner, &stencil(&grid, &tmp, &[1, 1]));
    // The same window but over two points: numbered alike, yet no longer one point.
    let (grid2, tmp2) = (store(&c, &[8, 8]), store(&c, &[6, 6]));
    let two = plan_now(&mut planner, &stencil(&grid2, &tmp2, &[2, 1]));
    assert_eq!(one.groups[0].stages, vec![1]);
    assert!(!two.memoized);
    assert_eq!(two.groups.len(), 2, "{two:?}");
}
