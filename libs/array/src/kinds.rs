//! Registering the library's task kinds on first use.
//!
//! Each (operation, dtype, operand pattern) is its own task kind, named
//! `array.<op>.<dtype>[.<pattern>]`, registered the first time a program needs it and looked
//! up by name afterwards.

use std::sync::Arc;

use diffuse_ir::{DType, IrError, KernelError, PointTask, TaskKind, TaskKindBuilder};

use crate::error::ArrayError;

/// A native kernel as a task kind registers it: run once per point task, on any thread.
pub(crate) trait Kernel:
    Fn(&PointTask<'_>) -> Result<(), KernelError> + Send + Sync + 'static
{
}

impl<F> Kernel for F where F: Fn(&PointTask<'_>) -> Result<(), KernelError> + Send + Sync + 'static {}

/// The kind named `name`, registering it with `declare` if no kind of that name exists yet
/// (safe when threads ask for the same kind at once).
pub(crate) fn kind(
    name: String,
    declare: impl FnOnce(TaskKindBuilder) -> Result<Arc<TaskKind>, IrError>,
) -> Result<Arc<TaskKind>, ArrayError> {
    Ok(TaskKind::lookup_or_register(&name, declare)?)
}

/// The registration error for an operation asked for on a dtype it is not defined for.
/// Operations check dtypes before asking for kinds, so this only guards the dispatch.
pub(crate) fn undefined(op: &str, dtype: DType) -> Result<Arc<TaskKind>, IrError> {
    Err(IrError::BadKind {
        kind: format!("array.{op}.{dtype}"),
        reason: "the operation is not defined for this dtype".into(),
    })
}
