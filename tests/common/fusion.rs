//! The fusion tests' rig: element-wise twins of the shared kinds (so fused groups of them run
//! strip by strip), a kind that fails at chosen points, a runtime over a backend that records
//! every fused task it runs, and small helpers (fusion configurations, random data, bitwise
//! comparison, the executed groups of a stream log).

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};

use diffuse::backend::{LaunchPlan, ProcKind, Processor};
use diffuse::device::DeviceChoice;
use diffuse::{
    Backend, BackendStats, EmbeddedBackend, EmbeddedConfig, FlushRecord, FusionConfig,
    MachineShape, Placement, Runtime, RuntimeConfig,
};
use diffuse_ir::{
    for_each_row, Context, DType, HostData, IrError, KernelError, Point, PointTask, Privilege,
    Rect, ReductionOp, Shape, Store, StoreRef, TaskKind,
};
use diffuse_jit::Jit;

use super::generators::Elementwise;
use super::{
    binary_kind, kind_once, unary_args, unary_kind, write_read_read, ACCUMULATE, ADD, AXPY, COPY,
    MUL, SCALE,
};

// ---------------------------------------------------------------------------------------------
// Kinds. The shared kinds of tests/common/mod.rs are not declared element-wise, so fused groups
// of them run point by point; these element-wise twins let fused groups run strip by strip.
// All but `fail_at` have MLIR generators (see tests/common/generators.rs).
// ---------------------------------------------------------------------------------------------

/// Element-wise `out = a + b`.
pub(crate) fn ew_add_kind() -> Arc<TaskKind> {
    binary_kind("fusion.add", true, ADD)
}

/// Element-wise `out = a * b`.
pub(crate) fn ew_mul_kind() -> Arc<TaskKind> {
    binary_kind("fusion.mul", true, MUL)
}

/// Element-wise `out = s * a + b`.
pub(crate) fn ew_axpy_kind() -> Arc<TaskKind> {
    binary_kind("fusion.axpy", true, AXPY)
}

/// Element-wise `out = s * a + b` as scalar work (the operands are 0-d): another name, so
/// that a stream log shows where scalar work ran.
pub(crate) fn ew_scalar_axpy_kind() -> Arc<TaskKind> {
    binary_kind("fusion.scalar_axpy", true, AXPY)
}

/// Element-wise `out = a`.
pub(crate) fn ew_copy_kind() -> Arc<TaskKind> {
    unary_kind("fusion.copy", Privilege::Write, true, COPY)
}

/// Element-wise `out = a` without an MLIR body (as a library kind whose work only has a
/// native kernel): a fused task containing it has no kernel of its own.
pub(crate) fn opaque_copy_kind() -> Arc<TaskKind> {
    kind_once(
        "fusion.opaque_copy",
        |b| unary_args(b, Privilege::Write).elementwise(),
        |t| {
            for_each_row::<f64>(t, 0, &[1], |out, ins| {
                out.copy_from_slice(ins[0]);
            })
        },
    )
}

/// Element-wise `out = s * a` (the stencil's MULT).
pub(crate) fn ew_scale_kind() -> Arc<TaskKind> {
    unary_kind("fusion.scale", Privilege::Write, true, SCALE)
}

/// Element-wise `out += a` (RW, R).
pub(crate) fn ew_add_assign_kind() -> Arc<TaskKind> {
    unary_kind("fusion.add_assign", Privilege::ReadWrite, true, ACCUMULATE)
}

/// `acc += a` through `Reduce(Sum)` on an aligned view (declared element-wise: reductions
/// must still never run in strips).
pub(crate) fn add_reduce_kind() -> Arc<TaskKind> {
    unary_kind(
        "fusion.add_reduce",
        Privilege::Reduce(ReductionOp::Sum),
        true,
        ACCUMULATE,
    )
}

/// Element-wise `out = a + row` (W, R, R): `row` has one row, which every row of `out` adds
/// (NumPy broadcasting; compiled, `row`'s dimension 0 is a unit dimension read at index 0).
pub(crate) fn ew_add_row_kind() -> Arc<TaskKind> {
    kind_once(
        "fusion.add_row",
        |b| {
            write_read_read(b, ["out", "a", "row"])
                .elementwise()
                .mlir(Arc::new(Elementwise {
                    out: 0,
                    inputs: &[1, 2],
                    body: ADD.mlir,
                }))
        },
        |t| {
            let (a, row) = (t.read::<f64>(1)?, t.read::<f64>(2)?);
            let mut out = t.write::<f64>(0)?;
            let (shape, broadcast) = (out.shape(), row.shape());
            if a.shape() != shape
                || shape.dims() != 2
                || broadcast.dims() != 2
                || (broadcast[0], broadcast[1]) != (1, shape[1])
            {
                return Err(t.error(format!(
                    "add_row of {} and {} into {}",
                    a.shape(),
                    row.shape(),
                    out.shape()
                )));
            }
            for r in 0..out.rows() {
                for ((o, &x), &y) in out.row_mut(r).iter_mut().zip(a.row(r)).zip(row.row(0)) {
                    *o = (ADD.native)(0.0, x, y);
                }
            }
            Ok(())
        },
    )
}

