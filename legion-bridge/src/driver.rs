//! The driver thread's state: Legion's top-level context and every Legion object diffuse
//! made through it (index spaces per shape, one field space per dtype, a region per store,
//! restricted partitions per index space and partition), and the operations that need the
//! context: index launches, host copies through inline mappings, fences, shutdown.

use std::collections::VecDeque;
use std::ffi::{c_void, CString};
use std::hash::{Hash, Hasher};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;

use diffuse_backend::memory::for_each_rect_row;
use diffuse_backend::{LaunchPlan, Processor, Slot};
use diffuse_ir::{
    with_element_type, DType, HostData, IrError, Partition, PartitionKind, Point, Privilege,
    ProjComponent, Projection, Rect, ReductionOp, Shape, StoreId, StoreRef, Tuple,
};
use hashbrown::HashMap;

use crate::ffi;
use crate::geometry::{
    domain, domain_point, element_strides, launch_point_index, raw_rect_ptr, shape_domain, FIELD,
};
use crate::launch::{Fold, LaunchEntry, Requirement, Role};
use crate::partials;
use crate::point_task::POINT_TASK_ID;
use crate::shared::{legion_error, proc_kind, PointRecord, Shared};
use crate::traces::{LaunchIdentity, LaunchTraces};
use crate::traffic::{Access, Traffic};

/// Work for the driver thread.
pub(crate) type Command = Box<dyn FnOnce(&mut Driver) + Send>;

/// What the driver needs of the thread that runs it.
pub(crate) struct DriverThread {
    /// Called after every fence and host mapping, the moments Realm may register new exit
    /// handlers (the process renews its exit hook then).
    pub(crate) synced: fn(),
}

/// The Legion region of one store, attached to the store and taken back by the driver once
/// the store is dead.
pub(crate) struct StoreRegion {
    /// The region (also its own parent in every requirement).
    pub(crate) region: ffi::legion_logical_region_t,
    store: StoreId,
    shape: Shape,
    dtype: DType,
    bytes: u64,
    shared: Arc<Shared>,
    /// Where the region goes when the store dies ([`Driver::release_dead`]).
    dead: Sender<DeadRegion>,
}

// SAFETY: Legion handles are plain ids, valid on every thread.
unsafe impl Send for StoreRegion {}
// SAFETY: as above; nothing mutates a handle.
unsafe impl Sync for StoreRegion {}

impl Drop for StoreRegion {
    fn drop(&mut self) {
        self.shared.counters.free(self.bytes);
        // A region dies when its last user (a plan, a view, the application) lets go, on
        // whichever thread that is; the driver takes it back at a moment the application's
        // order of operations fixes. Once the driver thread has stopped, nothing is left to
        // release.
        let _ = self.dead.send(DeadRegion {
            region: self.region,
            store: self.store,
            shape: self.shape,
            dtype: self.dtype,
        });
    }
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
    /// Regions of dead stores kept for reuse, by shape and dtype.
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
    /// every [`StoreRegion`] gets a copy of.
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

/// The first sharding functor id diffuse registers (ids below are left to Legion and
/// libraries loaded beside diffuse).
const FIRST_SHARDING_ID: u32 = 7_000;

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

    /// Updates the traffic model with what every point of `plan` reads, writes and reduces
    /// (replicated runs only).
    fn account_launch(&mut self, plan: &LaunchPlan, requirements: &[Requirement], shared: &Shared) {
        let Some(traffic) = &mut self.traffic else {
            return;
        };
        let t = plan.template();
        let processors = &t.placement().processors;
        let shape = t.launch_domain();
        let node = |p: &Point| {
            launch_point_index(p.as_slice(), &shape)
                .and_then(|i| processors.get(i))
                .map_or(0, |proc| proc.node)
        };
        for req in requirements {
            let store = plan.store(req.slot);
            let accesses: Vec<Access> = Rect::from_shape(shape)
                .points()
                .map(|p| Access {
                    node: node(&p),
                    rect: req.partition.sub_store(store.shape(), &p),
                })
                .collect();
            match req.privilege {
                Privilege::Read => traffic.read(store.id(), &accesses),
                Privilege::Write => traffic.write(store.id(), &accesses),
                Privilege::ReadWrite => {
                    traffic.read(store.id(), &accesses);
                    traffic.write(store.id(), &accesses);
                }
                Privilege::Reduce(_) => traffic.reduce(store.id(), &accesses),
            }
        }
        shared.counters.set_bytes_moved(traffic.moved());
    }

    /// The sharding functor that gives a launch's point number `i` (row-major) to node
    /// `nodes[i]`, registered on first use. Every process of a replicated run issues
    /// the same launches in the same order, so ids agree across processes.
    fn sharding(&mut self, nodes: Vec<u32>) -> u32 {
        let nodes = if nodes.is_empty() { vec![0] } else { nodes };
        if let Some(&id) = self.shardings.get(&nodes) {
            return id;
        }
        let id = FIRST_SHARDING_ID + self.shardings.len() as u32;
        // SAFETY: the runtime is alive; Legion copies nothing but keeps the functor, which
        // owns a copy of `nodes`.
        unsafe {
            self.api
                .diffuse_legion_register_sharding(self.runtime, id, nodes.as_ptr(), nodes.len())
        };
        self.shardings.insert(nodes, id);
        id
    }

    /// True once Legion has shut down.
    pub(crate) fn stopped(&self) -> bool {
        self.stopped
    }

    fn field_space(&mut self, dtype: DType) -> ffi::legion_field_space_t {
        let (api, rt, ctx) = (self.api, self.runtime, self.ctx);
        *self.field_spaces.entry(dtype).or_insert_with(|| {
            // SAFETY: the driver thread holds the top-level context.
            unsafe {
                let fs = api.legion_field_space_create(rt, ctx);
                let alloc = api.legion_field_allocator_create(rt, ctx, fs);
                api.legion_field_allocator_allocate_field(alloc, dtype.size_bytes(), FIELD);
                api.legion_field_allocator_destroy(alloc);
                fs
            }
        })
    }

    fn index_space(&mut self, shape: Shape) -> &mut IndexSpace {
        let (api, rt, ctx) = (self.api, self.runtime, self.ctx);
        self.spaces.entry(shape).or_insert_with(|| IndexSpace {
            // SAFETY: as above.
            handle: unsafe { api.legion_index_space_create_domain(rt, ctx, shape_domain(shape)) },
            regions: 0,
            partitions: HashMap::new(),
        })
    }

    /// The region of `store`, made (or taken from the free regions) on first use, and
    /// whether it was made now: zero-filled by Legion unless `unfilled` (its first user
    /// writes every element, or zeroes it itself).
    pub(crate) fn region(
        &mut self,
        store: &StoreRef,
        shared: &Arc<Shared>,
        unfilled: bool,
    ) -> Result<(ffi::legion_logical_region_t, bool), IrError> {
        let mut fresh = false;
        let region = store
            .try_allocation(
                || {
                    fresh = true;
                    self.create_region(store, shared)
                },
                |e| e,
            )?
            .region;
        if fresh && !unfilled {
            self.fill_zero(region, store.dtype());
            self.traces.contents_lazy(region.tree_id);
        }
        Ok((region, fresh))
    }

