//! The simulated GPU: a [`Device`] for machines without one, so that everything above the
//! device layer (residency, uploads, launches, waits) runs and is tested everywhere.
//!
//! It behaves as a GPU does where that matters to callers, and more strictly:
//! - its memory is an arena of its own ([`SimConfig::memory_bytes`]); device pointers are
//!   addresses in it (so launch work, a host function, can use them), and every allocation is
//!   *poisoned* (filled with `0xFF` bytes, NaN as floats) when the simulator reaches it, so
//!   reading memory nobody wrote shows as a wrong result;
//! - everything enqueued runs later, in order, on a simulator thread that lags a little
//!   before each operation ([`SimConfig::lag`]): an upload reads its host source and a
//!   download writes its host destination only then, so a caller that forgets to wait sees
//!   stale data;
//! - copies are checked against the allocations the caller holds: a range outside them is
//!   an error at once (a GPU would fault later, or corrupt memory);
//! - freed memory is reused only once the simulator has reached the free (stream order); an
//!   allocation that finds no room waits for the frees already enqueued before it reports
//!   out of memory, as a stream-ordered pool reuses memory freed earlier on its stream;
//! - faults can be injected ([`SimFault`]): an allocation that fails, a synchronize that
//!   reports an error.
//!
//! Errors of enqueued work (a launch's `Err`, a panic in it, an injected fault, a free of
//! an address that is no allocation) are recorded; [`Device::wait`] returns the first one
//! recorded, and [`Device::synchronize`] returns it and clears it. Work enqueued after a
//! failure still runs.
//!
//! [`DeviceCounters::syncs`](crate::DeviceCounters::syncs) counts every `synchronize` and
//! every `wait` that had to block, as the CUDA device does.

mod arena;

use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use arena::Arena;

use crate::counters::{Counters, Direction};
use crate::{
    panic_message, Copy2d, Device, DeviceCounters, DeviceError, DeviceInfo, DeviceKind, DevicePtr,
    Event, LaunchWork, Place,
};

/// The memory a simulated GPU has unless configured otherwise: 1 GiB.
pub const DEFAULT_MEMORY_BYTES: usize = 1 << 30;

/// A fault to inject, counted from when it is installed (at [`SimDevice::new`] for
/// [`SimConfig::faults`], at [`SimDevice::inject`] otherwise).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SimFault {
    /// The `n`-th allocation from now fails as out of memory (`Alloc(1)`: the next one).
    /// `DIFFUSE_SIM_FAULTS` writes it `alloc@n`.
    Alloc(u64),
    /// The `n`-th [`Device::synchronize`] from now reports an injected error once the work
    /// before it has run. `DIFFUSE_SIM_FAULTS` writes it `sync@n`.
    Sync(u64),
}

/// How a simulated GPU is configured.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimConfig {
    /// Its memory in bytes (`DIFFUSE_SIM_MEMORY`; by default [`DEFAULT_MEMORY_BYTES`]).
    pub memory_bytes: usize,
    /// Faults to inject (`DIFFUSE_SIM_FAULTS`, e.g. `alloc@3,sync@2`).
    pub faults: Vec<SimFault>,
    /// How long the simulator waits before each operation, so that work enqueued without a
    /// wait is still pending when the caller looks (50 µs by default).
    pub lag: Duration,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            memory_bytes: DEFAULT_MEMORY_BYTES,
            faults: Vec::new(),
            lag: Duration::from_micros(50),
        }
    }
}

impl SimConfig {
    /// The configuration `DIFFUSE_SIM_MEMORY` and `DIFFUSE_SIM_FAULTS` give (defaults where
    /// unset); a malformed value is an error naming the variable and the value.
    pub fn from_env() -> Result<Self, DeviceError> {
        let memory = std::env::var("DIFFUSE_SIM_MEMORY").ok();
        let faults = std::env::var("DIFFUSE_SIM_FAULTS").ok();
        Self::from_values(memory.as_deref(), faults.as_deref())
    }

