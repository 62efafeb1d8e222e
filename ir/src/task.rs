//! Index tasks: a kind launched over a domain, with (store, partition, privilege) arguments.

use std::sync::Arc;

use crate::dtype::Scalar;
use crate::kind::TaskKind;
use crate::partition::Partition;
use crate::privilege::Privilege;
use crate::store::{Store, StoreRef};
use crate::tuple::Shape;

/// One store argument of an index task.
#[derive(Clone, Debug)]
pub struct TaskArg {
    /// The store, held by a task reference.
    pub store: StoreRef,
    /// How launch points map to sub-stores.
    pub partition: Partition,
    /// The access requested.
    pub privilege: Privilege,
}

/// A group of point tasks, one per point of `launch_domain` (paper §3.2). Build it with
/// [`IndexTask::new`] and the `arg`/`scalar` methods; `Context::submit` checks it against
/// its kind's contract.
#[derive(Clone, Debug)]
pub struct IndexTask {
    kind: Arc<TaskKind>,
    launch_domain: Shape,
    args: Vec<TaskArg>,
    scalars: Vec<Scalar>,
}

impl IndexTask {
    /// A task of `kind` over `launch_domain` with no arguments yet.
    pub fn new(kind: &Arc<TaskKind>, launch_domain: Shape) -> Self {
        IndexTask {
            kind: Arc::clone(kind),
            launch_domain,
            // Sized for what the kind declares: building a task allocates once per list.
            args: Vec::with_capacity(kind.args().len()),
            scalars: Vec::with_capacity(kind.scalars().len()),
        }
    }

    /// Appends a store argument.
    pub fn arg(mut self, store: &Store, partition: Partition, privilege: Privilege) -> Self {
        self.args.push(TaskArg {
            store: store.task_ref(),
            partition,
            privilege,
        });
        self
    }

    /// Appends a scalar argument.
    pub fn scalar(mut self, value: impl Into<Scalar>) -> Self {
        self.scalars.push(value.into());
        self
    }

    /// The task's kind.
    pub fn kind(&self) -> &Arc<TaskKind> {
        &self.kind
    }

    /// The launch domain.
    pub fn launch_domain(&self) -> Shape {
        self.launch_domain
    }

    /// The store arguments.
    pub fn args(&self) -> &[TaskArg] {
        &self.args
    }

    /// The scalar arguments.
    pub fn scalars(&self) -> &[Scalar] {
        &self.scalars
    }

    /// True for small scalar work (`alpha = rr / pq`): an element-wise kind over one point
    /// whose every argument is a 0-d store reached whole (through `Replicate`). Its point
    /// task sees the same values at any point of any launch domain, so fusion may run it
    /// again at every point of a larger launch ([`IndexTask::relaunched`]).
    pub fn is_scalar(&self) -> bool {
        self.launch_domain.volume() == 1
            && self.kind.is_elementwise()
            && self
                .args
                .iter()
                .all(|a| a.store.shape().dims() == 0 && a.partition == Partition::replicate())
    }

    /// This task over `launch` instead, when it [`is_scalar`](IndexTask::is_scalar) (every
    /// point of `launch` then computes the same values); the task unchanged as the error
    /// otherwise. Only fusion uses it, for scalar work whose results stay point-local.
    pub fn relaunched(mut self, launch: Shape) -> Result<IndexTask, IndexTask> {
        if !self.is_scalar() {
            return Err(self);
        }
        self.launch_domain = launch;
        Ok(self)
    }
}

macro_rules! scalar_from {
    ($t:ty, $v:ident) => {
        impl From<$t> for Scalar {
            fn from(x: $t) -> Scalar {
                Scalar::$v(x)
            }
        }
    };
}
scalar_from!(f64, F64);
scalar_from!(f32, F32);
scalar_from!(i64, I64);
scalar_from!(i32, I32);
scalar_from!(bool, Bool);
scalar_from!(crate::dtype::Complex32, C64);
scalar_from!(crate::dtype::Complex64, C128);
