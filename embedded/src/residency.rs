//! Where a store's data lives when the backend has a GPU: a host copy (always allocated, the
//! store's [`HostBuffer`]), a device copy (allocated on the first GPU use), and which of them
//! hold the store's current values, as Legion tracks the validity of a region's instances.
//!
//! Validity changes in program order, when work is *enqueued*; data moves only when a copy
//! that is about to be used is stale:
//! - a GPU use uploads the store once, whole and contiguous, if only the host copy is valid
//!   (a use that overwrites the whole store only allocates);
//! - a host use (a CPU kernel, a host read or write, a fallback) downloads the store if only
//!   the device copy is valid, and waits for it;
//! - a write makes the written copy the only valid one.
//!
//! The device runs asynchronously: an upload reads the host buffer and a download writes it
//! *later*. Each store remembers the event after its last such transfer, and a host use that
//! could race with it (any use after a download; a write after an upload) waits for that
//! event first. Device memory goes back to the device's pool when the store dies (after
//! pending host transfers are waited for); when the device is out of memory, the
//! least-recently-used device copies of stores the current launch does not use are evicted
//! to the host (their data downloaded first if only the device had it), and only when none is
//! left is it an out-of-memory error naming the store.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use diffuse_backend::memory::HostBuffer;
use diffuse_device::{Device, DeviceError, DevicePtr, Event};
use diffuse_ir::{IrError, StoreRef};

/// How a launch or a host copy uses a store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Use {
    /// It reads the store's current values (a partial write counts: the rest is kept).
    pub(crate) reads: bool,
    /// It changes the store.
    pub(crate) writes: bool,
}

impl Use {
    /// Reads only.
    pub(crate) const READ: Use = Use {
        reads: true,
        writes: false,
    };

    /// Overwrites the whole store without reading it.
    #[cfg(test)]
    const OVERWRITE: Use = Use {
        reads: false,
        writes: true,
    };

    /// Reads and changes the store (an update in place, or a partial write).
    pub(crate) const UPDATE: Use = Use {
        reads: true,
        writes: true,
    };
}

/// A store's memory on the embedded backend: its host buffer and, with a GPU, its device
/// copy and their validity.
pub(crate) struct StoreMemory {
    host: HostBuffer,
    /// The device, when the backend has one.
    device: Option<Arc<dyn Device>>,
    state: Mutex<Residence>,
}

/// Which copies of a store hold its values.
struct Residence {
    /// The device copy, once the store was used on the device (and not evicted since).
    copy: Option<DeviceCopy>,
    /// The host buffer holds the store's values.
    host_valid: bool,
    /// The device copy holds the store's values.
    device_valid: bool,
    /// Nothing has written the store yet: its values are zeros (a device copy is zeroed
    /// on the device, not uploaded).
    unwritten: bool,
    /// After an upload from the host buffer: the upload may still be reading it.
    upload: Option<Event>,
    /// After a download into the host buffer: the download may still be writing it.
    download: Option<Event>,
    /// The backend's use counter when the device copy was last used (least recently used
    /// copies are evicted first).
    last_use: u64,
}

impl Residence {
    /// Records a write on the device (`on_device`) or on the host: that copy alone holds
    /// the store's values now.
    fn written(&mut self, on_device: bool) {
        self.device_valid = on_device;
        self.host_valid = !on_device;
        self.unwritten = false;
    }
}

/// A store's allocation in device memory, freed (stream-ordered) when dropped.
struct DeviceCopy {
    ptr: DevicePtr,
    bytes: usize,
    device: Arc<dyn Device>,
}

impl Drop for DeviceCopy {
    fn drop(&mut self) {
        self.device.free(self.ptr);
    }
}

impl StoreMemory {
    /// A store's memory around its host buffer, which holds the store's values (zeros, or
    /// nothing yet when the first use overwrites it).
    pub(crate) fn new(host: HostBuffer, device: Option<Arc<dyn Device>>) -> Self {
        StoreMemory {
            host,
            device,
            state: Mutex::new(Residence {
                copy: None,
                host_valid: true,
                device_valid: false,
                unwritten: true,
                upload: None,
                download: None,
                last_use: 0,
            }),
        }
    }