    /// The configuration the two variables' values give, as [`SimConfig::from_env`] reads
    /// them (`None`: unset): the memory in bytes, and faults as `kind@n` separated by commas.
    pub fn from_values(memory: Option<&str>, faults: Option<&str>) -> Result<Self, DeviceError> {
        let mut config = SimConfig::default();
        if let Some(text) = memory.map(str::trim).filter(|t| !t.is_empty()) {
            config.memory_bytes = text.parse().map_err(|_| {
                DeviceError::Unavailable(format!(
                    "DIFFUSE_SIM_MEMORY={text:?} is not a number of bytes"
                ))
            })?;
        }
        if let Some(text) = faults {
            config.faults = text
                .split(',')
                .map(str::trim)
                .filter(|item| !item.is_empty())
                .map(|item| {
                    parse_fault(item).ok_or_else(|| {
                        DeviceError::Unavailable(format!(
                            "DIFFUSE_SIM_FAULTS={text:?}: {item:?} is no fault \
                             (alloc@N or sync@N, N from 1)"
                        ))
                    })
                })
                .collect::<Result<_, _>>()?;
        }
        Ok(config)
    }
}

/// `alloc@N` or `sync@N` (N ≥ 1).
fn parse_fault(item: &str) -> Option<SimFault> {
    let (kind, n) = item.split_once('@')?;
    let n: u64 = n.trim().parse().ok().filter(|&n| n > 0)?;
    match kind.trim() {
        "alloc" => Some(SimFault::Alloc(n)),
        "sync" => Some(SimFault::Sync(n)),
        _ => None,
    }
}

/// A raw pointer that an enqueued operation carries to the simulator thread (the caller
/// vouched for it in the `unsafe` call that enqueued the operation).
#[derive(Clone, Copy)]
struct SendPtr(*mut u8);

// SAFETY: see the type's doc: the enqueueing call's contract makes the access valid when the
// simulator runs the operation.
unsafe impl Send for SendPtr {}

impl SendPtr {
    fn at(address: u64) -> Self {
        SendPtr(address as usize as *mut u8)
    }

    /// The pointer (a method, so that closures capture the whole `Send` wrapper).
    fn get(self) -> *mut u8 {
        self.0
    }
}

/// One operation for the simulator thread: the sequence number it completes, and its work.
struct Job {
    seq: u64,
    run: Box<dyn FnOnce() -> Result<(), DeviceError> + Send>,
}

/// What the caller threads and the simulator thread share.
struct Shared {
    progress: Mutex<Progress>,
    /// Signalled whenever `progress` changes.
    changed: Condvar,
    arena: Mutex<Arena>,
}

/// How far the simulator has come.
struct Progress {
    /// The sequence number of the last operation run (operations are numbered from 1).
    completed: u64,
    /// False once the simulator thread has stopped.
    running: bool,
    /// The first error of enqueued work not yet reported by a synchronize.
    error: Option<DeviceError>,
}

/// The caller side of the queue.
struct Queue {
    /// `None` once the device is dropping.
    sender: Option<Sender<Job>>,
    /// The sequence number of the last operation enqueued.
    enqueued: u64,
}

/// An injected fault counting down to the call it hits.
#[derive(Debug)]
struct Armed {
    fault: SimFault,
    remaining: u64,
}

/// The simulated GPU (see the module docs).
pub struct SimDevice {
    info: DeviceInfo,
    shared: Arc<Shared>,
    queue: Mutex<Queue>,
    simulator: Option<JoinHandle<()>>,
    faults: Mutex<Vec<Armed>>,
    /// The sequence number of the last free enqueued.
    last_free: AtomicU64,
    counters: Counters,
}

/// Locks a mutex whose data stays consistent even if a holder panicked (every critical
/// section here leaves it whole).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn stopped() -> DeviceError {
    DeviceError::Failed {
        what: "using the simulated GPU".into(),
        reason: "the simulator thread has stopped".into(),
    }
}

