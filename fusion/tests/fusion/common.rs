//! Shared helpers: a detached context (stores are only created, never computed on), task kinds registered once per process by name, and small
//! constructors for shapes, points, partitions, tasks and expected groups.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, Mutex, OnceLock};

use diffuse_fusion::{Group, HeldStores, Planner, Violation};
use diffuse_ir::{
    Context, DType, IndexTask, Partition, Point, Privilege, Shape, Store, StoreId, TaskKind, Tuple,
    View,
};

/// A context that builds stores and tasks but runs nothing: the analyses under test never
/// execute anything.
pub fn ctx() -> Context {
    Context::detached()
}

/// A shape (panics on malformed input: test construction only).
pub fn sh(extents: &[i64]) -> Shape {
    Tuple::shape(extents).expect("well-formed shape")
}

/// A point.
pub fn pt(coords: &[i64]) -> Point {
    Tuple::new(coords).expect("well-formed point")
}

/// A fresh `f64` store.
pub fn store(c: &Context, shape: &[i64]) -> Store {
    c.create_store(shape, DType::F64).expect("store")
}

/// The blocked tiling of the whole of `s` over `launch`.
pub fn blocked(s: &Store, launch: &[i64]) -> Partition {
    s.view().blocked(sh(launch)).expect("blocked tiling")
}

/// The blocked tiling of the view `[offset, offset + shape)` of `s` over `launch`. The view
/// (which holds an application handle) is dropped before returning.
pub fn view_blocked(s: &Store, offset: &[i64], shape: &[i64], launch: &[i64]) -> Partition {
    View::new(s, pt(offset), sh(shape))
        .expect("view inside its store")
        .blocked(sh(launch))
        .expect("blocked tiling of a view")
}

fn kinds() -> &'static Mutex<HashMap<String, Arc<TaskKind>>> {
    static KINDS: OnceLock<Mutex<HashMap<String, Arc<TaskKind>>>> = OnceLock::new();
    KINDS.get_or_init(|| Mutex::new(HashMap::new()))
}

/// The task kind `fusion-tests::{name}` with `f64` arguments of the given privileges and the
/// given scalars, registered on first use (the registry is process-global and the tests of
/// this target share one process). A name always means one contract. Its native variant is
/// never run by these tests.
pub fn kind(name: &str, args: &[Privilege], scalars: &[DType]) -> Arc<TaskKind> {
    registered(name, args, scalars, false)
}

/// [`kind`], element-wise when `elementwise` (the kind's contract includes it).
fn registered(
    name: &str,
    args: &[Privilege],
    scalars: &[DType],
    elementwise: bool,
) -> Arc<TaskKind> {
    let mut table = kinds().lock().unwrap_or_else(|e| e.into_inner());
    if let Some(k) = table.get(name) {
        let privileges: Vec<Privilege> = k.args().iter().map(|a| a.privilege).collect();
        assert_eq!(privileges, args, "kind {name} reused with another contract");
        return Arc::clone(k);
    }
    let mut b = TaskKind::builder(format!("fusion-tests::{name}"));
    for (i, &p) in args.iter().enumerate() {
        b = b.arg(format!("a{i}"), DType::F64, p);
    }
    for &s in scalars {
        b = b.scalar(s);
    }
    if elementwise {
        b = b.elementwise();
    }
    let k = b.register(|_| Ok(())).expect("registering a fresh kind");
    table.insert(name.to_string(), Arc::clone(&k));
    k
}

/// A kind named after its signature (`sig[R,W]`), for tests where the kind does not matter.
pub fn sig(args: &[Privilege]) -> Arc<TaskKind> {
    let name: Vec<String> = args.iter().map(|p| p.to_string()).collect();
    kind(&format!("sig[{}]", name.join(",")), args, &[])
}