/// Element-wise `out = s * x`, `s` a 0-d store read through `Replicate` (W, R, R-0d).
pub(crate) fn ew_scale_by_store_kind() -> Arc<TaskKind> {
    crate::common::scale_by_store("fusion.scale_by_store", true)
}

/// Element-wise `out = a`, then fails at the points whose bit is set in scalar 0: by returning
/// an error, or (when scalar 1 is true) by panicking.
pub(crate) fn fail_at_kind() -> Arc<TaskKind> {
    kind_once(
        "fusion.fail_at",
        |b| {
            unary_args(b, Privilege::Write)
                .elementwise()
                .scalar(DType::I64)
                .scalar(DType::Bool)
        },
        |t: &PointTask<'_>| -> Result<(), KernelError> {
            let mask = t.scalar::<i64>(0)?;
            let panics = t.scalar::<bool>(1)?;
            for_each_row::<f64>(t, 0, &[1], |out, ins| out.copy_from_slice(ins[0]))?;
            super::faults::fail_if_masked(t, mask, panics, "fused ")
        },
    )
}

// ---------------------------------------------------------------------------------------------
// Shared helpers.
// ---------------------------------------------------------------------------------------------

/// What one fused task did.
pub(crate) struct FusedRun {
    /// Temporaries.
    pub(crate) temporaries: usize,
    /// True when a constituent reduces.
    pub(crate) reduces: bool,
    /// Its point tasks that ran JIT-compiled code.
    pub(crate) compiled_points: u64,
    /// Its stages (1 unless a one-point group went on past a constraint).
    pub(crate) stages: usize,
}

/// A backend, recording every fused task it runs.
pub(crate) struct Observed {
    pub(crate) backend: Arc<dyn Backend>,
    pub(crate) fused: Mutex<Vec<FusedRun>>,
}

impl Observed {
    /// The fused tasks run so far, in order.
    pub(crate) fn take_fused(&self) -> Vec<FusedRun> {
        std::mem::take(&mut *self.fused.lock().unwrap())
    }
}

impl Backend for Observed {
    fn name(&self) -> &str {
        self.backend.name()
    }

    fn machine(&self) -> MachineShape {
        self.backend.machine()
    }

    fn capabilities(&self) -> diffuse::backend::Capabilities {
        self.backend.capabilities()
    }

    fn execute(&self, plan: &LaunchPlan) -> Result<(), IrError> {
        let t = plan.template();
        let fused = t.constituents() > 1 || t.temporaries() > 0;
        let temporaries = t.temporaries();
        let reduces = !t.reductions().is_empty();
        let before = self.backend.stats().compiled_points;
        let mut result = self.backend.execute(plan);
        if fused {
            // Backends that run plans asynchronously (Legion) count points when they ran.
            result = result.and_then(|()| self.backend.flush());
            self.fused.lock().unwrap().push(FusedRun {
                temporaries,
                reduces,
                compiled_points: self.backend.stats().compiled_points - before,
                stages: t.stages().len() + 1,
            });
        }
        result
    }

    fn defers_failures(&self) -> bool {
        self.backend.defers_failures()
    }

    fn launches_are_costly(&self) -> bool {
        self.backend.launches_are_costly()
    }

    fn flush(&self) -> Result<(), IrError> {
        self.backend.flush()
    }

    fn read(&self, store: &StoreRef, rect: Rect) -> Result<HostData, IrError> {
        self.backend.read(store, rect)
    }

    fn write(&self, store: &StoreRef, rect: Rect, data: HostData) -> Result<(), IrError> {
        self.backend.write(store, rect, data)
    }

    fn stats(&self) -> BackendStats {
        self.backend.stats()
    }

    fn reset_peak_memory(&self) {
        self.backend.reset_peak_memory()
    }
}