impl SimDevice {
    /// A simulated GPU with `config`'s memory, faults and lag; its simulator thread starts
    /// now. Fails when the host cannot reserve the memory or start the thread.
    pub fn new(config: SimConfig) -> Result<SimDevice, DeviceError> {
        let unavailable =
            |reason: String| DeviceError::Unavailable(format!("simulated GPU: {reason}"));
        let arena = Arena::new(config.memory_bytes).map_err(unavailable)?;
        let memory_bytes = arena.size();
        let shared = Arc::new(Shared {
            progress: Mutex::new(Progress {
                completed: 0,
                running: true,
                error: None,
            }),
            changed: Condvar::new(),
            arena: Mutex::new(arena),
        });
        let (sender, jobs) = mpsc::channel();
        let simulator = {
            let shared = shared.clone();
            let lag = config.lag;
            thread::Builder::new()
                .name("diffuse-sim-gpu".into())
                .spawn(move || simulate(&shared, jobs, lag))
                .map_err(|e| unavailable(format!("cannot start the simulator thread: {e}")))?
        };
        let device = SimDevice {
            info: DeviceInfo {
                name: "simulated GPU".into(),
                kind: DeviceKind::Simulated,
                memory_bytes,
                chip: None,
            },
            shared,
            queue: Mutex::new(Queue {
                sender: Some(sender),
                enqueued: 0,
            }),
            simulator: Some(simulator),
            faults: Mutex::new(Vec::new()),
            last_free: AtomicU64::new(0),
            counters: Counters::default(),
        };
        for fault in config.faults {
            device.inject(fault);
        }
        Ok(device)
    }

    /// Installs a fault, counted from this call (see [`SimFault`]).
    pub fn inject(&self, fault: SimFault) {
        let remaining = match fault {
            SimFault::Alloc(n) | SimFault::Sync(n) => n.max(1),
        };
        lock(&self.faults).push(Armed { fault, remaining });
    }

    /// Counts one call of the kind `is_kind` selects against the armed faults: true when a
    /// fault hits this call (it is then disarmed).
    fn fault_hits(&self, is_kind: fn(&SimFault) -> bool) -> bool {
        let mut faults = lock(&self.faults);
        let mut hit = false;
        faults.retain_mut(|armed| {
            if !is_kind(&armed.fault) {
                return true;
            }
            armed.remaining -= 1;
            hit |= armed.remaining == 0;
            armed.remaining > 0
        });
        hit
    }

    /// Enqueues `run`; returns its sequence number.
    fn enqueue(
        &self,
        run: impl FnOnce() -> Result<(), DeviceError> + Send + 'static,
    ) -> Result<u64, DeviceError> {
        let mut queue = lock(&self.queue);
        let seq = queue.enqueued + 1;
        let sender = queue.sender.as_ref().ok_or_else(stopped)?;
        sender
            .send(Job {
                seq,
                run: Box::new(run),
            })
            .map_err(|_| stopped())?;
        queue.enqueued = seq;
        Ok(seq)
    }

    /// Blocks until the operation numbered `seq` has run; fails only when the simulator
    /// thread stopped before it. Returns the progress, locked.
    fn reach(&self, seq: u64) -> Result<MutexGuard<'_, Progress>, DeviceError> {
        let mut progress = lock(&self.shared.progress);
        while progress.completed < seq && progress.running {
            progress = self
                .shared
                .changed
                .wait(progress)
                .unwrap_or_else(PoisonError::into_inner);
        }
        if progress.completed < seq {
            return Err(stopped());
        }
        Ok(progress)
    }

    /// Checks that `[ptr, ptr + bytes)` lies in one allocation the caller holds.
    fn check_range(&self, ptr: DevicePtr, bytes: usize, what: &str) -> Result<(), DeviceError> {
        if bytes == 0 || lock(&self.shared.arena).holds(ptr, bytes) {
            return Ok(());
        }
        Err(DeviceError::Failed {
            what: what.to_string(),
            reason: format!(
                "{bytes} bytes at {ptr:#x} do not lie in one allocation of the simulated GPU"
            ),
        })
    }

    /// Enqueues a copy of `bytes` bytes from `src` to `dst` (either side may be host or
    /// arena memory), counted as `direction`, after checking that the ranges of it at
    /// `device_sides` lie in allocations.
    fn enqueue_copy(
        &self,
        dst: SendPtr,
        src: SendPtr,
        bytes: usize,
        direction: Direction,
        device_sides: &[DevicePtr],
    ) -> Result<(), DeviceError> {
        if bytes == 0 {
            return Ok(());
        }
        let what = direction.copying(bytes);
        for &side in device_sides {
            self.check_range(side, bytes, &what)?;
        }
        self.enqueue(move || {
            // SAFETY: the enqueueing call's contract: both ranges are valid now.
            unsafe { std::ptr::copy(src.get(), dst.get(), bytes) };
            Ok(())
        })?;
        self.counters.copied(direction, bytes);
        Ok(())
    }
}