    /// The host buffer (its contents are the store's only when the host copy is valid: see
    /// [`Gpu::to_host`]).
    pub(crate) fn host(&self) -> &HostBuffer {
        &self.host
    }

    fn lock(&self) -> MutexGuard<'_, Residence> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for StoreMemory {
    fn drop(&mut self) {
        // The host buffer is freed right after: no transfer may still use it.
        let state = self.state.get_mut().unwrap_or_else(|e| e.into_inner());
        if let Some(device) = &self.device {
            for event in [state.upload.take(), state.download.take()]
                .into_iter()
                .flatten()
            {
                if let Err(e) = device.wait(event) {
                    tracing::warn!("waiting for the GPU before freeing a store failed: {e}");
                }
            }
        }
    }
}

/// One use of a store by a launch or host copy: the store, its memory, how it is used.
pub(crate) type StoreUse<'a> = (&'a StoreRef, &'a Arc<StoreMemory>, Use);

/// The backend's GPU: the device and the stores that have a copy on it.
pub(crate) struct Gpu {
    device: Arc<dyn Device>,
    /// Stores with a device copy (dead entries are dropped while looking for a victim).
    resident: Mutex<Vec<Weak<StoreMemory>>>,
    /// Uses so far (the clock of least-recently-used eviction).
    clock: AtomicU64,
    /// Work was enqueued since the last synchronization.
    pending: AtomicBool,
    /// Times the backend waited for the device.
    syncs: AtomicU64,
}

impl Gpu {
    /// The backend's view of `device`.
    pub(crate) fn new(device: Arc<dyn Device>) -> Self {
        Gpu {
            device,
            resident: Mutex::new(Vec::new()),
            clock: AtomicU64::new(0),
            pending: AtomicBool::new(false),
            syncs: AtomicU64::new(0),
        }
    }

    /// The device.
    pub(crate) fn device(&self) -> &Arc<dyn Device> {
        &self.device
    }

    /// Times the backend waited for the device so far.
    pub(crate) fn syncs(&self) -> u64 {
        self.syncs.load(Ordering::Relaxed)
    }