/// A task of a signature kind over `launch` with the given arguments.
pub fn task(launch: &[i64], args: &[(&Store, &Partition, Privilege)]) -> IndexTask {
    let privileges: Vec<Privilege> = args.iter().map(|a| a.2).collect();
    let mut t = IndexTask::new(&sig(&privileges), sh(launch));
    for &(s, p, privilege) in args {
        t = t.arg(s, p.clone(), privilege);
    }
    t
}

/// A task of an element-wise signature kind (`ew[R,W]`) over `launch`: over 0-d stores
/// through `Replicate` on one point, scalar work.
pub fn elementwise_task(launch: &[i64], args: &[(&Store, &Partition, Privilege)]) -> IndexTask {
    let privileges: Vec<Privilege> = args.iter().map(|a| a.2).collect();
    let name: Vec<String> = privileges.iter().map(|p| p.to_string()).collect();
    let kind = registered(&format!("ew[{}]", name.join(",")), &privileges, &[], true);
    let mut t = IndexTask::new(&kind, sh(launch));
    for &(s, p, privilege) in args {
        t = t.arg(s, p.clone(), privilege);
    }
    t
}

/// The expected group `tasks` with `temporaries`, stopped by `stopped_by`.
pub fn group(tasks: Range<usize>, temporaries: &[StoreId], stopped_by: Option<Violation>) -> Group {
    Group {
        tasks,
        temporaries: temporaries.to_vec(),
        stages: Vec::new(),
        stopped_by,
    }
}

/// Shorthands for the privileges.
pub const R: Privilege = Privilege::Read;
pub const W: Privilege = Privilege::Write;
pub const RW: Privilege = Privilege::ReadWrite;
pub const SUM: Privilege = Privilege::Reduce(diffuse_ir::ReductionOp::Sum);
pub const PROD: Privilege = Privilege::Reduce(diffuse_ir::ReductionOp::Prod);

/// [`diffuse_fusion::analyse`] with the application's holds read now.
pub fn analyse(window: &[IndexTask]) -> diffuse_fusion::Plan {
    diffuse_fusion::analyse(window, &HeldStores::of(window))
}

/// Asserts that `plan` has two groups, the first stopped by `v`.
pub fn assert_two_groups_split_by(plan: &diffuse_fusion::Plan, v: Violation) {
    assert_eq!(plan.groups.len(), 2, "{plan:?}");
    assert_eq!(plan.groups[0].stopped_by, Some(v), "{plan:?}");
}

/// [`diffuse_fusion::temporaries`] with the application's holds read now.
pub fn temporaries(window: &[IndexTask], prefix: usize) -> Vec<diffuse_ir::StoreId> {
    diffuse_fusion::temporaries(window, prefix, &HeldStores::of(window))
}

/// [`diffuse_fusion::cheapest_cut`] with the application's holds read now.
pub fn cheapest_cut(window: &[IndexTask], min_len: usize) -> usize {
    diffuse_fusion::cheapest_cut(window, min_len, &HeldStores::of(window))
}

/// [`Planner::plan`] with the application's holds read now.
pub fn plan_now(planner: &mut Planner, window: &[IndexTask]) -> diffuse_fusion::Plan {
    planner.plan(window, &HeldStores::of(window))
}

/// [`diffuse_fusion::canonicalize`] with the application's holds read now.
pub fn canonicalize(window: &[IndexTask]) -> diffuse_fusion::Canonical {
    diffuse_fusion::canonicalize(window, &HeldStores::of(window))
}

/// The length of the longest prefix of `tasks` that the four constraints let fuse (at least 1
/// when `tasks` is non-empty), and the violation that ended it: the paper's groups, which
/// the planner's first group equals when nothing is reordered.
pub fn longest_fusible_prefix(tasks: &[IndexTask]) -> (usize, Option<Violation>) {
    let mut state = diffuse_fusion::PrefixState::new();
    for task in tasks {
        if let Err(v) = state.admits(task) {
            return (state.len(), Some(v));
        }
        state.push(task);
    }
    (state.len(), None)
}