    fn create_region(
        &mut self,
        store: &StoreRef,
        shared: &Arc<Shared>,
    ) -> Result<StoreRegion, IrError> {
        let key = (store.shape(), store.dtype());
        let bytes = store.size_bytes() as u64;
        let in_use = shared.counters.store_bytes();
        if in_use.saturating_add(bytes) > self.limits.sysmem_bytes {
            return Err(out_of_memory(store, in_use, self.limits.sysmem_bytes));
        }
        let mut recycled = self.free.get_mut(&key).and_then(Vec::pop);
        if recycled.is_none() && !self.replicated {
            // Only now, before making a region, the regions of stores that died since the
            // application last waited: taking them back at every launch handed a repeated
            // step regions in an order that depended on which thread let go of a store
            // first, so its launches kept coming back on new combinations of regions, each a
            // Legion trace of its own (cfd n = 64 grew ~7 KB per iteration).
            self.release_dead();
            recycled = self.free.get_mut(&key).and_then(Vec::pop);
        }
        let region = match recycled {
            Some(region) => {
                self.free_bytes -= store.size_bytes() as u64;
                region
            }
            None => {
                let fs = self.field_space(store.dtype());
                let space = self.index_space(store.shape());
                space.regions += 1;
                let is = space.handle;
                // SAFETY: as above.
                unsafe {
                    self.api
                        .legion_logical_region_create(self.runtime, self.ctx, is, fs, false)
                }
            }
        };
        shared.counters.allocate(bytes);
        let nodes = self.nodes;
        if let Some(traffic) = &mut self.traffic {
            traffic.created(
                store.id(),
                store.bounds(),
                store.dtype().size_bytes(),
                nodes,
            );
        }
        Ok(StoreRegion {
            region,
            store: store.id(),
            shape: store.shape(),
            dtype: store.dtype(),
            bytes,
            shared: Arc::clone(shared),
            dead: self.dead.0.clone(),
        })
    }

    fn fill_zero(&mut self, region: ffi::legion_logical_region_t, dtype: DType) {
        let zero = [0u8; 8];
        // SAFETY: as above; the value is `size_bytes` zero bytes, copied by Legion.
        unsafe {
            self.api.legion_runtime_fill_field(
                self.runtime,
                self.ctx,
                region,
                region,
                FIELD,
                zero.as_ptr() as *const c_void,
                dtype.size_bytes(),
                self.api.legion_predicate_true(),
            )
        };
    }

    /// How many Legion traces this process's launches were given so far.
    pub(crate) fn traces_given(&self) -> usize {
        self.traces.given()
    }

    /// Takes back the regions of the stores that died since the last call, in the order the
    /// regions were made. A run of several processes must create and destroy regions in
    /// one order in every process, but a store dies on whichever thread lets go of it last
    /// (the application, this thread retiring a launch, a point task), at moments that
    /// differ between processes. A replicated run therefore calls this only where the
    /// application waits for the driver ([`Driver::settle`], host copies): every process
    /// has then seen the same stores die. A run of one process also calls it when a store
    /// needs a region and none of its shape is free, so that it may reuse one: memory is
    /// bounded as if every death were taken back at once, and a program that repeats its
    /// steps between waits gets the same regions for them each time (so Legion traces
    /// replay; see `traces.rs`).
    pub(crate) fn release_dead(&mut self) {
        let mut dead: Vec<DeadRegion> = self.dead.1.try_iter().collect();
        dead.sort_by_key(|d| d.region.tree_id);
        for d in dead {
            self.release_region(d);
        }
    }

    /// Takes back a dead store's region: kept for the next store of its shape and dtype
    /// while the free regions hold at most `region_cache_bytes` (array programs make and drop
    /// the same temporaries every iteration, and a region keeps its instances, so reusing it
    /// saves Legion's deletion analysis and a new allocation), destroyed otherwise.
    fn release_region(&mut self, dead: DeadRegion) {
        if self.stopped {
            return;
        }
        let DeadRegion {
            region,
            store,
            shape,
            dtype,
        } = dead;
        if let Some(traffic) = &mut self.traffic {
            traffic.dropped(store);
        }
        let bytes = (shape.volume().max(0) as u64) * dtype.size_bytes() as u64;
        if self.free_bytes + bytes <= self.limits.region_cache_bytes {
            self.free_bytes += bytes;
            self.free.entry((shape, dtype)).or_default().push(region);
        } else {
            self.destroy_region(region, shape);
        }
    }

    /// Destroys a region, and its shape's index space (with its partitions) when no region
    /// of that shape is left.
    fn destroy_region(&mut self, region: ffi::legion_logical_region_t, shape: Shape) {
        for (rows, _, partials) in self.partials.remove(&region.tree_id).unwrap_or_default() {
            self.destroy_region(partials, rows);
        }
        // SAFETY: as above; the region's store is gone, so nothing issues work on it.
        unsafe {
            self.api
                .legion_logical_region_destroy(self.runtime, self.ctx, region)
        };
        self.traces.contents_materialized(region.tree_id);
        let Some(space) = self.spaces.get_mut(&shape) else {
            return;
        };
        space.regions -= 1;
        if space.regions == 0 {
            let handle = space.handle;
            self.spaces.remove(&shape);
            // SAFETY: as above; destroying an index space destroys its partitions.
            unsafe {
                self.api
                    .legion_index_space_destroy(self.runtime, self.ctx, handle)
            };
        }
    }

    /// The index partition of stores of `shape` by the tiling `partition`, over the colors
    /// `colors`: a partition by restriction for a tiling of the whole store, by explicit
    /// tiles for a tiling of a view (clipped to it).
    fn partition(
        &mut self,
        shape: Shape,
        partition: &Partition,
        colors: Rect,
    ) -> ffi::legion_index_partition_t {
        let (api, rt, ctx) = (self.api, self.runtime, self.ctx);
        let space = self.index_space(shape);
        let parent = space.handle;
        *space
            .partitions
            .entry((partition.clone(), colors))
            .or_insert_with(|| {
                // SAFETY: as above.
                unsafe {
                    let color_space =
                        api.legion_index_space_create_domain(rt, ctx, domain(&colors));
                    match partition.kind() {
                        PartitionKind::Tiling(tiling) if tiling.clip.is_none() => {
                            let dims = shape.dims();
                            let mut transform = ffi::legion_domain_transform_t {
                                m: dims as i32,
                                n: dims as i32,
                                ..Default::default()
                            };
                            for k in 0..dims {
                                transform.matrix[k * dims + k] = tiling.tile[k];
                            }
                            // Color 0's tile; color c is it shifted by c * tile.
                            let extent = tiling.tile_rect(&Tuple::splat(dims, 0));
                            api.legion_index_partition_create_by_restriction(
                                rt,
                                ctx,
                                parent,
                                color_space,
                                transform,
                                domain(&extent),
                                ffi::legion_partition_kind_t_LEGION_DISJOINT_KIND,
                                u32::MAX,
                            )
                        }
                        kind => {
                            // Explicit boxes: a view's clipped tiles (disjoint), or an
                            // image's boxes (which may overlap unless found disjoint).
                            let disjoint = match kind {
                                PartitionKind::Image(image) => image.disjoint,
                                _ => true,
                            };
                            let mut points = Vec::new();
                            let mut boxes = Vec::new();
                            for color in colors.points() {
                                points.push(domain_point(&color));
                                let rect = match kind {
                                    PartitionKind::Tiling(t) => t
                                        .tile_rect(&color)
                                        .intersect(&partition.reachable_bounds(shape)),
                                    _ => partition.sub_store(shape, &color),
                                };
                                boxes.push(domain(&rect));
                            }
                            api.legion_index_partition_create_by_domain(
                                rt,
                                ctx,
                                parent,
                                points.as_mut_ptr(),
                                boxes.as_mut_ptr(),
                                points.len(),
                                color_space,
                                true,
                                if disjoint {
                                    ffi::legion_partition_kind_t_LEGION_DISJOINT_KIND
                                } else {
                                    ffi::legion_partition_kind_t_LEGION_COMPUTE_KIND
                                },
                                u32::MAX,
                            )
                        }
                    }
                }
            })
    }

