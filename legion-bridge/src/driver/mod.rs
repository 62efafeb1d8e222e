//! The driver thread's state: Legion's top-level context and every Legion object diffuse
//! made through it, and the operations that need the context. One room per concern, each
//! adding its operations to [`Driver`]:
//!
//! - [`regions`]: index spaces per shape, one field space per dtype, a region per store (made,
//!   cached when its store dies, destroyed), and the partials regions of folded reductions;
//! - [`partitions`]: restricted partitions per index space and partition, the projection
//!   functor, the sharding functors of replicated runs;
//! - [`lowering`]: a launch plan as region requirements and index launches (the plan's
//!   points and their fold), issued in a Legion trace when they may be;
//! - [`issue`]: handing one index launch of the point task to Legion;
//! - [`in_flight`]: launches Legion still runs: `Backpressure`, recorded points, fences,
//!   shutdown;
//! - [`host_copies`]: reading and writing stores on the host through inline mappings.
//!
//! This module holds the state they all work on and depends on none of them; among
//! themselves they form an acyclic graph (`scripts/check-module-cycles.py` checks it):
//! `lowering` uses `issue` and `partitions`, `issue` uses `in_flight` and `partitions`.

use std::collections::VecDeque;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;

use diffuse_ir::{DType, Partition, Rect, Shape, StoreId};
use hashbrown::HashMap;

use crate::ffi;
use crate::traces::LaunchTraces;
use crate::traffic::Traffic;

mod host_copies;
mod in_flight;
mod issue;
mod lowering;
mod partitions;
mod regions;

/// Work for the driver thread.
pub(crate) type Command = Box<dyn FnOnce(&mut Driver) + Send>;

/// What the driver needs of the thread that runs it.
pub(crate) struct DriverThread {
    /// Called after every fence and host mapping, the moments Realm may register new exit
    /// handlers (the process renews its exit hook then).
    pub(crate) synced: fn(),
}

/// The region of a dead store, waiting for the driver to take it back.
pub(crate) struct DeadRegion {
    region: ffi::legion_logical_region_t,
    store: StoreId,
    shape: Shape,
    dtype: DType,
}

// SAFETY: as for `StoreRegion`.
unsafe impl Send for DeadRegion {}

/// The index space of one shape, shared by every store of that shape, with its partitions.
struct IndexSpace {
    handle: ffi::legion_index_space_t,
    regions: usize,
    partitions: HashMap<(Partition, Rect), ffi::legion_index_partition_t>,
}

/// What the driver thread holds.
pub(crate) struct Driver {
    api: &'static ffi::LegionApi,
    runtime: ffi::legion_runtime_t,
    ctx: ffi::legion_context_t,
    field_spaces: HashMap<DType, ffi::legion_field_space_t>,
    spaces: HashMap<Shape, IndexSpace>,
    projection: Option<ffi::legion_projection_id_t>,
    /// The last launches of each task with a `Backpressure` limit (at most the limit),
    /// oldest first: those not yet waited for by a later launch of the task, finished or not.
    in_flight: HashMap<Arc<str>, VecDeque<ffi::legion_future_map_t>>,
    /// Regions of dead stores kept for reuse, by shape and dtype, in falling tree-id
    /// order, so that `pop` takes the oldest (see `Driver::release_region`).
    free: HashMap<(Shape, DType), Vec<ffi::legion_logical_region_t>>,
    /// Bytes of the free regions.
    free_bytes: u64,
    limits: DriverLimits,
    /// The run is control replicated (several processes, each issuing every operation).
    replicated: bool,
    /// Nodes of the machine.
    nodes: usize,
    /// Where stores' valid copies are, and the bytes moved between nodes (replicated runs).
    traffic: Option<Traffic>,
    /// The sharding functor registered for each assignment of launch points to nodes.
    shardings: HashMap<Vec<u32>, u32>,
    /// Launches issued since the last fence whose entries wait to be retired by it (in a
    /// replicated run, a process runs only some points of a launch, so the entry cannot go
    /// when "its last point" finished).
    unfenced: Vec<u64>,
    /// The future maps of the launches issued since the last settle, in a single process
    /// (launches with a `Backpressure` limit are in `in_flight`): a settle waits for them
    /// rather than issuing an execution fence, an operation of its own that costs a pass
    /// through Legion's pipeline (~20 µs of the stencil's ~150 at n = 64).
    unwaited: Vec<ffi::legion_future_map_t>,
    /// Where dead stores' regions arrive (see [`Driver::release_dead`]), and the sender
    /// every [`StoreRegion`](regions::StoreRegion) gets a copy of.
    dead: (Sender<DeadRegion>, Receiver<DeadRegion>),
    /// The Legion traces repeated launches are issued in (single process only).
    traces: LaunchTraces,
    /// The partials regions of reductions folded by diffuse, by the tree of the region of
    /// the store they reduce into: (shape, dtype, region).
    partials:
        HashMap<ffi::legion_distributed_id_t, Vec<(Shape, DType, ffi::legion_logical_region_t)>>,
    thread: DriverThread,
    stopped: bool,
}

/// The memory bounds a driver keeps to.
#[derive(Clone, Copy, Debug)]
pub(crate) struct DriverLimits {
    /// Most bytes of free regions kept.
    pub(crate) region_cache_bytes: u64,
    /// The system memory Legion was given (`-ll:csize`): a new region that would take the
    /// live stores past it is refused with `IrError::OutOfMemory` before Legion sees it.
    pub(crate) sysmem_bytes: u64,
    /// Most distinct launches issued in Legion traces (0: none; see [`crate::traces`]).
    pub(crate) traces: usize,
}

impl Driver {
    /// The driver of the top-level context `ctx`.
    pub(crate) fn new(
        api: &'static ffi::LegionApi,
        runtime: ffi::legion_runtime_t,
        ctx: ffi::legion_context_t,
        limits: DriverLimits,
        nodes: usize,
        replicated: bool,
        thread: DriverThread,
    ) -> Self {
        Driver {
            api,
            runtime,
            ctx,
            field_spaces: HashMap::new(),
            spaces: HashMap::new(),
            projection: None,
            traces: LaunchTraces::new(limits.traces),
            partials: HashMap::new(),
            in_flight: HashMap::new(),
            free: HashMap::new(),
            free_bytes: 0,
            limits,
            replicated,
            nodes,
            traffic: replicated.then(Traffic::default),
            shardings: HashMap::new(),
            unfenced: Vec::new(),
            unwaited: Vec::new(),
            dead: channel(),
            thread,
            stopped: false,
        }
    }

    /// True once Legion has shut down.
    pub(crate) fn stopped(&self) -> bool {
        self.stopped
    }

    /// How many Legion traces this process's launches were given so far.
    pub(crate) fn traces_given(&self) -> usize {
        self.traces.given()
    }
}
