//! The process's Legion runtime: Legion starts once per process (it cannot restart), so every
//! Legion test of a binary shares one runtime of two CPU processors, started by the first;
//! backends over it may split their launches over more (the property runs 2, 8 and 16).

use std::sync::Arc;

use diffuse::legion::PointRecord;
use diffuse::{Backend, LegionBackend, LegionConfig};

/// Held shared by the random-stream properties, which make and drop stores of many shapes
/// all the time, and exclusively by a test that counts on its own stores taking each other's
/// regions (dead stores' regions go to the next store of their shape, and Legion traces
/// repeat only on the same regions).
static REGIONS: std::sync::RwLock<()> = std::sync::RwLock::new(());

/// Shared use of the process's regions (see [`REGIONS`]).
pub fn streams_running() -> std::sync::RwLockReadGuard<'static, ()> {
    REGIONS.read().unwrap_or_else(|e| e.into_inner())
}

/// The process's recycled regions to this test alone, once no property runs (see
/// [`REGIONS`]).
pub fn regions_to_myself() -> std::sync::RwLockWriteGuard<'static, ()> {
    REGIONS.write().unwrap_or_else(|e| e.into_inner())
}

/// Whether this test process is one of several processes of a run.
pub fn distributed() -> bool {
    diffuse::legion::Cluster::from_env().is_ok_and(|c| c.is_distributed())
}

/// A new Legion backend on the process's runtime (two CPU processors; one per process in a
/// run of several processes, which share this machine's cores).
pub fn legion(strip_bytes: Option<usize>) -> Arc<LegionBackend> {
    legion_with(if distributed() { 1 } else { 2 }, strip_bytes)
}

/// A new Legion backend on the process's runtime whose launches are split over `cpus` CPU
/// processors (Realm runs at most one per core: more share them, see `LegionConfig::cpus`).
pub fn legion_with(cpus: usize, strip_bytes: Option<usize>) -> Arc<LegionBackend> {
    legion_folding(cpus, strip_bytes, true)
}

/// As [`legion_with`], folding small reductions over several points in diffuse (`folds`)
/// or through Legion's reduction instances (see `LegionConfig::folded_reduction_elements`).
pub fn legion_folding(cpus: usize, strip_bytes: Option<usize>, folds: bool) -> Arc<LegionBackend> {
    let mut config = LegionConfig {
        cpus: Some(cpus),
        sysmem_mib: Some(2048),
        ..Default::default()
    };
    if !folds {
        config.folded_reduction_elements = 0;
    }
    if let Some(s) = strip_bytes {
        config.strip_bytes = s;
    }
    Arc::new(LegionBackend::start(&config).expect("the Legion backend starts"))
}

/// A Legion backend for the differential property, over `cpus` CPU processors (one per
/// process in a run of several processes), folding small reductions in diffuse or not
/// (`folds`, see [`legion_folding`]).
pub fn backend(cpus: usize, strip_bytes: Option<usize>, folds: bool) -> Arc<dyn Backend> {
    let cpus = if distributed() { 1 } else { cpus };
    legion_folding(cpus, strip_bytes, folds)
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