    /// The projection functor that maps launch points to tile colors through the
    /// projection encoded in a requirement's projection arguments.
    fn projection_functor(&mut self) -> ffi::legion_projection_id_t {
        if let Some(id) = self.projection {
            return id;
        }
        let name = CString::new("diffuse").unwrap_or_default();
        // SAFETY: as above.
        let id = unsafe {
            let id = self.api.legion_runtime_generate_library_projection_ids(
                self.runtime,
                name.as_ptr(),
                1,
            );
            self.api
                .diffuse_legion_register_projection(self.runtime, id);
            id
        };
        self.projection = Some(id);
        id
    }

    /// Issues `plan` as one index launch (nothing for an empty launch domain), followed by a
    /// launch of one point folding the reductions diffuse folds itself ([`crate::partials`]).
    pub(crate) fn execute(
        &mut self,
        plan: LaunchPlan,
        shared: &Arc<Shared>,
    ) -> Result<(), IrError> {
        let t = plan.template();
        let launch = t.launch_domain();
        if launch.volume() <= 0 {
            return Ok(());
        }
        let (mut requirements, mut arg_requirement) = requirements(&plan);
        let folded = partials::folded_by_diffuse(
            &plan,
            &requirements,
            &arg_requirement,
            shared.folded_reduction_elements,
        );
        let mut regions = Vec::with_capacity(plan.stores().len());
        // Per store slot: its region is new and the fold zeroes it (the store is reached
        // only through reductions folded below).
        let mut zeroed_by_fold = vec![false; plan.stores().len()];
        for (s, store) in plan.stores().iter().enumerate() {
            let zeroable = point_zeroable(&plan, &requirements, s);
            let by_fold = folded.iter().any(|f| requirements[f.requirement].slot == s);
            let unfilled = t.overwrites(s) || zeroable.is_some() || by_fold;
            let (region, fresh) = self.region(store, shared, unfilled)?;
            if let Some(r) = zeroable.filter(|_| fresh && !t.overwrites(s)) {
                requirements[r].privilege = Privilege::Write;
                requirements[r].zeroed = true;
            }
            zeroed_by_fold[s] = fresh && by_fold;
            regions.push(region);
        }
        self.account_launch(&plan, &requirements, shared);
        // Each requirement's region and shape: the store's, or a reduction's partials.
        let mut bound: Vec<(ffi::legion_logical_region_t, Shape)> = requirements
            .iter()
            .map(|req| (regions[req.slot], plan.store(req.slot).shape()))
            .collect();
        // Every folded argument writes partials of its own: the first of a requirement
        // takes the requirement over, the others get new ones.
        let mut taken = vec![false; requirements.len()];
        let mut fold = FoldLaunch::default();
        for f in &folded {
            let (r, shape) = (f.requirement, f.shape);
            let (slot, dtype) = (requirements[r].slot, requirements[r].dtype);
            let nth = fold.folds.iter().filter(|f| f.slot == slot).count();
            let rows = self.partials_region(regions[slot], shape, dtype, nth);
            let writes_rows = Requirement {
                slot,
                partition: partials::rows(shape)?,
                privilege: Privilege::Write,
                dtype,
                zeroed: false,
                partials: true,
            };
            let index = if taken[r] {
                requirements.push(writes_rows);
                bound.push((rows, shape));
                requirements.len() - 1
            } else {
                taken[r] = true;
                requirements[r] = writes_rows;
                bound[r] = (rows, shape);
                r
            };
            arg_requirement[f.arg] = Some(index);
            fold.add(f, slot, dtype, rows, regions[slot], zeroed_by_fold[slot]);
        }
        let launch_rect = Rect::from_shape(launch);
        let mut targets = Vec::with_capacity(requirements.len());
        // Regions whose contents this launch leaves lazy in Legion (its reductions), and
        // those whose every element it maps (reads or writes through a covering partition).
        let mut reduced = Vec::new();
        let mut covered = Vec::new();
        for (req, &(region, shape)) in requirements.iter().zip(&bound) {
            if matches!(req.privilege, Privilege::Reduce(_)) {
                reduced.push(region.tree_id);
            } else if req.partition.covers(shape, launch) {
                covered.push(region.tree_id);
            }
            let target = match req.partition.kind() {
                _ if shape.dims() == 0 => Target::Whole,
                PartitionKind::Replicate => Target::Whole,
                PartitionKind::Tiling(tiling) => {
                    let colors = color_box(&tiling.projection, launch);
                    let ip = self.partition(shape, &req.partition, colors);
                    // SAFETY: as above.
                    let lp = unsafe {
                        self.api
                            .legion_logical_partition_create(self.runtime, region, ip)
                    };
                    let identity = is_identity(&tiling.projection, launch.dims());
                    let projection = (!identity)
                        .then(|| (self.projection_functor(), encode(&tiling.projection)));
                    Target::Tiles(lp, projection)
                }
                // One color per launch point: the identity projection.
                PartitionKind::Image(_) => {
                    let ip = self.partition(shape, &req.partition, launch_rect);
                    // SAFETY: as above.
                    let lp = unsafe {
                        self.api
                            .legion_logical_partition_create(self.runtime, region, ip)
                    };
                    Target::Tiles(lp, None)
                }
            };
            targets.push((region, target));
        }
        let folding = (!fold.folds.is_empty()).then(|| {
            let FoldLaunch {
                folds,
                requirements,
                targets,
                covered,
            } = fold;
            Issue {
                plan: plan.clone(),
                role: Role::Fold(folds),
                launch: Rect::from_shape(Tuple::splat(1, 1)),
                requirements,
                arg_requirement: vec![None; t.args().len()],
                targets,
                reduced: Vec::new(),
                covered,
            }
        });
        let points = Issue {
            plan,
            role: Role::Points,
            launch: launch_rect,
            requirements,
            arg_requirement,
            targets,
            reduced,
            covered,
        };
        let issues: Vec<Issue> = std::iter::once(points).chain(folding).collect();
        // The launch and its fold replay as one Legion trace (one replay, not two).
        let trace = self.trace_of(&issues, shared);
        if let Some(id) = trace {
            // SAFETY: as above; the trace ends below, after the launches it holds.
            unsafe {
                self.api
                    .legion_runtime_begin_trace(self.runtime, self.ctx, id, false)
            };
        }
        let mut launched = Vec::with_capacity(issues.len());
        for issue in issues {
            if trace.is_some() {
                shared.counters.traced();
            }
            launched.push(self.issue(issue, shared));
        }
        if let Some(id) = trace {
            // SAFETY: as above.
            unsafe {
                self.api
                    .legion_runtime_end_trace(self.runtime, self.ctx, id)
            };
        }
        for launched in launched {
            self.track(launched, shared);
        }
        Ok(())
    }

    /// The Legion trace to issue `issues` (a launch and its fold) in, if they may be traced:
    /// recorded points report where each ran, which a replayed mapping would not redo;
    /// replicated runs issue no traces (their sharding is not traced); see `crate::traces`
    /// for the launches Legion would replay wrongly.
    fn trace_of(&mut self, issues: &[Issue], shared: &Shared) -> Option<u32> {
        let traceable = !self.replicated
            && !shared.recording()
            && issues.iter().all(|issue| {
                issue.reduced.is_empty()
                    && !issue
                        .targets
                        .iter()
                        .any(|(region, _)| self.traces.is_lazy(region.tree_id))
            });
        if !traceable {
            return None;
        }
        let mut identity = LaunchIdentity::default();
        for issue in issues {
            launch_identity(&mut identity, issue);
        }
        self.traces.trace_of(identity)
    }

