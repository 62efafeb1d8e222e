//! What a backend reports about its work.

/// Counters of a backend's work since it started; differences between two readings describe
/// the part of a run between them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BackendStats {
    /// Launch plans executed (a fused task counts once).
    pub tasks_executed: u64,
    /// Point tasks executed.
    pub points_executed: u64,
    /// Point tasks that ran a JIT-compiled kernel (on the CPU or the GPU).
    pub compiled_points: u64,
    /// Of those, the ones that ran on a GPU.
    pub gpu_points: u64,
    /// Point tasks of fused element-wise tasks that ran strip by strip (native kernels).
    pub strip_points: u64,
    /// Point tasks that ran compiled segments between native constituents (fused tasks with
    /// a constituent that has no MLIR body, or with several stages).
    pub segment_points: u64,
    /// Launches issued in a Legion trace, whose analysis and mapping Legion replays once
    /// recorded (the Legion backend; 0 elsewhere).
    pub traced_launches: u64,
    /// Bytes held by stores now.
    pub store_bytes: u64,
    /// The most bytes stores held at once since the last peak reset.
    pub peak_store_bytes: u64,
    /// Bytes of freed store memory kept for reuse.
    pub cached_bytes: u64,
    /// Bytes of store data moved between the nodes of a multi-process run so far (0 on one
    /// node), counted from a model of where each store's valid copies are.
    pub bytes_moved: u64,
    /// Bytes copied from the host to devices (GPUs) so far.
    pub h2d_bytes: u64,
    /// Bytes copied from devices to the host so far.
    pub d2h_bytes: u64,
    /// Times the backend waited for a device (a flush, a host read of data a device holds).
    pub device_syncs: u64,
    /// Kernel launches enqueued on devices.
    pub kernel_launches: u64,
}
