//! The array library's handle on a diffuse runtime.

use std::sync::Arc;

use diffuse_ir::{Context, IndexTask, Shape};

use crate::error::ArrayError;
use crate::partitioner::Partitioner;

/// What every array of one program shares: the IR context its tasks go to, and the
/// partitioner that sizes their launch domains for the runtime's processors. Cheap to clone.
#[derive(Clone)]
pub struct ArrayContext {
    inner: Arc<Inner>,
}

struct Inner {
    ctx: Context,
    partitioner: Partitioner,
}

impl ArrayContext {
    /// Arrays on `ctx`, one block per processor of its runtime (fewer for arrays smaller than
    /// the runtime's `min_block` per processor).
    pub fn new(ctx: Context) -> Self {
        let partitioner = Partitioner::new(ctx.processors()).with_min_block(ctx.min_block());
        ArrayContext {
            inner: Arc::new(Inner { ctx, partitioner }),
        }
    }

    /// The IR context tasks are submitted to.
    pub fn ir(&self) -> &Context {
        &self.inner.ctx
    }

    /// The partitioner choosing launch domains.
    pub fn partitioner(&self) -> Partitioner {
        self.inner.partitioner
    }

    /// The launch domain for an operation producing (or walking) an array of `shape`.
    pub(crate) fn launch_for(&self, shape: Shape) -> Shape {
        self.inner.partitioner.launch_for(shape)
    }

    /// Submits one task.
    pub(crate) fn submit(&self, task: IndexTask) -> Result<(), ArrayError> {
        Ok(self.inner.ctx.submit(task)?)
    }

    /// Runs every task submitted so far (a window boundary for the runtime behind it).
    pub fn flush(&self) -> Result<(), ArrayError> {
        Ok(self.inner.ctx.flush_window()?)
    }

    /// Fails unless `other` is this same context (arrays of two runtimes cannot be mixed;
    /// other libraries taking this library's arrays check it too).
    pub fn check_same(&self, other: &ArrayContext, op: &'static str) -> Result<(), ArrayError> {
        if Arc::ptr_eq(&self.inner, &other.inner) {
            Ok(())
        } else {
            Err(ArrayError::ContextMismatch { op })
        }
    }
}