    /// The `nth` partials region of `shape` and `dtype` of reductions into the store whose
    /// region is `store` (a launch's `nth` folded argument reducing into it), made on first
    /// use and destroyed with the store's region: a repeated window's launches meet the
    /// same partials again, as Legion traces need.
    fn partials_region(
        &mut self,
        store: ffi::legion_logical_region_t,
        shape: Shape,
        dtype: DType,
        nth: usize,
    ) -> ffi::legion_logical_region_t {
        let known = self.partials.get(&store.tree_id).and_then(|rows| {
            rows.iter()
                .filter(|(s, d, _)| *s == shape && *d == dtype)
                .nth(nth)
                .map(|&(_, _, region)| region)
        });
        if let Some(region) = known {
            return region;
        }
        let fs = self.field_space(dtype);
        let space = self.index_space(shape);
        space.regions += 1;
        let is = space.handle;
        // SAFETY: as above. (Partials are small, `LegionConfig::folded_reduction_elements`,
        // and not counted as store memory.)
        let region = unsafe {
            self.api
                .legion_logical_region_create(self.runtime, self.ctx, is, fs, false)
        };
        self.partials
            .entry(store.tree_id)
            .or_default()
            .push((shape, dtype, region));
        region
    }

    /// Issues one index launch of the point task: `issue.plan`'s points or its fold.
    fn issue(&mut self, issue: Issue, shared: &Arc<Shared>) -> Launched {
        let Issue {
            plan,
            role,
            launch,
            requirements,
            arg_requirement,
            targets,
            reduced,
            covered,
        } = issue;
        let t = plan.template();
        let folding = matches!(role, Role::Fold(_));
        // Mapple's Backpressure: before this launch goes, at most `limit - 1` others of the
        // task may still run (waited for below, once this one is issued).
        let limit = t
            .placement()
            .in_flight_limit
            .filter(|_| !folding)
            .map(|l| l.max(1));
        let name = t.name().clone();
        let sharding = self.replicated.then(|| {
            let processors = &t.placement().processors;
            let nodes: Vec<u32> = if folding {
                // The fold runs where the plan's first point does.
                vec![processors.first().map_or(0, |p| p.node as u32)]
            } else {
                processors.iter().map(|p| p.node as u32).collect()
            };
            self.sharding(nodes)
        });
        let points = launch.volume().max(0) as usize;
        let key = LaunchEntry::register(
            plan,
            role,
            requirements.clone(),
            arg_requirement,
            Arc::clone(shared),
            (!self.replicated).then_some(points),
        );
        // The launch's global argument: its key, then (replicated) its sharding functor.
        let mut arg = key.to_ne_bytes().to_vec();
        if let Some(id) = sharding {
            arg.extend_from_slice(&id.to_ne_bytes());
            self.unfenced.push(key);
        }
        // SAFETY: as above; every handle passed was made by this driver and is alive, the
        // global argument is copied by Legion when the launcher is made.
        unsafe {
            let api = self.api;
            let args = api.legion_argument_map_create();
            let launcher = api.legion_index_launcher_create(
                POINT_TASK_ID,
                domain(&launch),
                ffi::legion_untyped_buffer_t {
                    args: arg.as_mut_ptr() as *mut c_void,
                    arglen: arg.len(),
                },
                args,
                api.legion_predicate_true(),
                false,
                0,
                0,
            );
            for (idx, (req, (region, target))) in requirements.iter().zip(&targets).enumerate() {
                let added = match (target, req.privilege) {
                    (Target::Whole, Privilege::Reduce(op)) => api
                        .legion_index_launcher_add_region_requirement_logical_region_reduction(
                            launcher,
                            *region,
                            0,
                            redop(op, req.dtype),
                            ffi::legion_coherence_property_t_LEGION_EXCLUSIVE,
                            *region,
                            0,
                            false,
                        ),
                    (Target::Whole, p) => api
                        .legion_index_launcher_add_region_requirement_logical_region(
                            launcher,
                            *region,
                            0,
                            privilege_mode(p),
                            ffi::legion_coherence_property_t_LEGION_EXCLUSIVE,
                            *region,
                            0,
                            false,
                        ),
                    (Target::Tiles(lp, proj), Privilege::Reduce(op)) => api
                        .legion_index_launcher_add_region_requirement_logical_partition_reduction(
                            launcher,
                            *lp,
                            proj.as_ref().map_or(0, |p| p.0),
                            redop(op, req.dtype),
                            ffi::legion_coherence_property_t_LEGION_EXCLUSIVE,
                            *region,
                            0,
                            false,
                        ),
                    (Target::Tiles(lp, proj), p) => api
                        .legion_index_launcher_add_region_requirement_logical_partition(
                            launcher,
                            *lp,
                            proj.as_ref().map_or(0, |p| p.0),
                            privilege_mode(p),
                            ffi::legion_coherence_property_t_LEGION_EXCLUSIVE,
                            *region,
                            0,
                            false,
                        ),
                };
                debug_assert_eq!(added as usize, idx);
                if let Target::Tiles(_, Some((_, encoded))) = target {
                    api.legion_index_launcher_set_projection_args(
                        launcher,
                        added,
                        encoded.as_ptr() as *const c_void,
                        encoded.len() * 8,
                        false,
                    );
                }
                api.legion_index_launcher_add_field(launcher, added, FIELD, true);
            }
            let futures = api.legion_index_launcher_execute(self.runtime, self.ctx, launcher);
            for region in covered {
                self.traces.contents_materialized(region);
            }
            for region in reduced {
                self.traces.contents_lazy(region);
            }
            api.legion_index_launcher_destroy(launcher);
            api.legion_argument_map_destroy(args);
            Launched {
                futures,
                name,
                launch,
                limit,
                recorded: shared.recording() && !folding,
            }
        }
    }

    /// Keeps a launch's future map until what waits for it has (outside any trace: waiting
    /// inside one would break its replay): recorded points read back, a `Backpressure` limit
    /// held, the next settle.
    fn track(&mut self, launched: Launched, shared: &Shared) {
        let Launched {
            futures,
            name,
            launch,
            limit,
            recorded,
        } = launched;
        if recorded {
            self.record_points(futures, &name, &launch, shared);
        }
        let api = self.api;
        // SAFETY: each future map is destroyed once: here, by a later launch of the task
        // under a limit, or by the settle that waits for it.
        unsafe {
            match limit {
                Some(limit) => {
                    let queue = self.in_flight.entry(name).or_default();
                    queue.push_back(futures);
                    while queue.len() as u64 > limit {
                        if let Some(oldest) = queue.pop_front() {
                            shared.counters.held_back();
                            api.legion_future_map_wait_all_results(oldest);
                            api.legion_future_map_destroy(oldest);
                        }
                    }
                }
                None if !self.replicated => self.unwaited.push(futures),
                None => api.legion_future_map_destroy(futures),
            }
        }
    }

    /// Records where every point of a launch ran, from the points' values (each point task
    /// returns its processor; in a multi-process run the value comes from the node that ran
    /// it). Waits for the launch: recording is for tests and diagnostics.
    fn record_points(
        &self,
        futures: ffi::legion_future_map_t,
        name: &str,
        launch: &Rect,
        shared: &Shared,
    ) {
        let api = self.api;
        for p in launch.points() {
            // SAFETY: the future map is alive; every future is destroyed after its value
            // (a `diffuse_proc_choice_t`, checked by size) was copied out.
            let who = unsafe {
                let f = api.legion_future_map_get_future(futures, domain_point(&p));
                let value = api.legion_future_get_untyped_pointer(f);
                let size = api.legion_future_get_untyped_size(f);
                let who = (!value.is_null()
                    && size == std::mem::size_of::<ffi::diffuse_proc_choice_t>())
                .then(|| std::ptr::read_unaligned(value as *const ffi::diffuse_proc_choice_t));
                api.legion_future_destroy(f);
                who
            };
            if let Some(who) = who.filter(|w| w.kind >= 0) {
                shared.record(PointRecord {
                    task: name.to_string(),
                    point: p,
                    processor: Processor {
                        kind: proc_kind(who.kind),
                        node: who.node as usize,
                        index: who.index as usize,
                    },
                });
            }
        }
    }

    /// Waits until every operation issued so far has finished and takes back the regions
    /// of the stores dead by then: what the application's flush asks for.
    pub(crate) fn settle(&mut self) {
        self.fence();
        self.release_dead();
    }

