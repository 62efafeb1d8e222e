//! Groups over the dependence graph: a task independent of a group no longer ends it (the
//! group takes the fusible tasks issued after it, and it runs after them), while a task
//! that depends on one passed over, or that one passed over depends on, keeps its place.

use diffuse_fusion::{Dependences, Plan, Planner, Violation};
use diffuse_ir::{IndexTask, Partition, Store};

use crate::common::{analyse, blocked, ctx, elementwise_task, group, plan_now, store, task, R, W};

const L: [i64; 1] = [4];

/// Fresh stores `a` and `b` of 16 elements and `x` of 8, and their tilings blocked over `L`,
/// `L` and `[2]`.
fn three_stores(c: &diffuse_ir::Context) -> ([Store; 3], [Partition; 3]) {
    let (a, b, x) = (store(c, &[16]), store(c, &[16]), store(c, &[8]));
    let blocks = [blocked(&a, &L), blocked(&b, &L), blocked(&x, &[2])];
    ([a, b, x], blocks)
}

/// Asserts that `plan` keeps the window's issue order and runs it as three groups.
fn assert_three_groups_in_issue_order(plan: &Plan) {
    assert_eq!(plan.order, None);
    assert_eq!(plan.groups.len(), 3);
}

/// `a = ...` over `L`, `x = ...` over another launch (so it cannot join), then `b = f(a)`
/// over `L`; with the stores (held).
fn write_other_read(c: &diffuse_ir::Context) -> (Vec<IndexTask>, [Store; 3]) {
    let ([a, b, x], [pa, pb, px]) = three_stores(c);
    let window = vec![
        elementwise_task(&L, &[(&a, &pa, W)]),
        elementwise_task(&[2], &[(&x, &px, W)]),
        elementwise_task(&L, &[(&a, &pa, R), (&b, &pb, W)]),
    ];
    (window, [a, b, x])
}

#[test]
fn an_independent_task_between_two_fusible_ones_runs_after_them() {
    let c = ctx();
    let (window, _stores) = write_other_read(&c);
    let plan = analyse(&window);
    assert_eq!(plan.order, Some(vec![0, 2, 1]));
    assert_eq!(
        plan.groups,
        vec![
            group(0..2, &[], Some(Violation::LaunchDomain)),
            group(2..3, &[], None)
        ]
    );
}

#[test]
fn a_task_depending_on_one_passed_over_keeps_its_place() {
    let ([a, b, x], [pa, pb, px]) = three_stores(&ctx());
    let pxl = blocked(&x, &L);
    // The third task reads x, which the second (passed over) writes: it must stay after it,
    // and so must the fourth, which reads what the third writes.
    let window = [
        task(&L, &[(&a, &pa, W)]),
        task(&[2], &[(&x, &px, W)]),
        task(&L, &[(&x, &pxl, R), (&b, &pb, W)]),
        task(&L, &[(&b, &pb, R), (&a, &pa, W)]),
    ];
    assert_three_groups_in_issue_order(&analyse(&window));
}

#[test]
fn a_write_passed_over_keeps_the_reads_issued_before_it_first() {
    let ([a, b, x], [pa, pb, px]) = three_stores(&ctx());
    // The second task (passed over) reads b; the third overwrites b: an anti dependence.
    let window = [
        task(&L, &[(&a, &pa, W)]),
        task(&[2], &[(&b, &blocked(&b, &[2]), R), (&x, &px, W)]),
        task(&L, &[(&a, &pa, R), (&b, &pb, W)]),
    ];
    let deps = Dependences::of(&window);
    assert_eq!(deps.before(2).collect::<Vec<_>>().len(), 2);
    assert_three_groups_in_issue_order(&analyse(&window));
}

#[test]
fn a_replayed_decision_keeps_the_order() {
    let c = ctx();
    let build = || write_other_read(&c).0;
    let mut planner = Planner::new();
    let first = plan_now(&mut planner, &build());
    let second = plan_now(&mut planner, &build());
    assert!(!first.memoized && second.memoized);
    assert_eq!(first.order, Some(vec![0, 2, 1]));
    assert_eq!(second.order, first.order);
    let ranges =
        |p: &diffuse_fusion::Plan| p.groups.iter().map(|g| g.tasks.clone()).collect::<Vec<_>>();
    assert_eq!(ranges(&second), ranges(&first));
}

#[test]
fn apply_order_puts_the_window_in_execution_order() {
    let c = ctx();
    let (window, _stores) = write_other_read(&c);
    let plan = analyse(&window);
    let mut names = vec!["first", "second", "third"];
    plan.apply_order(&mut names);
    assert_eq!(names, ["first", "third", "second"]);
}

/// A generator that is never asked for code (the analyses only look at whether one exists).
struct Unused;

impl diffuse_ir::MlirGenerator for Unused {
    fn generate(
        &self,
        _symbol: &str,
        _sig: &diffuse_ir::MlirSignature<'_>,
    ) -> Result<String, diffuse_ir::KernelError> {
        unreachable!("fusion never generates code")
    }
}

/// `a = ...` without a generator, `x = ...` over another launch, then `b = f(a)`, which has
/// one: taken from beyond `x` into `a`'s group only when kernels do not matter.
#[test]
fn a_group_takes_work_from_beyond_a_passed_task_only_as_compilable_as_itself() {
    use diffuse_fusion::{analyse_with, HeldStores, PlanOptions};
    use diffuse_ir::{DType, TaskKind};
    let compiled = TaskKind::builder("fusion-tests::reorder::compiled")
        .arg("a", DType::F64, R)
        .arg("b", DType::F64, W)
        .elementwise()
        .mlir(std::sync::Arc::new(Unused))
        .register(|_| Ok(()))
        .expect("a fresh kind");
    let c = ctx();
    let (mut window, [a, b, _x]) = write_other_read(&c);
    let (pa, pb) = (blocked(&a, &L), blocked(&b, &L));
    window[2] = IndexTask::new(&compiled, crate::common::sh(&L))
        .arg(&a, pa, R)
        .arg(&b, pb, W);
    let held = HeldStores::of(&window);
    let mixed = analyse_with(&window, &held, PlanOptions::default());
    assert_eq!(mixed.order, Some(vec![0, 2, 1]));
    let apart = PlanOptions {
        keep_uncompilable_apart: true,
        ..PlanOptions::default()
    };
    assert_three_groups_in_issue_order(&analyse_with(&window, &held, apart));
    // Directly after it, the compilable task still joins (as a strict prefix would).
    let adjacent = [window[0].clone(), window[2].clone()];
    assert_eq!(
        analyse_with(&adjacent, &HeldStores::of(&adjacent), apart)
            .groups
            .len(),
        1
    );
}

/// A group of work that is not element-wise (a row loop such as SpMV) takes nothing from
/// beyond a passed task: in its kernel the work would only leave the loops it fuses with.
#[test]
fn only_element_wise_groups_reach_past_a_passed_task() {
    let c = ctx();
    let (mut window, [a, ..]) = write_other_read(&c);
    window[0] = task(&L, &[(&a, &blocked(&a, &L), W)]);
    assert!(!window[0].kind().is_elementwise());
    assert_three_groups_in_issue_order(&analyse(&window));
}
