//! The traffic counters every device keeps ([`DeviceCounters`] as atomics), so that the
//! devices count alike.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::DeviceCounters;

/// [`DeviceCounters`] updated concurrently by a device's callers.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    h2d_bytes: AtomicU64,
    d2h_bytes: AtomicU64,
    d2d_bytes: AtomicU64,
    launches: AtomicU64,
    syncs: AtomicU64,
    allocations: AtomicU64,
    allocated_bytes: AtomicU64,
}

/// Which way a copy went, for [`Counters::copied`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Direction {
    /// Host to device.
    HostToDevice,
    /// Device to host.
    DeviceToHost,
    /// Within the device.
    DeviceToDevice,
}

impl Counters {
    /// Counts a copy of `bytes` bytes.
    pub(crate) fn copied(&self, direction: Direction, bytes: usize) {
        let counter = match direction {
            Direction::HostToDevice => &self.h2d_bytes,
            Direction::DeviceToHost => &self.d2h_bytes,
            Direction::DeviceToDevice => &self.d2d_bytes,
        };
        counter.fetch_add(bytes as u64, Ordering::Relaxed);
    }

    /// Counts a kernel launch.
    pub(crate) fn launched(&self) {
        self.launches.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a wait that blocked (or a synchronize).
    pub(crate) fn synced(&self) {
        self.syncs.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts an allocation of `bytes` bytes.
    pub(crate) fn allocated(&self, bytes: usize) {
        self.allocations.fetch_add(1, Ordering::Relaxed);
        self.allocated_bytes
            .fetch_add(bytes as u64, Ordering::Relaxed);
    }

    /// Counts the free of an allocation of `bytes` bytes.
    pub(crate) fn freed(&self, bytes: usize) {
        self.allocated_bytes
            .fetch_sub(bytes as u64, Ordering::Relaxed);
    }

    /// The counts so far.
    pub(crate) fn snapshot(&self) -> DeviceCounters {
        DeviceCounters {
            h2d_bytes: self.h2d_bytes.load(Ordering::Relaxed),
            d2h_bytes: self.d2h_bytes.load(Ordering::Relaxed),
            d2d_bytes: self.d2d_bytes.load(Ordering::Relaxed),
            launches: self.launches.load(Ordering::Relaxed),
            syncs: self.syncs.load(Ordering::Relaxed),
            allocations: self.allocations.load(Ordering::Relaxed),
            allocated_bytes: self.allocated_bytes.load(Ordering::Relaxed),
        }
    }
}

impl Direction {
    /// What a copy of `bytes` bytes this way is (for errors).
    pub(crate) fn copying(self, bytes: usize) -> String {
        let way = match self {
            Direction::HostToDevice => "to the device",
            Direction::DeviceToHost => "from the device",
            Direction::DeviceToDevice => "within the device",
        };
        format!("copying {bytes} bytes {way}")
    }

    /// The direction of a pitched copy and what it is (for errors), or `None` for a copy of
    /// nothing; a copy from host to host is no device copy.
    pub(crate) fn of_pitched(
        copy: &crate::Copy2d,
    ) -> Result<Option<(Direction, String)>, crate::DeviceError> {
        use crate::Place::{Device, Host};
        let what = format!(
            "a pitched copy of {} rows of {} bytes",
            copy.rows, copy.width
        );
        let direction = match (copy.src, copy.dst) {
            (Host(_), Device(_)) => Direction::HostToDevice,
            (Device(_), Host(_)) => Direction::DeviceToHost,
            (Device(_), Device(_)) => Direction::DeviceToDevice,
            (Host(_), Host(_)) => {
                return Err(crate::DeviceError::Failed {
                    what,
                    reason: "both sides are host memory: a device copies to or from itself".into(),
                })
            }
        };
        Ok((copy.rows > 0 && copy.width > 0).then_some((direction, what)))
    }
}