    /// Waits until every launch issued so far has finished: in a single process by waiting
    /// for their future maps (what else the driver issues, fills of new regions and region
    /// deletions, either precedes a launch that uses the region or is ordered before the
    /// inline mapping that reads it); in a replicated run, where a process holds the futures
    /// of its own points only, by an execution fence.
    fn fence(&mut self) {
        // SAFETY: as above; each future map is destroyed once (the limited ones by the
        // launch that takes them out of their queue, or at shutdown).
        unsafe {
            if self.replicated {
                let f = self
                    .api
                    .legion_runtime_issue_execution_fence(self.runtime, self.ctx);
                self.api.legion_future_get_void_result(f);
                self.api.legion_future_destroy(f);
            } else {
                for futures in self.unwaited.drain(..) {
                    self.api.legion_future_map_wait_all_results(futures);
                    self.api.legion_future_map_destroy(futures);
                }
                // Launches under a `Backpressure` limit stay in their task's queue, finished:
                // the task's next launches still find them there (and destroy them), so a
                // settle in between, from any thread, does not change what they wait for.
                for &futures in self.in_flight.values().flatten() {
                    self.api.legion_future_map_wait_all_results(futures);
                }
            }
        }
        LaunchEntry::retire(self.unfenced.drain(..));
        (self.thread.synced)();
    }

    /// Maps `store` inline with `privilege`, hands `f` the address of element `rect.lo`
    /// and the element strides, and unmaps. `writes_all`: `f` overwrites every element.
    fn with_mapping<R>(
        &mut self,
        store: &StoreRef,
        shared: &Arc<Shared>,
        rect: &Rect,
        writes_all: bool,
        privilege: ffi::legion_privilege_mode_t,
        f: impl FnOnce(*mut u8, &Tuple) -> R,
    ) -> Result<R, IrError> {
        self.release_dead();
        let (region, _) = self.region(store, shared, writes_all)?;
        let api = self.api;
        // SAFETY: as above; the mapping is released before returning.
        unsafe {
            let launcher = api.legion_inline_launcher_create_logical_region(
                region,
                privilege,
                ffi::legion_coherence_property_t_LEGION_EXCLUSIVE,
                region,
                0,
                false,
                0,
                0,
            );
            api.legion_inline_launcher_add_field(launcher, FIELD, true);
            let mapped = api.legion_inline_launcher_execute(self.runtime, self.ctx, launcher);
            api.legion_physical_region_wait_until_valid(mapped);
            let located = if rect.is_empty() {
                Ok((std::ptr::null_mut(), [0; diffuse_ir::MAX_DIMS]))
            } else {
                raw_rect_ptr(api, mapped, FIELD, rect)
            };
            let result = located.map(|(ptr, bytes)| {
                let strides = element_strides(&bytes, rect.dims(), store.dtype().size_bytes());
                f(ptr, &strides)
            });
            api.legion_runtime_unmap_region(self.runtime, self.ctx, mapped);
            api.legion_physical_region_destroy(mapped);
            api.legion_inline_launcher_destroy(launcher);
            if writes_all {
                // A recycled region's pending fill or reductions are discarded.
                self.traces.contents_materialized(region.tree_id);
            }
            (self.thread.synced)();
            result.map_err(|message| {
                legion_error(format!(
                    "mapping store {} on the host: {message}",
                    store.id()
                ))
            })
        }
    }

    /// Copies `rect` of `store` to the host, row-major.
    pub(crate) fn read(
        &mut self,
        store: &StoreRef,
        shared: &Arc<Shared>,
        rect: Rect,
    ) -> Result<HostData, IrError> {
        let nodes = self.nodes;
        if let Some(traffic) = &mut self.traffic {
            traffic.host_read(store.id(), rect, nodes);
            shared.counters.set_bytes_moved(traffic.moved());
        }
        self.with_mapping(
            store,
            shared,
            &rect,
            false,
            ffi::legion_privilege_mode_t_LEGION_READ_ONLY,
            |ptr, strides| {
                with_element_type!(store.dtype(), T => {
                    let mut out: Vec<T> = Vec::with_capacity(rect.volume().max(0) as usize);
                    visit_rows(&rect, strides, |offset, len| {
                        // SAFETY: the mapped instance holds `rect` at `ptr` with `strides`.
                        let row = unsafe { std::slice::from_raw_parts((ptr as *const T).offset(offset), len) };
                        out.extend_from_slice(row);
                    });
                    HostData::from_vec(out)
                })
            },
        )
    }

    /// Overwrites `rect` of `store` with row-major `data` (already checked to fit).
    pub(crate) fn write(
        &mut self,
        store: &StoreRef,
        shared: &Arc<Shared>,
        rect: Rect,
        data: HostData,
    ) -> Result<(), IrError> {
        let nodes = self.nodes;
        if let Some(traffic) = &mut self.traffic {
            traffic.host_write(store.id(), rect, nodes);
        }
        let whole = rect == store.bounds();
        let privilege = if whole {
            ffi::legion_privilege_mode_t_LEGION_WRITE_DISCARD
        } else {
            ffi::legion_privilege_mode_t_LEGION_READ_WRITE
        };
        with_element_type!(store.dtype(), T => {
            let values: Vec<T> = data.into_vec::<T>().map_err(|d| IrError::HostData {
                store: store.id(),
                what: format!("{} data written to a {} store", d.dtype(), store.dtype()),
            })?;
            self.with_mapping(store, shared, &rect, whole, privilege, |ptr, strides| {
                let mut consumed = 0usize;
                visit_rows(&rect, strides, |offset, len| {
                    // SAFETY: as in `read`; the mapping is exclusive to this thread.
                    let row = unsafe { std::slice::from_raw_parts_mut((ptr as *mut T).offset(offset), len) };
                    row.copy_from_slice(&values[consumed..consumed + len]);
                    consumed += len;
                });
            })
        })
    }

    /// Finishes outstanding work, ends the top-level task and waits for Legion to stop.
    pub(crate) fn shutdown(&mut self) {
        if self.stopped {
            return;
        }
        self.fence();
        // SAFETY: as above; nothing uses the context afterwards (`stopped`).
        unsafe {
            for (_, queue) in self.in_flight.drain() {
                for futures in queue {
                    self.api.legion_future_map_destroy(futures);
                }
            }
            self.api
                .diffuse_legion_finish_implicit_task(self.runtime, self.ctx);
            self.api.legion_runtime_wait_for_shutdown();
        }
        self.stopped = true;
    }
}

/// A launch of the point task, ready to issue ([`Driver::issue`]).
struct Issue {
    plan: LaunchPlan,
    role: Role,
    /// The launch domain.
    launch: Rect,
    requirements: Vec<Requirement>,
    /// For every template argument, its requirement (`None` for temporaries, and in a fold).
    arg_requirement: Vec<Option<usize>>,
    /// Per requirement, its region and how the launch reaches it.
    targets: Vec<(ffi::legion_logical_region_t, Target)>,
    /// Regions whose contents the launch leaves lazy in Legion (it reduces into them).
    reduced: Vec<ffi::legion_distributed_id_t>,
    /// Regions whose every element the launch maps.
    covered: Vec<ffi::legion_distributed_id_t>,
}

/// A launch just issued, with what [`Driver::track`] needs to keep its futures.
struct Launched {
    futures: ffi::legion_future_map_t,
    /// Its task's name (a `Backpressure` limit holds per task).
    name: Arc<str>,
    /// Its domain.
    launch: Rect,
    /// Mapple's `Backpressure` limit for the task, if any.
    limit: Option<u64>,
    /// Where its points ran is recorded.
    recorded: bool,
}

