//! `diffuse-backend`: the one boundary between the runtime and every backend.
//!
//! The runtime decides; a backend carries decisions out. For every group of tasks it runs,
//! the runtime hands the backend a [`LaunchPlan`]: the constituent index tasks (with this
//! run's stores) and a shared [`LaunchTemplate`] holding every decision that does not depend
//! on which stores are used: how arguments map to store and temporary slots, the compiled
//! kernel (or the native constituents as fallback) with its parameter bindings, the
//! processor, memory kind and layout of every point ([`LaunchPlacement`]), and the order in
//! which reductions fold. Templates are derived once per memoized window shape and replayed:
//! instantiating one checks the new tasks against it in O(arguments), never O(points).
//!
//! A backend implements [`Backend`]: execute plans, move data between the host and stores,
//! describe its machine ([`MachineShape`], what mappers see) and report [`BackendStats`].
//! This crate depends on the IR (whose compiled-kernel ABI kernels are called through, see
//! [`PointKernel`]) and the machine vocabulary (`diffuse-machine`: processor and memory kinds,
//! layouts, capabilities), never on a mapper or a concrete backend, so the embedded and the
//! Legion backends build on it independently.

#![warn(missing_docs)]
// Backends return `diffuse_ir::IrError`, which carries shapes inline by design (see the IR).
#![allow(clippy::result_large_err)]

mod kernel;
pub mod memory;
mod placement;
mod plan;
pub mod point;
mod stats;

pub use kernel::PointKernel;
pub use placement::{ArgMemory, LaunchPlacement};
pub use plan::{
    ArgLayout, CompiledKernel, FusedArg, KernelParamSource, LaunchPlan, LaunchTemplate, Segment,
    Slot,
};
pub use stats::BackendStats;

pub use diffuse_machine::{
    AlignOp, Capabilities, Directive, Effect, LayoutConstraint, MachineShape, MemKind, Placing,
    ProcKind, Processor, StealScope,
};

use diffuse_ir::{HostBlock, HostData, IrError, Rect, StoreRef};

/// An execution backend: runs launch plans and moves data. Implementations keep tasks'
/// effects in submission order with respect to each other and to `read` and `write`.
pub trait Backend: Send + Sync {
    /// A short name for messages and records (`"embedded"`, `"legion"`).
    fn name(&self) -> &str;

    /// The processors the backend offers, as mappers see them.
    fn machine(&self) -> MachineShape;

    /// What the backend can act on of the decisions a mapper expresses (which Mapple
    /// statements take effect on it, and how).
    fn capabilities(&self) -> Capabilities;

    /// Runs one plan: every point task on the processor its placement names, then the
    /// reductions folded in the plan's order. A failing point fails the call with an error
    /// naming the task and the point. Every store buffer of the plan is allocated before any
    /// point runs, so an `IrError::OutOfMemory` from this call means nothing was written.
    /// A backend that [defers failures](Backend::defers_failures) may accept the plan and
    /// report its failure at the next flush instead.
    fn execute(&self, plan: &LaunchPlan) -> Result<(), IrError>;

    /// True when `execute` returns before the plan has run and failures of accepted plans
    /// are reported by the next `flush` as `IrError::Launches`, each with its plan's
    /// [ticket](LaunchPlan::ticket), so that the runtime can tell which launch failed.
    fn defers_failures(&self) -> bool {
        false
    }

    /// True when a host read or write of a store (`read`, `write`) waits by itself for every
    /// plan executed before it that uses the store, so the runtime need only run the
    /// buffered tasks that use it first, not flush everything. False (the safe default)
    /// makes every host copy flush.
    fn host_copies_follow_launches(&self) -> bool {
        false
    }

    /// True when a host write must follow every plan accepted before it, even a write into
    /// a store no plan has used yet: where every process issues the same operations and
    /// they must come in the same order in all of them (Legion's control replication), and
    /// when each process drains its window at its own moments. The runtime then flushes
    /// before such a write; otherwise a new store's first data goes straight in.
    fn orders_host_writes(&self) -> bool {
        false
    }

    /// True when a launch costs the backend far more than running its tasks one after
    /// another at one point (Legion: dependence analysis, mapping and the hand-offs between
    /// its threads, ~100 µs a launch): fusion then lets a group launched over one point go
    /// on past a constraint on stores in a new stage ([`LaunchTemplate::stages`]), one
    /// launch where there would be several. Where launches are cheap (the embedded backend,
    /// ~1 µs) stages would cost more in kernels than they save.
    fn launches_are_costly(&self) -> bool {
        false
    }

    /// Waits until every plan accepted so far has run.
    fn flush(&self) -> Result<(), IrError>;

    /// Copies `rect` of `store` to the host (row-major), after all work accepted so far.
    fn read(&self, store: &StoreRef, rect: Rect) -> Result<HostData, IrError>;

    /// `read` into a buffer the caller owns (see [`diffuse_ir::Executor::read_into`]); the
    /// default reads and copies.
    fn read_into(&self, store: &StoreRef, rect: Rect, out: &mut [u8]) -> Result<(), IrError> {
        let data = self.read(store, rect)?;
        diffuse_ir::copy_host_bytes(store, data.as_bytes(), out)
    }

    /// Overwrites `rect` of `store` with row-major `data`, after all work accepted so far.
    fn write(&self, store: &StoreRef, rect: Rect, data: HostData) -> Result<(), IrError>;

    /// Hands over the elements of `store` in the host buffer that holds them, after all work
    /// accepted so far (see [`diffuse_ir::Executor::take_host`]: the store is used no more,
    /// and no accepted work still uses it). `None` where they are not in one host buffer of
    /// the backend's; the default.
    fn take_host(&self, store: &StoreRef) -> Result<Option<HostBlock>, IrError> {
        let _ = store;
        Ok(None)
    }

    /// Counters of the work done so far.
    fn stats(&self) -> BackendStats;

    /// Starts a new peak of store memory at the current level (for measuring a part of a
    /// run).
    fn reset_peak_memory(&self);

    /// The floating-point exceptions point tasks raised since the last call, per task name
    /// (see [`point::fp`]), so that the application can warn or raise as NumPy's `errstate`
    /// says. A backend that does not observe them reports none.
    fn take_fp_errors(&self) -> point::fp::FpErrors {
        Vec::new()
    }

    /// Has the backend say which constituent of a fused task raised exceptions of
    /// `categories` (the ones the application reports; others are recorded under the fused
    /// task's name, which spares running its points again). A backend that does not observe
    /// exceptions ignores it.
    fn attribute_fp_errors(&self, categories: point::fp::FpFlags) {
        let _ = categories;
    }
}

/// Checks a host copy's box and data length against `store` (what [`Backend::read`] and
/// [`Backend::write`] must reject): `rect` must lie inside the store and, for a write,
/// `values` must be its volume.
pub fn check_host_copy(
    store: &StoreRef,
    rect: &Rect,
    values: Option<usize>,
) -> Result<(), IrError> {
    if rect.dims() != store.shape().dims() || store.bounds().intersect(rect) != *rect {
        return Err(IrError::HostData {
            store: store.id(),
            what: format!(
                "box {rect} is not inside the store's bounds {}",
                store.bounds()
            ),
        });
    }
    match values {
        Some(n) if n as i64 != rect.volume() => Err(IrError::HostData {
            store: store.id(),
            what: format!(
                "{n} values written to box {rect} of {} points",
                rect.volume()
            ),
        }),
        _ => Ok(()),
    }
}