/// A context over a runtime over an (observed) embedded backend, with both kept for their
/// counters.
pub(crate) struct Rig {
    pub(crate) backend: Arc<dyn Backend>,
    pub(crate) observed: Arc<Observed>,
    pub(crate) runtime: Arc<Runtime>,
    pub(crate) ctx: Context,
}

impl Rig {
    /// The names of the tasks executed since the stream log was last taken (a recording
    /// rig's), in order.
    pub(crate) fn take_executed(&self) -> Vec<String> {
        self.runtime
            .take_stream_log()
            .into_iter()
            .flat_map(|f| f.executed)
            .collect()
    }
}

/// A rig of `procs` processors running fused tasks through `jit` (natively when `None`).
pub(crate) fn rig(
    procs: usize,
    fusion: FusionConfig,
    strip_bytes: Option<usize>,
    jit: Option<Arc<Jit>>,
) -> Rig {
    let mut config = EmbeddedConfig {
        procs: Some(procs),
        ..Default::default()
    };
    if let Some(s) = strip_bytes {
        config.strip_bytes = s;
    }
    let backend: Arc<dyn Backend> =
        Arc::new(EmbeddedBackend::new(config).expect("embedded backend starts"));
    rig_over(backend, fusion, jit)
}

/// A rig of `procs` processors and the simulated GPU, each task placed on the GPU or the CPUs
/// by a hash of its name and `seed` ([`CoinPlacement`]).
pub(crate) fn sim_gpu_rig(
    procs: usize,
    fusion: FusionConfig,
    strip_bytes: Option<usize>,
    jit: Option<Arc<Jit>>,
    seed: u64,
) -> Rig {
    let mut config = EmbeddedConfig {
        procs: Some(procs),
        device: Some(DeviceChoice::Simulated),
        ..Default::default()
    };
    if let Some(s) = strip_bytes {
        config.strip_bytes = s;
    }
    let backend: Arc<dyn Backend> =
        Arc::new(EmbeddedBackend::new(config).expect("embedded backend starts"));
    rig_placed(
        backend,
        fusion,
        jit,
        Some(Arc::new(CoinPlacement { seed, procs })),
    )
}

/// Places each task (fused or not) on the GPU or on the CPUs by a coin flip seeded with a
/// hash of its name and the seed: the same task always lands on the same kind in one run,
/// different tasks and seeds differ.
#[derive(Debug)]
pub(crate) struct CoinPlacement {
    seed: u64,
    /// CPUs of the machine (points on CPUs go round-robin).
    procs: usize,
}

impl Placement for CoinPlacement {
    fn processor_kind(&self, task: &str, _constituents: &[&str]) -> ProcKind {
        let mut h = DefaultHasher::new();
        (task, self.seed).hash(&mut h);
        if h.finish().is_multiple_of(2) {
            ProcKind::Gpu
        } else {
            ProcKind::Cpu
        }
    }

    fn processor(
        &self,
        _task: &str,
        _constituents: &[&str],
        kind: ProcKind,
        point: &Point,
        launch: Shape,
    ) -> Result<Processor, IrError> {
        let strides = launch.row_major_strides();
        let index = match kind {
            ProcKind::Gpu => 0,
            _ => {
                (0..point.dims())
                    .map(|d| point[d] * strides[d])
                    .sum::<i64>() as usize
                    % self.procs.max(1)
            }
        };
        Ok(Processor {
            kind,
            node: 0,
            index,
        })
    }
}

/// [`rig`], recording its runtime's stream log.
pub(crate) fn recording_rig(
    procs: usize,
    fusion: FusionConfig,
    strip_bytes: Option<usize>,
    jit: Option<Arc<Jit>>,
) -> Rig {
    let r = rig(procs, fusion, strip_bytes, jit);
    r.runtime.record_streams(true);
    r
}

/// A rig over `backend` running fused tasks through `jit` (natively when `None`).
pub(crate) fn rig_over(
    backend: Arc<dyn Backend>,
    fusion: FusionConfig,
    jit: Option<Arc<Jit>>,
) -> Rig {
    rig_placed(backend, fusion, jit, None)
}

/// [`rig_over`] with `placement` deciding where tasks run.
pub(crate) fn rig_placed(
    backend: Arc<dyn Backend>,
    fusion: FusionConfig,
    jit: Option<Arc<Jit>>,
    placement: Option<Arc<dyn Placement>>,
) -> Rig {
    let observed = Arc::new(Observed {
        backend: backend.clone(),
        fused: Mutex::new(Vec::new()),
    });
    // Through the facade, which gives a machine with GPUs (the simulated one) its GPU JIT.
    let runtime = diffuse::start_runtime(
        observed.clone(),
        RuntimeConfig {
            fusion,
            jit,
            gpu: None,
            placement,
            min_block: 1,
        },
    );
    let ctx = Context::new(runtime.clone());
    Rig {
        backend,
        observed,
        runtime,
        ctx,
    }
}