/// The fold launch of a plan's reductions that diffuse folds, as it is gathered: per
/// folded argument a requirement on its partials (read), per store one on its whole region.
#[derive(Default)]
struct FoldLaunch {
    folds: Vec<Fold>,
    requirements: Vec<Requirement>,
    targets: Vec<(ffi::legion_logical_region_t, Target)>,
    covered: Vec<ffi::legion_distributed_id_t>,
}

impl FoldLaunch {
    /// Adds the fold of `folded`'s partials (`rows`) into store slot `slot` of `dtype` (its
    /// region `store`; `zero`: new, zeroed by the fold).
    fn add(
        &mut self,
        folded: &partials::Folded,
        slot: usize,
        dtype: DType,
        rows: ffi::legion_logical_region_t,
        store: ffi::legion_logical_region_t,
        zero: bool,
    ) {
        let whole = |privilege, zeroed, partials| Requirement {
            slot,
            partition: Partition::replicate(),
            privilege,
            dtype,
            zeroed,
            partials,
        };
        let to_store = match self.folds.iter().find(|f| f.slot == slot) {
            Some(f) => f.store,
            None => {
                self.requirements.push(if zero {
                    whole(Privilege::Write, true, false)
                } else {
                    whole(Privilege::ReadWrite, false, false)
                });
                self.targets.push((store, Target::Whole));
                self.covered.push(store.tree_id);
                self.requirements.len() - 1
            }
        };
        self.requirements.push(whole(Privilege::Read, false, true));
        self.targets.push((rows, Target::Whole));
        self.folds.push(Fold {
            arg: folded.arg,
            slot,
            partials: self.requirements.len() - 1,
            store: to_store,
            op: folded.op,
        });
    }
}

/// Where a requirement points: the whole region, or a logical partition with the
/// projection functor and encoded projection (none for the identity).
enum Target {
    Whole,
    Tiles(
        ffi::legion_logical_partition_t,
        Option<(ffi::legion_projection_id_t, Vec<i64>)>,
    ),
}

/// Appends to `id` what Legion compares when it replays a trace of `issue`'s launch (of its
/// plan's points or its fold): the task, the domain, and per requirement its region,
/// privilege or reduction operator, partition and projection; and what the replay maps as
/// recorded, the template's placement (hashed: a collision could only misplace points).
fn launch_identity(id: &mut LaunchIdentity, issue: &Issue) {
    let Issue {
        plan,
        role,
        launch,
        requirements,
        targets,
        ..
    } = issue;
    let template = plan.template();
    let name = template.name();
    id.push(u64::from(POINT_TASK_ID));
    id.push(u64::from(matches!(role, Role::Fold(_))));
    id.extend(name.bytes().map(u64::from));
    id.push(name.len() as u64);
    let mut placement = std::collections::hash_map::DefaultHasher::new();
    template.placement().hash(&mut placement);
    id.push(placement.finish());
    id.extend(
        launch
            .lo
            .as_slice()
            .iter()
            .chain(launch.hi.as_slice())
            .map(|&c| c as u64),
    );
    for (req, (region, target)) in requirements.iter().zip(targets) {
        id.extend([region.tree_id, region.index_space.id, region.field_space.id]);
        id.push(match req.privilege {
            Privilege::Read => 1,
            Privilege::Write => 2,
            Privilege::ReadWrite => 3,
            Privilege::Reduce(op) => 4 + redop(op, req.dtype) as u64,
        });
        match target {
            Target::Whole => id.push(0),
            Target::Tiles(partition, projection) => {
                id.extend([partition.tree_id, partition.index_partition.id]);
                if let Some((functor, encoded)) = projection {
                    id.push(u64::from(*functor));
                    id.extend(encoded.iter().map(|&c| c as u64));
                }
                id.push(u64::MAX);
            }
        }
    }
}

/// One requirement per argument of the plan's fused signature (a distinct store slot and
/// partition, privileges joined in program order), and each template argument's requirement.
///
/// A launch over one point needs neither of Legion's mechanisms for several points: its
/// reductions read and write the store (the point folds its contributions into the mapped
/// instance, as the embedded backend does, instead of into a fresh reduction instance that
/// Legion folds after), and a store it writes through one partition and reaches through
/// another (a task of several stages, see `LaunchTemplate::stages`) gets one requirement on
/// its whole region, every access joined in program order (Legion refuses interfering
/// aliased requirements of one task; a first write that leaves part of the store as it was
/// reads it too).
fn requirements(plan: &LaunchPlan) -> (Vec<Requirement>, Vec<Option<usize>>) {
    let t = plan.template();
    let fused = t.fused_args();
    let one_point = t.launch_domain().volume() == 1;
    let access = |p: Privilege| match p {
        Privilege::Reduce(_) if one_point => Privilege::ReadWrite,
        p => p,
    };
    let whole_region = |slot: usize| {
        one_point
            && fused
                .iter()
                .any(|f| f.slot == slot && access(f.privilege).mutates())
            && fused.iter().filter(|f| f.slot == slot).count() > 1
    };
    let mut reqs: Vec<Requirement> = Vec::with_capacity(fused.len());
    // Each fused argument's requirement.
    let mut of_fused: Vec<usize> = Vec::with_capacity(fused.len());
    for f in fused {
        let merged = whole_region(f.slot)
            .then(|| reqs.iter().position(|r| r.slot == f.slot))
            .flatten();
        of_fused.push(merged.unwrap_or_else(|| {
            reqs.push(Requirement {
                slot: f.slot,
                partition: if whole_region(f.slot) {
                    Partition::replicate()
                } else {
                    f.partition.clone()
                },
                privilege: access(f.privilege),
                dtype: plan.store(f.slot).dtype(),
                zeroed: false,
                partials: false,
            });
            reqs.len() - 1
        }));
    }
    for r in reqs.iter_mut().filter(|r| whole_region(r.slot)) {
        let mut accesses = t.args().iter().filter(|a| a.slot == Slot::Store(r.slot));
        let Some(first) = accesses.next() else {
            continue;
        };
        r.privilege = accesses.fold(access(first.privilege), |p, a| p.then(access(a.privilege)));
        if r.privilege == Privilege::Write
            && !first.partition.covers(first.shape, t.launch_domain())
        {
            r.privilege = Privilege::ReadWrite;
        }
    }
    let of_arg = (0..t.args().len())
        .map(|i| t.fused_arg_of(i).map(|f| of_fused[f]))
        .collect();
    (reqs, of_arg)
}

/// The requirement through which a one-point launch's single point could zero store slot
/// `s` itself if the store is new: its one requirement, covering the store and writable.
/// (A Legion fill instead leaves the region's contents lazy, which keeps the launch out of
/// traces, and costs Legion more to map than the point's few zero bytes.)
fn point_zeroable(plan: &LaunchPlan, requirements: &[Requirement], s: usize) -> Option<usize> {
    let t = plan.template();
    let launch = t.launch_domain();
    if launch.volume() != 1 {
        return None;
    }
    let mut of_slot = requirements.iter().enumerate().filter(|(_, r)| r.slot == s);
    let (r, req) = of_slot.next()?;
    let alone = of_slot.next().is_none();
    (alone && req.privilege.mutates() && req.partition.covers(plan.store(s).shape(), launch))
        .then_some(r)
}

fn privilege_mode(p: Privilege) -> ffi::legion_privilege_mode_t {
    match p {
        Privilege::Read => ffi::legion_privilege_mode_t_LEGION_READ_ONLY,
        Privilege::Write => ffi::legion_privilege_mode_t_LEGION_WRITE_DISCARD,
        Privilege::ReadWrite | Privilege::Reduce(_) => {
            ffi::legion_privilege_mode_t_LEGION_READ_WRITE
        }
    }
}