/// The simulator thread: runs each operation after the lag, records the first error, and
/// marks its progress; marks itself stopped however it ends.
fn simulate(shared: &Shared, jobs: Receiver<Job>, lag: Duration) {
    /// Marks the simulator stopped when dropped (also if the thread unwinds).
    struct Stopped<'a>(&'a Shared);
    impl Drop for Stopped<'_> {
        fn drop(&mut self) {
            lock(&self.0.progress).running = false;
            self.0.changed.notify_all();
        }
    }
    let _stopped = Stopped(shared);
    for job in jobs {
        if !lag.is_zero() {
            thread::sleep(lag);
        }
        let result = catch_unwind(AssertUnwindSafe(job.run)).unwrap_or_else(|panic| {
            Err(DeviceError::Kernel(format!(
                "work on the simulated GPU panicked: {}",
                panic_message(&*panic)
            )))
        });
        let mut progress = lock(&shared.progress);
        if let Err(e) = result {
            progress.error.get_or_insert(e);
        }
        progress.completed = job.seq;
        drop(progress);
        shared.changed.notify_all();
    }
}

impl fmt::Debug for SimDevice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SimDevice")
            .field("info", &self.info)
            .field("counters", &self.counters.snapshot())
            .finish_non_exhaustive()
    }
}

impl Device for SimDevice {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    fn alloc(&self, bytes: usize) -> Result<DevicePtr, DeviceError> {
        if self.fault_hits(|f| matches!(f, SimFault::Alloc(_))) {
            return Err(DeviceError::OutOfMemory {
                bytes,
                reason: "injected fault of the simulated GPU".into(),
            });
        }
        let ptr = loop {
            let mut arena = lock(&self.shared.arena);
            if let Some(ptr) = arena.reserve(bytes) {
                break ptr;
            }
            let (free, largest) = arena.free_space();
            let size = arena.size();
            drop(arena);
            // Frees enqueued before this allocation may give it room once they have run.
            let last_free = self.last_free.load(Ordering::Acquire);
            if lock(&self.shared.progress).completed < last_free {
                drop(self.reach(last_free)?);
                continue;
            }
            return Err(DeviceError::OutOfMemory {
                bytes,
                reason: format!(
                    "the simulated GPU has {free} of {size} bytes free, the largest free \
                     block {largest} bytes"
                ),
            });
        };
        let length = bytes.max(1).next_multiple_of(arena::ALIGN);
        let at = SendPtr::at(ptr);
        self.enqueue(move || {
            // SAFETY: the block was reserved for this allocation and lies in the arena.
            unsafe { std::ptr::write_bytes(at.get(), 0xFF, length) };
            Ok(())
        })?;
        self.counters.allocated(bytes);
        Ok(ptr)
    }

    fn free(&self, ptr: DevicePtr) {
        let held = lock(&self.shared.arena).unhold(ptr);
        let shared = self.shared.clone();
        let enqueued = self.enqueue(move || match held {
            Some((offset, length, _)) => {
                lock(&shared.arena).release(offset, length);
                Ok(())
            }
            None => Err(DeviceError::Failed {
                what: format!("freeing {ptr:#x} on the simulated GPU"),
                reason: "it is not an allocation of this device (or was freed already)".into(),
            }),
        });
        match enqueued {
            Ok(seq) => {
                self.last_free.fetch_max(seq, Ordering::AcqRel);
                if let Some((_, _, requested)) = held {
                    self.counters.freed(requested);
                }
            }
            Err(e) => tracing::warn!("freeing {ptr:#x}: {e}"),
        }
    }

    unsafe fn upload(
        &self,
        dst: DevicePtr,
        src: *const u8,
        bytes: usize,
    ) -> Result<(), DeviceError> {
        let src = SendPtr(src.cast_mut());
        self.enqueue_copy(
            SendPtr::at(dst),
            src,
            bytes,
            Direction::HostToDevice,
            &[dst],
        )
    }

    unsafe fn download(
        &self,
        dst: *mut u8,
        src: DevicePtr,
        bytes: usize,
    ) -> Result<(), DeviceError> {
        let dst = SendPtr(dst);
        self.enqueue_copy(
            dst,
            SendPtr::at(src),
            bytes,
            Direction::DeviceToHost,
            &[src],
        )
    }

