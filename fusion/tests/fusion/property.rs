//! Property tests over random windows (1 to 12 tasks over four stores, through `Replicate`
//! and a few interned tilings, over three launch domains, one of them a single point, with
//! read, write, read-write and sum-reduction privileges; each task obeys the IR's
//! interference rule). Checked against an independent brute-force reading of the paper's
//! definitions:
//!
//! - the execution order of `analyse` is a permutation of the window that never moves a
//!   task across one it depends on (every pair sharing a store one of them changes keeps
//!   its order), and the groups cover that order contiguously;
//! - every stage of a group satisfies Figure 7's constraints, checked pairwise over `i < j`;
//!   a group has several stages only over a single point, and each stage starts with a task
//!   that violates a constraint with the stage before it;
//! - every group is maximal: no task placed after it that its scan reached (the scan stops
//!   after passing over `PlanOptions::lookahead` tasks, and beyond a passed task only
//!   element-wise tasks may join element-wise groups) could join it (each violates a
//!   constraint with it, only the launch domain for a single-point group, or
//!   depends on a task issued before it and not yet placed), and the violation reported is
//!   one the brute force finds for the first task that was ready to join (launch domains
//!   first);
//! - each group's temporaries are exactly the stores the Definition of §5.1 admits (in order
//!   of first appearance; a store reached through two partitions, which only stages can
//!   do, is none), and the fused signature has one argument per (store, partition),
//!   temporaries excluded;
//! - `Planner::new().plan` equals `analyse` on a window, and again when it replays its
//!   decision for an isomorphic copy built from fresh stores.

use std::collections::HashSet;
use std::ops::Range;

use diffuse_fusion::{PlanOptions, Planner, Violation};

use crate::fused::signature;
use diffuse_ir::{Context, IndexTask, Partition, Privilege, Projection, Store, StoreId, TaskArg};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

use crate::common::{analyse, ctx, elementwise_task, plan_now, pt, sh, store, task, R, RW, SUM, W};

/// Store shapes: the tilings of 4 and of 2 cover `[8]` over 4 points but not `[16]`.
const SHAPES: [&[i64]; 4] = [&[8], &[8], &[8], &[16]];
const LAUNCHES: [&[i64]; 3] = [&[4], &[2], &[1]];

/// `Replicate`, tiles of 4, tiles of 2, and tiles of 2 of the view `[2, 6)`.
fn partitions() -> [Partition; 4] {
    let id = Projection::identity(1).unwrap();
    [
        Partition::replicate(),
        Partition::tiling(sh(&[4]), pt(&[0]), id.clone()).unwrap(),
        Partition::tiling(sh(&[2]), pt(&[0]), id.clone()).unwrap(),
        Partition::tiling_of_view(sh(&[2]), pt(&[2]), id, sh(&[4])).unwrap(),
    ]
}

#[derive(Clone, Copy, Debug)]
struct ArgSpec {
    store: usize,
    partition: usize,
    privilege: Privilege,
}

#[derive(Clone, Debug)]
struct TaskSpec {
    launch: usize,
    /// An element-wise kind (groups reach past passed tasks only for element-wise work).
    elementwise: bool,
    args: Vec<ArgSpec>,
}

#[derive(Clone, Debug)]
struct WindowSpec {
    live: Vec<bool>,
    tasks: Vec<TaskSpec>,
}

/// Drops arguments that would make the task interfere with itself (a store changed by one
/// argument named by another, unless both reduce with the same operator).
fn without_interference(args: Vec<ArgSpec>) -> Vec<ArgSpec> {
    let mut kept: Vec<ArgSpec> = Vec::new();
    for a in args {
        let ok = kept.iter().all(|k| {
            k.store != a.store
                || (!k.privilege.mutates() && !a.privilege.mutates())
                || (k.privilege == SUM && a.privilege == SUM)
        });
        if ok {
            kept.push(a);
        }
    }
    kept
}

fn arg_spec() -> impl Strategy<Value = ArgSpec> {
    (
        0..SHAPES.len(),
        // Mostly the tiling that matches the common launch domain, so groups grow.
        prop::sample::select(vec![0usize, 1, 2, 2, 2, 2, 3]),
        prop_oneof![4 => Just(R), 3 => Just(W), 1 => Just(RW), 1 => Just(SUM)],
    )
        .prop_map(|(store, partition, privilege)| ArgSpec {
            store,
            partition,
            privilege,
        })
}