/// Legion's built-in reduction operator for `op` on `dtype` (`or`/`and` for bools).
fn redop(op: ReductionOp, dtype: DType) -> ffi::legion_reduction_op_id_t {
    use ffi::*;
    let id = match (dtype, op) {
        (DType::F64, ReductionOp::Sum) => legion_builtin_redop_t_LEGION_REDOP_SUM_FLOAT64,
        (DType::F64, ReductionOp::Prod) => legion_builtin_redop_t_LEGION_REDOP_PROD_FLOAT64,
        (DType::F64, ReductionOp::Min) => legion_builtin_redop_t_LEGION_REDOP_MIN_FLOAT64,
        (DType::F64, ReductionOp::Max) => legion_builtin_redop_t_LEGION_REDOP_MAX_FLOAT64,
        (DType::F32, ReductionOp::Sum) => legion_builtin_redop_t_LEGION_REDOP_SUM_FLOAT32,
        (DType::F32, ReductionOp::Prod) => legion_builtin_redop_t_LEGION_REDOP_PROD_FLOAT32,
        (DType::F32, ReductionOp::Min) => legion_builtin_redop_t_LEGION_REDOP_MIN_FLOAT32,
        (DType::F32, ReductionOp::Max) => legion_builtin_redop_t_LEGION_REDOP_MAX_FLOAT32,
        (DType::I64, ReductionOp::Sum) => legion_builtin_redop_t_LEGION_REDOP_SUM_INT64,
        (DType::I64, ReductionOp::Prod) => legion_builtin_redop_t_LEGION_REDOP_PROD_INT64,
        (DType::I64, ReductionOp::Min) => legion_builtin_redop_t_LEGION_REDOP_MIN_INT64,
        (DType::I64, ReductionOp::Max) => legion_builtin_redop_t_LEGION_REDOP_MAX_INT64,
        (DType::I32, ReductionOp::Sum) => legion_builtin_redop_t_LEGION_REDOP_SUM_INT32,
        (DType::I32, ReductionOp::Prod) => legion_builtin_redop_t_LEGION_REDOP_PROD_INT32,
        (DType::I32, ReductionOp::Min) => legion_builtin_redop_t_LEGION_REDOP_MIN_INT32,
        (DType::I32, ReductionOp::Max) => legion_builtin_redop_t_LEGION_REDOP_MAX_INT32,
        (DType::Bool, ReductionOp::Sum | ReductionOp::Max) => {
            legion_builtin_redop_t_LEGION_REDOP_OR_BOOL
        }
        (DType::Bool, ReductionOp::Prod | ReductionOp::Min) => {
            legion_builtin_redop_t_LEGION_REDOP_AND_BOOL
        }
    };
    id as ffi::legion_reduction_op_id_t
}

/// The colors a projection reaches over `launch`: per store dimension, the launch
/// dimension's range or the constant.
fn color_box(projection: &Projection, launch: Shape) -> Rect {
    let comps = projection.components();
    let mut lo = Tuple::splat(comps.len(), 0);
    let mut hi = Tuple::splat(comps.len(), 0);
    for (k, c) in comps.iter().enumerate() {
        let (l, h) = match *c {
            ProjComponent::Dim(d) => (0, launch[d]),
            ProjComponent::Const(v) => (v, v + 1),
        };
        lo.as_mut_slice()[k] = l;
        hi.as_mut_slice()[k] = h;
    }
    Rect { lo, hi }
}

/// True when the projection maps every point of a `launch_dims`-d launch to itself.
fn is_identity(projection: &Projection, launch_dims: usize) -> bool {
    let comps = projection.components();
    launch_dims > 0
        && comps.len() == launch_dims
        && comps
            .iter()
            .enumerate()
            .all(|(k, c)| *c == ProjComponent::Dim(k))
}

/// A projection as projection arguments for the shim's functor: the component count, then
/// per component `(0, launch dim)` or `(1, constant)`.
fn encode(projection: &Projection) -> Vec<i64> {
    let comps = projection.components();
    let mut out = Vec::with_capacity(1 + 2 * comps.len());
    out.push(comps.len() as i64);
    for c in comps {
        match *c {
            ProjComponent::Dim(d) => out.extend([0, d as i64]),
            ProjComponent::Const(v) => out.extend([1, v]),
        }
    }
    out
}

/// Calls `f(element_offset, len)` for every row of `rect` (relative to `rect.lo`) in an
/// instance with element `strides`, rows in row-major order; element by element when the
/// innermost stride is not 1.
fn visit_rows(rect: &Rect, strides: &Tuple, mut f: impl FnMut(isize, usize)) {
    let dims = rect.dims();
    if dims == 0 {
        if !rect.is_empty() {
            f(0, 1);
        }
        return;
    }
    let local = Rect::from_shape(rect.extent());
    if strides[dims - 1] == 1 {
        for_each_rect_row(&local, strides, |start, _, len| f(start as isize, len));
    } else {
        for p in local.points() {
            let offset: i64 = (0..dims).map(|d| p[d] * strides[d]).sum();
            f(offset as isize, 1);
        }
    }
}

