//! `diffuse-ir`: the scale-free intermediate representation that array and sparse libraries
//! target (Diffuse paper §3).
//!
//! A library creates [`Store`]s through a [`Context`], describes each operation as an
//! [`IndexTask`] of a registered [`TaskKind`] over a launch domain, with one
//! `(store, partition, privilege)` argument per store it touches, and submits it. Nothing runs
//! at submission: the runtime behind the context buffers, fuses and executes tasks, and
//! reading data back is what waits. The size of every description here is independent of the
//! machine size: partitions and projections are symbolic and interned, so the analyses that
//! compare them run in O(1).

#![warn(missing_docs)]
// `IrError` carries the offending shapes inline (fixed-size tuples) so callers can match on
// them; errors are built only on the cold path, so their size costs nothing that matters.
#![allow(clippy::result_large_err)]

mod compiled;
mod context;
mod dispatch;
mod dtype;
mod elementwise;
mod error;
mod host;
mod intern;
mod kernel;
mod kind;
mod memo;
mod mlir;
mod partition;
mod privilege;
mod projection;
mod recording;
mod store;
mod task;
mod tuple;
mod validate;

pub use compiled::{
    GpuHandle, GpuLaunchKernel, GpuRuntime, IterationSpace, KernelParam, KernelSignature,
    KernelStep, MemRef,
};
pub use context::{copy_host_bytes, Context, Detached, Executor, PendingUse};
pub use dtype::{Complex32, Complex64, ComplexElement, DType, Element, Scalar};
pub use elementwise::for_each_row;
pub use error::{IrError, KernelError};
pub use host::{HostBlock, HostData};
pub use kernel::{NativeKernel, PointTask, RawView, ReadView, WriteView, MAX_ARGS};
pub use kind::{ArgDecl, TaskKind, TaskKindBuilder};
pub use memo::Memo;
pub use mlir::{
    element_type, tensor_type, KernelTarget, MlirArg, MlirGenerator, MlirSignature, REDUCTION_LANES,
};
pub use partition::{Image, Partition, PartitionKind, Tiling};
pub use privilege::{Privilege, ReductionOp};
pub use projection::{ProjComponent, Projection};
pub use recording::Recording;
pub use store::{Store, StoreCore, StoreId, StoreRef, View};
pub use task::{IndexTask, TaskArg};
pub use tuple::{Point, Rect, RectPoints, Shape, Tuple, MAX_DIMS};
pub use validate::validate;
