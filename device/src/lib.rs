//! `diffuse-device`: the devices diffuse runs kernels on besides the host CPU, one module per
//! kind of device, behind one [`Device`] trait (as a compiler has one target per ISA).
//!
//! A device owns one stream: every operation a caller issues (allocation, copy, kernel
//! launch, free) is *enqueued* in the order issued and completes later, in that order. Only
//! [`Device::synchronize`] and [`Device::wait`] block, and errors of asynchronous work (a
//! kernel fault, a failed copy) surface there. Callers therefore keep host memory that an
//! enqueued copy reads or writes untouched until they have waited for it.
//!
//! - [`cuda`]: an NVIDIA GPU through the CUDA driver API (`cudarc`, loaded at run time), with
//!   stream-ordered allocation from the device's memory pool, and the runtime functions that
//!   MLIR's GPU lowering calls from a compiled kernel's host code (the JIT registers them).
//! - [`sim`]: a simulated GPU for machines without one. Its memory is an arena of its own,
//!   poisoned on allocation; everything enqueued runs later on a simulator thread, so a
//!   missing wait shows up as a wrong result; faults can be injected. It is a test double:
//!   the CUDA device is the product.
//!
//! [`open`] picks the device a process uses (`DIFFUSE_DEVICE`).
#![warn(missing_docs)]

mod counters;
pub mod cuda;
pub mod sim;

use std::fmt;
use std::sync::Arc;

use thiserror::Error;

/// An address in a device's memory (as the device's kernels see it).
pub type DevicePtr = u64;

/// Which implementation a device is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceKind {
    /// An NVIDIA GPU driven through CUDA.
    Cuda,
    /// The simulated GPU ([`sim`]): kernels are host functions run on its arena.
    Simulated,
}

/// What a device is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    /// The device's name (the driver's, or "simulated GPU").
    pub name: String,
    /// Which implementation it is.
    pub kind: DeviceKind,
    /// Its memory in bytes.
    pub memory_bytes: usize,
    /// The LLVM NVPTX chip kernels must be compiled for (`sm_90` for an H100); `None` for a
    /// device that runs host code.
    pub chip: Option<String>,
}

/// Why a device operation failed.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum DeviceError {
    /// There is no such device on this machine (no driver, no GPU, or a driver that fails
    /// to start).
    #[error("no GPU: {0}")]
    Unavailable(String),
    /// The device has no room for an allocation of `bytes` bytes.
    #[error("out of device memory: {bytes} bytes requested ({reason})")]
    OutOfMemory {
        /// The size of the allocation.
        bytes: usize,
        /// What the device said (free and total memory where known).
        reason: String,
    },
    /// An operation failed: `what` was being done, `reason` is the driver's (or the
    /// simulator's) error.
    #[error("{what} failed: {reason}")]
    Failed {
        /// The operation, e.g. "copying 800 bytes to the device".
        what: String,
        /// Why.
        reason: String,
    },
    /// A kernel failed to launch or faulted while it ran.
    #[error("GPU kernel failed: {0}")]
    Kernel(String),
}

/// A point in a device's stream: everything enqueued before it was recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Event(pub u64);

/// One side of a pitched (2-D) copy: `rows` rows of `width` bytes, `pitch` bytes apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// Host memory at this address.
    Host(*mut u8),
    /// Device memory at this address.
    Device(DevicePtr),
}

/// A pitched copy between host and device or within the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Copy2d {
    /// Where the first row is read.
    pub src: Place,
    /// Bytes between the starts of consecutive source rows.
    pub src_pitch: usize,
    /// Where the first row is written.
    pub dst: Place,
    /// Bytes between the starts of consecutive destination rows.
    pub dst_pitch: usize,
    /// Bytes per row.
    pub width: usize,
    /// Rows.
    pub rows: usize,
}