/// Fusion with `window`, one-point groups going on in stages on every backend (so the
/// embedded backend's properties cover them too).
pub(crate) fn fused(window: Option<usize>) -> FusionConfig {
    FusionConfig {
        enabled: true,
        window,
        stages: Some(true),
    }
}

/// The two ways a fused task runs, labelled: natively, and through a fresh JIT.
pub(crate) fn native_and_jit() -> [(&'static str, Option<Arc<Jit>>); 2] {
    [("JIT off", None), ("JIT on", Some(Arc::new(Jit::new())))]
}

/// Random values in [-2, 2) (see [`crate::common::random_data_in`]).
pub(crate) fn random_data(len: usize, seed: u64) -> Vec<f64> {
    crate::common::random_data_in(len, seed, 2.0)
}

/// A fresh 1-d store of `n` elements holding [`random_data`]`(n, seed)`.
pub(crate) fn random_vector(c: &Context, n: i64, seed: u64) -> Store {
    c.store_from_vec(&[n], random_data(n as usize, seed))
        .unwrap()
}

/// True when `a` and `b` agree to 1e-9 relative to their magnitude (at least 1), NaN with
/// NaN: equality up to the reassociation of floating-point reductions.
pub(crate) fn close(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(&x, &y)| {
            (x.is_nan() && y.is_nan()) || (x - y).abs() <= 1e-9 * x.abs().max(y.abs()).max(1.0)
        })
}

/// Bit patterns, every NaN mapped to one pattern (bitwise equality up to NaN payloads).
pub(crate) fn bits(v: &[f64]) -> Vec<u64> {
    v.iter()
        .map(|x| {
            if x.is_nan() {
                f64::NAN.to_bits()
            } else {
                x.to_bits()
            }
        })
        .collect()
}

/// Asserts that `store` holds `want` bit for bit (as [`bits`] compares), naming `what`.
pub(crate) fn assert_holds(c: &Context, store: &Store, want: &[f64], what: &str) {
    assert_eq!(
        bits(&c.read::<f64>(&store.view()).unwrap()),
        bits(want),
        "{what}"
    );
}

/// The kind names of what a flush executed, split back into constituents; one entry per
/// executed task: (constituent kind names, temporaries; its stages are not kept).
pub(crate) fn executed_groups(log: &[FlushRecord]) -> Vec<(Vec<String>, usize)> {
    log.iter()
        .flat_map(|r| r.executed.iter())
        .map(|e| match e.split_once(" (temporaries: ") {
            Some((names, rest)) => (
                names.split('+').map(str::to_string).collect(),
                rest.trim_end_matches(')')
                    .split(", stages: ")
                    .next()
                    .and_then(|n| n.parse().ok())
                    .expect("temporaries count in the log"),
            ),
            None => (vec![e.clone()], 0),
        })
        .collect()
}

pub(crate) fn whole(ctx: &Context, shape: &[i64]) -> Store {
    ctx.create_store(shape, DType::F64).unwrap()
}

/// Submits scalar work and the launch that reads it: `s = 2 a + b` (0-d stores, on one
/// point) and `t = s * x` over the blocked tiling of `x` by `launch`. Returns `(s, t)`.
pub(crate) fn submit_scaled_by_scalar_work(
    ctx: &Context,
    x: &Store,
    a: &Store,
    b: &Store,
    launch: Shape,
) -> (Store, Store) {
    let all = diffuse_ir::Partition::replicate;
    let part = |s: &Store| s.view().blocked(launch).unwrap();
    let (s, t) = (whole(ctx, &[]), whole(ctx, x.shape().as_slice()));
    ctx.submit(
        diffuse_ir::IndexTask::new(&ew_scalar_axpy_kind(), Shape::splat(0, 1))
            .arg(&s, all(), Privilege::Write)
            .arg(a, all(), Privilege::Read)
            .arg(b, all(), Privilege::Read)
            .scalar(2.0),
    )
    .unwrap();
    ctx.submit(
        diffuse_ir::IndexTask::new(&ew_scale_by_store_kind(), launch)
            .arg(&t, part(&t), Privilege::Write)
            .arg(x, part(x), Privilege::Read)
            .arg(&s, all(), Privilege::Read),
    )
    .unwrap();
    (s, t)
}
