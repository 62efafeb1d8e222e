//! The process's Legion runtime: Legion starts once per process (it cannot restart), so every
//! Legion test of a binary shares one runtime of two CPU processors, started by the first.

use std::sync::Arc;

use diffuse::legion::PointRecord;
use diffuse::{Backend, LegionBackend, LegionConfig};

/// A new Legion backend on the process's runtime (two CPU processors; one per process in a
/// run of several processes, which share this machine's cores).
pub fn legion(strip_bytes: Option<usize>) -> Arc<LegionBackend> {
    let distributed = diffuse::legion::Cluster::from_env().is_ok_and(|c| c.is_distributed());
    let mut config = LegionConfig {
        cpus: Some(if distributed { 1 } else { 2 }),
        sysmem_mib: Some(2048),
        ..Default::default()
    };
    if let Some(s) = strip_bytes {
        config.strip_bytes = s;
    }
    Arc::new(LegionBackend::start(&config).expect("the Legion backend starts"))
}

/// A Legion backend for the differential property.
pub fn backend(strip_bytes: Option<usize>) -> Arc<dyn Backend> {
    legion(strip_bytes)
}

/// The point tasks of the kind `short` (see [`super::name`]) that `backend` recorded since
/// the last take, in point order.
pub fn points_of(backend: &LegionBackend, short: &str) -> Vec<PointRecord> {
    let mut records: Vec<_> = backend
        .take_point_records()
        .into_iter()
        .filter(|r| r.task == super::name(short))
        .collect();
    records.sort_by_key(|r| r.point[0]);
    records
}
