//! Scalar work (`alpha = rr / pq`: an element-wise task over 0-d stores on one point) joins
//! a group of another launch domain and runs at every point of it, when what it writes
//! stays point-local (a temporary of the group) or the group runs on one point; otherwise it
//! is a group of its own, as before.

use diffuse_fusion::{analyse_with, group_launch, HeldStores, PlanOptions, Planner, Violation};
use diffuse_ir::{IndexTask, Partition, Store};

use crate::common::{
    analyse, assert_two_groups_split_by, blocked, ctx, elementwise_task, plan_now, sh, store, task,
    R, RW, SUM, W,
};

const L: [i64; 1] = [4];

/// `beta = rho / rho_prev` (scalar work on one point), then `p = p * beta` over `launch`.
fn beta_then_update(c: &diffuse_ir::Context, launch: &[i64]) -> (Vec<IndexTask>, [Store; 4]) {
    let (rho, rho_prev, beta, p) = (store(c, &[]), store(c, &[]), store(c, &[]), store(c, &[16]));
    let all = Partition::replicate();
    let pp = blocked(&p, launch);
    let window = vec![
        elementwise_task(
            &[],
            &[(&rho, &all, R), (&rho_prev, &all, R), (&beta, &all, W)],
        ),
        task(launch, &[(&beta, &all, R), (&p, &pp, RW)]),
    ];
    (window, [rho, rho_prev, beta, p])
}

#[test]
fn scalar_work_whose_result_stays_inside_joins_the_launch() {
    let c = ctx();
    let (window, [rho, rho_prev, beta, p]) = beta_then_update(&c, &L);
    assert!(window[0].is_scalar() && !window[1].is_scalar());
    let id = beta.id();
    drop(beta);
    let plan = analyse(&window);
    assert_eq!(plan.groups.len(), 1);
    assert_eq!(plan.groups[0].temporaries, vec![id]);
    assert_eq!(group_launch(&window), sh(&L));
    drop((rho, rho_prev, p));
}

#[test]
fn scalar_work_whose_result_is_held_stays_apart_from_a_larger_launch() {
    let c = ctx();
    let (window, _stores) = beta_then_update(&c, &L);
    let plan = analyse(&window);
    assert_two_groups_split_by(&plan, Violation::LaunchDomain);
    assert_eq!(plan.groups[0].tasks, 0..1);
}

#[test]
fn scalar_work_joins_a_launch_of_one_point_even_when_its_result_is_held() {
    let c = ctx();
    let (window, _stores) = beta_then_update(&c, &[1]);
    let plan = analyse(&window);
    assert_eq!(plan.groups.len(), 1);
    assert!(plan.groups[0].temporaries.is_empty());
}

#[test]
fn scalar_work_that_updates_a_store_in_place_stays_apart() {
    let c = ctx();
    let (count, p) = (store(&c, &[]), store(&c, &[16]));
    let all = Partition::replicate();
    let pp = blocked(&p, &L);
    let window = [
        elementwise_task(&[], &[(&count, &all, RW)]),
        task(&L, &[(&count, &all, R), (&p, &pp, W)]),
    ];
    drop(count);
    assert_eq!(analyse(&window).groups.len(), 2);
}

#[test]
fn scalar_work_reading_what_the_group_reduces_waits_for_the_reduction() {
    let c = ctx();
    let (x, dot, alpha) = (store(&c, &[16]), store(&c, &[]), store(&c, &[]));
    let all = Partition::replicate();
    let px = blocked(&x, &L);
    let window = [
        task(&L, &[(&x, &px, R), (&dot, &all, SUM)]),
        elementwise_task(&[], &[(&dot, &all, R), (&alpha, &all, W)]),
    ];
    assert_two_groups_split_by(&analyse(&window), Violation::Reduction(dot.id()));
}

#[test]
fn without_absorption_scalar_work_keeps_its_launch() {
    let c = ctx();
    let (window, [_, _, beta, _p]) = beta_then_update(&c, &L);
    drop(beta);
    let held = HeldStores::of(&window);
    let options = PlanOptions {
        absorb_scalars: false,
        ..PlanOptions::default()
    };
    assert_eq!(analyse_with(&window, &held, options).groups.len(), 2);
    let mut planner = Planner::new().with_options(options);
    assert_eq!(plan_now(&mut planner, &window).groups.len(), 2);
}

#[test]
fn a_replayed_decision_absorbs_the_same_scalar_work() {
    let c = ctx();
    let mut planner = Planner::new();
    for round in 0..2 {
        let (window, [_, _, beta, _p]) = beta_then_update(&c, &L);
        drop(beta);
        let plan = plan_now(&mut planner, &window);
        assert_eq!(plan.memoized, round == 1);
        assert_eq!(plan.groups.len(), 1);
        assert_eq!(plan.groups[0].temporaries.len(), 1);
    }
}

#[test]
fn relaunching_is_only_for_scalar_work() {
    let c = ctx();
    let (window, _stores) = beta_then_update(&c, &L);
    let scalar = window[0]
        .clone()
        .relaunched(sh(&L))
        .expect("scalar work relaunches");
    assert_eq!(scalar.launch_domain(), sh(&L));
    let update = window[1].clone().relaunched(sh(&[2]));
    assert!(update.is_err_and(|t| t.launch_domain() == sh(&L)));
}
