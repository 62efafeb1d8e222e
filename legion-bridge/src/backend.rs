//! [`LegionBackend`]: the [`Backend`] trait over the process's Legion runtime.
//!
//! Plans become index launches issued by the driver thread; `flush`, `read` and `write` wait
//! for the work before them (a fence, or an inline mapping, which Legion orders after every
//! earlier use of the region). Errors of point tasks are collected here and reported by the
//! next `flush`, `read` or `write`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use diffuse_backend::{check_host_copy, Backend, BackendStats, LaunchPlan, MachineShape, ProcKind};
use diffuse_ir::{HostData, IrError, Rect, StoreRef};

use crate::driver::Driver;
use crate::ffi;
use crate::process::{self, LegionProcess};
use crate::shared::{legion_error, out_of_memory, PointRecord, Shared};
use crate::LegionConfig;

/// The Legion backend: launch plans as Legion index launches, stores as logical regions.
pub struct LegionBackend {
    process: &'static LegionProcess,
    /// The machine launches are split over: Legion's, with the CPU processors the
    /// configuration asked for (see [`LegionConfig::cpus`]).
    machine: MachineShape,
    shared: Arc<Shared>,
    /// The system memory Legion was given (`-ll:csize`), in bytes.
    sysmem_bytes: u64,
    /// Launches sent since the last settle (counted in a replicated run only).
    unsettled: AtomicUsize,
}

/// Most launches a run of several processes issues before it settles (waits for them,
/// retires their entries and takes back the regions of dead stores): the moments a
/// replicated run may release regions are the ones where the application waits.
const LAUNCHES_PER_SETTLE: usize = 256;

impl LegionBackend {
    /// A backend over the process's Legion runtime, started with `config`'s flags if it is
    /// not running yet.
    pub fn start(config: &LegionConfig) -> Result<Self, IrError> {
        let process = process::process(config).map_err(legion_error)?;
        let machine = MachineShape {
            cpus_per_node: config.launch_cpus(process.machine.cpus_per_node),
            ..process.machine
        };
        Ok(LegionBackend {
            process,
            machine,
            sysmem_bytes: crate::config::sysmem_bytes(&process.flags).unwrap_or(u64::MAX),
            shared: Arc::new(Shared::new(config)),
            unsettled: AtomicUsize::new(0),
        })
    }

    /// The Legion flags the process runs with.
    pub fn flags(&self) -> &[String] {
        &self.process.flags
    }

    /// This process's place among the processes of the run (one Legion node each).
    pub fn cluster(&self) -> &crate::Cluster {
        &self.process.cluster
    }

    /// Launches that waited for earlier launches of their task because of a Mapple
    /// `Backpressure`/`InstanceLimit` statement.
    pub fn held_back_launches(&self) -> u64 {
        self.shared.counters.held_back_launches()
    }

    /// Launches issued in Legion traces (repeated launches, see [`LegionConfig::traced_launches`](crate::LegionConfig::traced_launches)).
    pub fn traced_launches(&self) -> u64 {
        self.shared.counters.traced_launches()
    }

    /// The processor kinds diffuse's point task has variants for in this Legion run (a CPU
    /// and a GPU variant), as Legion's mapper found them when it first placed a launch:
    /// empty before. A point placed on a kind without one runs on a CPU.
    pub fn point_variant_kinds(&self) -> Vec<ProcKind> {
        // SAFETY: reads an atomic of the shim; no arguments.
        let mask = unsafe { crate::library::api().diffuse_legion_point_variant_kinds() };
        [ProcKind::Cpu, ProcKind::Gpu, ProcKind::Omp]
            .into_iter()
            .zip([
                ffi::diffuse_proc_kind_t_DIFFUSE_PROC_CPU,
                ffi::diffuse_proc_kind_t_DIFFUSE_PROC_GPU,
                ffi::diffuse_proc_kind_t_DIFFUSE_PROC_OMP,
            ])
            .filter(|&(_, bit)| mask & (1 << bit) != 0)
            .map(|(kind, _)| kind)
            .collect()
    }