    unsafe fn copy(&self, dst: DevicePtr, src: DevicePtr, bytes: usize) -> Result<(), DeviceError> {
        let (to, from) = (SendPtr::at(dst), SendPtr::at(src));
        self.enqueue_copy(to, from, bytes, Direction::DeviceToDevice, &[src, dst])
    }

    unsafe fn zero(&self, dst: DevicePtr, bytes: usize) -> Result<(), DeviceError> {
        if bytes == 0 {
            return Ok(());
        }
        self.check_range(dst, bytes, &format!("zeroing {bytes} bytes"))?;
        let to = SendPtr::at(dst);
        self.enqueue(move || {
            // SAFETY: the enqueueing call's contract: the range is valid now.
            unsafe { std::ptr::write_bytes(to.get(), 0, bytes) };
            Ok(())
        })
        .map(|_| ())
    }

    unsafe fn copy_2d(&self, copy: &Copy2d) -> Result<(), DeviceError> {
        let Some((direction, what)) = Direction::of_pitched(copy)? else {
            return Ok(());
        };
        let span = |pitch: usize| {
            pitch
                .checked_mul(copy.rows - 1)
                .and_then(|s| s.checked_add(copy.width))
        };
        let (Some(src_span), Some(dst_span)) = (span(copy.src_pitch), span(copy.dst_pitch)) else {
            return Err(DeviceError::Failed {
                what,
                reason: "its extent overflows the address space".into(),
            });
        };
        let side = |place: Place, span: usize| -> Result<SendPtr, DeviceError> {
            match place {
                Place::Host(p) => Ok(SendPtr(p)),
                Place::Device(p) => {
                    self.check_range(p, span, &what)?;
                    Ok(SendPtr::at(p))
                }
            }
        };
        let src = side(copy.src, src_span)?;
        let dst = side(copy.dst, dst_span)?;
        let Copy2d {
            src_pitch,
            dst_pitch,
            width,
            rows,
            ..
        } = *copy;
        self.enqueue(move || {
            for row in 0..rows {
                // SAFETY: the enqueueing call's contract: every row of both sides is valid.
                unsafe {
                    std::ptr::copy(
                        src.get().add(row * src_pitch),
                        dst.get().add(row * dst_pitch),
                        width,
                    )
                };
            }
            Ok(())
        })?;
        self.counters.copied(direction, width * rows);
        Ok(())
    }

    unsafe fn launch(&self, work: LaunchWork) -> Result<(), DeviceError> {
        self.enqueue(move || work().map_err(DeviceError::Kernel))?;
        self.counters.launched();
        Ok(())
    }

    fn record(&self) -> Result<Event, DeviceError> {
        Ok(Event(lock(&self.queue).enqueued))
    }

    fn query(&self, event: Event) -> Result<bool, DeviceError> {
        Ok(lock(&self.shared.progress).completed >= event.0)
    }

    fn wait(&self, event: Event) -> Result<(), DeviceError> {
        if event.0 > lock(&self.queue).enqueued {
            return Err(DeviceError::Failed {
                what: format!("waiting for event {}", event.0),
                reason: "the simulated GPU never recorded it".into(),
            });
        }
        if !self.query(event)? {
            self.counters.synced();
        }
        match &self.reach(event.0)?.error {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }

    fn synchronize(&self) -> Result<(), DeviceError> {
        self.counters.synced();
        let injected = self.fault_hits(|f| matches!(f, SimFault::Sync(_)));
        let last = lock(&self.queue).enqueued;
        if let Some(e) = self.reach(last)?.error.take() {
            return Err(e);
        }
        if injected {
            return Err(DeviceError::Failed {
                what: "synchronizing the simulated GPU".into(),
                reason: "injected fault".into(),
            });
        }
        Ok(())
    }

    unsafe fn register_host(&self, _ptr: *mut u8, _bytes: usize) -> Result<(), DeviceError> {
        Ok(())
    }

    unsafe fn unregister_host(&self, _ptr: *mut u8) {}

    fn counters(&self) -> DeviceCounters {
        self.counters.snapshot()
    }
}

impl Drop for SimDevice {
    /// Lets the simulator run what was enqueued, then stops it.
    fn drop(&mut self) {
        self.queue
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .sender = None;
        if let Some(simulator) = self.simulator.take() {
            if simulator.join().is_err() {
                tracing::warn!("the simulated GPU's thread panicked");
            }
        }
    }
}
