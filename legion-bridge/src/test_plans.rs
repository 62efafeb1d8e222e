//! What the crate's unit tests build plans from: task kinds that never run, `f64` stores,
//! and plans of tasks placed on default CPUs.

use std::sync::Arc;

use diffuse_backend::{LaunchPlacement, LaunchPlan, LaunchTemplate};
use diffuse_ir::{Context, DType, IndexTask, Privilege, Store, TaskKind};

/// A kind with `f64` arguments of `privileges`, never run (names are process-wide: each
/// test gives its own).
pub(crate) fn kind(name: &str, privileges: &[Privilege]) -> Arc<TaskKind> {
    let mut b = TaskKind::builder(format!("legion-tests::{name}"));
    for (i, &p) in privileges.iter().enumerate() {
        b = b.arg(format!("a{i}"), DType::F64, p);
    }
    b.register(|_| Ok(())).expect("a fresh kind")
}

/// `f64` stores of `shapes`, on a context of their own.
pub(crate) fn f64_stores<const N: usize>(shapes: [&[i64]; N]) -> [Store; N] {
    let c = Context::detached();
    shapes.map(|shape| c.create_store(shape, DType::F64).expect("a store"))
}

/// A plan of `tasks` with `stages` (see `LaunchTemplate::stages`), without temporaries.
pub(crate) fn plan_of(tasks: Vec<IndexTask>, stages: &[usize]) -> LaunchPlan {
    let template = LaunchTemplate::new(&tasks, &[], stages, |_, _| {
        Ok::<_, ()>(LaunchPlacement::default_cpus(Vec::new(), 0))
    })
    .expect("a template");
    LaunchPlan::new(Arc::new(template), tasks).unwrap_or_else(|_| panic!("it fits"))
}