fn task_spec() -> impl Strategy<Value = TaskSpec> {
    (
        prop::sample::select(vec![0usize, 0, 0, 0, 0, 0, 0, 1, 2, 2]),
        prop::bool::weighted(0.8),
        prop::collection::vec(arg_spec(), 1..=3),
    )
        .prop_map(|(launch, elementwise, args)| TaskSpec {
            launch,
            elementwise,
            args: without_interference(args),
        })
}

fn window_spec() -> impl Strategy<Value = WindowSpec> {
    (
        prop::collection::vec(any::<bool>(), SHAPES.len()),
        prop::collection::vec(task_spec(), 1..=12),
    )
        .prop_map(|(live, tasks)| WindowSpec { live, tasks })
}

/// Builds the window over fresh stores; returns it with the handles of the live stores
/// (the others are dropped, leaving only task references).
fn build(c: &Context, spec: &WindowSpec) -> (Vec<IndexTask>, Vec<Store>) {
    let stores: Vec<Store> = SHAPES.iter().map(|s| store(c, s)).collect();
    let parts = partitions();
    let tasks = spec
        .tasks
        .iter()
        .map(|t| {
            let args: Vec<(&Store, &Partition, Privilege)> = t
                .args
                .iter()
                .map(|a| (&stores[a.store], &parts[a.partition], a.privilege))
                .collect();
            if t.elementwise {
                elementwise_task(LAUNCHES[t.launch], &args)
            } else {
                task(LAUNCHES[t.launch], &args)
            }
        })
        .collect();
    let kept = stores
        .into_iter()
        .zip(&spec.live)
        .filter_map(|(s, &live)| live.then_some(s))
        .collect();
    (tasks, kept)
}

/// Every violation of Figure 7 between `earlier` (issued first) and `later`, by store.
fn pair_violations(earlier: &IndexTask, later: &IndexTask) -> Vec<Violation> {
    let mut found = Vec::new();
    for a in earlier.args() {
        for b in later.args() {
            let s = a.store.id();
            if s != b.store.id() {
                continue;
            }
            let (x, y) = (a.privilege, b.privilege);
            let other = a.partition != b.partition;
            if x.writes() && (y.reads() || y.writes()) && other {
                found.push(Violation::TrueDependence(s));
            }
            if x.reads() && y.writes() && other {
                found.push(Violation::AntiDependence(s));
            }
            let rd_then_access = x.is_reduction() && (y.reads() || y.writes());
            let access_then_rd = y.is_reduction() && (x.reads() || x.writes());
            if rd_then_access || access_then_rd {
                found.push(Violation::Reduction(s));
            }
        }
    }
    found
}

/// Every violation of Figure 7 within `tasks`, checked over all pairs `i < j`.
fn violations(tasks: &[IndexTask]) -> Vec<Violation> {
    let mut found = Vec::new();
    if let Some(first) = tasks.first() {
        if tasks
            .iter()
            .any(|t| t.launch_domain() != first.launch_domain())
        {
            found.push(Violation::LaunchDomain);
        }
    }
    for (i, ti) in tasks.iter().enumerate() {
        for tj in &tasks[i + 1..] {
            found.extend(pair_violations(ti, tj));
        }
    }
    found
}

/// The arguments of `tasks` naming store `s`, with their task's launch domain.
fn args_of(tasks: &[IndexTask], s: StoreId) -> Vec<(diffuse_ir::Shape, &TaskArg)> {
    tasks
        .iter()
        .flat_map(|t| t.args().iter().map(move |a| (t.launch_domain(), a)))
        .filter(|(_, a)| a.store.id() == s)
        .collect()
}

/// The temporaries of fusing `window[group]` by the Definition of §5.1, in order of first
/// appearance: every read in the group follows a covering write through the same partition
/// by an earlier task of the group; no later task of the window names the store; the
/// application holds no handle; the group does not reduce it.
fn reference_temporaries(window: &[IndexTask], group: Range<usize>) -> Vec<StoreId> {
    let (tasks, after) = (&window[group.clone()], &window[group.end..]);
    let mut order = Vec::new();
    for a in tasks.iter().flat_map(|t| t.args()) {
        if !order.contains(&a.store.id()) {
            order.push(a.store.id());
        }
    }
    order
        .into_iter()
        .filter(|&s| {
            let all = args_of(tasks, s);
            let held = all.iter().any(|(_, a)| a.store.app_handles() > 0);
            let used_later = !args_of(after, s).is_empty();
            let reduced = all.iter().any(|(_, a)| a.privilege.is_reduction());
            let one_partition = all.iter().all(|(_, a)| a.partition == all[0].1.partition);
            let reads_defined = tasks.iter().enumerate().all(|(j, tj)| {
                tj.args()
                    .iter()
                    .filter(|a| a.store.id() == s && a.privilege.reads())
                    .all(|read| {
                        args_of(&tasks[..j], s).iter().any(|(launch, w)| {
                            w.privilege.writes()
                                && w.partition == read.partition
                                && w.partition.covers(w.store.shape(), *launch)
                        })
                    })
            });
            !held && !used_later && !reduced && one_partition && reads_defined
        })
        .collect()
}