/// Work a device runs as one kernel launch (see [`Device::launch`]): on a CUDA device a call
/// of compiled host code that launches kernels on the device's stream through the MLIR GPU
/// runtime functions ([`cuda::mlir_runtime`]), run at once on the calling thread; on
/// the simulated device a host function over arena memory, run later on the simulator
/// thread. It returns why it failed, if it did.
pub type LaunchWork = Box<dyn FnOnce() -> Result<(), String> + Send>;

/// How a kernel's device workspaces (one per entry of `sizes`, in bytes) share one
/// allocation: its total size and each workspace's offset in it, 256-byte aligned.
pub fn workspace_layout(sizes: &[usize]) -> (usize, Vec<usize>) {
    let mut offsets = Vec::with_capacity(sizes.len());
    let mut total = 0;
    for &bytes in sizes {
        offsets.push(total);
        total += bytes.div_ceil(256) * 256;
    }
    (total, offsets)
}

/// Counters of the traffic a device has carried since it was opened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceCounters {
    /// Bytes copied from the host to the device.
    pub h2d_bytes: u64,
    /// Bytes copied from the device to the host.
    pub d2h_bytes: u64,
    /// Bytes copied within the device.
    pub d2d_bytes: u64,
    /// Kernel launches ([`Device::launch`] calls).
    pub launches: u64,
    /// Times a caller waited for the device ([`Device::synchronize`], [`Device::wait`] on an
    /// event not yet complete).
    pub syncs: u64,
    /// Allocations made.
    pub allocations: u64,
    /// Bytes allocated now (allocated, not yet freed).
    pub allocated_bytes: u64,
}

/// A device with one stream. Every operation but [`Device::synchronize`], [`Device::wait`],
/// [`Device::query`] and [`Device::counters`] is enqueued and returns before it completes;
/// operations complete in the order they were enqueued. An error returned by an enqueueing
/// call means the operation was not enqueued; an error of enqueued work is returned by the
/// next wait (and by every wait after, until [`Device::synchronize`] has reported it).
pub trait Device: Send + Sync + fmt::Debug {
    /// What the device is.
    fn info(&self) -> &DeviceInfo;

    /// Allocates `bytes` bytes (stream-ordered: usable by work enqueued after this call).
    /// Fails with [`DeviceError::OutOfMemory`] when the device has no room.
    fn alloc(&self, bytes: usize) -> Result<DevicePtr, DeviceError>;

    /// Frees an allocation once the work enqueued before this call is done with it.
    fn free(&self, ptr: DevicePtr);

    /// Enqueues a copy of `bytes` bytes from host memory at `src` to the device at `dst`.
    ///
    /// # Safety
    /// `src` must stay valid and unchanged until the copy completes (wait for an event
    /// recorded after it); `dst` must be an allocation of this device with room for `bytes`.
    unsafe fn upload(
        &self,
        dst: DevicePtr,
        src: *const u8,
        bytes: usize,
    ) -> Result<(), DeviceError>;

    /// Enqueues a copy of `bytes` bytes from the device at `src` to host memory at `dst`.
    ///
    /// # Safety
    /// `dst` must stay valid, and be neither read nor written by anything else, until the
    /// copy completes; `src` must hold `bytes` bytes of this device's memory.
    unsafe fn download(
        &self,
        dst: *mut u8,
        src: DevicePtr,
        bytes: usize,
    ) -> Result<(), DeviceError>;

    /// Enqueues a copy of `bytes` bytes within the device (the ranges may not overlap).
    ///
    /// # Safety
    /// Both ranges must lie in allocations of this device.
    unsafe fn copy(&self, dst: DevicePtr, src: DevicePtr, bytes: usize) -> Result<(), DeviceError>;

    /// Enqueues setting `bytes` bytes of the device at `dst` to zero (a store that was never
    /// written holds zeros: its device copy needs no upload).
    ///
    /// # Safety
    /// The range must lie in an allocation of this device.
    unsafe fn zero(&self, dst: DevicePtr, bytes: usize) -> Result<(), DeviceError>;

    /// Enqueues a pitched copy (host to device, device to host or device to device).
    ///
    /// # Safety
    /// As for [`Device::upload`], [`Device::download`] and [`Device::copy`], for every row.
    unsafe fn copy_2d(&self, copy: &Copy2d) -> Result<(), DeviceError>;

