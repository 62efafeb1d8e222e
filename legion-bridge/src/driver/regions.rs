//! Region lifecycles: the field space of each dtype, the index space of each shape, the
//! region of each store (made on first use, zero-filled unless its first user overwrites
//! it, kept for reuse when its store dies, destroyed past the cache's bound), and the
//! partials regions of reductions diffuse folds, which go with their store's region.

use std::ffi::c_void;
use std::sync::mpsc::Sender;
use std::sync::Arc;

use diffuse_ir::{DType, IrError, Shape, StoreId, StoreRef};
use hashbrown::HashMap;

use super::{DeadRegion, Driver, IndexSpace};
use crate::ffi;
use crate::geometry::{shape_domain, FIELD};
use crate::shared::{out_of_memory, Shared};

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

impl Driver {
    pub(super) fn field_space(&mut self, dtype: DType) -> ffi::legion_field_space_t {
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

    pub(super) fn index_space(&mut self, shape: Shape) -> &mut IndexSpace {
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
        let zero = vec![0u8; dtype.size_bytes()];
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
            // Kept in falling tree-id order, so that the next store takes the oldest free
            // region: a step's temporaries may come back in one call or in several (another
            // backend of the process settling or making a region in between), and oldest
            // first hands a repeated step the same regions either way (its first store took
            // the oldest of them, which is the first to come back). A step repeated on other
            // regions makes new Legion traces.
            let free = self.free.entry((shape, dtype)).or_default();
            let at = free.partition_point(|r| r.tree_id > region.tree_id);
            free.insert(at, region);
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

    /// The `nth` partials region of `shape` and `dtype` of reductions into the store whose
    /// region is `store` (a launch's `nth` folded argument reducing into it), made on first
    /// use and destroyed with the store's region: a repeated window's launches meet the
    /// same partials again, as Legion traces need.
    pub(super) fn partials_region(
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
}