/// True when `later` must stay after `earlier` (issued first): they share a store that one
/// of them changes.
fn depends(earlier: &IndexTask, later: &IndexTask) -> bool {
    earlier.args().iter().any(|a| {
        later.args().iter().any(|b| {
            a.store.id() == b.store.id() && (a.privilege.mutates() || b.privilege.mutates())
        })
    })
}

fn check_analysis(window: &[IndexTask]) -> Result<(), TestCaseError> {
    let plan = analyse(window);
    prop_assert!(!plan.memoized);
    // The execution order: a permutation of the window that keeps every dependence.
    let order: Vec<usize> = plan
        .order
        .clone()
        .unwrap_or_else(|| (0..window.len()).collect());
    prop_assert!(plan
        .order
        .as_ref()
        .is_none_or(|o| o.iter().enumerate().any(|(i, &t)| i != t)));
    let mut sorted = order.clone();
    sorted.sort_unstable();
    prop_assert_eq!(sorted, (0..window.len()).collect::<Vec<_>>());
    let mut position = vec![0; window.len()];
    for (p, &t) in order.iter().enumerate() {
        position[t] = p;
    }
    for i in 0..window.len() {
        for j in i + 1..window.len() {
            if depends(&window[i], &window[j]) {
                prop_assert!(position[i] < position[j], "{i} -> {j} reversed: {order:?}");
            }
        }
    }
    let executed: Vec<IndexTask> = order.iter().map(|&t| window[t].clone()).collect();
    let mut next = 0;
    for g in &plan.groups {
        // Contiguous, in order, non-empty.
        prop_assert_eq!(g.tasks.start, next);
        prop_assert!(g.tasks.end > g.tasks.start);
        next = g.tasks.end;
        let tasks = &executed[g.tasks.clone()];
        let one_point = tasks
            .iter()
            .all(|t| t.launch_domain() == tasks[0].launch_domain())
            && tasks[0].launch_domain().volume() == 1;
        // Stages: ascending, inside the group, only over one point.
        prop_assert!(g.stages.is_empty() || one_point, "stages {:?}", g.stages);
        prop_assert!(g.stages.windows(2).all(|w| w[0] < w[1]));
        prop_assert!(g.stages.iter().all(|&s| 0 < s && s < tasks.len()));
        let bounds: Vec<usize> = std::iter::once(0)
            .chain(g.stages.iter().copied())
            .chain(std::iter::once(tasks.len()))
            .collect();
        for (k, stage) in bounds.windows(2).enumerate() {
            // Each stage fusible by the brute-force constraints.
            let inside = violations(&tasks[stage[0]..stage[1]]);
            prop_assert!(
                inside.is_empty(),
                "stage {k} of group {:?} violates {:?}",
                g.tasks,
                inside
            );
            // A stage starts only where the stage before it could not take the task.
            if k > 0 {
                let mut grown = tasks[bounds[k - 1]..stage[0]].to_vec();
                grown.push(tasks[stage[0]].clone());
                let found = violations(&grown);
                prop_assert!(
                    !found.is_empty(),
                    "stage {k} of group {:?} starts without a violation",
                    g.tasks
                );
            }
        }
        // Whether `grown` (the group's tasks before a candidate, and the candidate) could be
        // one group: a single-point group takes everything but another launch domain, in a
        // new stage where needed.
        let could_be_one = |grown: &[IndexTask]| {
            let found = violations(grown);
            let stageable = one_point && !found.contains(&Violation::LaunchDomain);
            (found.is_empty() || stageable, found)
        };
        // Maximal: a task placed after the group could not join it, for a constraint or a
        // dependence on a task not placed yet that was issued before it.
        let members: Vec<usize> = order[g.tasks.clone()].to_vec();
        let rest: Vec<usize> = order[g.tasks.end..].to_vec();
        // The scan stops after passing over `lookahead` tasks: it never reached later ones.
        let lookahead = PlanOptions::default().lookahead;
        let passed_before = |t: usize| rest.iter().filter(|&&u| u < t).count();
        // Beyond a passed task, only element-wise work joins, and only element-wise groups.
        let scanned = |t: usize| {
            passed_before(t) < lookahead
                && (passed_before(t) == 0
                    || window[t].kind().is_elementwise()
                        && members
                            .iter()
                            .filter(|&&m| m < t)
                            .all(|&m| window[m].kind().is_elementwise()))
        };
        let blocked = |t: usize| {
            rest.iter()
                .any(|&u| u < t && depends(&window[u], &window[t]))
        };
        let admitted_with = |t: usize| {
            let mut grown: Vec<IndexTask> = members
                .iter()
                .filter(|&&m| m < t)
                .map(|&m| window[m].clone())
                .collect();
            grown.push(window[t].clone());
            could_be_one(&grown).1
        };
        for &t in rest.iter().filter(|&&t| scanned(t)) {
            let mut grown = tasks.to_vec();
            grown.push(window[t].clone());
            prop_assert!(
                blocked(t) || !could_be_one(&grown).0,
                "task {} could join group {:?} ({:?})",
                t,
                g.tasks,
                order
            );
        }
        // Stopped by what the first task ready to join violated.
        let mut ready: Vec<usize> = rest
            .iter()
            .copied()
            .filter(|&t| scanned(t) && !blocked(t))
            .collect();
        ready.sort_unstable();
        match ready.first() {
            None => prop_assert_eq!(g.stopped_by, None),
            Some(&t) => {
                let found = admitted_with(t);
                let stop = g.stopped_by;
                prop_assert!(
                    stop.is_some_and(|v| found.contains(&v)),
                    "{stop:?} not in {found:?}"
                );
                if found.contains(&Violation::LaunchDomain) {
                    prop_assert_eq!(stop, Some(Violation::LaunchDomain));
                } else {
                    prop_assert!(!one_point, "a single-point group stopped by {stop:?}");
                }
            }
        }
        // Temporaries by the Definition.
        prop_assert_eq!(
            &g.temporaries,
            &reference_temporaries(&executed, g.tasks.clone())
        );
        // The fused signature: one argument per (store, partition), no temporaries (a 0-d
        // store is reached whole, through `Replicate`).
        let mut seen = HashSet::new();
        for (store, partition, _) in signature(tasks, &g.temporaries) {
            prop_assert!(!g.temporaries.contains(&store));
            prop_assert!(seen.insert((store, partition)));
        }
        let expected: HashSet<_> = tasks
            .iter()
            .flat_map(|t| t.args())
            .filter(|a| !g.temporaries.contains(&a.store.id()))
            .map(|a| match a.store.shape().dims() {
                0 => (a.store.id(), Partition::replicate()),
                _ => (a.store.id(), a.partition.clone()),
            })
            .collect();
        prop_assert_eq!(seen, expected);
    }
    prop_assert_eq!(next, window.len());
    Ok(())
}

fn check_planner(spec: &WindowSpec) -> Result<(), TestCaseError> {
    let c = ctx();
    let mut planner = Planner::new();
    let (window, _held) = build(&c, spec);
    let plan = plan_now(&mut planner, &window);
    prop_assert!(!plan.memoized);
    let fresh = analyse(&window);
    prop_assert_eq!((&plan.order, &plan.groups), (&fresh.order, &fresh.groups));

    let (copy, _held_copy) = build(&c, spec);
    let replayed = plan_now(&mut planner, &copy);
    prop_assert!(replayed.memoized);
    let fresh = analyse(&copy);
    prop_assert_eq!(
        (&replayed.order, &replayed.groups),
        (&fresh.order, &fresh.groups)
    );
    prop_assert_eq!(planner.stats().analysed, 1);
    prop_assert_eq!(planner.stats().replayed, 1);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn analyse_agrees_with_the_definitions(spec in window_spec()) {
        let c = ctx();
        let (window, _held) = build(&c, &spec);
        check_analysis(&window)?;
    }

    #[test]
    fn planner_equals_analyse_fresh_and_replayed(spec in window_spec()) {
        check_planner(&spec)?;
    }
}