/// The error for a store whose region would take the live stores (`in_use` bytes) past the
/// `limit` bytes of system memory Legion was given.
pub(crate) fn out_of_memory(store: &StoreRef, in_use: u64, limit: u64) -> IrError {
    IrError::OutOfMemory {
        backend: "legion".into(),
        store: store.id(),
        shape: store.shape(),
        dtype: store.dtype(),
        bytes: store.size_bytes(),
        reason: format!(
            "{in_use} bytes are in use of the {limit}-byte system memory Legion was given \
             (-ll:csize)"
        ),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use diffuse_backend::{LaunchPlacement, LaunchTemplate};
    use diffuse_ir::{Context, IndexTask, Store, TaskKind, View};

    use super::*;

    /// A kind with `f64` arguments of `privileges`, never run.
    fn kind(name: &str, privileges: &[Privilege]) -> Arc<TaskKind> {
        let mut b = TaskKind::builder(format!("legion-driver-tests::{name}"));
        for (i, &p) in privileges.iter().enumerate() {
            b = b.arg(format!("a{i}"), DType::F64, p);
        }
        b.register(|_| Ok(())).expect("a fresh kind")
    }

    /// One launch point, in two dimensions.
    fn one() -> Shape {
        Tuple::shape(&[1, 1]).unwrap()
    }

    /// The tiling over one point of the view `[offset, offset + extent)` of `s`.
    fn view(s: &Store, offset: [i64; 2], extent: [i64; 2]) -> Partition {
        View::new(
            s,
            Tuple::new(&offset).unwrap(),
            Tuple::shape(&extent).unwrap(),
        )
        .and_then(|v| v.blocked(one()))
        .unwrap()
    }

    /// A plan of `tasks` with `stages`, without temporaries.
    fn plan_of(tasks: Vec<IndexTask>, stages: &[usize]) -> LaunchPlan {
        let template = LaunchTemplate::new(&tasks, &[], stages, |_, _| {
            Ok::<_, ()>(LaunchPlacement::default_cpus(Vec::new(), 0))
        })
        .unwrap();
        LaunchPlan::new(Arc::new(template), tasks).unwrap_or_else(|_| panic!("it fits"))
    }

    /// A plan of `tasks` in two stages, the second starting at task 1.
    fn staged(tasks: Vec<IndexTask>) -> LaunchPlan {
        plan_of(tasks, &[1])
    }

    #[test]
    fn a_store_written_and_read_through_two_partitions_gets_one_whole_region_requirement() {
        let c = Context::detached();
        let grid = c.create_store(&[8, 8], DType::F64).unwrap();
        let tmp = c.create_store(&[6, 6], DType::F64).unwrap();
        let (r, w) = (Privilege::Read, Privilege::Write);
        let sum = IndexTask::new(&kind("sum", &[r, r, w]), one())
            .arg(&grid, view(&grid, [0, 1], [6, 6]), r)
            .arg(&grid, view(&grid, [2, 1], [6, 6]), r)
            .arg(&tmp, view(&tmp, [0, 0], [6, 6]), w);
        let copy = IndexTask::new(&kind("copy", &[r, w]), one())
            .arg(&tmp, view(&tmp, [0, 0], [6, 6]), r)
            .arg(&grid, view(&grid, [1, 1], [6, 6]), w);
        let (reqs, of_arg) = requirements(&staged(vec![sum, copy]));
        // The grid: one requirement on its whole region, read then written; `tmp`: its
        // own partition, written whole and then read.
        assert_eq!(reqs.len(), 2);
        assert_eq!(reqs[0].partition, Partition::replicate());
        assert_eq!(reqs[0].privilege, Privilege::ReadWrite);
        assert_eq!(reqs[1].partition, view(&tmp, [0, 0], [6, 6]));
        assert_eq!(reqs[1].privilege, Privilege::Write);
        assert_eq!(of_arg, vec![Some(0), Some(0), Some(1), Some(1), Some(0)]);
    }

    /// Plans of `acc = sum(x)` (an 8 x 8 `x` read through its blocks, a 0-d `acc` reduced
    /// into) over one launch point and over two, and `x`.
    fn sums_over_one_and_two_points(name: &str) -> (LaunchPlan, LaunchPlan, Store) {
        let c = Context::detached();
        let x = c.create_store(&[8, 8], DType::F64).unwrap();
        let acc = c.create_store(&[], DType::F64).unwrap();
        let (r, sum) = (
            Privilege::Read,
            Privilege::Reduce(diffuse_ir::ReductionOp::Sum),
        );
        let sum_all = kind(name, &[r, sum]);
        let plan = |launch: Shape| {
            let task = IndexTask::new(&sum_all, launch)
                .arg(&x, x.view().blocked(launch).unwrap(), r)
                .arg(&acc, Partition::replicate(), sum);
            plan_of(vec![task], &[])
        };
        let (one_point, two_points) = (plan(one()), plan(Tuple::shape(&[2, 1]).unwrap()));
        (one_point, two_points, x)
    }

    #[test]
    fn reductions_of_a_one_point_launch_read_and_write_the_store() {
        let (one_point, two_points, _) = sums_over_one_and_two_points("sum_all");
        let (one, _) = requirements(&one_point);
        assert_eq!(one[1].privilege, Privilege::ReadWrite);
        // Over two points each folds into a reduction instance of its own.
        let (two, _) = requirements(&two_points);
        assert_eq!(
            two[1].privilege,
            Privilege::Reduce(diffuse_ir::ReductionOp::Sum)
        );
    }

    #[test]
    fn only_a_one_point_launch_writing_its_whole_store_may_zero_a_new_one_itself() {
        let (one_point, two_points, x) = sums_over_one_and_two_points("zero_sum_all");
        let (reqs, _) = requirements(&one_point);
        // The sum's store: its point zeroes it; the read-only input keeps Legion's fill.
        assert_eq!(point_zeroable(&one_point, &reqs, 1), Some(1));
        assert_eq!(point_zeroable(&one_point, &reqs, 0), None);
        // Over two points no point holds the whole store (its fold, or Legion's fill,
        // zeroes it).
        let (reqs, _) = requirements(&two_points);
        assert_eq!(point_zeroable(&two_points, &reqs, 1), None);
        // A one-point write of part of a store leaves the rest as it was: filled.
        let head = IndexTask::new(&kind("zero_head", &[Privilege::ReadWrite]), one()).arg(
            &x,
            view(&x, [0, 0], [4, 8]),
            Privilege::ReadWrite,
        );
        let part = plan_of(vec![head], &[]);
        let (reqs, _) = requirements(&part);
        assert_eq!(point_zeroable(&part, &reqs, 0), None);
    }

    #[test]
    fn small_reductions_over_several_points_are_folded_by_diffuse_and_others_by_legion() {
        let (one_point, two_points, x) = sums_over_one_and_two_points("fold_sum_all");
        let limit = crate::LegionConfig::default().folded_reduction_elements;
        // One point folds into the store's own instance.
        let (reqs, of_arg) = requirements(&one_point);
        assert!(partials::folded_by_diffuse(&one_point, &reqs, &of_arg, limit).is_empty());
        // Two: the sum (argument 1, requirement 1) writes rows of partials, unless they would
        // be larger than allowed (two elements here).
        let (reqs, of_arg) = requirements(&two_points);
        assert_eq!(
            partials::folded_by_diffuse(&two_points, &reqs, &of_arg, limit),
            vec![partials::Folded {
                arg: 1,
                requirement: 1,
                op: diffuse_ir::ReductionOp::Sum,
                shape: Tuple::shape(&[2, 1, 1]).unwrap(),
            }]
        );
        assert!(partials::folded_by_diffuse(&two_points, &reqs, &of_arg, 1).is_empty());
        // A store the launch also reaches otherwise (read here) stays with Legion.
        let c = Context::detached();
        let acc = c.create_store(&[], DType::F64).unwrap();
        let (r, sum) = (
            Privilege::Read,
            Privilege::Reduce(diffuse_ir::ReductionOp::Sum),
        );
        let launch = Tuple::shape(&[2, 1]).unwrap();
        let scaled = IndexTask::new(&kind("fold_read_acc", &[r, r]), launch)
            .arg(&x, x.view().blocked(launch).unwrap(), r)
            .arg(&acc, Partition::replicate(), r);
        let summed = IndexTask::new(&kind("fold_sum_into_read", &[r, sum]), launch)
            .arg(&x, x.view().blocked(launch).unwrap(), r)
            .arg(&acc, Partition::replicate(), sum);
        let both = plan_of(vec![scaled, summed], &[]);
        let (reqs, of_arg) = requirements(&both);
        assert!(partials::folded_by_diffuse(&both, &reqs, &of_arg, limit).is_empty());
    }

    #[test]
    fn every_point_of_a_launch_gets_its_own_row_of_partials() {
        let launch = Tuple::shape(&[2, 3]).unwrap();
        let store = Tuple::shape(&[4]).unwrap();
        let shape = partials::partials_shape(launch, store).unwrap();
        assert_eq!(shape, Tuple::shape(&[2, 3, 4]).unwrap());
        let rows = partials::rows(shape).unwrap();
        assert!(rows.covers(shape, launch));
        let p = Tuple::new(&[1, 2]).unwrap();
        assert_eq!(
            rows.sub_store(shape, &p),
            Rect {
                lo: Tuple::new(&[1, 2, 0]).unwrap(),
                hi: Tuple::new(&[2, 3, 4]).unwrap(),
            }
        );
        // No partials for an empty store, or past the dimensions a region may have.
        assert_eq!(
            partials::partials_shape(launch, Tuple::shape(&[0]).unwrap()),
            None
        );
        let widest = Tuple::splat(diffuse_ir::MAX_DIMS, 1);
        assert_eq!(partials::partials_shape(widest, store), None);
    }

    #[test]
    fn a_merged_requirement_whose_first_write_leaves_part_of_the_store_reads_it() {
        let c = Context::detached();
        let x = c.create_store(&[8, 8], DType::F64).unwrap();
        let y = c.create_store(&[8, 8], DType::F64).unwrap();
        let (r, w) = (Privilege::Read, Privilege::Write);
        let head = IndexTask::new(&kind("head", &[w]), one()).arg(&x, view(&x, [0, 0], [4, 8]), w);
        let all = IndexTask::new(&kind("all", &[r, w]), one())
            .arg(&x, view(&x, [0, 0], [8, 8]), r)
            .arg(&y, view(&y, [0, 0], [8, 8]), w);
        let (reqs, _) = requirements(&staged(vec![head, all]));
        // Written first, but only its head: the rest keeps its values, so Legion must not
        // discard them.
        assert_eq!(reqs[0].partition, Partition::replicate());
        assert_eq!(reqs[0].privilege, Privilege::ReadWrite);
        assert_eq!(reqs[1].privilege, Privilege::Write);
    }
}