    /// Legion traces made so far in this process: one per distinct launch issued in traces
    /// (the same task on the same regions, partitions and privileges; see
    /// [`LegionBackend::traced_launches`]). A program repeating its steps makes a fixed
    /// number.
    pub fn traces_made(&self) -> Result<usize, IrError> {
        self.call(|driver, _| driver.traces_given())
    }

    /// Starts recording the processor every point task runs on (see
    /// [`LegionBackend::take_point_records`]).
    pub fn record_points(&self) {
        self.shared.start_recording();
    }

    /// The points recorded since the last call (after a flush, all of them).
    pub fn take_point_records(&self) -> Vec<PointRecord> {
        self.shared.take_records()
    }

    fn call<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Driver, &Arc<Shared>) -> R + Send + 'static,
    ) -> Result<R, IrError> {
        let shared = Arc::clone(&self.shared);
        self.process
            .call(move |driver| f(driver, &shared))
            .map_err(legion_error)
    }
}

impl Backend for LegionBackend {
    fn name(&self) -> &str {
        "legion"
    }

    fn machine(&self) -> MachineShape {
        self.machine
    }

    fn capabilities(&self) -> diffuse_backend::Capabilities {
        crate::CAPABILITIES
    }

    fn execute(&self, plan: &LaunchPlan) -> Result<(), IrError> {
        // A store larger than all of Legion's system memory fails here, before anything of
        // the plan runs, so that the runtime can still run the plan's other tasks.
        if let Some(store) = plan
            .stores()
            .iter()
            .find(|s| s.size_bytes() as u64 > self.sysmem_bytes)
        {
            let in_use = self.shared.counters.store_bytes();
            return Err(out_of_memory(store, in_use, self.sysmem_bytes));
        }
        self.shared.counters.launched();
        let shared = Arc::clone(&self.shared);
        // The driver thread runs the plan after this call returns: it gets its own copy.
        let plan = plan.clone();
        self.process
            .send(Box::new(move |driver| {
                let ticket = plan.ticket();
                if let Err(e) = driver.execute(plan, &shared) {
                    shared.fail(ticket, e);
                }
            }))
            .map_err(legion_error)?;
        if self.process.cluster.is_distributed()
            && self.unsettled.fetch_add(1, Ordering::Relaxed) + 1 >= LAUNCHES_PER_SETTLE
        {
            self.unsettled.store(0, Ordering::Relaxed);
            self.call(|driver, _| driver.settle())?;
        }
        Ok(())
    }

    fn defers_failures(&self) -> bool {
        true
    }

    fn launches_are_costly(&self) -> bool {
        true
    }

    fn orders_host_writes(&self) -> bool {
        true
    }

    fn flush(&self) -> Result<(), IrError> {
        self.unsettled.store(0, Ordering::Relaxed);
        self.call(|driver, _| driver.settle())?;
        self.shared.take_error()
    }

    fn read(&self, store: &StoreRef, rect: Rect) -> Result<HostData, IrError> {
        check_host_copy(store, &rect, None)?;
        let store = store.clone();
        let data = self.call(move |driver, shared| driver.read(&store, shared, rect))??;
        self.shared.take_error()?;
        Ok(data)
    }

    fn write(&self, store: &StoreRef, rect: Rect, data: HostData) -> Result<(), IrError> {
        check_host_copy(store, &rect, Some(data.len()))?;
        let store = store.clone();
        self.call(move |driver, shared| driver.write(&store, shared, rect, data))??;
        self.shared.take_error()
    }

    fn stats(&self) -> BackendStats {
        self.shared.stats()
    }

    fn take_fp_errors(&self) -> diffuse_backend::point::fp::FpErrors {
        self.shared.fp.take()
    }

    /// Point tasks that run in this process follow it; other processes keep attributing
    /// NumPy's default categories (correct, only slower where they raise ignored ones).
    fn attribute_fp_errors(&self, categories: diffuse_backend::point::fp::FpFlags) {
        self.shared.fp.attribute(categories);
    }

    fn reset_peak_memory(&self) {
        self.shared.counters.reset_peak();
    }
}