    /// Enqueues a kernel launch (see [`LaunchWork`]).
    ///
    /// # Safety
    /// The memory the work accesses must be valid for it until it completes: device memory
    /// of this device, allocated before the launch was enqueued and freed after it.
    unsafe fn launch(&self, work: LaunchWork) -> Result<(), DeviceError>;

    /// Records an event after everything enqueued so far.
    fn record(&self) -> Result<Event, DeviceError>;

    /// True when everything enqueued before `event` has completed.
    fn query(&self, event: Event) -> Result<bool, DeviceError>;

    /// Blocks until everything enqueued before `event` has completed.
    fn wait(&self, event: Event) -> Result<(), DeviceError>;

    /// Blocks until everything enqueued so far has completed.
    fn synchronize(&self) -> Result<(), DeviceError>;

    /// Page-locks host memory so that copies from and to it run asynchronously at full
    /// bandwidth (a no-op where that means nothing).
    ///
    /// # Safety
    /// The memory must stay allocated until [`Device::unregister_host`] is called for it.
    unsafe fn register_host(&self, ptr: *mut u8, bytes: usize) -> Result<(), DeviceError>;

    /// Undoes [`Device::register_host`].
    ///
    /// # Safety
    /// `ptr` must have been registered and no enqueued copy may still use it.
    unsafe fn unregister_host(&self, ptr: *mut u8);

    /// The traffic so far.
    fn counters(&self) -> DeviceCounters;
}

/// Which device a process uses, as `DIFFUSE_DEVICE` names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeviceChoice {
    /// The CUDA GPU when the machine has one, else none (`DIFFUSE_DEVICE` unset or `cuda`).
    Cuda,
    /// The simulated GPU (`DIFFUSE_DEVICE=sim`), configured by [`sim::SimConfig::from_env`].
    Simulated,
    /// No device (`DIFFUSE_DEVICE=none`).
    None,
}

impl DeviceChoice {
    /// The choice `DIFFUSE_DEVICE` makes (unset: [`DeviceChoice::Cuda`]); an unknown value
    /// is an error naming it.
    pub fn from_env() -> Result<Self, DeviceError> {
        match std::env::var("DIFFUSE_DEVICE") {
            Err(_) => Ok(DeviceChoice::Cuda),
            Ok(v) => match v.trim() {
                "" | "cuda" => Ok(DeviceChoice::Cuda),
                "sim" => Ok(DeviceChoice::Simulated),
                "none" => Ok(DeviceChoice::None),
                other => Err(DeviceError::Unavailable(format!(
                    "DIFFUSE_DEVICE={other:?} names no device (cuda, sim or none)"
                ))),
            },
        }
    }
}

/// Opens the device `choice` names: `Ok(None)` when there is none to use (no choice, or no
/// GPU on this machine for [`DeviceChoice::Cuda`]; why is logged at debug level).
pub fn open(choice: &DeviceChoice) -> Result<Option<Arc<dyn Device>>, DeviceError> {
    match choice {
        DeviceChoice::None => Ok(None),
        DeviceChoice::Simulated => {
            let device = sim::SimDevice::new(sim::SimConfig::from_env()?)?;
            Ok(Some(Arc::new(device)))
        }
        DeviceChoice::Cuda => match cuda::CudaDevice::open() {
            Ok(device) => Ok(Some(Arc::new(device))),
            Err(e) => {
                tracing::debug!("no CUDA device: {e}");
                Ok(None)
            }
        },
    }
}

/// The message a panic carried, for errors that report it.
pub(crate) fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "a panic without a message".into())
}

#[cfg(test)]
mod tests {
    use super::workspace_layout;

    #[test]
    fn workspaces_share_one_allocation_at_aligned_offsets() {
        assert_eq!(workspace_layout(&[]), (0, vec![]));
        assert_eq!(workspace_layout(&[8, 300, 256]), (1024, vec![0, 256, 768]));
    }
}