    /// Makes the device copy of every store in `uses` current for a GPU launch that uses
    /// them so: allocates the copies that are missing (evicting other stores' copies when the
    /// device is full) and uploads, whole, the stores the launch reads whose device copy is
    /// stale. Returns the device address of each store's copy, in order. Validity changes
    /// only when the launch is enqueued ([`Gpu::written_on_device`]).
    pub(crate) fn to_device(&self, uses: &[StoreUse<'_>]) -> Result<Vec<DevicePtr>, IrError> {
        let now = self.clock.fetch_add(1, Ordering::Relaxed);
        let mut ptrs = Vec::with_capacity(uses.len());
        for (i, (store, memory, how)) in uses.iter().enumerate() {
            if let Some(ptr) = uses[..i]
                .iter()
                .position(|(_, m, _)| Arc::ptr_eq(m, memory))
                .map(|j| ptrs[j])
            {
                ptrs.push(ptr);
                continue;
            }
            let missing = memory.lock().copy.is_none();
            if missing {
                let copy = self.allocate(store, uses)?;
                memory.lock().copy = Some(copy);
                self.lock_resident().push(Arc::downgrade(memory));
            }
            let mut state = memory.lock();
            state.last_use = now;
            let Some(ptr) = state.copy.as_ref().map(|c| c.ptr) else {
                return Err(self.failure(store, "its device copy vanished".into()));
            };
            if how.reads && !state.device_valid {
                debug_assert!(state.host_valid, "a store with no valid copy");
                let bytes = store.size_bytes();
                if state.unwritten {
                    // SAFETY: the device copy has room for the store.
                    unsafe { self.device.zero(ptr, bytes) }
                        .map_err(|e| self.failure(store, format!("zeroing it failed: {e}")))?;
                } else if bytes > 0 {
                    // SAFETY: the host buffer holds the whole store and outlives the upload
                    // (a host write or the store's drop waits for the event recorded below);
                    // the device copy has room for it.
                    unsafe {
                        self.device
                            .upload(ptr, memory.host.as_ptr().cast_const(), bytes)
                    }
                    .map_err(|e| self.failure(store, format!("uploading it failed: {e}")))?;
                    state.upload = Some(self.record(store)?);
                    self.pending.store(true, Ordering::Relaxed);
                }
                state.device_valid = true;
            }
            ptrs.push(ptr);
        }
        Ok(ptrs)
    }

    /// Records that a GPU launch using `uses` was enqueued: the stores it writes are valid
    /// on the device only.
    pub(crate) fn written_on_device(&self, uses: &[StoreUse<'_>]) {
        self.pending.store(true, Ordering::Relaxed);
        for (_, memory, how) in uses {
            if how.writes {
                memory.lock().written(true);
            }
        }
    }

    /// Makes the host copy of every store in `uses` current for host work that uses them
    /// so: downloads the stores it reads whose host copy is stale, waits for those downloads
    /// and for any earlier transfer the host work could race with, and marks the stores it
    /// writes valid on the host only. Returns once the host buffers may be used.
    pub(crate) fn to_host(&self, uses: &[StoreUse<'_>]) -> Result<(), IrError> {
        let mut waits: Vec<(Event, &StoreRef)> = Vec::new();
        let mut downloaded = Vec::new();
        for (store, memory, how) in uses {
            let mut state = memory.lock();
            if let Some(e) = state.download.take() {
                waits.push((e, store));
            }
            if how.writes {
                if let Some(e) = state.upload.take() {
                    waits.push((e, store));
                }
            }
            if how.reads && !state.host_valid {
                let Some(ptr) = state.copy.as_ref().map(|c| c.ptr) else {
                    return Err(self.failure(store, "no copy holds its values".into()));
                };
                let bytes = store.size_bytes();
                // SAFETY: the host buffer holds the whole store; nothing reads or writes it
                // until the wait below; the device copy holds `bytes` bytes.
                unsafe { self.device.download(memory.host.as_ptr(), ptr, bytes) }
                    .map_err(|e| self.failure(store, format!("downloading it failed: {e}")))?;
                state.host_valid = true;
                downloaded.push(*store);
            }
        }
        if let Some(last) = downloaded.last() {
            waits.push((self.record(last)?, last));
        }
        for (event, store) in waits {
            self.wait(event, store)?;
        }
        for (_, memory, how) in uses {
            if how.writes {
                memory.lock().written(false);
            }
        }
        Ok(())
    }

    /// Waits for everything enqueued so far, if anything was: a flush. Errors of
    /// asynchronous device work (a kernel fault) surface here.
    pub(crate) fn flush(&self) -> Result<(), IrError> {
        if !self.pending.swap(false, Ordering::Relaxed) {
            return Ok(());
        }
        self.syncs.fetch_add(1, Ordering::Relaxed);
        self.device.synchronize().map_err(|e| IrError::Backend {
            backend: "embedded".into(),
            message: format!("the GPU ({}) failed: {e}", self.device.info().name),
        })
    }

    /// Waits for `event` (recorded after a transfer of `store`) unless it has passed.
    fn wait(&self, event: Event, store: &StoreRef) -> Result<(), IrError> {
        let done = self
            .device
            .query(event)
            .map_err(|e| self.failure(store, format!("the GPU failed: {e}")))?;
        if !done {
            self.syncs.fetch_add(1, Ordering::Relaxed);
            self.device
                .wait(event)
                .map_err(|e| self.failure(store, format!("the GPU failed: {e}")))?;
        }
        Ok(())
    }

    fn record(&self, store: &StoreRef) -> Result<Event, IrError> {
        self.device
            .record()
            .map_err(|e| self.failure(store, format!("recording a GPU event failed: {e}")))
    }

    /// A device copy for `store`, evicting least-recently-used copies of stores `uses` does
    /// not name while the device is full.
    fn allocate(&self, store: &StoreRef, uses: &[StoreUse<'_>]) -> Result<DeviceCopy, IrError> {
        let bytes = store.size_bytes().max(1);
        let mut waited = false;
        loop {
            match self.device.alloc(bytes) {
                Ok(ptr) => {
                    return Ok(DeviceCopy {
                        ptr,
                        bytes,
                        device: self.device.clone(),
                    })
                }
                Err(DeviceError::OutOfMemory { reason, .. }) => {
                    if self.evict_one(uses)? {
                        continue;
                    }
                    // Freed memory may come back only once the device reaches the frees.
                    if !waited {
                        waited = true;
                        self.syncs.fetch_add(1, Ordering::Relaxed);
                        self.device
                            .synchronize()
                            .map_err(|e| self.failure(store, format!("the GPU failed: {e}")))?;
                        continue;
                    }
                    return Err(IrError::OutOfMemory {
                        backend: "embedded".into(),
                        store: store.id(),
                        shape: store.shape(),
                        dtype: store.dtype(),
                        bytes,
                        reason: format!(
                            "the GPU ({}) has no room left for it after evicting every other \
                             store to the host: {reason}",
                            self.device.info().name
                        ),
                    });
                }
                Err(e) => {
                    return Err(self.failure(store, format!("allocating its device copy: {e}")))
                }
            }
        }
    }

    /// Evicts the least recently used device copy of a store that `uses` does not name (its
    /// values downloaded first when only the device holds them); false when there is none.
    fn evict_one(&self, uses: &[StoreUse<'_>]) -> Result<bool, IrError> {
        let victim = {
            let mut resident = self.lock_resident();
            resident.retain(|w| w.strong_count() > 0);
            let in_use = |m: &Arc<StoreMemory>| uses.iter().any(|(_, u, _)| Arc::ptr_eq(u, m));
            let best = resident
                .iter()
                .enumerate()
                .filter_map(|(i, w)| w.upgrade().map(|m| (i, m)))
                .filter(|(_, m)| !in_use(m) && m.lock().copy.is_some())
                .min_by_key(|(_, m)| m.lock().last_use);
            best.map(|(i, m)| {
                resident.swap_remove(i);
                m
            })
        };
        let Some(memory) = victim else {
            return Ok(false);
        };
        let mut state = memory.lock();
        if state.device_valid && !state.host_valid {
            let Some(copy) = state.copy.as_ref() else {
                return Ok(false);
            };
            // SAFETY: the host buffer holds the whole store and is not used until the
            // download's event has passed (every host use waits for it).
            unsafe {
                self.device.download(
                    memory.host.as_ptr(),
                    copy.ptr,
                    copy.bytes.min(memory.host_bytes()),
                )
            }
            .map_err(|e| IrError::Backend {
                backend: "embedded".into(),
                message: format!("evicting a store from the GPU failed: {e}"),
            })?;
            state.host_valid = true;
            state.download = Some(self.device.record().map_err(|e| IrError::Backend {
                backend: "embedded".into(),
                message: format!("recording a GPU event failed: {e}"),
            })?);
            self.pending.store(true, Ordering::Relaxed);
        }
        state.device_valid = false;
        // Freed in stream order, after the download.
        state.copy = None;
        Ok(true)
    }

    fn lock_resident(&self) -> MutexGuard<'_, Vec<Weak<StoreMemory>>> {
        self.resident.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn failure(&self, store: &StoreRef, what: String) -> IrError {
        IrError::Backend {
            backend: "embedded".into(),
            message: format!(
                "store {} ({} {}) on the GPU ({}): {what}",
                store.id(),
                store.dtype(),
                store.shape(),
                self.device.info().name
            ),
        }
    }
}

impl StoreMemory {
    /// Bytes of the host buffer.
    fn host_bytes(&self) -> usize {
        self.host.len() * self.host.dtype().size_bytes()
    }
}

#[cfg(test)]
mod tests {
    //! The validity state machine against a plain model: random GPU and host uses of a few
    //! stores (reads, in-place updates, whole overwrites, two-store launches), store drops,
    //! flushes and injected device out-of-memory, on the simulated GPU (asynchronous: a
    //! missing wait reads stale data). The data always matches the model; without memory
    //! pressure the uploads and downloads are exactly the ones validity requires (so at most
    //! one upload of a store per host write).

    use super::*;
    use diffuse_backend::memory::{BufferCache, FirstUse, MemoryStats};
    use diffuse_device::sim::{SimConfig, SimDevice, SimFault};
    use diffuse_ir::{Context, DType};
    use proptest::prelude::*;

    /// Elements per store.
    const LEN: usize = 64;
    const BYTES: usize = LEN * 8;

    #[derive(Clone, Debug)]
    enum Op {
        /// A GPU kernel adds `k` to every element of the store.
        GpuAdd(usize, f64),
        /// A GPU kernel fills the store with `v` (a whole overwrite: nothing uploaded).
        GpuFill(usize, f64),
        /// A GPU kernel writes `2 * a` into `b` (two stores in one launch).
        GpuDouble(usize, usize),
        /// The host adds `k` to every element (a CPU kernel).
        HostAdd(usize, f64),
        /// The host overwrites the whole store with `v` (a host write).
        HostFill(usize, f64),
        /// The host reads the store; it must match the model.
        HostRead(usize),
        /// The store dies; a new one (zeros) takes its place.
        Replace(usize),
        /// The backend flushes.
        Flush,
        /// The device's next allocation fails as out of memory.
        FailAlloc,
    }

    /// Random operations on `stores` stores; `faults`: with injected allocation failures.
    fn op(stores: usize, faults: bool) -> impl Strategy<Value = Op> {
        let s = 0..stores;
        let v = (-4i32..5).prop_map(f64::from);
        prop_oneof![
            3 => (s.clone(), v.clone()).prop_map(|(s, k)| Op::GpuAdd(s, k)),
            2 => (s.clone(), v.clone()).prop_map(|(s, k)| Op::GpuFill(s, k)),
            2 => (s.clone(), s.clone()).prop_filter("distinct", |(a, b)| a != b)
                .prop_map(|(a, b)| Op::GpuDouble(a, b)),
            2 => (s.clone(), v.clone()).prop_map(|(s, k)| Op::HostAdd(s, k)),
            1 => (s.clone(), v).prop_map(|(s, k)| Op::HostFill(s, k)),
            3 => s.clone().prop_map(Op::HostRead),
            1 => s.prop_map(Op::Replace),
            1 => Just(Op::Flush),
            u32::from(faults) => Just(Op::FailAlloc),
        ]
    }

    /// A store of the test: its IR handle and its memory on the backend.
    struct Held {
        store: StoreRef,
        memory: Arc<StoreMemory>,
    }

    /// The model of one store: its values and which copies validity says are current.
    #[derive(Clone)]
    struct Model {
        values: Vec<f64>,
        host_valid: bool,
        device_valid: bool,
        /// Never written: a device copy is zeroed, not uploaded.
        unwritten: bool,
    }

    struct Rig {
        context: Context,
        stats: Arc<MemoryStats>,
        cache: Arc<BufferCache>,
        device: Arc<SimDevice>,
        gpu: Gpu,
    }

    impl Rig {
        fn new(memory_bytes: usize) -> Self {
            let device = Arc::new(
                SimDevice::new(SimConfig {
                    memory_bytes,
                    ..SimConfig::default()
                })
                .expect("the simulated GPU starts"),
            );
            Rig {
                context: Context::detached(),
                stats: Arc::new(MemoryStats::with_limit(usize::MAX)),
                cache: Arc::new(BufferCache::new(0)),
                gpu: Gpu::new(device.clone()),
                device,
            }
        }

        fn store(&self) -> Held {
            let store = self
                .context
                .create_store(&[LEN as i64], DType::F64)
                .expect("a store")
                .task_ref();
            let host =
                HostBuffer::for_store(DType::F64, LEN, FirstUse::Reads, &self.stats, &self.cache)
                    .expect("host memory");
            let device: Arc<dyn Device> = self.device.clone();
            Held {
                store,
                memory: Arc::new(StoreMemory::new(host, Some(device))),
            }
        }
    }

    fn host_values(held: &Held) -> Vec<f64> {
        // SAFETY: the host buffer holds LEN f64 and the caller made it current.
        unsafe { std::slice::from_raw_parts(held.memory.host().as_ptr() as *const f64, LEN) }
            .to_vec()
    }

    fn host_update(held: &Held, f: impl Fn(f64) -> f64) {
        // SAFETY: as above; nothing else touches it.
        let values =
            unsafe { std::slice::from_raw_parts_mut(held.memory.host().as_ptr() as *mut f64, LEN) };
        for v in values {
            *v = f(*v);
        }
    }

    /// A GPU launch using `uses`: the device copies made current, `body` enqueued over them
    /// (as `f64` arrays of LEN, in order) with `k`, and validity updated.
    fn launch(
        gpu: &Gpu,
        uses: &[StoreUse<'_>],
        body: fn(&[*mut f64], f64),
        k: f64,
    ) -> Result<(), TestCaseError> {
        let ptrs = gpu
            .to_device(uses)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let work = Box::new(move || {
            let arrays: Vec<*mut f64> = ptrs.iter().map(|&p| p as usize as *mut f64).collect();
            body(&arrays, k);
            Ok(())
        });
        // SAFETY: the addresses are device copies of LEN f64, current for this launch.
        unsafe { gpu.device().launch(work) }.expect("enqueued");
        gpu.written_on_device(uses);
        Ok(())
    }

    fn add(a: &[*mut f64], k: f64) {
        for i in 0..LEN {
            // SAFETY: LEN elements (see `launch`).
            unsafe { *a[0].add(i) += k };
        }
    }

    fn fill(a: &[*mut f64], v: f64) {
        for i in 0..LEN {
            // SAFETY: as above.
            unsafe { *a[0].add(i) = v };
        }
    }

    fn double(a: &[*mut f64], _: f64) {
        for i in 0..LEN {
            // SAFETY: as above; the two arrays are different stores' copies.
            unsafe { *a[1].add(i) = 2.0 * *a[0].add(i) };
        }
    }

    /// Runs `ops`; `pressure` when the device has room for fewer copies than there are
    /// stores (then transfers are not predicted, only data checked).
    fn run(
        ops: &[Op],
        stores: usize,
        memory_bytes: usize,
        pressure: bool,
    ) -> Result<(), TestCaseError> {
        let rig = Rig::new(memory_bytes);
        let mut held: Vec<Held> = (0..stores).map(|_| rig.store()).collect();
        let fresh = Model {
            values: vec![0.0; LEN],
            host_valid: true,
            device_valid: false,
            unwritten: true,
        };
        let mut model = vec![fresh.clone(); stores];
        for (step, op) in ops.iter().enumerate() {
            let before = rig.device.counters();
            let mut uploads = 0u64;
            let mut downloads = 0u64;
            let gpu_use = |model: &mut Vec<Model>, s: usize, reads: bool, uploads: &mut u64| {
                if reads && !model[s].device_valid && !model[s].unwritten {
                    *uploads += BYTES as u64;
                }
                model[s].device_valid = true;
                model[s].host_valid = false;
                model[s].unwritten = false;
            };
            match *op {
                Op::GpuAdd(s, k) => {
                    let h = &held[s];
                    launch(&rig.gpu, &[(&h.store, &h.memory, Use::UPDATE)], add, k)?;
                    gpu_use(&mut model, s, true, &mut uploads);
                    model[s].values.iter_mut().for_each(|v| *v += k);
                }
                Op::GpuFill(s, v) => {
                    let h = &held[s];
                    launch(&rig.gpu, &[(&h.store, &h.memory, Use::OVERWRITE)], fill, v)?;
                    gpu_use(&mut model, s, false, &mut uploads);
                    model[s].values = vec![v; LEN];
                }
                Op::GpuDouble(a, b) => {
                    let (ha, hb) = (&held[a], &held[b]);
                    let uses = [
                        (&ha.store, &ha.memory, Use::READ),
                        (&hb.store, &hb.memory, Use::OVERWRITE),
                    ];
                    launch(&rig.gpu, &uses, double, 0.0)?;
                    if !model[a].device_valid {
                        if !model[a].unwritten {
                            uploads += BYTES as u64;
                        }
                        model[a].device_valid = true;
                    }
                    gpu_use(&mut model, b, false, &mut uploads);
                    model[b].values = model[a].values.iter().map(|v| 2.0 * v).collect();
                }
                Op::HostAdd(s, k) => {
                    let h = &held[s];
                    rig.gpu
                        .to_host(&[(&h.store, &h.memory, Use::UPDATE)])
                        .map_err(|e| TestCaseError::fail(e.to_string()))?;
                    host_update(h, |v| v + k);
                    if !model[s].host_valid {
                        downloads += BYTES as u64;
                    }
                    model[s].host_valid = true;
                    model[s].device_valid = false;
                    model[s].unwritten = false;
                    model[s].values.iter_mut().for_each(|v| *v += k);
                }
                Op::HostFill(s, v) => {
                    let h = &held[s];
                    rig.gpu
                        .to_host(&[(&h.store, &h.memory, Use::OVERWRITE)])
                        .map_err(|e| TestCaseError::fail(e.to_string()))?;
                    host_update(h, |_| v);
                    model[s].host_valid = true;
                    model[s].device_valid = false;
                    model[s].unwritten = false;
                    model[s].values = vec![v; LEN];
                }
                Op::HostRead(s) => {
                    let h = &held[s];
                    rig.gpu
                        .to_host(&[(&h.store, &h.memory, Use::READ)])
                        .map_err(|e| TestCaseError::fail(e.to_string()))?;
                    if !model[s].host_valid {
                        downloads += BYTES as u64;
                    }
                    model[s].host_valid = true;
                    prop_assert_eq!(
                        host_values(h),
                        model[s].values.clone(),
                        "step {}: {:?}",
                        step,
                        op
                    );
                }
                Op::Replace(s) => {
                    held[s] = rig.store();
                    model[s] = fresh.clone();
                }
                Op::Flush => rig
                    .gpu
                    .flush()
                    .map_err(|e| TestCaseError::fail(e.to_string()))?,
                Op::FailAlloc => rig.device.inject(SimFault::Alloc(1)),
            }
            if !pressure {
                let after = rig.device.counters();
                prop_assert_eq!(
                    after.h2d_bytes - before.h2d_bytes,
                    uploads,
                    "uploads at step {}: {:?}",
                    step,
                    op
                );
                prop_assert_eq!(
                    after.d2h_bytes - before.d2h_bytes,
                    downloads,
                    "downloads at step {}: {:?}",
                    step,
                    op
                );
            }
        }
        // Nothing is lost: every store reads back as the model says.
        for (s, h) in held.iter().enumerate() {
            rig.gpu
                .to_host(&[(&h.store, &h.memory, Use::READ)])
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(
                host_values(h),
                model[s].values.clone(),
                "store {} at the end",
                s
            );
        }
        rig.gpu
            .flush()
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        /// Room for every store: transfers exactly as validity requires.
        #[test]
        fn validity_matches_the_model(ops in prop::collection::vec(op(3, false), 1..40)) {
            run(&ops, 3, 1 << 20, false)?;
        }

        /// Room for two of four stores, and allocations failing at random: evictions keep
        /// the data.
        #[test]
        fn eviction_keeps_the_data(ops in prop::collection::vec(op(4, true), 1..40)) {
            run(&ops, 4, 2 * BYTES + 256, true)?;
        }
    }

    #[test]
    fn a_store_that_fits_nowhere_is_out_of_memory_by_name() {
        let rig = Rig::new(BYTES / 2);
        let h = rig.store();
        let e = rig
            .gpu
            .to_device(&[(&h.store, &h.memory, Use::READ)])
            .expect_err("no room");
        let message = e.to_string();
        assert!(
            matches!(e, IrError::OutOfMemory { store, .. } if store == h.store.id()),
            "{message}"
        );
        assert!(message.contains("GPU"), "{message}");
    }
}
